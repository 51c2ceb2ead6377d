// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// Values that differ between threads without coming from a thread query:
// atomics' results, scans, lane-counting reductions, atomic loads of memory
// the kernel changes atomically, and a thread's own registers. Control flow
// on them must not hold a barrier or a simd function.

enigma.kernel @if_on_atomic_result(%A: memref<?xi32> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %four = arith.constant 4 : i32
  // expected-note @+1 {{its condition differs between threads: enigma.atomic_fetch_add() gives each thread a different old value}}
  %old = enigma.atomic_rmw add %A[%c0], %one relaxed : memref<?xi32>
  %c = arith.cmpi ult, %old, %four : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{'enigma.barrier' op is under control flow that depends on the thread's position; every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// -----

enigma.kernel @if_on_exchange(%A: memref<?xi32> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  // expected-note @+1 {{enigma.atomic_exchange() gives each thread a different old value}}
  %old = enigma.atomic_rmw exchange %A[%c0], %one relaxed : memref<?xi32>
  %c = arith.cmpi eq, %old, %one : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// -----

enigma.kernel @if_on_compare_exchange_success(%A: memref<?xi32> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  // expected-note @+1 {{enigma.atomic_compare_exchange_weak() succeeds in some threads and fails in others}}
  %obs, %ok = enigma.atomic_compare_exchange_weak %A[%c0], %zero, %one relaxed relaxed : memref<?xi32>
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %ok {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// -----

// The value observed by the compare-exchange, through a loop-carried value.
enigma.kernel @for_bound_on_compare_exchange_value(%A: memref<?xi32> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  // expected-note @+1 {{enigma.atomic_compare_exchange_weak()}}
  %obs, %ok = enigma.atomic_compare_exchange_weak %A[%c0], %zero, %one relaxed relaxed : memref<?xi32>
  %n = arith.index_castui %obs : i32 to index
  // expected-note @+1 {{divergent control flow is here}}
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// -----

// A scan of a uniform value is the lane's rank.
enigma.kernel @if_on_simd_scan(%n: i32 {enigma.name = "n"}) {
  %one = arith.constant 1 : i32
  // expected-note @+1 {{its condition differs between threads: enigma.simd_prefix_exclusive_sum() gives each lane the combination of the lanes below it}}
  %rank = enigma.simd_prefix_exclusive_sum %one : i32
  %c = arith.cmpi ult, %rank, %n : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{'enigma.simd_barrier' op is under control flow that depends on the thread's position; every thread of the simdgroup must reach it}}
    enigma.simd_barrier <threadgroup>
  }
  enigma.return
}

// -----

enigma.kernel @simd_function_under_quad_scan(%x: f32 {enigma.name = "x"}) {
  // expected-note @+1 {{enigma.quad_prefix_inclusive_product() gives each lane the combination of the lanes below it}}
  %s = enigma.quad_prefix_inclusive_product %x : f32
  %zero = arith.constant 0.0 : f32
  %c = arith.cmpf ogt, %s, %zero : f32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{every lane of the simdgroup must reach it}}
    %r = enigma.simd_max %x : f32
  }
  enigma.return
}

// -----

// simd_sum of a uniform value is 32 times it in a full simdgroup but less in
// the last simdgroup of a partial threadgroup.
enigma.kernel @barrier_under_simd_sum_of_uniform(%x: i32 {enigma.name = "x"}) {
  // expected-note @+1 {{enigma.simd_sum() depends on how many lanes its simdgroup has}}
  %s = enigma.simd_sum %x : i32
  %k = arith.constant 32 : i32
  %full = arith.muli %x, %k : i32
  %c = arith.cmpi eq, %s, %full : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// -----

enigma.kernel @simd_function_under_quad_xor_of_uniform(%x: i32 {enigma.name = "x"}) {
  // expected-note @+1 {{enigma.quad_xor() depends on how many lanes its quad has}}
  %s = enigma.quad_xor %x : i32
  %zero = arith.constant 0 : i32
  %c = arith.cmpi eq, %s, %zero : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{every lane of the simdgroup must reach it}}
    %r = enigma.simd_sum %x : i32
  }
  enigma.return
}

// -----

enigma.kernel @if_on_atomic_load_of_counter(%A: memref<?xi32> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %one = arith.constant 1 : i32
  %four = arith.constant 4 : i32
  %old = enigma.atomic_rmw add %A[%c0], %one relaxed : memref<?xi32>
  // expected-note @+1 {{enigma.atomic_load() reads memory that the kernel changes atomically}}
  %now = enigma.atomic_load %A[%c0] relaxed : memref<?xi32>
  %c = arith.cmpi ult, %now, %four : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}

// -----

// A register array that holds the thread's position.
enigma.kernel @if_on_register_value() {
  %tid = enigma.thread_position_in_grid <x>
  %r = memref.alloca() : memref<2xi32, #enigma.address_space<thread>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  memref.store %tid, %r[%c1] : memref<2xi32, #enigma.address_space<thread>>
  %v = memref.load %r[%c0] : memref<2xi32, #enigma.address_space<thread>>
  %four = arith.constant 4 : i32
  %c = arith.cmpi ult, %v, %four : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{every thread of the threadgroup must reach it}}
    enigma.barrier <threadgroup>
  }
  enigma.return
}
