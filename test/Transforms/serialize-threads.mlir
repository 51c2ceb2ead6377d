// RUN: enigma-opt %s --enigma-serialize-threads | FileCheck %s
// RUN: enigma-opt %s --enigma-serialize-threads --enigma-serialize-threads | FileCheck %s

// The CPU backend's form of Metal's execution model: the body runs once per
// threadgroup, its threads one after another in enigma.thread_loop ops cut
// at barriers and simdgroup functions. A second run leaves a marked kernel
// alone.

// A barrier and a simdgroup function cut the body into two thread loops;
// values live across a cut (the index, the loaded value) go through
// per-thread arrays indexed by the thread; simd_sum becomes a lanes_call
// over the arrays, for every simdgroup of the group.
// CHECK-LABEL: enigma.kernel @split(
// CHECK-SAME: attributes {enigma.serialized_threads}
// CHECK-DAG: %[[SUM:.*]] = memref.alloca() : memref<1024xf32, #enigma.address_space<thread>>
// CHECK-DAG: %[[IDX:.*]] = memref.alloca() : memref<1024xindex, #enigma.address_space<thread>>
// CHECK-DAG: %[[X:.*]] = memref.alloca() : memref<1024xf32, #enigma.address_space<thread>>
// CHECK: enigma.thread_loop {
// CHECK: %[[T:.*]] = enigma.thread_index_in_threadgroup
// CHECK: %[[L:.*]] = arith.index_castui %[[T]]
// CHECK: %[[I:.*]] = arith.index_castui
// CHECK: memref.store %[[I]], %[[IDX]][%[[L]]]
// CHECK: %[[V:.*]] = memref.load %{{.*}}[%[[I]]]
// CHECK: memref.store %[[V]], %[[X]][%[[L]]]
// CHECK: }
// CHECK-NEXT: enigma.barrier <threadgroup>
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: %[[SGS:.*]] = enigma.simdgroups_per_threadgroup
// CHECK: enigma.lanes_call "simd_sum"(%[[X]], %[[SUM]]) threads %{{.*}} simdgroups %[[ZERO]] to %[[SGS]]
// CHECK: enigma.thread_loop {
// CHECK: %[[J:.*]] = memref.load %[[IDX]]
// CHECK: %[[S:.*]] = memref.load %[[SUM]][
// CHECK: memref.store %[[S]], %{{.*}}[%[[J]]]
// CHECK: }
// CHECK-NEXT: enigma.return
enigma.kernel @split(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
  enigma.barrier <threadgroup>
  %s = enigma.simd_sum %x : f32
  memref.store %s, %O[%i] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// Without cut points the whole body is one thread loop and nothing spills.
// CHECK-LABEL: enigma.kernel @plain(
// CHECK-SAME: attributes {enigma.serialized_threads}
// CHECK-NOT: memref.alloca
// CHECK: enigma.thread_loop {
// CHECK-NEXT: enigma.thread_position_in_grid <x>
// CHECK: arith.addf
// CHECK: memref.store
// CHECK-NEXT: }
// CHECK-NEXT: enigma.return
enigma.kernel @plain(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
  %y = arith.addf %x, %x : f32
  memref.store %y, %A[%i] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// A loop with uniform bounds around a barrier runs once per group; the value
// it carries lives in a per-thread array, written before the loop and by the
// last thread loop of each iteration.
// CHECK-LABEL: enigma.kernel @carried(
// CHECK: %[[ACC:.*]] = memref.alloca() : memref<1024xf32, #enigma.address_space<thread>>
// CHECK: enigma.thread_loop {
// CHECK: memref.store %{{.*}}, %[[ACC]]
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: enigma.thread_loop {
// CHECK: enigma.barrier <device>
// CHECK: enigma.thread_loop {
// CHECK: memref.store %{{.*}}, %[[ACC]]
enigma.kernel @carried(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "i32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %ub = arith.index_castui %n : i32 to index
  %r = scf.for %k = %c0 to %ub step %c1 iter_args(%acc = %zero) -> (f32) {
    %x = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
    enigma.barrier <device>
    %y = arith.addf %acc, %x : f32
    scf.yield %y : f32
  }
  memref.store %r, %A[%i] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// A simdgroup function's result differs between simdgroups: what is computed
// from it stays per thread, in the thread loop after the call (never read
// from lane 0 at group level).
// CHECK-LABEL: enigma.kernel @use_of_simd_result(
// CHECK: enigma.lanes_call "simd_sum"(%{{.*}}, %[[SUM:[^)]*]]) threads
// CHECK-NOT: memref.load
// CHECK: enigma.thread_loop {
// CHECK: %[[S:.*]] = memref.load %[[SUM]][
// CHECK: arith.mulf %[[S]]
// CHECK: }
// CHECK-NEXT: enigma.return
enigma.kernel @use_of_simd_result(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
  %s = enigma.simd_sum %x : f32
  %half = arith.constant 0.5 : f32
  %y = arith.mulf %s, %half : f32
  memref.store %y, %A[%i] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// A while loop holding a barrier runs once per group (its test computed by
// every thread and read from the first): what its condition region and its
// body receive live in per-thread arrays, and the loop carries nothing.
// CHECK-LABEL: enigma.kernel @uniform_while(
// CHECK-DAG: %[[CND:.*]] = memref.alloca() : memref<1024xi1, #enigma.address_space<thread>>
// CHECK-DAG: %[[BEF:.*]] = memref.alloca() : memref<1024xi32, #enigma.address_space<thread>>
// CHECK-DAG: %[[AFT:.*]] = memref.alloca() : memref<1024xi32, #enigma.address_space<thread>>
// CHECK: enigma.thread_loop {
// CHECK: memref.store %{{.*}}, %[[BEF]]
// CHECK: scf.while : () -> () {
// CHECK: enigma.thread_loop {
// CHECK: memref.load %[[BEF]]
// CHECK: arith.cmpi ult
// CHECK: memref.store %{{.*}}, %[[CND]]
// CHECK: memref.store %{{.*}}, %[[AFT]]
// CHECK: }
// CHECK: %[[C:.*]] = memref.load %[[CND]][%{{.*}}]
// CHECK-NEXT: scf.condition(%[[C]])
// CHECK: } do {
// CHECK: enigma.barrier <device>
// CHECK: enigma.thread_loop {
// CHECK: memref.load %[[AFT]]
// CHECK: memref.store %{{.*}}, %[[BEF]]
// CHECK: scf.yield
// CHECK: enigma.thread_loop {
// CHECK: memref.load %[[AFT]]
enigma.kernel @uniform_while(
    %A: memref<?xi32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "u32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = scf.while (%k = %c0) : (i32) -> i32 {
    %more = arith.cmpi ult, %k, %n : i32
    scf.condition(%more) %k : i32
  } do {
  ^bb0(%j: i32):
    enigma.barrier <device>
    %next = arith.addi %j, %c1 : i32
    scf.yield %next : i32
  }
  memref.store %r, %A[%i] : memref<?xi32, #enigma.address_space<device>>
  enigma.return
}
