// RUN: enigma-opt %s | enigma-opt | FileCheck %s
// RUN: enigma-opt %s --enigma-split-warp-roles | FileCheck %s --check-prefix=ROLES
// RUN: enigma-opt %s --enigma-lower-pipelines | FileCheck %s --check-prefix=SOFT
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL

// A TF32 warpgroup product with B stored k x n: the producer copies A's
// box through the TMA and B's box transposed (`transpose`), K-major under
// the 128-byte swizzle, as TF32 wgmma reads it (docs/design/tf32.md).
// The commit expects only A's bytes (8192); on CUDA the whole producer
// warpgroup runs the producer region, B's copy by all of it and A's by
// its first warp, and the ring's full barriers wait for 128 arrivals.

// CHECK-LABEL: enigma.kernel @gemm_tf32
// CHECK: enigma.stage_copy %{{.*}} into %{{.*}} {box_cols = 32 : i64, box_rows = 64 : i64, buffer = 0 : i64, offset = 0 : i64, swizzle = array<i32: 3, 2, 3>}
// CHECK: enigma.stage_copy %{{.*}} into %{{.*}} {box_cols = 64 : i64, box_rows = 32 : i64, buffer = 1 : i64, offset = 0 : i64, swizzle = array<i32: 3, 2, 3>, transpose}

// ROLES-LABEL: enigma.kernel @gemm_tf32
// ROLES: enigma.warp_roles producer {
// ROLES: %[[S:.*]] = enigma.ring_acquire
// ROLES: enigma.stage_copy {{.*}}buffer = 0
// ROLES: enigma.stage_copy {{.*}}transpose
// ROLES: enigma.ring_commit %{{.*}}[%[[S]]] {bytes = 8192 : i64}
// ROLES: } consumer {

// The software pipeline: A as a tile copy, B as element copies of the
// threadgroup (thread t from element t on, by the threadgroup's size),
// each to (r / 32) * 2048 + swizzle(c * 32 + r % 32).
// SOFT-LABEL: enigma.kernel @gemm_tf32
// SOFT: scf.if
// SOFT: enigma.copy_tile_async {{.*}} {cols = 32 : i64, dst_ld = 32 : i64, dst_swizzle = array<i32: 3, 2, 3>, rows = 64 : i64}
// SOFT: %[[T:.*]] = enigma.thread_index_in_threadgroup
// SOFT: %[[T0:.*]] = arith.index_castui %[[T]]
// SOFT: scf.for %[[E:.*]] = %[[T0]] to %c2048{{.*}} step
// SOFT: %[[R:.*]] = arith.divui %[[E]], %c64{{.*}}
// SOFT: %[[C:.*]] = arith.remui %[[E]], %c64{{.*}}
// SOFT: scf.if %{{.*}} -> (f32)
// SOFT: memref.load %B[
// SOFT: } else {
// SOFT: arith.constant 0.000000e+00 : f32
// SOFT: arith.remui %[[R]], %c32{{.*}}
// SOFT: arith.muli %[[C]], %c32{{.*}}
// SOFT: arith.shrui %{{.*}}, %c3{{.*}}
// SOFT: arith.andi %{{.*}}, %c28{{.*}}
// SOFT: arith.xori
// SOFT: memref.store %{{.*}}, %{{.*}}[%{{.*}}] : memref<4096xf32, #enigma.address_space<threadgroup>>
// SOFT: enigma.copy_async_commit

// CUDA-LABEL: enigma_kernel_gemm_tf32(
// CUDA: EnigmaRing<2> [[R:v[0-9]+]] = enigma_ring_begin<2, 1>([[R]]_bars, 4u, enigma_linear, (enigma_tmap_valid & 1u) == 1u && enigma_ring_aligned({{.*}}, 1024u) && enigma_ring_aligned({{.*}}, 128u), 128u);
// CUDA: if (enigma_linear >= 128u) { // the producer warpgroup
// CUDA-NEXT: enigma_producer_registers<120>();
// CUDA-NOT: its first warp
// CUDA: enigma_ring_acquire([[R]])
// CUDA: if ((enigma_linear - 128u) < 32u) {
// CUDA-NEXT: enigma_stage_copy<64, 32, 32, 2048, 3, 2, 3, false, 1>([[R]], {{.*}}, &enigma_tmap0,
// CUDA-NEXT: }
// CUDA: enigma_stage_copy_transposed<32, 64, 32, 2048, 3, 2, 3, 4>({{.*}}, B, {{.*}}, (enigma_linear - 128u));
// CUDA-NEXT: enigma_ring_commit_transposed([[R]], {{.*}}, 8192u, (enigma_linear - 128u));
// CUDA: } else { // the consumers: the threadgroup's threads
// CUDA: enigma_ring_wait([[R]])
// CUDA: enigma_mma_sync<32, 32, false, 3, 2, 3, 0, 32, true, 3, 2, 3, 0, true, true, true>(

// MSL-LABEL: kernel void enigma_kernel_gemm_tf32(
// MSL: enigma_copy_tile_async<64, 32, 32, 3, 2, 3, 0>(
// MSL: for (
// MSL: threadgroup_barrier(mem_flags::mem_threadgroup);

enigma.kernel @gemm_tf32(%A: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "A"}, %B: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "B"}, %M: i32 {enigma.dtype = "u32", enigma.name = "M"}, %N: i32 {enigma.dtype = "u32", enigma.name = "N"}, %K: i32 {enigma.dtype = "u32", enigma.name = "K"}, %C: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "C"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %0 = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<4096xf32, #enigma.address_space<threadgroup>>
  %1 = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<4096xf32, #enigma.address_space<threadgroup>>
  %2 = enigma.pipeline_ring %0, %1 {consumer_registers = 256 : i64, producer_registers = 120 : i64, stages = 2 : i64} : memref<4096xf32, #enigma.address_space<threadgroup>>, memref<4096xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  %3 = enigma.threadgroup_position_in_grid <x>
  %c64_i32 = arith.constant 64 : i32
  %4 = arith.muli %3, %c64_i32 {enigma.overflow_check = "unsigned"} : i32
  %c31_i32 = arith.constant 31 : i32
  %5 = arith.addi %K, %c31_i32 {enigma.overflow_check = "unsigned"} : i32
  %c32_i32 = arith.constant 32 : i32
  %6 = arith.divui %5, %c32_i32 : i32
  %cst = arith.constant 0.000000e+00 : f32
  %7 = enigma.mma_fill %cst : f32 -> tensor<16x64xf32>
  %c0_i32 = arith.constant 0 : i32
  %8 = arith.index_castui %c0_i32 : i32 to index
  %9 = arith.index_castui %6 : i32 to index
  %10 = enigma.pipeline %2[%8, %9) iter_args(%7 : tensor<16x64xf32>) producer {
  ^bb0(%arg0: index, %arg1: index):
    %18 = arith.index_castui %arg0 : index to i32
    %19 = arith.index_castui %arg1 : index to i32
    %c32_i32_0 = arith.constant 32 : i32
    %20 = arith.muli %18, %c32_i32_0 {enigma.overflow_check = "unsigned"} : i32
    %21 = arith.index_castui %K : i32 to index
    %22 = arith.index_castui %K : i32 to index
    %23 = arith.index_castui %M : i32 to index
    %24 = arith.index_castui %20 : i32 to index
    %25 = arith.index_castui %4 : i32 to index
    enigma.stage_copy %A[%25, %24] of(%23, %22, %21) into %2[%arg1] {box_cols = 32 : i64, box_rows = 64 : i64, buffer = 0 : i64, offset = 0 : i64, swizzle = array<i32: 3, 2, 3>} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    %c32_i32_1 = arith.constant 32 : i32
    %26 = arith.muli %18, %c32_i32_1 {enigma.overflow_check = "unsigned"} : i32
    %c0_i32_2 = arith.constant 0 : i32
    %27 = arith.index_castui %N : i32 to index
    %28 = arith.index_castui %N : i32 to index
    %29 = arith.index_castui %K : i32 to index
    %30 = arith.index_castui %c0_i32_2 : i32 to index
    %31 = arith.index_castui %26 : i32 to index
    enigma.stage_copy %B[%31, %30] of(%29, %28, %27) into %2[%arg1] {box_cols = 64 : i64, box_rows = 32 : i64, buffer = 1 : i64, offset = 0 : i64, swizzle = array<i32: 3, 2, 3>, transpose} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%arg0: index, %arg1: index, %arg2: tensor<16x64xf32>):
    %18 = arith.index_castui %arg0 : index to i32
    %19 = arith.index_castui %arg1 : index to i32
    %c2048_i32 = arith.constant 2048 : i32
    %20 = arith.muli %19, %c2048_i32 {enigma.overflow_check = "unsigned"} : i32
    %c0_i32_0 = arith.constant 0 : i32
    %21 = arith.addi %20, %c0_i32_0 {enigma.overflow_check = "unsigned"} : i32
    %c2048_i32_1 = arith.constant 2048 : i32
    %22 = arith.muli %19, %c2048_i32_1 {enigma.overflow_check = "unsigned"} : i32
    %c0_i32_2 = arith.constant 0 : i32
    %23 = arith.addi %22, %c0_i32_2 {enigma.overflow_check = "unsigned"} : i32
    %c0_i32_3 = arith.constant 0 : i32
    %c0_i32_4 = arith.constant 0 : i32
    %24 = arith.index_castui %21 : i32 to index
    %25 = arith.index_castui %c0_i32_4 : i32 to index
    %26 = arith.index_castui %23 : i32 to index
    %27 = arith.index_castui %c0_i32_3 : i32 to index
    %28 = enigma.simdgroup_index_in_threadgroup
    %c512_i32 = arith.constant 512 : i32
    %c4_i32 = arith.constant 4 : i32
    %29 = arith.remui %28, %c4_i32 : i32
    %30 = arith.muli %29, %c512_i32 {enigma.overflow_check = "unsigned"} : i32
    %31 = arith.index_castui %30 : i32 to index
    %32 = arith.addi %25, %31 : index
    %33 = enigma.mma %arg2, %0[%24, %32], %1[%26, %27] {a_ld = 32 : i64, a_swizzle = array<i32: 3, 2, 3>, asynchronous, b_ld = 32 : i64, b_swizzle = array<i32: 3, 2, 3>, b_transpose, k = 32 : i64, tf32, warpgroup} : memref<4096xf32, #enigma.address_space<threadgroup>>, memref<4096xf32, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    enigma.pipeline_yield %33 : tensor<16x64xf32>
  } : memref<4xi64, #enigma.address_space<threadgroup>> -> tensor<16x64xf32>
  %11 = enigma.mma_wait %10 : tensor<16x64xf32>
  %12 = enigma.simdgroup_index_in_threadgroup
  %c16_i32 = arith.constant 16 : i32
  %13 = arith.muli %12, %c16_i32 {enigma.overflow_check = "unsigned"} : i32
  %14 = arith.addi %4, %13 {enigma.overflow_check = "unsigned"} : i32
  %15 = arith.muli %14, %N {enigma.overflow_check = "unsigned"} : i32
  %16 = arith.index_castui %N : i32 to index
  %17 = arith.index_castui %15 : i32 to index
  enigma.mma_store %11, %C[%17], %16 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
