// RUN: enigma-opt %s --enigma-bounds-check --enigma-threadgroup-check | FileCheck %s
// RUN: enigma-opt %s --enigma-bounds-check --enigma-threadgroup-check | enigma-translate --enigma-to-cpp | FileCheck %s --check-prefix=CPP
// RUN: enigma-opt %s --enigma-bounds-check --enigma-threadgroup-check | enigma-translate --enigma-to-msl -o %t.metal && %check_msl %t.metal

// Bounds-checked mode, threadgroups with missing threads: a threadgroup
// array whose every use is an element access gets a shadow bitmap (one bit
// per element) cleared by the group's threads at the start behind a
// barrier; stores and atomics set bits, loads and atomics test them. A
// shuffle whose source lane does not exist and a simdgroup matrix op in a
// short simdgroup are recorded too. An array that a simdgroup matrix op
// reads is not tracked.

// CHECK-LABEL: enigma.kernel @k(
// CHECK-SAME: {access = "load", buffer = "threadgroup array (f32[40] allocated at k.py:1)", extent = 1 : i32, kind = "uninitialised", location = "k.py:4", param = -1 : i32, size = 40 : i64}
// CHECK-SAME: {access = "atomic_rmw", buffer = "threadgroup array (u32[8] allocated at k.py:2)", extent = 1 : i32, kind = "uninitialised", location = "k.py:5", param = -1 : i32, size = 8 : i64}
// CHECK-SAME: {access = "simd_shuffle_down", buffer = "simdgroup", extent = 1 : i32, kind = "missing_lane", location = "k.py:6", param = -1 : i32, size = 0 : i64}
// CHECK-SAME: {access = "simdgroup_matrix_load", buffer = "simdgroup", extent = 1 : i32, kind = "short_simdgroup", location = "k.py:7", param = -1 : i32, size = 0 : i64}
// CHECK-SAME: enigma.checked_threadgroups

// Two shadows (40 elements: two words; 8 elements: one), cleared first.
// CHECK: %[[S0:.*]] = enigma.threadgroup_alloc {enigma.dtype = "u32"} : memref<2xi32, #enigma.address_space<threadgroup>>
// CHECK: %[[S1:.*]] = enigma.threadgroup_alloc {enigma.dtype = "u32"} : memref<1xi32, #enigma.address_space<threadgroup>>
// CHECK: %[[LID:.*]] = enigma.thread_index_in_threadgroup
// CHECK: scf.for %[[W:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK:   enigma.atomic_store %{{.*}}, %[[S0]][%[[W]]] relaxed
// CHECK: scf.for
// CHECK:   enigma.atomic_store %{{.*}}, %[[S1]]
// CHECK: enigma.barrier <threadgroup>
// The array read by the matrix load has none.
// CHECK-NOT: memref<1xi32
// The store sets its element's bit.
// CHECK: memref.store %{{.*}}, %[[T:.*]][%[[I:.*]]] : memref<40xf32
// CHECK: %[[WORD:.*]] = arith.divui %[[I]], %{{.*}} : index
// CHECK: %[[LOW:.*]] = arith.remui %[[I]]
// CHECK: %[[BIT:.*]] = arith.shli %{{.*}}, %{{.*}} : i32
// CHECK: enigma.atomic_rmw or %[[S0]][%[[WORD]]], %[[BIT]] relaxed
// The load tests it first.
// CHECK: %[[BITS:.*]] = enigma.atomic_load %[[S0]]
// CHECK: %[[SET:.*]] = arith.andi %[[BITS]]
// CHECK: %[[UNSET:.*]] = arith.cmpi eq, %[[SET]]
// CHECK: scf.if %[[UNSET]] {
// CHECK: } {enigma.check}
// CHECK: memref.load %[[T]]
// The atomic reads (tested before) and writes (marked after).
// CHECK: enigma.atomic_load %[[S1]]
// CHECK: enigma.atomic_rmw add %{{.*}} : memref<8xi32
// CHECK: enigma.atomic_rmw or %[[S1]]
// The shuffle: its source lane me + 4 (when below 32) must exist.
// CHECK: arith.cmpi uge
// CHECK: scf.if
// CHECK: } {enigma.check}
// CHECK: enigma.simd_shuffle_down
// The matrix load: reported by the first lane of a short simdgroup.
// CHECK: arith.minui
// CHECK: scf.if
// CHECK: } {enigma.check}
// CHECK: enigma.simdgroup_matrix_load

// CPP: atomic_fetch_or_explicit(

enigma.kernel @k(%A: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "A"},
                 %C: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "C"}) {
  %t = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<40xf32, #enigma.address_space<threadgroup>> loc("k.py":1:0)
  %h = enigma.threadgroup_alloc {enigma.dtype = "u32"} : memref<8xi32, #enigma.address_space<threadgroup>> loc("k.py":2:0)
  %m = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<64xf32, #enigma.address_space<threadgroup>> loc("k.py":3:0)
  %lid = enigma.thread_index_in_threadgroup
  %i = arith.index_castui %lid : i32 to index
  %gid = enigma.thread_position_in_grid <x>
  %g = arith.index_castui %gid : i32 to index
  %a = memref.load %A[%g] : memref<?xf32, #enigma.address_space<device>>
  memref.store %a, %t[%i] : memref<40xf32, #enigma.address_space<threadgroup>>
  enigma.barrier <threadgroup>
  %v = memref.load %t[%i] : memref<40xf32, #enigma.address_space<threadgroup>> loc("k.py":4:0)
  %one = arith.constant 1 : i32
  %c0 = arith.constant 0 : index
  %old = enigma.atomic_rmw add %h[%c0], %one relaxed : memref<8xi32, #enigma.address_space<threadgroup>> loc("k.py":5:0)
  %c4 = arith.constant 4 : i32
  %s = enigma.simd_shuffle_down %v, %c4 : f32 loc("k.py":6:0)
  memref.store %s, %C[%g] : memref<?xf32, #enigma.address_space<device>>
  %c0i = arith.constant 0 : i32
  %c8 = arith.constant 8 : i32
  %mat = enigma.simdgroup_matrix_load %m[%c0i], %c8 : memref<64xf32, #enigma.address_space<threadgroup>> -> vector<2xf32> loc("k.py":7:0)
  enigma.simdgroup_matrix_store %mat, %A[%c0i], %c8 : vector<2xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
