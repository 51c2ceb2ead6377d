// RUN: enigma-opt %s | enigma-opt | FileCheck %s
// RUN: enigma-opt %s --enigma-lower-pipelines | FileCheck %s --check-prefix=SOFT
// RUN: enigma-opt %s --enigma-split-warp-roles | FileCheck %s --check-prefix=ROLES

// A ring of 8-bit float stages (the scaled FP8 GEMM on the pipeline): an
// e4m3 A tile and an e5m2 B tile, both K-major rows of 128 bytes under the
// 128-byte swizzle of bytes; the products read them transposed (B is
// N x K). The ring verifies, lowers to a software pipeline and splits into
// roles whose commit counts the tiles' bytes (64 x 128 bytes each).

// CHECK-LABEL: enigma.kernel @gemm_fp8
// CHECK: enigma.pipeline_ring %{{.*}}, %{{.*}} {stages = 3 : i64} : memref<24576xf8E4M3FN, #enigma.address_space<threadgroup>>, memref<24576xf8E5M2, #enigma.address_space<threadgroup>>
// CHECK: enigma.stage_copy {{.*}} : memref<?xf8E4M3FN, #enigma.address_space<device>>
// CHECK: enigma.stage_copy {{.*}} : memref<?xf8E5M2, #enigma.address_space<device>>

// SOFT-LABEL: enigma.kernel @gemm_fp8
// SOFT-NOT: enigma.pipeline_ring
// SOFT: enigma.copy_tile_async {{.*}} {cols = 128 : i64, dst_ld = 128 : i64, dst_swizzle = array<i32: 3, 4, 3>, rows = 64 : i64} : memref<24576xf8E4M3FN, #enigma.address_space<threadgroup>>, memref<?xf8E4M3FN
// SOFT: enigma.copy_tile_async {{.*}} : memref<24576xf8E5M2, #enigma.address_space<threadgroup>>, memref<?xf8E5M2
// SOFT: enigma.mma

// ROLES-LABEL: enigma.kernel @gemm_fp8
// ROLES: enigma.warp_roles producer {
// ROLES: enigma.ring_commit %{{.*}}[%{{.*}}] {bytes = 16384 : i64}
// ROLES: } consumer {
// ROLES: enigma.ring_wait
// ROLES: enigma.mma
// ROLES: enigma.ring_release
enigma.kernel @gemm_fp8(
    %A: memref<?xf8E4M3FN, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f8e4m3"},
    %B: memref<?xf8E5M2, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "f8e5m2"},
    %C: memref<?xf32, #enigma.address_space<device>> {enigma.name = "C", enigma.dtype = "f32"},
    %m: i32 {enigma.name = "m", enigma.dtype = "u32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"},
    %k: i32 {enigma.name = "k", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c127 = arith.constant 127 : index
  %c128 = arith.constant 128 : index
  %c2048 = arith.constant 2048 : index
  %c8192 = arith.constant 8192 : index
  %c1024 = arith.constant 1024 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %M = arith.index_castui %m : i32 to index
  %N = arith.index_castui %n : i32 to index
  %K = arith.index_castui %k : i32 to index
  %a = enigma.threadgroup_alloc : memref<24576xf8E4M3FN, #enigma.address_space<threadgroup>>
  %b = enigma.threadgroup_alloc : memref<24576xf8E5M2, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a, %b {stages = 3} : memref<24576xf8E4M3FN, #enigma.address_space<threadgroup>>, memref<24576xf8E5M2, #enigma.address_space<threadgroup>> -> memref<6xi64, #enigma.address_space<threadgroup>>
  %k127 = arith.addi %K, %c127 : index
  %kt = arith.divui %k127, %c128 : index
  %sg32 = enigma.simdgroup_index_in_threadgroup
  %sg = arith.index_castui %sg32 : i32 to index
  %aoff = arith.muli %sg, %c2048 : index
  %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
  %r = enigma.pipeline %ring[%c0, %kt) iter_args(%acc0 : tensor<16x64xf32>) producer {
  ^bb0(%i: index, %s: index):
    %col = arith.muli %i, %c128 : index
    enigma.stage_copy %A[%c0, %col] of (%M, %K, %K) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 64 : i64, box_cols = 128 : i64, swizzle = array<i32: 3, 4, 3>} : memref<?xf8E4M3FN, #enigma.address_space<device>>, memref<6xi64, #enigma.address_space<threadgroup>>
    enigma.stage_copy %B[%c0, %col] of (%N, %K, %K) into %ring[%s] {buffer = 1 : i64, offset = 0 : i64, box_rows = 64 : i64, box_cols = 128 : i64, swizzle = array<i32: 3, 4, 3>} : memref<?xf8E5M2, #enigma.address_space<device>>, memref<6xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index, %acc: tensor<16x64xf32>):
    %base = arith.muli %s, %c8192 : index
    %next = enigma.mma %acc, %a[%base, %aoff], %b[%base, %c0] {k = 128 : i64, a_ld = 128 : i64, b_ld = 128 : i64, b_transpose, a_swizzle = array<i32: 3, 4, 3>, b_swizzle = array<i32: 3, 4, 3>} : memref<24576xf8E4M3FN, #enigma.address_space<threadgroup>>, memref<24576xf8E5M2, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    enigma.pipeline_yield %next : tensor<16x64xf32>
  } : memref<6xi64, #enigma.address_space<threadgroup>> -> tensor<16x64xf32>
  %coff = arith.muli %sg, %c1024 : index
  enigma.mma_store %r, %C[%coff], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
