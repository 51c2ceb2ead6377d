// RUN: enigma-opt %s --enigma-bounds-check | FileCheck %s
// RUN: enigma-opt %s --enigma-bounds-check | enigma-translate --enigma-to-cpp | FileCheck %s --check-prefix=CPP
// RUN: enigma-opt %s --enigma-bounds-check | enigma-translate --enigma-to-msl -o %t.metal && %check_msl %t.metal

// Bounds-checked mode: every access is guarded by a check of its index
// against the buffer's element count (a hidden u64 parameter) or the
// threadgroup array's static size; the failing branch records the first
// violation in the hidden record buffer and a skipped load yields zero.

// CHECK-LABEL: enigma.kernel @k(
// CHECK-SAME: %A: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "A"}
// CHECK-SAME: %C: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "C"}
// CHECK-SAME: i64 {enigma.bounds_size_of = 0 : i32, enigma.dtype = "u64", enigma.name = "enigma_bounds_size_A"}
// CHECK-SAME: i64 {enigma.bounds_size_of = 1 : i32, enigma.dtype = "u64", enigma.name = "enigma_bounds_size_C"}
// CHECK-SAME: memref<?xi32, #enigma.address_space<device>> {enigma.bounds_record, enigma.dtype = "u32", enigma.name = "enigma_bounds_record"}
// CHECK-SAME: attributes {enigma.bounds_sites = [
// CHECK-SAME: {access = "load", buffer = "A", extent = 1 : i32, location = "k.py:3", param = 0 : i32, size = 0 : i64}
// CHECK-SAME: {access = "store", buffer = "threadgroup array (f32[32] allocated at k.py:2)", extent = 1 : i32, location = "k.py:4", param = -1 : i32, size = 32 : i64}
// CHECK-SAME: {access = "atomic_rmw", buffer = "C", extent = 1 : i32, location = "k.py:5", param = 1 : i32, size = 0 : i64}
// CHECK-SAME: {access = "store", buffer = "C", extent = 1 : i32, location = "k.py:6", param = 1 : i32, size = 0 : i64}

// The load of A: checked against A's count, zero when out of bounds.
// CHECK: %[[N:.*]] = arith.index_castui %enigma_bounds_size_A{{.*}} : i64 to index
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[I:.*]], %[[N]] : index
// CHECK: %[[V:.*]] = scf.if %[[OK]] -> (f32) {
// CHECK:   %[[L:.*]] = memref.load %A[%[[I]]]
// CHECK:   scf.yield %[[L]] : f32
// CHECK: } else {
// CHECK:   %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:   %[[CLAIM:.*]] = enigma.atomic_rmw or %enigma_bounds_record[%{{.*}}], %{{.*}} relaxed
// CHECK:   enigma.atomic_rmw add %enigma_bounds_record
// CHECK:   %[[FIRST:.*]] = arith.cmpi eq, %[[CLAIM]], %{{.*}} : i32
// CHECK:   scf.if %[[FIRST]] {
// CHECK:     memref.store %{{.*}}, %enigma_bounds_record
// CHECK:     arith.index_cast %[[I]] : index to i64
// CHECK:     enigma.thread_position_in_grid <x>
// CHECK:     enigma.thread_position_in_grid <y>
// CHECK:     enigma.thread_position_in_grid <z>
// CHECK:   }
// CHECK:   scf.yield %[[Z]] : f32
// The threadgroup store: checked against the static size 32.
// CHECK: %[[S:.*]] = arith.constant 32 : index
// CHECK: arith.cmpi ult, %{{.*}}, %[[S]] : index
// CHECK: scf.if
// CHECK: memref.store %[[V]], %[[T:.*]][
// The atomic returns its old value through the if.
// CHECK: scf.if %{{.*}} -> (f32)
// CHECK: enigma.atomic_rmw add %C
// The store of C.
// CHECK: arith.index_castui %enigma_bounds_size_C
// CHECK: memref.store %{{.*}}, %C[
// CHECK: enigma.return

// The host C++ reads the hidden parameters like any other.
// CPP: const ulong enigma_bounds_size_A_ = *(const ulong *)enigma_args[2];
// CPP: uint *ENIGMA_CPU_RESTRICT enigma_bounds_record_ = (uint *)enigma_args[4];
// CPP: atomic_fetch_or_explicit(

enigma.kernel @k(%A: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "A"},
                 %C: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "C"}) {
  %0 = enigma.thread_position_in_grid <x>
  %1 = arith.index_castui %0 : i32 to index
  %t = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<32xf32, #enigma.address_space<threadgroup>> loc("k.py":2:0)
  %2 = memref.load %A[%1] : memref<?xf32, #enigma.address_space<device>> loc("k.py":3:0)
  memref.store %2, %t[%1] : memref<32xf32, #enigma.address_space<threadgroup>> loc("k.py":4:0)
  %3 = enigma.atomic_rmw add %C[%1], %2 relaxed : memref<?xf32, #enigma.address_space<device>> loc("k.py":5:0)
  memref.store %3, %C[%1] : memref<?xf32, #enigma.address_space<device>> loc("k.py":6:0)
  enigma.return
}

