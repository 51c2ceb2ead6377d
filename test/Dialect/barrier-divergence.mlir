// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// Barriers must be reached by every thread of their group: the verifier
// rejects one under control flow whose condition or bounds come from a
// thread-varying query, and accepts uniform control flow.

enigma.kernel @if_on_thread_position(%n: i32 {enigma.name = "n"}) {
  %tid = enigma.thread_position_in_grid <x>
  %c = arith.cmpi ult, %tid, %n : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{'enigma.barrier' op is under control flow that depends on the thread's position; every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// -----

// The dependence goes through arithmetic and an index cast.
enigma.kernel @if_on_derived_value() {
  %tid = enigma.thread_position_in_threadgroup <y>
  %i = arith.index_castui %tid : i32 to index
  %two = arith.constant 2 : index
  %r = arith.remui %i, %two : index
  %zero = arith.constant 0 : index
  %c = arith.cmpi eq, %r, %zero : index
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
  } else {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <device>
  }
  enigma.return
}

// -----

enigma.kernel @for_bound_on_thread_index() {
  %lid = enigma.thread_index_in_threadgroup
  %ub = arith.index_castui %lid : i32 to index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  // expected-note @+1 {{divergent control flow is here}}
  scf.for %i = %c0 to %ub step %c1 {
    // expected-error @+1 {{'enigma.barrier' op is under control flow that depends on the thread's position}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// -----

// The innermost divergent construct is the one the note points at, even when
// the barrier sits in a uniform if inside it.
enigma.kernel @nested(%flag: i1 {enigma.name = "flag"}) {
  %lane = enigma.thread_index_in_simdgroup
  %c0 = arith.constant 0 : i32
  %c4 = arith.constant 4 : i32
  %c1 = arith.constant 1 : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.for %i = %lane to %c4 step %c1 : i32 {
    scf.if %flag {
      // expected-error @+1 {{every thread of the threadgroup must reach it}}
      enigma.barrier <none>
    }
  }
  enigma.return
}

// -----

// A loop-carried value that picks up the thread position diverges.
enigma.kernel @carried_value() {
  %tid = enigma.thread_position_in_grid <x>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0 : i32
  %r = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %z) -> (i32) {
    %next = arith.addi %acc, %tid : i32
    scf.yield %next : i32
  }
  %c = arith.cmpi eq, %r, %z : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// -----

// A value loaded at a thread-varying index varies too.
enigma.kernel @loaded_at_thread_index(%a: memref<?xi32, #enigma.address_space<device>> {enigma.name = "a"}) {
  %tid = enigma.thread_position_in_threadgroup <x>
  %i = arith.index_castui %tid : i32 to index
  %v = memref.load %a[%i] : memref<?xi32, #enigma.address_space<device>>
  %z = arith.constant 0 : i32
  %c = arith.cmpi ne, %v, %z : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <device | threadgroup>
  }
  enigma.return
}

// -----

// The simdgroup index differs between the simdgroups of a threadgroup.
enigma.kernel @threadgroup_barrier_on_simdgroup_index() {
  %sg = enigma.simdgroup_index_in_threadgroup
  %z = arith.constant 0 : i32
  %c = arith.cmpi eq, %sg, %z : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// -----

enigma.kernel @simd_barrier_on_lane() {
  %lane = enigma.thread_index_in_simdgroup
  %z = arith.constant 0 : i32
  %c = arith.cmpi eq, %lane, %z : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{'enigma.simd_barrier' op is under control flow that depends on the thread's position; every thread of the simdgroup must reach it}}
    enigma.simd_barrier <none>
  }
  enigma.return
}

// -----

// A while loop whose condition depends on the thread.
enigma.kernel @while_on_thread() {
  %tid = enigma.thread_position_in_grid <x>
  %z = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  // expected-note @+1 {{divergent control flow is here}}
  %r = scf.while (%x = %z) : (i32) -> i32 {
    %c = arith.cmpi ult, %x, %tid : i32
    scf.condition(%c) %x : i32
  } do {
  ^bb0(%y: i32):
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
    %n = arith.addi %y, %one : i32
    scf.yield %n : i32
  }
  enigma.return
}

// -----

// A while loop whose carried value picks up the thread position in its body
// diverges after the first iteration, even though its initial value and
// its condition look uniform.
enigma.kernel @while_carried_from_body() {
  %tid = enigma.thread_position_in_grid <x>
  %z = arith.constant 0 : i32
  %ten = arith.constant 10 : i32
  // expected-note @+1 {{divergent control flow is here}}
  %r = scf.while (%x = %z) : (i32) -> i32 {
    %c = arith.cmpi ult, %x, %ten : i32
    scf.condition(%c) %x : i32
  } do {
  ^bb0(%y: i32):
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
    %n = arith.addi %y, %tid : i32
    scf.yield %n : i32
  }
  enigma.return
}

// -----

// The result of a while loop is what its condition forwards on exit.
enigma.kernel @while_result() {
  %lid = enigma.thread_position_in_threadgroup <x>
  %z = arith.constant 0 : i32
  %ten = arith.constant 10 : i32
  %r = scf.while (%x = %z) : (i32) -> i32 {
    %c = arith.cmpi ult, %x, %ten : i32
    %f = arith.addi %x, %lid : i32
    scf.condition(%c) %f : i32
  } do {
  ^bb0(%y: i32):
    scf.yield %ten : i32
  }
  %c = arith.cmpi eq, %r, %z : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}
