// RUN: enigma-opt %s | enigma-opt | FileCheck %s
// RUN: enigma-opt %s --enigma-lower-pipelines | FileCheck %s --check-prefix=SOFT
// RUN: enigma-opt %s --enigma-split-warp-roles | FileCheck %s --check-prefix=ROLES

// A pipeline ring of two buffers and a pipeline over K: the structured
// form prints and parses back; enigma-lower-pipelines makes it a software
// pipeline of tile copies (CPU, Metal); enigma-split-warp-roles gives it a
// producer region that fills stages and a consumer region that waits for
// them (CUDA).

// CHECK-LABEL: enigma.kernel @gemm
// CHECK: %[[RING:.*]] = enigma.pipeline_ring %{{.*}}, %{{.*}} {stages = 2 : i64} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
// CHECK: enigma.pipeline %[[RING]][%{{.*}}, %{{.*}}) iter_args(%{{.*}} : tensor<16x64xf32>) producer {
// CHECK: ^bb0(%[[I:.*]]: index, %[[S:.*]]: index):
// CHECK: enigma.stage_copy %{{.*}}[%{{.*}}, %{{.*}}] of(%{{.*}}, %{{.*}}, %{{.*}}) into %[[RING]][%[[S]]] {box_cols = 64 : i64, box_rows = 64 : i64, buffer = 0 : i64, offset = 0 : i64, swizzle = array<i32: 3, 3, 3>}
// CHECK: enigma.pipeline_yield
// CHECK: } consumer {
// CHECK: ^bb0(%{{.*}}: index, %{{.*}}: index, %{{.*}}: tensor<16x64xf32>):
// CHECK: enigma.pipeline_yield %{{.*}} : tensor<16x64xf32>
// CHECK: } : memref<4xi64, #enigma.address_space<threadgroup>> -> tensor<16x64xf32>

// SOFT-LABEL: enigma.kernel @gemm
// SOFT-NOT: enigma.pipeline_ring
// SOFT: scf.if
// SOFT: enigma.copy_tile_async %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}}, %{{.*}} {cols = 64 : i64, dst_ld = 64 : i64, dst_swizzle = array<i32: 3, 3, 3>, rows = 64 : i64}
// SOFT: enigma.copy_async_commit
// SOFT: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// SOFT: enigma.copy_async_wait 0
// SOFT-NEXT: enigma.barrier <threadgroup>
// SOFT: enigma.copy_tile_async
// SOFT: enigma.copy_async_commit
// SOFT: enigma.mma
// SOFT: scf.yield
// SOFT: enigma.copy_async_wait 0
// SOFT-NEXT: enigma.barrier <threadgroup>
// SOFT: enigma.mma_store

// ROLES-LABEL: enigma.kernel @gemm
// ROLES: %[[RING:.*]] = enigma.pipeline_ring
// ROLES: enigma.warp_roles producer {
// ROLES: scf.for
// ROLES-NEXT: %[[SLOT:.*]] = enigma.ring_acquire %[[RING]]
// ROLES: enigma.stage_copy {{.*}} into %[[RING]][%[[SLOT]]]
// ROLES: enigma.stage_copy {{.*}} into %[[RING]][%[[SLOT]]]
// ROLES: enigma.ring_commit %[[RING]][%[[SLOT]]] {bytes = 16384 : i64}
// ROLES-NOT: enigma.mma
// ROLES: } consumer {
// ROLES: scf.for
// ROLES: enigma.ring_wait %[[RING]]
// ROLES: enigma.mma
// ROLES: enigma.ring_release %[[RING]]
// ROLES: scf.yield
// ROLES: enigma.mma_store
enigma.kernel @gemm(
    %A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "bf16"},
    %B: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "bf16"},
    %C: memref<?xf32, #enigma.address_space<device>> {enigma.name = "C", enigma.dtype = "f32"},
    %m: i32 {enigma.name = "m", enigma.dtype = "u32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"},
    %k: i32 {enigma.name = "k", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %M = arith.index_castui %m : i32 to index
  %N = arith.index_castui %n : i32 to index
  %K = arith.index_castui %k : i32 to index
  %a = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %b = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a, %b {stages = 2} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  %k63 = arith.addi %K, %c63 : index
  %kt = arith.divui %k63, %c64 : index
  %sg32 = enigma.simdgroup_index_in_threadgroup
  %sg = arith.index_castui %sg32 : i32 to index
  %aoff = arith.muli %sg, %c1024 : index
  %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
  %r = enigma.pipeline %ring[%c0, %kt) iter_args(%acc0 : tensor<16x64xf32>) producer {
  ^bb0(%i: index, %s: index):
    %col = arith.muli %i, %c64 : index
    enigma.stage_copy %A[%c0, %col] of (%M, %K, %K) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 64 : i64, box_cols = 64 : i64, swizzle = array<i32: 3, 3, 3>} : memref<?xbf16, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.stage_copy %B[%col, %c0] of (%K, %N, %N) into %ring[%s] {buffer = 1 : i64, offset = 0 : i64, box_rows = 64 : i64, box_cols = 64 : i64, swizzle = array<i32: 3, 3, 3>} : memref<?xbf16, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index, %acc: tensor<16x64xf32>):
    %base = arith.muli %s, %c4096 : index
    %next = enigma.mma %acc, %a[%base, %aoff], %b[%base, %c0] {k = 64 : i64, a_ld = 64 : i64, b_ld = 64 : i64, a_swizzle = array<i32: 3, 3, 3>, b_swizzle = array<i32: 3, 3, 3>} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    enigma.pipeline_yield %next : tensor<16x64xf32>
  } : memref<4xi64, #enigma.address_space<threadgroup>> -> tensor<16x64xf32>
  %coff = arith.muli %sg, %c1024 : index
  enigma.mma_store %r, %C[%coff], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// A ring deeper than cp.async can count (16 stages at most): the software
// pipeline waits with at most 7 groups open, which waits for some copies
// earlier than needed and is otherwise the same.
// CHECK-LABEL: enigma.kernel @deep_ring
// CHECK: enigma.pipeline_ring %{{.*}} {stages = 12 : i64}
// SOFT-LABEL: enigma.kernel @deep_ring
// SOFT-COUNT-11: enigma.copy_async_commit
// SOFT: scf.for
// SOFT: enigma.copy_async_wait 7
enigma.kernel @deep_ring(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %N = arith.index_castui %n : i32 to index
  %a = enigma.threadgroup_alloc : memref<12288xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 12} : memref<12288xf32, #enigma.address_space<threadgroup>> -> memref<24xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %N) producer {
  ^bb0(%i: index, %s: index):
    %row = arith.muli %i, %c32 : index
    enigma.stage_copy %A[%row, %c0] of (%N, %c32, %c32) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 32 : i64, box_cols = 32 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<24xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<24xi64, #enigma.address_space<threadgroup>>
  enigma.return
}
