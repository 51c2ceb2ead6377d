// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// Async copies move device <-> threadgroup memory in the direction their
// name says, between memory of one element type, issued by whole
// simdgroups: the verifier rejects everything else.

enigma.kernel @wrong_destination(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"},
                                 %B: memref<?xf32, #enigma.address_space<device>> {enigma.name = "B"}) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'enigma.async_copy_1d_d2t' op copies device -> threadgroup memory, but its destination is in the device address space}}
  %e = enigma.async_copy_1d_d2t %B[%c0], %A[%c0], %c0 : memref<?xf32, #enigma.address_space<device>>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @constant_source(%A: memref<?xf32, #enigma.address_space<constant>> {enigma.name = "A"}) {
  %t = enigma.threadgroup_alloc : memref<16xf32, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'enigma.async_copy_1d_d2t' op copies device -> threadgroup memory, but its source is in the constant address space}}
  %e = enigma.async_copy_1d_d2t %t[%c0], %A[%c0], %c0 : memref<16xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<constant>>
  enigma.return
}

// -----

enigma.kernel @backwards(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) {
  %t = enigma.threadgroup_alloc : memref<16xf32, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'enigma.async_copy_2d_t2d' op copies threadgroup -> device memory, but its destination is in the threadgroup address space}}
  %e = enigma.async_copy_2d_t2d %t[%c0], %c0, %A[%c0], %c0, %c0 x %c0 : memref<16xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @element_types(%A: memref<?xf16, #enigma.address_space<device>> {enigma.name = "A"}) {
  %t = enigma.threadgroup_alloc : memref<16xf32, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'enigma.async_copy_1d_d2t' op copies between different element types ('f16' to 'f32'); source and destination must hold the same type}}
  %e = enigma.async_copy_1d_d2t %t[%c0], %A[%c0], %c0 : memref<16xf32, #enigma.address_space<threadgroup>>, memref<?xf16, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @lane_condition(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) {
  %t = enigma.threadgroup_alloc : memref<16xf32, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %lane = enigma.thread_index_in_simdgroup
  %half = arith.constant 16 : i32
  %low = arith.cmpi ult, %lane, %half : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %low {
    // expected-error @+1 {{'enigma.async_copy_1d_d2t' op is under control flow that depends on the thread's lane; an async copy is issued by the whole simdgroup}}
    %e = enigma.async_copy_1d_d2t %t[%c0], %A[%c0], %c16 : memref<16xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
  }
  enigma.return
}

// -----

// A wait under a loop whose trip count depends on the thread.
enigma.kernel @wait_in_thread_loop(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) {
  %t = enigma.threadgroup_alloc : memref<16xf32, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %e = enigma.async_copy_1d_d2t %t[%c0], %A[%c0], %c16 : memref<16xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
  %tid = enigma.thread_position_in_grid <x>
  %n = arith.index_castui %tid : i32 to index
  // expected-note @+1 {{divergent control flow is here}}
  scf.for %i = %c0 to %n step %c1 {
    // expected-error @+1 {{'enigma.async_copy_wait' op is under control flow that depends on the thread's lane}}
    enigma.async_copy_wait %e
  }
  enigma.return
}

// -----

enigma.kernel @wait_for_nothing() {
  // expected-error @+1 {{'enigma.async_copy_wait' op needs at least one event to wait for}}
  enigma.async_copy_wait
  enigma.return
}

// -----

// expected-note @+1 {{prior use here}}
enigma.kernel @not_an_event(%x: i64 {enigma.name = "x"}) {
  // expected-error @+1 {{use of value '%x' expects different type than prior uses: '!enigma.async_event' vs 'i64'}}
  enigma.async_copy_wait %x
  enigma.return
}

// -----

builtin.module {
  %t = memref.alloc() : memref<16xf32, #enigma.address_space<threadgroup>>
  %b = memref.alloc() : memref<16xf32, #enigma.address_space<device>>
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{'enigma.async_copy_1d_d2t' op must be inside an enigma.kernel}}
  %e = enigma.async_copy_1d_d2t %t[%c0], %b[%c0], %c0 : memref<16xf32, #enigma.address_space<threadgroup>>, memref<16xf32, #enigma.address_space<device>>
}
