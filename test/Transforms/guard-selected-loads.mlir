// RUN: enigma-opt %s --enigma-guard-selected-loads | FileCheck %s
// RUN: enigma-opt %s --enigma-optimize | enigma-translate --enigma-to-msl | FileCheck %s --check-prefix=MSL

!buf = memref<?xf32, #enigma.address_space<device>>

// where(0.0, a[t - 1] * 2.0, t > 0): the load and the multiply move next to
// the select and the load reads element 0 where the condition is false.
// CHECK-LABEL: enigma.kernel @true_arm
// CHECK: %[[C:.*]] = arith.cmpi ugt
// CHECK: %[[Z:.*]] = arith.constant 0 : index
// CHECK: %[[I:.*]] = arith.select %[[C]], %{{.*}}, %[[Z]] : index
// CHECK: %[[L:.*]] = memref.load %{{.*}}[%[[I]]]
// CHECK: %[[M:.*]] = arith.mulf %[[L]]
// CHECK: arith.select %[[C]], %[[M]], %{{.*}} : f32
// MSL-LABEL: enigma_kernel_true_arm(
// MSL: bool [[C:v[0-9]+]] = thread_position_in_grid.x > 0u;
// MSL-NEXT: ulong [[I:v[0-9]+]] = [[C]] ? {{.*}} : 0ul;
// MSL-NEXT: float {{v[0-9]+}} = a{{\[}}[[I]]];
enigma.kernel @true_arm(%a: !buf {enigma.name = "a", enigma.dtype = "f32"},
                        %b: !buf {enigma.name = "b", enigma.dtype = "f32"}) {
  %t = enigma.thread_position_in_grid <x>
  %c1 = arith.constant 1 : i32
  %c0 = arith.constant 0 : i32
  %two = arith.constant 2.0 : f32
  %zero = arith.constant 0.0 : f32
  %prev = arith.subi %t, %c1 : i32
  %pi = arith.index_castui %prev : i32 to index
  %l = memref.load %a[%pi] : !buf
  %m = arith.mulf %l, %two : f32
  %c = arith.cmpi ugt, %t, %c0 : i32
  %v = arith.select %c, %m, %zero : f32
  %ti = arith.index_castui %t : i32 to index
  memref.store %v, %b[%ti] : !buf
  enigma.return
}

// The false arm: element 0 where the condition is TRUE.
// CHECK-LABEL: enigma.kernel @false_arm
// CHECK: %[[C:.*]] = arith.cmpi ult
// CHECK: %[[Z:.*]] = arith.constant 0 : index
// CHECK: %[[I:.*]] = arith.select %[[C]], %[[Z]], %{{.*}} : index
// CHECK: memref.load %{{.*}}[%[[I]]]
enigma.kernel @false_arm(%a: !buf {enigma.name = "a", enigma.dtype = "f32"},
                         %n: i32 {enigma.name = "n", enigma.dtype = "u32"},
                         %b: !buf {enigma.name = "b", enigma.dtype = "f32"}) {
  %t = enigma.thread_position_in_grid <x>
  %zero = arith.constant 0.0 : f32
  %ti = arith.index_castui %t : i32 to index
  %l = memref.load %a[%ti] : !buf
  %c = arith.cmpi ult, %t, %n : i32
  %v = arith.select %c, %zero, %l : f32
  memref.store %v, %b[%ti] : !buf
  enigma.return
}

// A store between the load and the select: the load must not move.
// CHECK-LABEL: enigma.kernel @store_between
// CHECK: memref.load %{{.*}}[%[[T:.*]]] :
// CHECK-NOT: arith.select %{{.*}} : index
enigma.kernel @store_between(%a: !buf {enigma.name = "a", enigma.dtype = "f32"},
                             %b: !buf {enigma.name = "b", enigma.dtype = "f32"}) {
  %t = enigma.thread_position_in_grid <x>
  %c0 = arith.constant 0 : i32
  %zero = arith.constant 0.0 : f32
  %ti = arith.index_castui %t : i32 to index
  %l = memref.load %a[%ti] : !buf
  memref.store %zero, %a[%ti] : !buf
  %c = arith.cmpi ugt, %t, %c0 : i32
  %v = arith.select %c, %l, %zero : f32
  memref.store %v, %b[%ti] : !buf
  enigma.return
}

// A load with a second use is not discarded by the select: untouched.
// CHECK-LABEL: enigma.kernel @second_use
// CHECK-NOT: arith.select %{{.*}} : index
enigma.kernel @second_use(%a: !buf {enigma.name = "a", enigma.dtype = "f32"},
                          %b: !buf {enigma.name = "b", enigma.dtype = "f32"}) {
  %t = enigma.thread_position_in_grid <x>
  %c0 = arith.constant 0 : i32
  %zero = arith.constant 0.0 : f32
  %ti = arith.index_castui %t : i32 to index
  %l = memref.load %a[%ti] : !buf
  %c = arith.cmpi ugt, %t, %c0 : i32
  %v = arith.select %c, %l, %zero : f32
  %w = arith.addf %v, %l : f32
  memref.store %w, %b[%ti] : !buf
  enigma.return
}

// A simdgroup function hands each lane's value to the other lanes: a load
// behind simd_min stays as it is, since lanes that do not take the arm still
// contribute to the lanes that do.
// CHECK-LABEL: enigma.kernel @through_simd
// CHECK: %[[I:.*]] = arith.index_castui
// CHECK-NEXT: %[[L:.*]] = memref.load %{{.*}}[%[[I]]]
// CHECK-NEXT: enigma.simd_min %[[L]]
// CHECK-NOT: arith.select %{{.*}} : index
enigma.kernel @through_simd(%a: !buf {enigma.name = "a", enigma.dtype = "f32"},
                            %b: !buf {enigma.name = "b", enigma.dtype = "f32"}) {
  %t = enigma.thread_position_in_grid <x>
  %c0 = arith.constant 0 : i32
  %zero = arith.constant 0.0 : f32
  %i = arith.index_castui %t : i32 to index
  %l = memref.load %a[%i] : !buf
  %m = enigma.simd_min %l : f32
  %c = arith.cmpi ugt, %t, %c0 : i32
  %s = arith.select %c, %m, %zero : f32
  memref.store %s, %b[%i] : !buf
  enigma.return
}
