// RUN: enigma-opt %s | enigma-opt | FileCheck %s --check-prefix=IR
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// A fragment read at per-element indices (packed 4-bit codes: the word of
// each element's column), its bits read as float, and a fused
// multiply-add of fragments: one gather call per target, the bitcast and
// the fma as element loops.

// IR-LABEL: enigma.kernel @dequantize
// IR: %[[W:.*]] = enigma.mma_gather %{{.*}}[%{{.*}} + %{{.*}}] : memref<?xi32, #enigma.address_space<device>>, tensor<16x32xi32> -> tensor<16x32xi32>
// IR: arith.bitcast %{{.*}} : tensor<16x32xi32> to tensor<16x32xf32>
// IR: math.fma %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x32xf32>

// MSL: inline F enigma_mma_gather(P p, ulong off, thread const I &index, uint lane) {
// MSL-LABEL: kernel void enigma_kernel_dequantize(
// MSL: enigma_frag<uint, 16, 32> [[W:v[0-9]+]] = enigma_mma_gather<enigma_frag<uint, 16, 32>>(Wq, {{.*}}, (uint)thread_index_in_simdgroup);
// MSL: .v[enigma_i] = as_type<float>(
// MSL: .v[enigma_i] = fma(

// CUDA-LABEL: enigma_kernel_dequantize(
// CUDA: enigma_mma_gather<enigma_frag<uint, 16, 32>>(Wq,
// CUDA: as_type<float>(

// CPP-LABEL: extern "C" void enigma_kernel_dequantize(
// CPP: enigma_mma_gather<enigma_frag<uint, 16, 32>>(Wq,
// CPP: .v[enigma_i] = fma(
enigma.kernel @dequantize(%Wq: memref<?xi32, #enigma.address_space<device>> {enigma.name = "Wq", enigma.dtype = "u32"},
                          %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O"},
                          %k: i32 {enigma.name = "k", enigma.dtype = "u32"}) {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %off = arith.index_cast %k : i32 to index
  %rows = enigma.mma_iota 0 : tensor<16x32xi32>
  %cols = enigma.mma_iota 1 : tensor<16x32xi32>
  %four = arith.constant dense<4> : tensor<16x32xi32>
  %three = arith.constant dense<3> : tensor<16x32xi32>
  %row_words = arith.muli %rows, %four : tensor<16x32xi32>
  %col_word = arith.shrui %cols, %three : tensor<16x32xi32>
  %index = arith.addi %row_words, %col_word : tensor<16x32xi32>
  %w = enigma.mma_gather %Wq[%off + %index] : memref<?xi32, #enigma.address_space<device>>, tensor<16x32xi32> -> tensor<16x32xi32>
  %mask = arith.constant dense<15> : tensor<16x32xi32>
  %magic = arith.constant dense<1258291200> : tensor<16x32xi32>
  %code = arith.andi %w, %mask : tensor<16x32xi32>
  %bits = arith.ori %code, %magic : tensor<16x32xi32>
  %f = arith.bitcast %bits : tensor<16x32xi32> to tensor<16x32xf32>
  %s = arith.constant dense<0.5> : tensor<16x32xf32>
  %b = arith.constant dense<-4194304.0> : tensor<16x32xf32>
  %r = math.fma %f, %s, %b : tensor<16x32xf32>
  enigma.mma_store %r, %O[%c0], %c32 : tensor<16x32xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
