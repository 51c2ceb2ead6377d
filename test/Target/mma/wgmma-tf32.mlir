// RUN: enigma-opt %s | enigma-opt | FileCheck %s --check-prefix=IR
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// A warpgroup product of float tiles with TF32 allowed, both operands
// K-major (A stored 64 x 32, B stored 128 x 32: rows of 32 floats under
// the 128-byte swizzle Swizzle<3, 2, 3>), as gemm_block stores them for
// tf32_warpgroup_shape: CUDA passes tf32 and the warpgroup flag to
// enigma_mma_sync, which runs wgmma m64n128k8 .tf32 on sm_90a
// (unittests/Cuda/MmaPtxTest.cpp checks the instruction); MSL and the
// CPU pass tf32 too (their products round the operands to TF32). The
// accumulator is a fill of +0, so every target is told (ZeroAcc, the last
// flag): sm_90a's wgmma starts from zero itself (scale-d 0) instead of
// reading zeroed registers; the others read the zeros.

// IR-LABEL: enigma.kernel @tf32_warpgroup_product
// IR: enigma.mma %{{.*}} {a_ld = 32 : i64, a_swizzle = array<i32: 3, 2, 3>, asynchronous, b_ld = 32 : i64, b_swizzle = array<i32: 3, 2, 3>, b_transpose, k = 32 : i64, tf32, warpgroup}
// CUDA-LABEL: void enigma_kernel_tf32_warpgroup_product(
// CUDA: enigma_frag<float, 16, 128> [[ACC:v[0-9]+]] = enigma_mma_sync<32, 32, false, 3, 2, 3, 0, 32, true, 3, 2, 3, 0, true, true, true, true>(
// CUDA: enigma_mma_wait([[ACC]])
// MSL-LABEL: kernel void enigma_kernel_tf32_warpgroup_product(
// MSL: enigma_mma_sync<32, 32, false, 3, 2, 3, 0, 32, true, 3, 2, 3, 0, true, true, true, true>(
// CPP-LABEL: void enigma_kernel_tf32_warpgroup_product(
// CPP: enigma_mma_sync<32, 32, false, 3, 2, 3, 0, 32, true, 3, 2, 3, 0, true, true, false, true>(
enigma.kernel @tf32_warpgroup_product(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %a_s = enigma.threadgroup_alloc : memref<2048xf32, #enigma.address_space<threadgroup>>
  %b_s = enigma.threadgroup_alloc : memref<4096xf32, #enigma.address_space<threadgroup>>
  %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x128xf32>
  %acc1 = enigma.mma %acc0, %a_s[%c0, %c0], %b_s[%c0, %c0] {k = 32, a_ld = 32, a_swizzle = array<i32: 3, 2, 3>, b_ld = 32, b_transpose, b_swizzle = array<i32: 3, 2, 3>, tf32, warpgroup, asynchronous} : memref<2048xf32, #enigma.address_space<threadgroup>>, memref<4096xf32, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
  %acc = enigma.mma_wait %acc1 : tensor<16x128xf32>
  enigma.mma_store %acc, %O[%c0], %c128 : tensor<16x128xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
