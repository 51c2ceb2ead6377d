// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// scf.if: a guarded statement, a two-armed one, and ifs with results, which
// become variables declared before the if and assigned in each arm.

// CHECK-LABEL: enigma_kernel_guard(
// CHECK: bool [[C:v[0-9]+]] = [[TID:.*]] < n;
// CHECK-NEXT: if ([[C]]) {
// The CPU's subscripts read the thread's position in 64 bits (enigma_x).
// CHECK-NEXT: float [[V:v[0-9]+]] = a{{\[(thread_position_in_grid.x|\(blockIdx.x \* blockDim.x \+ threadIdx.x\)|enigma_x)\]}};
// CHECK-NEXT: b{{\[(thread_position_in_grid.x|\(blockIdx.x \* blockDim.x \+ threadIdx.x\)|enigma_x)\]}} = [[V]];
// CHECK-NEXT: }
// CHECK-NOT: else
// CHECK: {{^}}}
enigma.kernel @guard(%a: memref<?xf32> {enigma.name = "a"}, %b: memref<?xf32> {enigma.name = "b"},
                     %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %c = arith.cmpi ult, %tid, %n : i32
  scf.if %c {
    %i = arith.index_castui %tid : i32 to index
    %v = memref.load %a[%i] : memref<?xf32>
    memref.store %v, %b[%i] : memref<?xf32>
  }
  enigma.return
}

// CHECK-LABEL: enigma_kernel_two_arms(
// CHECK: if (flag) {
// CHECK-NEXT: a[0ul] = 1.0f;
// CHECK-NEXT: } else {
// CHECK-NEXT: a[0ul] = 2.0f;
// CHECK-NEXT: }
enigma.kernel @two_arms(%a: memref<?xf32> {enigma.name = "a"}, %flag: i1 {enigma.name = "flag", enigma.dtype = "b1"}) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %two = arith.constant 2.0 : f32
  scf.if %flag {
    memref.store %one, %a[%c0] : memref<?xf32>
  } else {
    memref.store %two, %a[%c0] : memref<?xf32>
  }
  enigma.return
}

// CHECK-LABEL: enigma_kernel_with_results(
// CHECK: float [[R0:v[0-9]+]];
// CHECK-NEXT: uint [[R1:v[0-9]+]];
// CHECK-NEXT: if (flag) {
// CHECK-NEXT: float [[X:v[0-9]+]] = a[0ul];
// CHECK-NEXT: float [[T0:t[0-9]+]] = [[X]];
// CHECK-NEXT: uint [[T1:t[0-9]+]] = 7u;
// CHECK-NEXT: [[R0]] = [[T0]];
// CHECK-NEXT: [[R1]] = [[T1]];
// CHECK-NEXT: } else {
// CHECK-NEXT: float [[T2:t[0-9]+]] = -0.0f;
// CHECK-NEXT: uint [[T3:t[0-9]+]] = 9u;
// CHECK-NEXT: [[R0]] = [[T2]];
// CHECK-NEXT: [[R1]] = [[T3]];
// CHECK-NEXT: }
// CHECK-NEXT: a[1ul] = [[R0]];
// CHECK-NEXT: out[0ul] = [[R1]];
enigma.kernel @with_results(%a: memref<?xf32> {enigma.name = "a"}, %out: memref<?xi32> {enigma.name = "out"},
                            %flag: i1 {enigma.name = "flag"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r:2 = scf.if %flag -> (f32, i32) {
    %x = memref.load %a[%c0] : memref<?xf32>
    %seven = arith.constant 7 : i32
    scf.yield %x, %seven : f32, i32
  } else {
    %mz = arith.constant -0.0 : f32
    %nine = arith.constant 9 : i32
    scf.yield %mz, %nine : f32, i32
  }
  memref.store %r#0, %a[%c1] : memref<?xf32>
  memref.store %r#1, %out[%c0] : memref<?xi32>
  enigma.return
}

// One result; an if nested in a loop that updates the carried value only on
// one arm (the other yields it unchanged).
// CHECK-LABEL: enigma_kernel_conditional_update(
// CHECK: uint [[ACC:v[0-9]+]] = 0u;
// CHECK-NEXT: for (ulong [[I:v[0-9]+]] = 0ul; (long)[[I]] < (long)8ul; [[I]] += 1ul) {
// CHECK-NEXT: uint [[X:v[0-9]+]] = out{{\[}}[[I]]];
// CHECK-NEXT: bool [[C:v[0-9]+]] = [[X]] != 0u;
// CHECK-NEXT: uint [[R:v[0-9]+]];
// CHECK-NEXT: if ([[C]]) {
// CHECK-NEXT: uint [[S:v[0-9]+]] = [[ACC]] + [[X]];
// CHECK-NEXT: [[R]] = [[S]];
// CHECK-NEXT: } else {
// CHECK-NEXT: [[R]] = [[ACC]];
// CHECK-NEXT: }
// CHECK-NEXT: [[ACC]] = [[R]];
// CHECK-NEXT: }
enigma.kernel @conditional_update(%out: memref<?xi32> {enigma.name = "out"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0 : i32
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (i32) {
    %x = memref.load %out[%i] : memref<?xi32>
    %c = arith.cmpi ne, %x, %zero : i32
    %n = scf.if %c -> (i32) {
      %s = arith.addi %acc, %x : i32
      scf.yield %s : i32
    } else {
      scf.yield %acc : i32
    }
    scf.yield %n : i32
  }
  memref.store %r, %out[%c0] : memref<?xi32>
  enigma.return
}

// A vector result is declared with its vector type.
// CHECK-LABEL: enigma_kernel_vector_result(
// CHECK: float4 [[R:v[0-9]+]];
// CHECK-NEXT: if (flag) {
// CHECK: [[R]] = [[D:v[0-9]+]];
// CHECK: } else {
// CHECK-NEXT: [[R]] = [[V:v[0-9]+]];
// CHECK-NEXT: }
// CHECK: a{{\[}}{{.*}}] = [[R]];
enigma.kernel @vector_result(%a: memref<?xvector<4xf32>> {enigma.name = "a"},
                             %flag: i1 {enigma.name = "flag", enigma.dtype = "b1"}) {
  %c0 = arith.constant 0 : index
  %v = memref.load %a[%c0] : memref<?xvector<4xf32>>
  %r = scf.if %flag -> (vector<4xf32>) {
    %d = arith.addf %v, %v : vector<4xf32>
    scf.yield %d : vector<4xf32>
  } else {
    scf.yield %v : vector<4xf32>
  }
  memref.store %r, %a[%c0] : memref<?xvector<4xf32>>
  enigma.return
}
