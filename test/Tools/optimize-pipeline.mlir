// RUN: enigma-opt %s --enigma-optimize | FileCheck %s
// RUN: enigma-opt %s --enigma-optimize | enigma-opt --enigma-optimize | FileCheck %s

// The pipeline (canonicalize, CSE, arith expansion) folds duplicate thread
// queries and constants, folds constant arithmetic, and keeps barriers.

// CHECK-LABEL: enigma.kernel @dedupe(
enigma.kernel @dedupe(%out: memref<?xi32, #enigma.address_space<device>> {enigma.name = "out", enigma.dtype = "u32"}) {
  // One query per (op, dim); the y query stays separate from the x one.
  // CHECK-DAG: %[[C5:.*]] = arith.constant 5 : i32
  // CHECK-DAG: %[[X:.*]] = enigma.thread_position_in_grid <x>
  // CHECK-DAG: %[[Y:.*]] = enigma.thread_position_in_grid <y>
  // CHECK-NOT: enigma.thread_position_in_grid
  // CHECK-NOT: arith.constant 2 : i32
  // CHECK-NOT: arith.constant 3 : i32
  %x1 = enigma.thread_position_in_grid <x>
  %x2 = enigma.thread_position_in_grid <x>
  %y = enigma.thread_position_in_grid <y>
  %two = arith.constant 2 : i32
  %three = arith.constant 3 : i32
  %two_again = arith.constant 2 : i32
  // 2 + 3 folds to 5.
  %five = arith.addi %two, %three : i32
  // CHECK: %[[S:.*]] = arith.addi %[[X]], %[[C5]] : i32
  %a = arith.addi %x1, %five : i32
  %b = arith.addi %x2, %five : i32
  // x * 1 and y + 0 vanish.
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  %m = arith.muli %a, %one : i32
  %y0 = arith.addi %y, %zero : i32
  // CHECK: %[[I:.*]] = arith.index_castui %[[Y]] : i32 to index
  %i = arith.index_castui %y0 : i32 to index
  %j = arith.index_castui %y : i32 to index
  // CHECK-NEXT: memref.store %[[S]], %out[%[[I]]]
  // CHECK-NEXT: memref.store %[[S]], %out[%[[I]]]
  memref.store %m, %out[%i] : memref<?xi32, #enigma.address_space<device>>
  memref.store %b, %out[%j] : memref<?xi32, #enigma.address_space<device>>
  %unused = arith.muli %two_again, %two : i32
  // CHECK-NEXT: enigma.return
  enigma.return
}

// CHECK-LABEL: enigma.kernel @scalar_queries(
enigma.kernel @scalar_queries(%out: memref<?xi32> {enigma.name = "out"}) {
  // CHECK-COUNT-1: enigma.thread_index_in_threadgroup
  // CHECK-NOT: enigma.thread_index_in_threadgroup
  // CHECK: enigma.threads_per_simdgroup
  // CHECK-NOT: enigma.threads_per_simdgroup
  // CHECK: enigma.return
  %a = enigma.thread_index_in_threadgroup
  %b = enigma.thread_index_in_threadgroup
  %s1 = enigma.threads_per_simdgroup
  %s2 = enigma.threads_per_simdgroup
  %ab = arith.addi %a, %b : i32
  %ss = arith.addi %s1, %s2 : i32
  %v = arith.addi %ab, %ss : i32
  %c0 = arith.constant 0 : index
  memref.store %v, %out[%c0] : memref<?xi32>
  enigma.return
}

// Queries whose results are unused disappear (they are pure); barriers stay.
// CHECK-LABEL: enigma.kernel @dead(
// CHECK-NEXT: enigma.barrier <threadgroup>
// CHECK-NEXT: enigma.barrier <threadgroup>
// CHECK-NEXT: enigma.simd_barrier <none>
// CHECK-NEXT: enigma.return
enigma.kernel @dead() {
  %a = enigma.threads_per_grid <x>
  enigma.barrier <threadgroup>
  %b = enigma.simdgroups_per_threadgroup
  enigma.barrier <threadgroup>
  enigma.simd_barrier <none>
  enigma.return
}

// Arith ops the emitters do not print (ceildivsi, maxsi expansion, ...) are
// expanded into ones they do.
// CHECK-LABEL: enigma.kernel @expand(
// CHECK-NOT: arith.ceildivsi
// CHECK-NOT: arith.floordivsi
// CHECK: enigma.return
enigma.kernel @expand(%out: memref<?xi32> {enigma.name = "out"}, %n: i32 {enigma.name = "n"}) {
  %tid = enigma.thread_position_in_grid <x>
  %q = arith.ceildivsi %tid, %n : i32
  %r = arith.floordivsi %q, %n : i32
  %c0 = arith.constant 0 : index
  memref.store %r, %out[%c0] : memref<?xi32>
  enigma.return
}
