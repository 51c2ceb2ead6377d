// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{kernels return nothing; write results to buffers}}
enigma.kernel @with_result(%a: f32) -> f32 {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'M' must be a rank-1 dynamic buffer, got 'memref<?x?xf32, #enigma.address_space<device>>'}}
enigma.kernel @rank2(%m: memref<?x?xf32, #enigma.address_space<device>> {enigma.name = "M"}) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'arg0' must be a rank-1 dynamic buffer, got 'memref<16xf32, #enigma.address_space<device>>'}}
enigma.kernel @static_size(%m: memref<16xf32, #enigma.address_space<device>>) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'S' must be a rank-1 dynamic buffer}}
enigma.kernel @strided(%m: memref<?xf32, strided<[2]>, #enigma.address_space<device>> {enigma.name = "S"}) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'T' must be in the device or constant address space, got threadgroup}}
enigma.kernel @threadgroup_param(%t: memref<?xf32, #enigma.address_space<threadgroup>> {enigma.name = "T"}) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'arg1' must be in the device or constant address space, got thread}}
enigma.kernel @thread_param(%a: i32, %t: memref<?xi32, #enigma.address_space<thread>>) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'D' has unsupported element type 'f64'}}
enigma.kernel @f64_buffer(%d: memref<?xf64, #enigma.address_space<device>> {enigma.name = "D"}) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'x' has unsupported scalar type 'f64'}}
enigma.kernel @f64_scalar(%x: f64 {enigma.name = "x"}) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'i' has unsupported scalar type 'index'}}
enigma.kernel @index_scalar(%i: index {enigma.name = "i"}) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'w' has unsupported element type 'i128'}}
enigma.kernel @wide_int(%w: memref<?xi128> {enigma.name = "w"}) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'v' has unsupported element type 'vector<8xf32>'}}
enigma.kernel @long_vector(%v: memref<?xvector<8xf32>> {enigma.name = "v"}) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'u' has unsupported scalar type 'ui32'}}
enigma.kernel @signed_int(%u: ui32 {enigma.name = "u"}) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'x': enigma.multiple_of must be a positive integer on an integer scalar}}
enigma.kernel @multiple_of_float(%x: f32 {enigma.name = "x", enigma.multiple_of = 4 : i64}) {
  enigma.return
}

// -----

// expected-error @+1 {{parameter 'n': enigma.multiple_of must be a positive integer on an integer scalar}}
enigma.kernel @multiple_of_zero(%n: i32 {enigma.name = "n", enigma.multiple_of = 0 : i64}) {
  enigma.return
}

// -----

// expected-error @+1 {{enigma.threadgroup_size must be an integer from 1 to 1024 (threads per threadgroup)}}
enigma.kernel @too_many_threads() attributes {enigma.threadgroup_size = 2048 : i64} {
  enigma.return
}

// -----

// expected-error @+1 {{enigma.threadgroup_size must be an integer from 1 to 1024 (threads per threadgroup)}}
enigma.kernel @threads_not_a_number() attributes {enigma.threadgroup_size = "many"} {
  enigma.return
}

// -----

// expected-error @+1 {{enigma.matrix_extents must be an array of dictionaries}}
enigma.kernel @extents_not_an_array(%A: memref<?xf32>) attributes {enigma.matrix_extents = 3 : i64} {
  enigma.return
}

// -----

// expected-error @+1 {{enigma.matrix_extents entry 0 needs `buffer`, the index of a buffer argument}}
enigma.kernel @extent_of_a_scalar(%A: memref<?xf32>, %n: i32) attributes {enigma.matrix_extents = [{buffer = 1 : i64, rows = 1 : i64, cols = 1 : i64, pitch = 1 : i64, what = "x"}]} {
  enigma.return
}

// -----

// expected-error @+1 {{enigma.matrix_extents entry 0 needs exactly one of `rows` (a constant) and `rows_param` (a scalar argument's index)}}
enigma.kernel @extent_side_twice(%A: memref<?xf32>, %n: i32) attributes {enigma.matrix_extents = [{buffer = 0 : i64, rows = 1 : i64, rows_param = 1 : i64, cols = 1 : i64, pitch = 1 : i64, what = "x"}]} {
  enigma.return
}

// -----

// expected-error @+1 {{enigma.matrix_extents entry 0 `pitch_param` = 0 is not an integer scalar argument}}
enigma.kernel @extent_pitch_a_buffer(%A: memref<?xf32>, %n: i32) attributes {enigma.matrix_extents = [{buffer = 0 : i64, rows = 1 : i64, cols_param = 1 : i64, pitch_param = 0 : i64, what = "x"}]} {
  enigma.return
}

// -----

// expected-error @+1 {{enigma.matrix_extents entry 0 needs `what`, a string for the runtime's message}}
enigma.kernel @extent_without_words(%A: memref<?xf32>, %n: i32) attributes {enigma.matrix_extents = [{buffer = 0 : i64, rows = 1 : i64, cols = 1 : i64, pitch = 1 : i64}]} {
  enigma.return
}

// -----

// expected-error @+1 {{enigma.matrix_extents entry 0 has a `rows_divisor` that is not a positive integer}}
enigma.kernel @extent_divided_by_zero(%A: memref<?xf32>, %n: i32) attributes {enigma.matrix_extents = [{buffer = 0 : i64, rows_param = 1 : i64, rows_divisor = 0 : i64, cols = 1 : i64, pitch = 1 : i64, what = "x"}]} {
  enigma.return
}
