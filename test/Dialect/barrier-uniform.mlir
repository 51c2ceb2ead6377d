// RUN: enigma-opt %s | FileCheck %s

// Barriers under control flow that is the same for every thread of the group
// verify.

// CHECK-LABEL: enigma.kernel @if_on_threadgroup_position
// CHECK: scf.if
// CHECK-NEXT: enigma.barrier <threadgroup>
enigma.kernel @if_on_threadgroup_position() {
  %g = enigma.threadgroup_position_in_grid <x>
  %z = arith.constant 0 : i32
  %c = arith.cmpi eq, %g, %z : i32
  scf.if %c {
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// CHECK-LABEL: enigma.kernel @if_on_scalar_param
// CHECK: scf.if
// CHECK-NEXT: enigma.barrier <device>
enigma.kernel @if_on_scalar_param(%n: i32 {enigma.name = "n"}) {
  %z = arith.constant 0 : i32
  %c = arith.cmpi sgt, %n, %z : i32
  scf.if %c {
    enigma.barrier <device>
  }
  enigma.return
}

// Sizes of the grid and the group are uniform too.
// CHECK-LABEL: enigma.kernel @for_over_group_size
// CHECK: scf.for
// CHECK-NEXT: enigma.barrier <threadgroup>
enigma.kernel @for_over_group_size() {
  %n = enigma.threads_per_threadgroup <x>
  %g = enigma.threadgroups_per_grid <y>
  %t = enigma.threads_per_grid <z>
  %s = enigma.threads_per_simdgroup
  %k = enigma.simdgroups_per_threadgroup
  %a = arith.addi %n, %g : i32
  %b = arith.addi %a, %t : i32
  %c = arith.addi %b, %s : i32
  %ub = arith.addi %c, %k : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %c0 to %ub step %c1 : i32 {
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// A value that varies per thread may be computed inside the loop; only the
// loop's bounds matter.
// CHECK-LABEL: enigma.kernel @varying_body_uniform_bounds
// CHECK: scf.for
// CHECK: enigma.barrier <threadgroup>
enigma.kernel @varying_body_uniform_bounds(%a: memref<?xf32, #enigma.address_space<device>> {enigma.name = "a"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.for %k = %c0 to %c4 step %c1 {
    %v = memref.load %a[%i] : memref<?xf32, #enigma.address_space<device>>
    %w = arith.addf %v, %v : f32
    memref.store %w, %a[%i] : memref<?xf32, #enigma.address_space<device>>
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// The simdgroup index is the same for every lane of a simdgroup, so a simd
// barrier under it is fine (a threadgroup barrier would not be).
// CHECK-LABEL: enigma.kernel @simd_barrier_on_simdgroup_index
// CHECK: scf.if
// CHECK-NEXT: enigma.simd_barrier <threadgroup>
enigma.kernel @simd_barrier_on_simdgroup_index() {
  %sg = enigma.simdgroup_index_in_threadgroup
  %z = arith.constant 0 : i32
  %c = arith.cmpi eq, %sg, %z : i32
  scf.if %c {
    enigma.simd_barrier <threadgroup>
  }
  enigma.return
}

// A barrier after (not inside) divergent control flow is fine.
// CHECK-LABEL: enigma.kernel @after_divergent_if
// CHECK: scf.if
// CHECK: enigma.barrier <threadgroup>
// CHECK-NEXT: enigma.return
enigma.kernel @after_divergent_if(%a: memref<?xi32> {enigma.name = "a"}) {
  %tid = enigma.thread_position_in_grid <x>
  %z = arith.constant 0 : i32
  %c = arith.cmpi eq, %tid, %z : i32
  scf.if %c {
    %i = arith.constant 0 : index
    memref.store %tid, %a[%i] : memref<?xi32>
  }
  enigma.barrier <threadgroup>
  enigma.return
}

// Data loaded at a uniform index is uniform.
// CHECK-LABEL: enigma.kernel @if_on_uniform_load
// CHECK: scf.if
// CHECK-NEXT: enigma.barrier <threadgroup>
enigma.kernel @if_on_uniform_load(%a: memref<?xi32, #enigma.address_space<constant>> {enigma.name = "a"}) {
  %g = enigma.threadgroup_position_in_grid <x>
  %i = arith.index_castui %g : i32 to index
  %v = memref.load %a[%i] : memref<?xi32, #enigma.address_space<constant>>
  %z = arith.constant 0 : i32
  %c = arith.cmpi ne, %v, %z : i32
  scf.if %c {
    enigma.barrier <threadgroup>
  }
  enigma.return
}
