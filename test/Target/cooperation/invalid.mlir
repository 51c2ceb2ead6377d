// RUN: enigma-opt %s -split-input-file -verify-diagnostics

enigma.kernel @too_big() {
  %a = enigma.threadgroup_alloc : memref<8192xf32, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{threadgroup memory of the kernel is 237568 bytes (this allocation: 204800 bytes; each array starts on a 16-byte boundary), more than the 232448 bytes (227 KiB) any target allows}}
  %b = enigma.threadgroup_alloc : memref<51200xf32, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @in_loop(%n: i32 {enigma.name = "n"}) {
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  scf.for %k = %c0 to %n step %c1 : i32 {
    // expected-error @+1 {{must be directly in the kernel body}}
    %a = enigma.threadgroup_alloc : memref<4xf32, #enigma.address_space<threadgroup>>
  }
  enigma.return
}

// -----

enigma.kernel @wrong_space() {
  // expected-error @+1 {{result must be in the threadgroup address space}}
  %a = enigma.threadgroup_alloc : memref<4xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @float_or(%a: memref<?xf32> {enigma.name = "a"}) {
  %c0 = arith.constant 0 : index
  %f = arith.constant 1.0 : f32
  // expected-error @+1 {{atomic or is integer-only}}
  %o = enigma.atomic_rmw or %a[%c0], %f relaxed : memref<?xf32>
  enigma.return
}

// -----

enigma.kernel @constant_space(%a: memref<?xi32, #enigma.address_space<constant>> {enigma.name = "a"}) {
  %c0 = arith.constant 0 : index
  // expected-error @+1 {{atomics need device or threadgroup memory}}
  %o = enigma.atomic_load %a[%c0] relaxed : memref<?xi32, #enigma.address_space<constant>>
  enigma.return
}

// -----

enigma.kernel @fc_clash() {
  %a = enigma.function_constant 0 "i32" : i32
  // expected-error @+1 {{function constant 0 is read with two different dtypes}}
  %b = enigma.function_constant 0 "u32" : i32
  enigma.return
}

// -----

enigma.kernel @fc_type() {
  // expected-error @+1 {{does not hold dtype f32}}
  %a = enigma.function_constant 0 "f32" : i32
  enigma.return
}

// -----

enigma.kernel @two_dynamic(%b: i64 {enigma.name = "enigma_threadgroup_memory_bytes", enigma.threadgroup_memory_bytes}) {
  %a = enigma.dynamic_threadgroup_alloc %b : memref<?xf32, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{is the kernel's second dynamic threadgroup array}}
  %c = enigma.dynamic_threadgroup_alloc %b : memref<?xi32, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @dynamic_size_from_elsewhere(%b: i64 {enigma.name = "b"}) {
  // expected-error @+1 {{takes its size from the kernel parameter marked enigma.threadgroup_memory_bytes}}
  %a = enigma.dynamic_threadgroup_alloc %b : memref<?xf32, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @dynamic_static_shape(%b: i64 {enigma.name = "enigma_threadgroup_memory_bytes", enigma.threadgroup_memory_bytes}) {
  // expected-error @+1 {{has a dynamic size}}
  %a = enigma.dynamic_threadgroup_alloc %b : memref<4xf32, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @float_xor(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %v = arith.constant 1.0 : f32
  // expected-error @+1 {{atomic xor is integer-only; float atomics support exchange, add, sub, min and max}}
  %r = enigma.atomic_rmw xor %A[%c0], %v relaxed : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
