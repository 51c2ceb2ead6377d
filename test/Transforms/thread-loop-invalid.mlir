// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// Thread loops belong to the serialized form only.
enigma.kernel @unmarked() {
  // expected-error @+1 {{'enigma.thread_loop' op must be in a kernel marked enigma.serialized_threads}}
  enigma.thread_loop {
  }
  enigma.return
}

// -----

enigma.kernel @nested() attributes {enigma.serialized_threads} {
  enigma.thread_loop {
    // expected-error @+1 {{'enigma.thread_loop' op must not be inside an enigma.thread_loop}}
    enigma.thread_loop {
    }
  }
  enigma.return
}

// -----

// All threads reach a barrier together, so it stands between thread loops.
enigma.kernel @barrier_inside() attributes {enigma.serialized_threads} {
  // expected-error @+1 {{'enigma.thread_loop' op must not hold a barrier or simdgroup function}}
  enigma.thread_loop {
    enigma.barrier <threadgroup>
  }
  enigma.return
}
