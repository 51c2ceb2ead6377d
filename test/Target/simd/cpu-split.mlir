// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// On the CPU a simd function splits the thread loops like a barrier: the
// operand goes to a per-thread array, one call of enigma_cpu_simd.h runs over
// the simdgroups of the group, and the next thread loop reads the result.

// CHECK-LABEL: void enigma_kernel_split(
// CHECK: float [[S:v[0-9]+]][1040];
// CHECK: float [[X:v[0-9]+]][1040];
// CHECK: uint [[NT:v[0-9]+]] = {{v[0-9]+}} * enigma_nz;
// CHECK: for (uint64_t enigma_x = enigma_bx; enigma_x < (uint64_t)enigma_bx + enigma_nx; ++enigma_x) {
// CHECK-NEXT: const uint enigma_tx = (uint)enigma_x;
// CHECK: [[X]][enigma_slot] = [[A:v[0-9]+]];
// CHECK: }
// CHECK-NEXT: enigma_cpu_simd_sum([[X]], [[S]], [[NT]], 0u, ((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5));
// CHECK-NEXT: for (uint enigma_lz = 0;
// CHECK: [[R:v[0-9]+]] = [[S]][enigma_slot];
// CHECK: O[{{.*}}] = [[R]];
enigma.kernel @split(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
  %s = enigma.simd_sum %x : f32
  memref.store %s, %O[%i] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// An operand that is not a per-thread value (a thread query) is copied into
// a temporary array first.
// CHECK-LABEL: void enigma_kernel_query_operand(
// CHECK: [[T:v[0-9]+]][enigma_slot] = (enigma_lid & 31u);
// CHECK: enigma_cpu_quad_prefix_exclusive_sum([[T]],
enigma.kernel @query_operand(
    %O: memref<?xi32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "u32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %lane = enigma.thread_index_in_simdgroup
  %s = enigma.quad_prefix_exclusive_sum %lane : i32
  memref.store %s, %O[%i] : memref<?xi32, #enigma.address_space<device>>
  enigma.return
}

// An if whose condition differs between simdgroups (not between lanes) runs
// once per simdgroup: thread loops and calls inside cover that simdgroup.
// CHECK-LABEL: void enigma_kernel_per_simdgroup(
// CHECK: for (uint [[SG:v[0-9]+]] = 0u; (int)[[SG]] < (int)((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5); [[SG]] += 1u) {
// CHECK-NEXT: uint [[FIRST:v[0-9]+]] = [[SG]] * 32u;
// CHECK-NEXT: bool [[C:v[0-9]+]] = {{v[0-9]+}}[[[FIRST]]];
// CHECK-NEXT: if ([[C]]) {
// CHECK-NEXT: uint [[NEXT:v[0-9]+]] = [[SG]] + 1u;
// CHECK-NEXT: enigma_cpu_simd_broadcast({{v[0-9]+}}, enigma_cpu::Uniform{0u}, {{v[0-9]+}}, {{v[0-9]+}}, [[SG]], [[NEXT]]);
// CHECK-NEXT: for (uint enigma_lid = ([[SG]] * 32u), enigma_lend = enigma_min_u32(([[SG]] * 32u) + 32u, enigma_nx * enigma_ny * enigma_nz); enigma_lid < enigma_lend; ++enigma_lid) {
enigma.kernel @per_simdgroup(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
  %sg = enigma.simdgroup_index_in_threadgroup
  %zero = arith.constant 0 : i32
  %c = arith.cmpi eq, %sg, %zero : i32
  scf.if %c {
    %b = enigma.simd_broadcast %x, %zero : f32
    memref.store %b, %O[%i] : memref<?xf32, #enigma.address_space<device>>
  }
  enigma.return
}

// A loop with uniform bounds stays one group-level loop.
// CHECK-LABEL: void enigma_kernel_uniform_loop(
// CHECK: for (ulong [[K:v[0-9]+]] = 0ul;
// CHECK-NOT: += 1u) {
// CHECK: enigma_cpu_simd_max(
// CHECK-SAME: 0u, ((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5));
enigma.kernel @uniform_loop(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "i32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %lb = arith.constant 0 : index
  %ub = arith.index_castui %n : i32 to index
  %one = arith.constant 1 : index
  %init = arith.constant 0.0 : f32
  %r = scf.for %k = %lb to %ub step %one iter_args(%acc = %init) -> (f32) {
    %x = memref.load %A[%k] : memref<?xf32, #enigma.address_space<device>>
    %m = enigma.simd_max %x : f32
    %next = arith.addf %acc, %m : f32
    scf.yield %next : f32
  }
  memref.store %r, %O[%i] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
