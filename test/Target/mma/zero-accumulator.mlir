// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// A warpgroup product into a fill of +0 tells its helper so (ZeroAcc, the
// last template flag): sm_90a's wgmma starts from zero itself (scale-d 0)
// and nothing zeroes its registers. A fill of -0, a carried accumulator and
// a product of one simdgroup keep the plain call (docs/design/wgmma.md).

// CUDA-LABEL: void enigma_kernel_zero_accumulators(
// CUDA: [[Z:v[0-9]+]] = enigma_mma_sync<64, 64, false, 0, 0, 0, 0, 64, false, 0, 0, 0, 0, false, true, false, true>(
// CUDA: enigma_mma_sync<64, 64, false, 0, 0, 0, 0, 64, false, 0, 0, 0, 0, false, true, false>([[Z]],
// CUDA: enigma_mma_sync<64, 64, false, 0, 0, 0, 0, 64, false, 0, 0, 0, 0, false, true, false>(
// CUDA: enigma_mma_sync<64, 64, false, 0, 0, 0, 0, 64, false, 0, 0, 0, 0, false, false, false>(
// CPP-LABEL: void enigma_kernel_zero_accumulators(
// CPP: enigma_mma_sync<64, 64, false, 0, 0, 0, 0, 64, false, 0, 0, 0, 0, false, true, false, true>(
enigma.kernel @zero_accumulators(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %c2048 = arith.constant 2048 : index
  %plus = arith.constant 0.0 : f32
  %minus = arith.constant -0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %zero = enigma.mma_fill %plus : f32 -> tensor<16x64xf32>
  %negative = enigma.mma_fill %minus : f32 -> tensor<16x64xf32>
  // Into +0: the flag.
  %p = enigma.mma %zero, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  // Into the previous product: none.
  %q = enigma.mma %p, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  // Into -0: none.
  %r = enigma.mma %negative, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  // One simdgroup's product (mma.sync reads its accumulator): none.
  %s = enigma.mma %zero, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  enigma.mma_store %q, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.mma_store %r, %O[%c1024], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.mma_store %s, %O[%c2048], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
