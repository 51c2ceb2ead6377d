// RUN: enigma-opt %s | FileCheck %s
// RUN: enigma-opt %s --enigma-lower-pipelines | FileCheck %s --check-prefix=SOFT
// RUN: enigma-opt %s --enigma-split-warp-roles | FileCheck %s --check-prefix=ROLES
// RUN: enigma-opt %s --enigma-bounds-check | FileCheck %s --check-prefix=CHECKED
// RUN: enigma-opt %s --enigma-bounds-check --enigma-split-warp-roles | FileCheck %s --check-prefix=CHECKED-ROLES

// A producer that reads buffers the kernel never writes: a sequence's
// first row from cumulative offsets (read before the pipeline) and a
// block table (read in the producer region), as attention's copies do.
// The verifier accepts it; the software pipeline keeps the read with the
// copy; the producer region of the explicit form reads both itself. In
// bounds-checked mode the reads are guarded and a violation is written to
// the record (atomics and stores on it), which a producer may do too.

// CHECK-LABEL: enigma.kernel @paged_rows
// CHECK: enigma.pipeline
// CHECK: producer {
// CHECK: memref.load %{{.*}}[%{{.*}}] : memref<?xi32, #enigma.address_space<device>>
// CHECK: enigma.stage_copy

// SOFT-LABEL: enigma.kernel @paged_rows
// SOFT-NOT: enigma.pipeline_ring
// SOFT: memref.load
// SOFT: enigma.copy_tile_async

// ROLES-LABEL: enigma.kernel @paged_rows
// ROLES: enigma.warp_roles producer {
// ROLES: memref.load %{{.*}}[%{{.*}}] : memref<?xi32, #enigma.address_space<device>>
// ROLES: enigma.ring_acquire
// ROLES: memref.load %{{.*}}[%{{.*}}] : memref<?xi32, #enigma.address_space<device>>
// ROLES: enigma.stage_copy
// ROLES: enigma.ring_commit
// ROLES: } consumer {
// ROLES: enigma.ring_wait
// ROLES: enigma.ring_release

// CHECKED-LABEL: enigma.kernel @paged_rows
// CHECKED: scf.if
// CHECKED: memref.load %{{.*}}[%{{.*}}] : memref<?xi32, #enigma.address_space<device>>
// CHECKED: enigma.atomic_rmw
// CHECKED: enigma.pipeline
// CHECKED: producer {
// CHECKED: scf.if
// CHECKED: memref.load %{{.*}}[%{{.*}}] : memref<?xi32, #enigma.address_space<device>>
// CHECKED: enigma.atomic_rmw
// CHECKED: enigma.stage_copy

// CHECKED-ROLES-LABEL: enigma.kernel @paged_rows
// CHECKED-ROLES: enigma.warp_roles producer {
// CHECKED-ROLES: memref.load %{{.*}}[%{{.*}}] : memref<?xi32, #enigma.address_space<device>>
// CHECKED-ROLES: enigma.ring_acquire
// CHECKED-ROLES: memref.load %{{.*}}[%{{.*}}] : memref<?xi32, #enigma.address_space<device>>
// CHECKED-ROLES: enigma.atomic_rmw
// CHECKED-ROLES: enigma.stage_copy
// CHECKED-ROLES: } consumer {

enigma.kernel @paged_rows(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %CU: memref<?xi32, #enigma.address_space<device>> {enigma.name = "CU"}, %T: memref<?xi32, #enigma.address_space<device>> {enigma.name = "T"}, %Out: memref<?xf32, #enigma.address_space<device>> {enigma.name = "Out"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  %first = memref.load %CU[%c0] : memref<?xi32, #enigma.address_space<device>>
  %f = arith.index_castui %first : i32 to index
  %zero = arith.constant 0.0 : f32
  %sum = enigma.pipeline %ring[%c0, %c4) iter_args(%zero : f32) producer {
  ^bb0(%i: index, %s: index):
    %page = memref.load %T[%i] : memref<?xi32, #enigma.address_space<device>>
    %p = arith.index_castui %page : i32 to index
    %r = arith.addi %p, %f : index
    enigma.stage_copy %A[%r, %c0] of(%c64, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index, %acc: f32):
    %x = memref.load %a[%i] : memref<1024xf32, #enigma.address_space<threadgroup>>
    %next = arith.addf %acc, %x : f32
    enigma.pipeline_yield %next : f32
  } : memref<4xi64, #enigma.address_space<threadgroup>> -> f32
  memref.store %sum, %Out[%c0] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
