// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// On the CPU a simd function splits the thread loops like a barrier: the
// operand goes to a per-thread array, one call of enigma_cpu_simd.h runs over
// the simdgroups of the group, and the next thread loop reads the result.

// CHECK-LABEL: void enigma_kernel_split(
// CHECK: const uint enigma_nt = enigma_nx * enigma_ny * enigma_nz;
// CHECK-NEXT: float [[S:v[0-9]+]][1024];
// CHECK: float [[X:v[0-9]+]][1024];
// CHECK: for (uint enigma_tx = enigma_bx; enigma_tx < enigma_bx + enigma_nx; ++enigma_tx) {
// CHECK: [[X]][enigma_lid] = A[
// CHECK: }
// CHECK-NEXT: enigma_cpu_simd_sum([[X]], [[S]], enigma_nt, 0u, (enigma_nt + 31u) >> 5);
// CHECK-NEXT: for (uint enigma_lz = 0;
// CHECK: O[{{.*}}] = [[S]][enigma_lid];
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
// CHECK: uint [[T:t[0-9]+]][1024];
// CHECK: [[T]][enigma_lid] = (((enigma_lz * enigma_ny + enigma_ly) * enigma_nx + enigma_lx) & 31u);
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
// CHECK: for (uint enigma_sg = 0; enigma_sg < ((enigma_nt + 31u) >> 5); ++enigma_sg) {
// CHECK-NEXT: const uint enigma_lx = (enigma_sg * 32u) % enigma_nx;
// CHECK: if ({{v[0-9]+}}[enigma_sg * 32u]) {
// CHECK: enigma_cpu_simd_broadcast({{v[0-9]+}}, enigma_cpu::Uniform{0u}, {{v[0-9]+}}, enigma_nt, enigma_sg, enigma_sg + 1u);
// CHECK: for (uint enigma_lid = enigma_sg * 32u, enigma_lend = enigma_min_u32(enigma_sg * 32u + 32u, enigma_nt); enigma_lid < enigma_lend; ++enigma_lid) {
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
// CHECK-NOT: enigma_sg = 0
// CHECK: for (ulong [[K:v[0-9]+]] = 0ul;
// CHECK: enigma_cpu_simd_max(
// CHECK-SAME: 0u, (enigma_nt + 31u) >> 5);
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
