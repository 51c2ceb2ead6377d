// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// scf.while prints as `while (true) { <condition>; if (!c) break; <body> }`
// with one variable per carried value.

// The condition forwards its own arguments (what enigma.while_ builds): the
// results, the condition's and the body's arguments share one variable.
// CHECK-LABEL: enigma_kernel_count(
// CHECK: uint [[I:v[0-9]+]] = 0u;
// CHECK-NEXT: while (true) {
// CHECK-NEXT: bool [[C:v[0-9]+]] = [[I]] < n;
// CHECK-NEXT: if (![[C]]) break;
// CHECK-NEXT: uint [[N:v[0-9]+]] = [[I]] + 1u;
// CHECK-NEXT: [[I]] = [[N]];
// CHECK-NEXT: }
// CHECK-NEXT: out[0ul] = [[I]];
enigma.kernel @count(%out: memref<?xi32> {enigma.name = "out"},
                     %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r = scf.while (%i = %c0) : (i32) -> i32 {
    %c = arith.cmpi ult, %i, %n : i32
    scf.condition(%c) %i : i32
  } do {
  ^bb0(%j: i32):
    %next = arith.addi %j, %c1 : i32
    scf.yield %next : i32
  }
  %z = arith.constant 0 : index
  memref.store %r, %out[%z] : memref<?xi32>
  enigma.return
}

// Two carried values swapped by the body: all yielded values are read
// before any variable is written.
// CHECK-LABEL: enigma_kernel_swap(
// CHECK: float [[A:v[0-9]+]] = 1.0f;
// CHECK-NEXT: float [[B:v[0-9]+]] = 2.0f;
// CHECK-NEXT: while (true) {
// CHECK-NEXT: bool [[C:v[0-9]+]] = [[A]] < 100.0f;
// CHECK-NEXT: if (![[C]]) break;
// CHECK-NEXT: float [[S:v[0-9]+]] = [[A]] + [[B]];
// CHECK-NEXT: {
// CHECK-NEXT: float enigma_y0 = [[B]];
// CHECK-NEXT: float enigma_y1 = [[S]];
// CHECK-NEXT: [[A]] = enigma_y0;
// CHECK-NEXT: [[B]] = enigma_y1;
// CHECK-NEXT: }
// CHECK-NEXT: }
enigma.kernel @swap(%out: memref<?xf32> {enigma.name = "out"}) {
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %lim = arith.constant 100.0 : f32
  %r:2 = scf.while (%a = %one, %b = %two) : (f32, f32) -> (f32, f32) {
    %c = arith.cmpf olt, %a, %lim : f32
    scf.condition(%c) %a, %b : f32, f32
  } do {
  ^bb0(%x: f32, %y: f32):
    %s = arith.addf %x, %y : f32
    scf.yield %y, %s : f32, f32
  }
  %z = arith.constant 0 : index
  memref.store %r#1, %out[%z] : memref<?xf32>
  enigma.return
}

// A condition that forwards other values than its arguments: the results get
// variables of their own, assigned before the test.
// CHECK-LABEL: enigma_kernel_forward(
// CHECK: uint [[X:v[0-9]+]] = 1u;
// CHECK-NEXT: uint [[R:v[0-9]+]];
// CHECK-NEXT: while (true) {
// CHECK-NEXT: uint [[D:v[0-9]+]] = [[X]] * 2u;
// CHECK-NEXT: bool [[C:v[0-9]+]] = [[D]] < 64u;
// CHECK-NEXT: [[R]] = [[D]];
// CHECK-NEXT: if (![[C]]) break;
// CHECK-NEXT: [[X]] = [[R]];
// CHECK-NEXT: }
// CHECK-NEXT: out[0ul] = [[R]];
enigma.kernel @forward(%out: memref<?xi32> {enigma.name = "out"}) {
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c64 = arith.constant 64 : i32
  %r = scf.while (%x = %c1) : (i32) -> i32 {
    %d = arith.muli %x, %c2 : i32
    %c = arith.cmpi ult, %d, %c64 : i32
    scf.condition(%c) %d : i32
  } do {
  ^bb0(%y: i32):
    scf.yield %y : i32
  }
  %z = arith.constant 0 : index
  memref.store %r, %out[%z] : memref<?xi32>
  enigma.return
}

// CHECK-NOT: <unnamed value>
