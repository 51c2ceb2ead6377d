// RUN: enigma-opt %s --enigma-optimize | FileCheck %s

// fmin, fmax and atan2 of constants stay calls: MLIR 19's folders for
// arith.maxnumf / minnumf and math.atan2 give NaN where Metal (and every
// backend at run time) gives a number, so Enigma uses its own ops, which
// do not fold.
// CHECK-LABEL: enigma.kernel @special_values
// CHECK-DAG: enigma.fmax %{{.*}}, %{{.*}} : f32
// CHECK-DAG: enigma.fmin %{{.*}}, %{{.*}} : f32
// CHECK-DAG: enigma.atan2 %{{.*}}, %{{.*}} : f32
enigma.kernel @special_values(%out: memref<?xf32, #enigma.address_space<device>> {enigma.dtype = "f32", enigma.name = "out"}) {
  %zero = arith.constant 0.0 : f32
  %nan = arith.constant 0x7FC00000 : f32
  %inf = arith.constant 0x7F800000 : f32
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %a = enigma.fmax %zero, %nan : f32
  %b = enigma.fmin %nan, %inf : f32
  %c = enigma.atan2 %zero, %zero : f32
  memref.store %a, %out[%c0] : memref<?xf32, #enigma.address_space<device>>
  memref.store %b, %out[%c1] : memref<?xf32, #enigma.address_space<device>>
  memref.store %c, %out[%c2] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
