// RUN: enigma-opt %s | enigma-opt | FileCheck %s --check-prefix=IR
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// FlashAttention 3's overlap in one loop body: the scores' product (A and
// B in threadgroup memory) and P V (A = P in registers) both asynchronous;
// the scores waited for with P V still in flight (pending = 1), then P V.
// On CUDA the register-A product carries its Async flag; on the CPU
// (threads serialised) products are complete at once and the flag is off.

// IR-LABEL: enigma.kernel @overlapped_products
// IR: enigma.mma_reg %{{.*}}, %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {asynchronous, b_block_stride = 4096 : i64, b_ld = 64 : i64, b_swizzle = array<i32: 3, 3, 3>, warpgroup}
// IR: enigma.mma_wait %{{.*}} {pending = 1 : i64}

// CUDA-LABEL: void enigma_kernel_overlapped_products(
// CUDA: [[S:v[0-9]+]] = enigma_mma_sync<64, 64, false, 3, 3, 3, 0, 64, true, 3, 3, 3, 0, false, true, true, true>(
// CUDA: [[O:v[0-9]+]] = enigma_mma_reg<64, false, 3, 3, 3, 4096, true, true>(
// CUDA: enigma_mma_wait_pending<1>([[S]])
// CUDA: enigma_mma_wait([[O]])

// CPP-LABEL: void enigma_kernel_overlapped_products(
// CPP: enigma_mma_reg<64, false, 3, 3, 3, 4096, true, false>(
// CPP-NOT: enigma_mma_wait_pending<1>

// MSL-LABEL: kernel void enigma_kernel_overlapped_products(
// MSL: enigma_mma_reg<64, false, 3, 3, 3, 4096, true, true>(
enigma.kernel @overlapped_products(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %q_s = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %k_s = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %v_s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %o0 = enigma.mma_fill %zero : f32 -> tensor<16x128xf32>
  %p0f = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
  %p0 = arith.truncf %p0f : tensor<16x64xf32> to tensor<16x64xbf16>
  %r:2 = scf.for %j = %c0 to %c3 step %c1 iter_args(%o = %o0, %p = %p0) -> (tensor<16x128xf32>, tensor<16x64xbf16>) {
    %s0 = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
    %s = enigma.mma %s0, %q_s[%c0, %c0], %k_s[%c0, %c0] {k = 64, a_ld = 64, a_swizzle = array<i32: 3, 3, 3>, b_ld = 64, b_transpose, b_swizzle = array<i32: 3, 3, 3>, warpgroup, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    %ov = enigma.mma_reg %o, %p, %v_s[%c0, %c0] {b_ld = 64, b_swizzle = array<i32: 3, 3, 3>, b_block_stride = 4096, warpgroup, asynchronous} : tensor<16x64xbf16>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
    %sw = enigma.mma_wait %s {pending = 1} : tensor<16x64xf32>
    %pn = arith.truncf %sw : tensor<16x64xf32> to tensor<16x64xbf16>
    %ow = enigma.mma_wait %ov : tensor<16x128xf32>
    scf.yield %ow, %pn : tensor<16x128xf32>, tensor<16x64xbf16>
  }
  enigma.mma_store %r#0, %O[%c0], %c128 : tensor<16x128xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
