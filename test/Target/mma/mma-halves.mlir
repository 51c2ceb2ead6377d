// RUN: enigma-opt %s | enigma-opt | FileCheck %s --check-prefix=IR
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// enigma.mma_halves: 16 x 16 words as 16 x 32 bfloat halves, then the A
// operand of a product (4-bit weights decoded two codes per word). Every
// target prints one call of its helper; the MSL helper reinterprets each
// lane's words with as_type.

// IR-LABEL: enigma.kernel @halves_product
// IR: enigma.mma_halves %{{.*}} : tensor<16x16xi32> -> tensor<16x32xbf16>

// MSL: inline F enigma_mma_halves(thread const enigma_frag<W, M, N> &w) {
// MSL: f.v[2 * out] = as_type<T>(ushort(word & 0xFFFFu));
// MSL-LABEL: kernel void enigma_kernel_halves_product(
// MSL: enigma_frag<bfloat, 16, 32> [[H:v[0-9]+]] = enigma_mma_halves<enigma_frag<bfloat, 16, 32>>({{v[0-9]+}});
// MSL: enigma_mma_reg<16, false, 0, 0, 0, 0, false, false>({{v[0-9]+}}, [[H]],

// CUDA-LABEL: extern "C" __global__ void enigma_kernel_halves_product(
// CUDA: enigma_frag<bfloat, 16, 32> [[H:v[0-9]+]] = enigma_mma_halves<enigma_frag<bfloat, 16, 32>>({{v[0-9]+}});
// CUDA: enigma_mma_reg<16, false, 0, 0, 0, 0, false, false>({{v[0-9]+}}, [[H]],

// CPP-LABEL: extern "C" void enigma_kernel_halves_product(
// CPP: enigma_frag<bfloat, 16, 32> [[H:v[0-9]+]] = enigma_mma_halves<enigma_frag<bfloat, 16, 32>>({{v[0-9]+}});
// CPP: enigma_mma_reg<16, false, 0, 0, 0, 0, false, false>({{v[0-9]+}}, [[H]],
enigma.kernel @halves_product(
    %W: memref<?xi32, #enigma.address_space<device>> {enigma.name = "W", enigma.dtype = "u32"},
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %x_s = enigma.threadgroup_alloc : memref<512xbf16, #enigma.address_space<threadgroup>>
  %rows = enigma.mma_iota 0 : tensor<16x16xi32>
  %w = enigma.mma_gather %W[%c0 + %rows] : memref<?xi32, #enigma.address_space<device>>, tensor<16x16xi32> -> tensor<16x16xi32>
  %h = enigma.mma_halves %w : tensor<16x16xi32> -> tensor<16x32xbf16>
  %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x16xf32>
  %acc = enigma.mma_reg %acc0, %h, %x_s[%c0, %c0] {b_ld = 16} : tensor<16x32xbf16>, memref<512xbf16, #enigma.address_space<threadgroup>>, tensor<16x16xf32>
  enigma.mma_store %acc, %O[%c0], %c16 : tensor<16x16xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
