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

// The condition reads a carried flag it does not forward (what the
// canonicalizer makes of an enigma.range loop with a break): the
// condition's arguments outnumber the results, and each list has its own
// variables.
// CHECK-LABEL: enigma_kernel_break_flag(
// CHECK: bool [[F:v[0-9]+]] = false;
// CHECK-NEXT: float [[S:v[0-9]+]] = 0.0f;
// CHECK-NEXT: uint [[I:v[0-9]+]] = 0u;
// CHECK-NEXT: float [[RS:v[0-9]+]];
// CHECK-NEXT: uint [[RI:v[0-9]+]];
// CHECK-NEXT: while (true) {
// CHECK-NEXT: bool [[M:v[0-9]+]] = (int)[[I]] < (int)n;
// CHECK-NEXT: bool [[NF:v[0-9]+]] = [[F]] ^ true;
// CHECK-NEXT: bool [[C:v[0-9]+]] = [[M]] & [[NF]];
// CHECK-NEXT: {
// CHECK-NEXT: float enigma_y0 = [[S]];
// CHECK-NEXT: uint enigma_y1 = [[I]];
// CHECK-NEXT: [[RS]] = enigma_y0;
// CHECK-NEXT: [[RI]] = enigma_y1;
// CHECK-NEXT: }
// CHECK-NEXT: if (![[C]]) break;
// CHECK: {
// CHECK-NEXT: bool enigma_y0 = true;
// CHECK-NEXT: float enigma_y1 = {{v[0-9]+}};
// CHECK-NEXT: uint enigma_y2 = {{v[0-9]+}};
// CHECK-NEXT: [[F]] = enigma_y0;
// CHECK-NEXT: [[S]] = enigma_y1;
// CHECK-NEXT: [[I]] = enigma_y2;
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK: = [[RS]];
enigma.kernel @break_flag(%A: memref<?xf32> {enigma.name = "A"},
                          %n: i32 {enigma.name = "n", enigma.dtype = "u32"},
                          %B: memref<?xf32> {enigma.name = "B"}) {
  %true = arith.constant true
  %false = arith.constant false
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant 0.0 : f32
  %r:2 = scf.while (%f = %false, %s = %zero, %i = %c0)
      : (i1, f32, i32) -> (f32, i32) {
    %more = arith.cmpi slt, %i, %n : i32
    %nf = arith.xori %f, %true : i1
    %c = arith.andi %more, %nf : i1
    scf.condition(%c) %s, %i : f32, i32
  } do {
  ^bb0(%s2: f32, %i2: i32):
    %k = arith.index_cast %i2 : i32 to index
    %a = memref.load %A[%k] : memref<?xf32>
    %s3 = arith.addf %s2, %a : f32
    %i3 = arith.addi %i2, %c1 : i32
    scf.yield %true, %s3, %i3 : i1, f32, i32
  }
  %z = arith.constant 0 : index
  memref.store %r#0, %B[%z] : memref<?xf32>
  enigma.return
}

// A `while` statement of the Python front end: the body and the next test
// in the condition region, an empty body region (do { ... } while (c)).
// CHECK-LABEL: enigma_kernel_do_while(
// CHECK: uint [[X:v[0-9]+]] = 27u;
// CHECK-NEXT: uint [[N:v[0-9]+]] = 0u;
// CHECK-NEXT: uint [[RX:v[0-9]+]];
// CHECK-NEXT: uint [[RN:v[0-9]+]];
// CHECK-NEXT: while (true) {
// CHECK-NEXT: uint [[H:v[0-9]+]] = {{.*}}[[X]] >> 1u{{.*}};
// CHECK-NEXT: uint [[N1:v[0-9]+]] = [[N]] + 1u;
// CHECK-NEXT: bool [[C:v[0-9]+]] = [[H]] > 1u;
// CHECK-NEXT: {
// CHECK-NEXT: uint enigma_y0 = [[H]];
// CHECK-NEXT: uint enigma_y1 = [[N1]];
// CHECK-NEXT: [[RX]] = enigma_y0;
// CHECK-NEXT: [[RN]] = enigma_y1;
// CHECK-NEXT: }
// CHECK-NEXT: if (![[C]]) break;
// CHECK-NEXT: {
// CHECK-NEXT: uint enigma_y0 = [[RX]];
// CHECK-NEXT: uint enigma_y1 = [[RN]];
// CHECK-NEXT: [[X]] = enigma_y0;
// CHECK-NEXT: [[N]] = enigma_y1;
// CHECK-NEXT: }
// CHECK-NEXT: }
// CHECK-NEXT: out[0ul] = [[RN]];
enigma.kernel @do_while(%out: memref<?xi32> {enigma.name = "out"}) {
  %c27 = arith.constant 27 : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r:2 = scf.while (%x = %c27, %n = %c0) : (i32, i32) -> (i32, i32) {
    %h = arith.shrui %x, %c1 : i32
    %n1 = arith.addi %n, %c1 : i32
    %c = arith.cmpi ugt, %h, %c1 : i32
    scf.condition(%c) %h, %n1 : i32, i32
  } do {
  ^bb0(%x2: i32, %n2: i32):
    scf.yield %x2, %n2 : i32, i32
  }
  %z = arith.constant 0 : index
  memref.store %r#1, %out[%z] : memref<?xi32>
  enigma.return
}

// CHECK-NOT: <unnamed value>
