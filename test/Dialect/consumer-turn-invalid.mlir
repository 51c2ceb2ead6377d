// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// What the verifiers of enigma.consumer_turn_begin / _end reject: turns
// outside the top level of a consumer region (where warpgroups could take
// different turns), turns that nest, do not end or end twice, a turn
// holding something that waits for the other warpgroups (a hang on the
// GPU), and values to wait for that are not f32.

// -----

enigma.kernel @in_a_producer(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{cannot be in a producer region}}
    enigma.consumer_turn_begin
    enigma.consumer_turn_end
    enigma.stage_copy %A[%i, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @outside_a_pipeline(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{must stand at the top level of a pipeline's consumer region}}
  enigma.consumer_turn_begin
  enigma.consumer_turn_end
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.stage_copy %A[%i, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @under_a_branch(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.stage_copy %A[%i, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    %c = arith.cmpi ult, %i, %c16 : index
    scf.if %c {
      // expected-error @+1 {{must stand at the top level of a pipeline's consumer region (not in a loop or branch inside it, nor outside a pipeline): every consumer warpgroup must take the same turns}}
      enigma.consumer_turn_begin
      enigma.consumer_turn_end
    }
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @nested(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.stage_copy %A[%i, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{begins a turn that a second enigma.consumer_turn_begin enters before it ends: turns do not nest}}
    enigma.consumer_turn_begin
    // expected-note @+1 {{the second turn begins here}}
    enigma.consumer_turn_begin
    enigma.consumer_turn_end
    enigma.consumer_turn_end
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @barrier_in_a_turn(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.stage_copy %A[%i, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{begins a turn that holds 'enigma.barrier', which waits for other consumer warpgroups while they wait for this turn to end (the GPU would hang): take it out of the turn}}
    enigma.consumer_turn_begin
    %c = arith.cmpi ult, %i, %c16 : index
    scf.if %c {
      // expected-note @+1 {{it is here}}
      enigma.barrier <threadgroup>
    }
    enigma.consumer_turn_end
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @never_ends(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.stage_copy %A[%i, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{begins a turn that does not end in its region: put an enigma.consumer_turn_end after it in the same block}}
    enigma.consumer_turn_begin
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @ends_without_beginning(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.stage_copy %A[%i, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.consumer_turn_begin
    enigma.consumer_turn_end
    // expected-error @+1 {{ends a turn that did not begin: no enigma.consumer_turn_begin precedes it in its block since the last turn ended}}
    enigma.consumer_turn_end
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @waits_for_an_integer(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.stage_copy %A[%i, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    %x = arith.index_castui %i : index to i32
    // expected-error @+1 {{waits only for f32 scalars and fragments (`after`), not 'i32'}}
    enigma.consumer_turn_begin after(%x : i32)
    enigma.consumer_turn_end
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}
