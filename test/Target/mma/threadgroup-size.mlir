// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal

// A kernel that runs only in threadgroups of 256 threads
// (enigma.threadgroup_size, set by gemm_block): CUDA bounds the launch and
// Metal the threadgroup; every target's tile copy takes the size as a
// constant. Without the attribute the copy reads the threadgroup's size.

// CUDA: __global__ void __launch_bounds__(256) enigma_kernel_sized(
// CUDA: enigma_copy_tile_async<64, 64, 64, 3, 3, 3, 0>({{.*}}, (uint)enigma_linear, 256u);
// CUDA: __global__ void enigma_kernel_any_size(
// CUDA: enigma_copy_tile_async<64, 64, 64, 3, 3, 3, 0>({{.*}}, (uint)enigma_linear, (uint)(enigma_sx * enigma_sy * enigma_sz));

// MSL: {{\[\[max_total_threads_per_threadgroup\(256\)\]\]}}
// MSL-NEXT: kernel void enigma_kernel_sized(
// MSL: enigma_copy_tile_async<64, 64, 64, 3, 3, 3, 0>({{.*}}, 256u);
// MSL-NOT: max_total_threads_per_threadgroup
// MSL: kernel void enigma_kernel_any_size(

// CPP: enigma_copy_tile_async<64, 64, 64, 3, 3, 3, 0>({{.*}}, 256u);
enigma.kernel @sized(
    %A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "bf16"})
    attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %a_s = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  enigma.copy_tile_async %a_s[%c0], %A[%c0], %c64, %c64, %c64 {rows = 64, cols = 64, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_async_commit
  enigma.copy_async_wait 0
  enigma.return
}

enigma.kernel @any_size(
    %A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "bf16"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %a_s = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  enigma.copy_tile_async %a_s[%c0], %A[%c0], %c64, %c64, %c64 {rows = 64, cols = 64, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_async_commit
  enigma.copy_async_wait 0
  enigma.return
}
