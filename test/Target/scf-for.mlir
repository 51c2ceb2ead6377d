// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefixes=CHECK,MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefixes=CHECK,CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefixes=CHECK,CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// scf.for becomes a C for loop that compares its bounds as signed integers;
// loop-carried values are variables declared before the loop and assigned
// at the end of each iteration.

// A loop without carried values, over index.
// CHECK-LABEL: enigma_kernel_plain(
// CHECK: for (ulong [[I:v[0-9]+]] = 0ul; (long)[[I]] < (long)16ul; [[I]] += 2ul) {
// CHECK-NEXT: float [[V:v[0-9]+]] = a{{\[}}[[I]]];
// CHECK-NEXT: float [[W:v[0-9]+]] = [[V]] + [[V]];
// CHECK-NEXT: a{{\[}}[[I]]] = [[W]];
// CHECK-NEXT: }
enigma.kernel @plain(%a: memref<?xf32> {enigma.name = "a"}) {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c16 = arith.constant 16 : index
  scf.for %i = %c0 to %c16 step %c2 {
    %v = memref.load %a[%i] : memref<?xf32>
    %w = arith.addf %v, %v : f32
    memref.store %w, %a[%i] : memref<?xf32>
  }
  enigma.return
}

// A loop over i32 with a bound from a parameter; negative lower bounds
// compare as signed.
// CHECK-LABEL: enigma_kernel_i32_loop(
// CHECK: for (uint [[I:v[0-9]+]] = 4294967293u; (int)[[I]] < (int)n; [[I]] += 1u) {
// CHECK-NEXT: ulong [[J:v[0-9]+]] = ((int)[[I]]) + 3ul;
// CHECK-NEXT: out{{\[}}[[J]]] = [[I]];
enigma.kernel @i32_loop(%out: memref<?xi32> {enigma.name = "out"}, %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) {
  %lb = arith.constant -3 : i32
  %c1 = arith.constant 1 : i32
  scf.for %i = %lb to %n step %c1 : i32 {
    %idx = arith.index_cast %i : i32 to index
    %c3 = arith.constant 3 : index
    %j = arith.addi %idx, %c3 : index
    memref.store %i, %out[%j] : memref<?xi32>
  }
  enigma.return
}

// One carried value: a sum.
// CHECK-LABEL: enigma_kernel_sum(
// CHECK: float [[ACC:v[0-9]+]] = 0.0f;
// CHECK-NEXT: for (ulong [[I:v[0-9]+]] = 0ul; (long)[[I]] < (long)8ul; [[I]] += 1ul) {
// CHECK-NEXT: float [[X:v[0-9]+]] = a{{\[}}[[I]]];
// CHECK-NEXT: float [[S:v[0-9]+]] = [[ACC]] + [[X]];
// CHECK-NEXT: [[ACC]] = [[S]];
// CHECK-NEXT: }
// CHECK-NEXT: a[0ul] = [[ACC]];
enigma.kernel @sum(%a: memref<?xf32> {enigma.name = "a"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
    %x = memref.load %a[%i] : memref<?xf32>
    %s = arith.addf %acc, %x : f32
    scf.yield %s : f32
  }
  memref.store %r, %a[%c0] : memref<?xf32>
  enigma.return
}

// Two carried values that swap each iteration (Fibonacci step): both yielded
// values are read before either variable is written.
// CHECK-LABEL: enigma_kernel_swap(
// CHECK: uint [[A:v[0-9]+]] = 0u;
// CHECK-NEXT: uint [[B:v[0-9]+]] = 1u;
// CHECK-NEXT: for (ulong [[I:v[0-9]+]] = 0ul; (long)[[I]] < (long)10ul; [[I]] += 1ul) {
// CHECK-NEXT: uint [[N:v[0-9]+]] = [[A]] + [[B]];
// CHECK-NEXT: uint [[T0:t[0-9]+]] = [[B]];
// CHECK-NEXT: uint [[T1:t[0-9]+]] = [[N]];
// CHECK-NEXT: [[A]] = [[T0]];
// CHECK-NEXT: [[B]] = [[T1]];
// CHECK-NEXT: }
// CHECK-NEXT: out[0ul] = [[A]];
// CHECK-NEXT: out[1ul] = [[B]];
enigma.kernel @swap(%out: memref<?xi32> {enigma.name = "out"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c10 = arith.constant 10 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %r:2 = scf.for %i = %c0 to %c10 step %c1 iter_args(%a = %zero, %b = %one) -> (i32, i32) {
    %n = arith.addi %a, %b : i32
    scf.yield %b, %n : i32, i32
  }
  memref.store %r#0, %out[%c0] : memref<?xi32>
  memref.store %r#1, %out[%c1] : memref<?xi32>
  enigma.return
}

// A pure swap (the yield just exchanges the carried values).
// CHECK-LABEL: enigma_kernel_pure_swap(
// CHECK: float [[X:v[0-9]+]] = 1.0f;
// CHECK-NEXT: float [[Y:v[0-9]+]] = 2.0f;
// CHECK-NEXT: for
// CHECK-NEXT: float [[T0:t[0-9]+]] = [[Y]];
// CHECK-NEXT: float [[T1:t[0-9]+]] = [[X]];
// CHECK-NEXT: [[X]] = [[T0]];
// CHECK-NEXT: [[Y]] = [[T1]];
// CHECK-NEXT: }
enigma.kernel @pure_swap(%out: memref<?xf32> {enigma.name = "out"}, %n: i32 {enigma.name = "n"}) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  %r:2 = scf.for %i = %c0 to %n step %c1 iter_args(%x = %one, %y = %two) -> (f32, f32) : i32 {
    scf.yield %y, %x : f32, f32
  }
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  memref.store %r#0, %out[%i0] : memref<?xf32>
  memref.store %r#1, %out[%i1] : memref<?xf32>
  enigma.return
}

// Nested loops; the inner one carries a value initialised from the outer's.
// CHECK-LABEL: enigma_kernel_nested(
// CHECK: uint [[O:v[0-9]+]] = 0u;
// CHECK-NEXT: for (ulong [[I:v[0-9]+]] = 0ul; (long)[[I]] < (long)4ul; [[I]] += 1ul) {
// CHECK-NEXT: uint [[N:v[0-9]+]] = [[O]];
// CHECK-NEXT: for (ulong [[J:v[0-9]+]] = 0ul; (long)[[J]] < (long)4ul; [[J]] += 1ul) {
// CHECK-NEXT: uint [[X:v[0-9]+]] = [[N]] + 1u;
// CHECK-NEXT: [[N]] = [[X]];
// CHECK-NEXT: }
// CHECK-NEXT: [[O]] = [[N]];
// CHECK-NEXT: }
enigma.kernel @nested(%out: memref<?xi32> {enigma.name = "out"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %zero) -> (i32) {
    %inner = scf.for %j = %c0 to %c4 step %c1 iter_args(%n = %o) -> (i32) {
      %x = arith.addi %n, %one : i32
      scf.yield %x : i32
    }
    scf.yield %inner : i32
  }
  memref.store %r, %out[%c0] : memref<?xi32>
  enigma.return
}

// MSL-NOT: <unnamed value>
// CUDA-NOT: <unnamed value>
// CPP-NOT: <unnamed value>
