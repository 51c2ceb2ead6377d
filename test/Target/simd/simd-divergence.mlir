// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// simd / quad functions must be reached by every lane of their simdgroup:
// the verifier rejects one under control flow that depends on the lane, and
// accepts control flow that is uniform per simdgroup.

enigma.kernel @if_on_lane(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) {
  %lane = enigma.thread_index_in_simdgroup
  %c16 = arith.constant 16 : i32
  %c = arith.cmpi ult, %lane, %c16 : i32
  %i = arith.index_castui %lane : i32 to index
  %x = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{'enigma.simd_sum' op is under control flow that depends on the thread's lane; every lane of the simdgroup must reach it}}
    %s = enigma.simd_sum %x : f32
  }
  enigma.return
}

// -----

enigma.kernel @loop_on_thread_index() {
  %lid = enigma.thread_index_in_threadgroup
  %lb = arith.constant 0 : index
  %ub = arith.index_castui %lid : i32 to index
  %one = arith.constant 1 : index
  %c1 = arith.constant 1 : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.for %k = %lb to %ub step %one {
    // expected-error @+1 {{every lane of the simdgroup must reach it}}
    %s = enigma.quad_shuffle_xor %c1, %c1 : i32
  }
  enigma.return
}

// -----

// The simdgroup index is the same for all lanes of a simdgroup.
enigma.kernel @if_on_simdgroup_index() {
  %sg = enigma.simdgroup_index_in_threadgroup
  %zero = arith.constant 0 : i32
  %c = arith.cmpi eq, %sg, %zero : i32
  scf.if %c {
    %s = enigma.simd_max %sg : i32
  }
  enigma.return
}

// -----

enigma.kernel @scan_of_constant() {
  %c1 = arith.constant 1.0 : f32
  %s = enigma.simd_prefix_inclusive_product %c1 : f32
  enigma.return
}

// -----

enigma.kernel @bitwise_on_float() {
  %c1 = arith.constant 1.0 : f32
  // expected-error @+1 {{'enigma.simd_and' op operand #0 must be integer scalar}}
  %s = enigma.simd_and %c1 : f32
  enigma.return
}

// -----

enigma.kernel @signed_float() {
  %c1 = arith.constant 1.0 : f32
  // expected-error @+1 {{'is_signed' applies to integer operands only}}
  %s = enigma.simd_min %c1 {is_signed} : f32
  enigma.return
}

// -----

enigma.kernel @sum_of_bool() {
  %t = arith.constant true
  // expected-error @+1 {{'enigma.quad_sum' op operand #0 must be integer or float scalar}}
  %s = enigma.quad_sum %t : i1
  enigma.return
}
