// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal

// load_if: the index is selected before the load (element 0 when the mask
// is false), then the value; no branch.
// CHECK-LABEL: enigma_kernel_load_if(
// CHECK: bool [[M:v[0-9]+]] = [[T:.*]] < n;
// CHECK-NEXT: uint [[I:v[0-9]+]] = [[M]] ? [[T]] : 0u;
// CHECK-NEXT: float [[L:v[0-9]+]] = a{{\[}}[[I]]];
// CHECK-NEXT: float [[V:v[0-9]+]] = [[M]] ? [[L]] : -7.0f;
// CHECK-NOT: if (
enigma.kernel @load_if(%a: memref<?xf32> {enigma.name = "a"},
                       %n: i32 {enigma.name = "n", enigma.dtype = "u32"},
                       %b: memref<?xf32> {enigma.name = "b"}) {
  %t = enigma.thread_position_in_grid <x>
  %m = arith.cmpi ult, %t, %n : i32
  %c0 = arith.constant 0 : i32
  %d = arith.constant -7.0 : f32
  %safe = arith.select %m, %t, %c0 : i32
  %i = arith.index_castui %safe : i32 to index
  %l = memref.load %a[%i] : memref<?xf32>
  %v = arith.select %m, %l, %d : f32
  %j = arith.index_castui %t : i32 to index
  memref.store %v, %b[%j] : memref<?xf32>
  enigma.return
}
