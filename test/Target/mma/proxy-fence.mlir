// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s

// wgmma's proxy fence (lib/Target/CUDA/CudaProxyFence.h): a kernel whose
// threadgroup memory only tile copies write fences at each copy wait
// instead of before every warpgroup product; one that also stores into
// threadgroup memory keeps the fence before the products.

// CHECK: #define ENIGMA_FENCE_AT_COPY_WAIT 1
// CHECK-NEXT: #include "enigma_cuda_prelude.cuh"
// CHECK: void enigma_kernel_copies_only(
// CHECK-NOT: ENIGMA_FENCE_AT_COPY_WAIT
// CHECK: void enigma_kernel_stores_too(
// CHECK-NOT: ENIGMA_FENCE_AT_COPY_WAIT
// CHECK: void enigma_kernel_fragment_stored_to_tile(
enigma.kernel @copies_only(
    %A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "bf16"},
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %a_s = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %b_s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  enigma.copy_tile_async %a_s[%c0], %A[%c0], %c64, %c64, %c64 {rows = 64, cols = 64, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_async_commit
  enigma.copy_async_wait 0
  enigma.barrier <threadgroup>
  %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x128xf32>
  %acc1 = enigma.mma %acc0, %a_s[%c0, %c0], %b_s[%c0, %c0] {k = 64, a_ld = 64, a_swizzle = array<i32: 3, 3, 3>, b_ld = 64, b_swizzle = array<i32: 3, 3, 3>, b_block_stride = 4096, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
  enigma.mma_store %acc1, %O[%c0], %c128 : tensor<16x128xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

enigma.kernel @stores_too(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %a_s = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %b_s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  memref.store %one, %a_s[%c0] : memref<4096xbf16, #enigma.address_space<threadgroup>>
  enigma.barrier <threadgroup>
  %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x128xf32>
  %acc1 = enigma.mma %acc0, %a_s[%c0, %c0], %b_s[%c0, %c0] {k = 64, a_ld = 64, a_swizzle = array<i32: 3, 3, 3>, b_ld = 64, b_swizzle = array<i32: 3, 3, 3>, b_block_stride = 4096, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
  enigma.mma_store %acc1, %O[%c0], %c128 : tensor<16x128xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

enigma.kernel @fragment_stored_to_tile(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %a_s = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %b_s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %f = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
  %h = arith.truncf %f : tensor<16x64xf32> to tensor<16x64xbf16>
  enigma.mma_store %h, %a_s[%c0], %c64 : tensor<16x64xbf16>, memref<4096xbf16, #enigma.address_space<threadgroup>>
  enigma.barrier <threadgroup>
  %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x128xf32>
  %acc1 = enigma.mma %acc0, %a_s[%c0, %c0], %b_s[%c0, %c0] {k = 64, a_ld = 64, a_swizzle = array<i32: 3, 3, 3>, b_ld = 64, b_swizzle = array<i32: 3, 3, 3>, b_block_stride = 4096, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
  enigma.mma_store %acc1, %O[%c0], %c128 : tensor<16x128xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
