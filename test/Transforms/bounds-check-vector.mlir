// RUN: enigma-opt %s --enigma-bounds-check | FileCheck %s
// RUN: enigma-opt %s --enigma-bounds-check | enigma-translate --enigma-to-msl -o %t.metal && %check_msl %t.metal

// A vector load of 4 lanes from a scalar buffer must fit whole:
// index < size and size - index >= 4.
// CHECK-LABEL: enigma.kernel @v(
// CHECK-SAME: {access = "vector_load", buffer = "A", extent = 4 : i32, location = "v.py:9", param = 0 : i32, size = 0 : i64}
// CHECK: %[[N:.*]] = arith.index_castui %enigma_bounds_size_A{{.*}} : i64 to index
// CHECK: %[[LT:.*]] = arith.cmpi ult, %[[I:.*]], %[[N]] : index
// CHECK: %[[ROOM:.*]] = arith.subi %[[N]], %[[I]] : index
// CHECK: %[[FOUR:.*]] = arith.constant 4 : index
// CHECK: %[[FITS:.*]] = arith.cmpi uge, %[[ROOM]], %[[FOUR]] : index
// CHECK: %[[OK:.*]] = arith.andi %[[LT]], %[[FITS]] : i1
// CHECK: scf.if %[[OK]] -> (vector<4xf32>) {
// CHECK:   vector.load %A[%[[I]]]
// CHECK: } else {
// CHECK:   arith.constant dense<0.000000e+00> : vector<4xf32>
enigma.kernel @v(%A: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "A"},
                 %C: memref<?xvector<4xf32>, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "C"}) {
  %0 = enigma.thread_position_in_grid <x>
  %1 = arith.index_castui %0 : i32 to index
  %2 = vector.load %A[%1] : memref<?xf32, #enigma.address_space<device>>, vector<4xf32> loc("v.py":9:0)
  memref.store %2, %C[%1] : memref<?xvector<4xf32>, #enigma.address_space<device>> loc("v.py":10:0)
  enigma.return
}
