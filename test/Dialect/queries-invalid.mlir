// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// Thread queries and barriers are meaningful only inside a kernel. (The func
// dialect is not registered in enigma-opt, so "outside" is the module body.)

// expected-error @+1 {{'enigma.thread_position_in_grid' op is a thread query and must be inside an enigma.kernel}}
%0 = enigma.thread_position_in_grid <x>

// -----

builtin.module {
  // expected-error @+1 {{'enigma.thread_index_in_threadgroup' op is a thread query and must be inside an enigma.kernel}}
  %0 = enigma.thread_index_in_threadgroup
}

// -----

// expected-error @+1 {{'enigma.simdgroups_per_threadgroup' op is a thread query and must be inside an enigma.kernel}}
%0 = enigma.simdgroups_per_threadgroup

// -----

// expected-error @+1 {{'enigma.barrier' op must be inside an enigma.kernel}}
enigma.barrier <threadgroup>

// -----

// expected-error @+1 {{'enigma.simd_barrier' op must be inside an enigma.kernel}}
enigma.simd_barrier <none>

// -----

enigma.kernel @bad_dim() {
  // expected-error @+2 {{custom op 'enigma.thread_position_in_grid' expected ::enigma::Dim to be one of: x, y, z}}
  // expected-error @+1 {{failed to parse Enigma_DimAttr parameter 'value' which is to be a `::enigma::Dim`}}
  %0 = enigma.thread_position_in_grid <w>
  enigma.return
}

// -----

enigma.kernel @missing_dim() {
  // expected-error @+1 {{expected '<'}}
  %0 = enigma.threads_per_grid
  enigma.return
}

// -----

enigma.kernel @dim_on_scalar_query() {
  // expected-error @+1 {{expected operation name in quotes}}
  %0 = enigma.thread_index_in_simdgroup <x>
  enigma.return
}

// -----

enigma.kernel @bad_flag() {
  // expected-error @+2 {{custom op 'enigma.barrier' expected ::enigma::MemFlags to be one of: none, device, threadgroup, texture}}
  // expected-error @+1 {{failed to parse Enigma_MemFlagsAttr parameter 'value' which is to be a `::enigma::MemFlags`}}
  enigma.barrier <global>
  enigma.return
}

// -----

enigma.kernel @generic_without_dim() {
  // expected-error @+1 {{'enigma.threadgroup_position_in_grid' op requires attribute 'dim'}}
  %0 = "enigma.threadgroup_position_in_grid"() : () -> i32
  enigma.return
}

// -----

enigma.kernel @generic_wrong_attr_kind() {
  // expected-error @+1 {{invalid properties {dim = 1 : i32} for op enigma.threads_per_threadgroup: Invalid attribute `dim` in property conversion}}
  %0 = "enigma.threads_per_threadgroup"() <{dim = 1 : i32}> : () -> i32
  enigma.return
}

// -----

enigma.kernel @query_wrong_type() {
  // expected-error @+1 {{'enigma.thread_index_in_threadgroup' op result #0 must be 32-bit signless integer, but got 'i64'}}
  %0 = "enigma.thread_index_in_threadgroup"() : () -> i64
  enigma.return
}

// -----

enigma.kernel @return_outside() {
  enigma.return
}
// expected-error @+1 {{'enigma.return' op expects parent op 'enigma.kernel'}}
enigma.return
