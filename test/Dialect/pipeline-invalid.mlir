// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// What the verifiers of the pipeline family reject: producers that do
// more than copy, consumers that write a ring, copies outside their stage,
// roles that do not fit, and in the explicit form a consumer waiting for a
// phase no producer arrives at or a commit expecting other bytes than its
// copies'.

enigma.kernel @producer_stores(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{cannot be in a producer region: it holds only enigma.stage_copy, arithmetic and reads of buffers the kernel never writes}}
    memref.store %f, %A[%i] : memref<?xf32, #enigma.address_space<device>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @producer_reads_a_thread_index(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  %t = enigma.thread_index_in_threadgroup
  %ti = arith.index_castui %t : i32 to index
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{a value that differs between threads}}
    enigma.stage_copy %A[%ti, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @consumer_writes_the_ring() attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %f = arith.constant 1.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{writes a pipeline ring's buffer in a consumer region}}
    memref.store %f, %a[%s] : memref<1024xf32, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @box_outside_its_stage(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{the 16 x 32 box at offset 16 reaches element 527 of a stage of 512}}
    enigma.stage_copy %A[%c0, %c0] of(%c64, %c64, %c64) into %ring[%s] {buffer = 0 : i64, offset = 16 : i64, box_rows = 16 : i64, box_cols = 32 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @registers_do_not_fit() attributes {enigma.threadgroup_size = 256 : i64} {
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{the roles need 128 x 40 + 256 x 248 = 68608 registers, but a threadgroup of 384 threads (256 consumers and the 128 of the producer warpgroup) holds 384 x 168 = 64512 registers from launch on}}
  %ring = enigma.pipeline_ring %a {stages = 2, consumer_registers = 248} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

// 640 threads get 96 registers each at launch (65536 / 640 in units of 8),
// not 65536 / 640: these roles fit 64K but not the block, and setmaxnreg.inc
// would wait forever.
enigma.kernel @registers_do_not_fit_the_launch() attributes {enigma.threadgroup_size = 512 : i64} {
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{the roles need 128 x 24 + 512 x 120 = 64512 registers, but a threadgroup of 640 threads (512 consumers and the 128 of the producer warpgroup) holds 640 x 96 = 61440 registers from launch on (65536 per multiprocessor / 640 threads, in whole units of 8)}}
  %ring = enigma.pipeline_ring %a {stages = 2, producer_registers = 24, consumer_registers = 120} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @accumulators_do_not_fit() attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2, consumer_registers = 136} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x256xf32>
  // expected-error @+1 {{carries fragments of 128 registers per thread; with consumer_registers = 136 fewer than 24 are left for everything else}}
  %r = enigma.pipeline %ring[%c0, %c4) iter_args(%acc : tensor<16x256xf32>) producer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index, %x: tensor<16x256xf32>):
    enigma.pipeline_yield %x : tensor<16x256xf32>
  } : memref<4xi64, #enigma.address_space<threadgroup>> -> tensor<16x256xf32>
  enigma.return
}

// -----

enigma.kernel @threadgroup_memory_does_not_fit() attributes {enigma.threadgroup_size = 128 : i64} {
  %a = enigma.threadgroup_alloc : memref<58000xf32, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{threadgroup memory and ring barriers take 232064 bytes (+ 1024 for tile alignment); an sm_90 threadgroup has 232448}}
  %ring = enigma.pipeline_ring %a {stages = 4} : memref<58000xf32, #enigma.address_space<threadgroup>> -> memref<8xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @cluster_too_large() attributes {enigma.threadgroup_size = 128 : i64} {
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{cluster = 16: a cluster is 1, 2, 4 or 8 threadgroups}}
  %ring = enigma.pipeline_ring %a {stages = 2, cluster = 16} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @threadgroup_of_no_warpgroups() attributes {enigma.threadgroup_size = 96 : i64} {
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{needs a threadgroup of whole warpgroups (a multiple of 128 threads, at most 896 to leave room for the producer warpgroup) fixed by enigma.threadgroup_size, got 96}}
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @multicast_without_a_cluster(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{'multicast' needs a ring with a cluster of 2 or more threadgroups}}
    enigma.stage_copy %A[%c0, %c0] of(%c64, %c64, %c64) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 32 : i64, multicast} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @pipeline_under_a_thread_branch() attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c1 = arith.constant 1 : i32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  %t = enigma.thread_index_in_threadgroup
  %c = arith.cmpi ult, %t, %c1 : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{is under control flow that differs between threads}}
    enigma.pipeline %ring[%c0, %c4) producer {
    ^bb0(%i: index, %s: index):
      enigma.pipeline_yield
    } consumer {
    ^bb0(%i: index, %s: index):
      enigma.pipeline_yield
    } : memref<4xi64, #enigma.address_space<threadgroup>>
  }
  enigma.return
}

// -----

// The explicit form: a consumer that waits once more per pass than the
// producer commits.
enigma.kernel @wait_without_a_commit(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c64 = arith.constant 64 : index
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.warp_roles producer {
    scf.for %i = %c0 to %c4 step %c1 {
      %s = enigma.ring_acquire %ring : memref<4xi64, #enigma.address_space<threadgroup>>
      enigma.stage_copy %A[%c0, %c0] of(%c64, %c64, %c64) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 32 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
      enigma.ring_commit %ring[%s] {bytes = 2048 : i64} : memref<4xi64, #enigma.address_space<threadgroup>>
    }
    enigma.pipeline_yield
  } consumer {
    scf.for %i = %c0 to %c5 step %c1 {
      // expected-error @+1 {{waits for a phase no producer arrives at: the consumers wait 1 more time(s) per pass of loop [0, 5) step 1 than the producer commits there}}
      %s = enigma.ring_wait %ring : memref<4xi64, #enigma.address_space<threadgroup>>
      enigma.ring_release %ring : memref<4xi64, #enigma.address_space<threadgroup>>
    }
    enigma.pipeline_yield
  }
  enigma.return
}

// -----

enigma.kernel @commit_of_other_bytes(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.warp_roles producer {
    scf.for %i = %c0 to %c4 step %c1 {
      %s = enigma.ring_acquire %ring : memref<4xi64, #enigma.address_space<threadgroup>>
      enigma.stage_copy %A[%c0, %c0] of(%c64, %c64, %c64) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 32 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
      // expected-error @+1 {{expects 4096 bytes of copies, but the copies into its slot write 2048}}
      enigma.ring_commit %ring[%s] {bytes = 4096 : i64} : memref<4xi64, #enigma.address_space<threadgroup>>
    }
    enigma.pipeline_yield
  } consumer {
    scf.for %i = %c0 to %c4 step %c1 {
      %s = enigma.ring_wait %ring : memref<4xi64, #enigma.address_space<threadgroup>>
      enigma.ring_release %ring : memref<4xi64, #enigma.address_space<threadgroup>>
    }
    enigma.pipeline_yield
  }
  enigma.return
}

// -----

// A producer may read a buffer only if no op of the kernel writes it: the
// consumers store into %T here, so a producer warpgroup running ahead
// could read a value before its store.
enigma.kernel @producer_reads_a_written_buffer(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %T: memref<?xi32, #enigma.address_space<device>> {enigma.name = "T"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %one = arith.constant 1 : i32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{cannot be in a producer region: it holds only enigma.stage_copy, arithmetic and reads of buffers the kernel never writes}}
    %row = memref.load %T[%i] : memref<?xi32, #enigma.address_space<device>>
    %r = arith.index_castui %row : i32 to index
    enigma.stage_copy %A[%r, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    memref.store %one, %T[%i] : memref<?xi32, #enigma.address_space<device>>
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

// The same read computed before the pipeline (an operand of the copy):
// rejected where the producer would need it.
enigma.kernel @producer_needs_a_read_of_a_written_buffer(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}, %T: memref<?xi32, #enigma.address_space<device>> {enigma.name = "T"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  %one = arith.constant 1 : i32
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  %row = memref.load %T[%c0] : memref<?xi32, #enigma.address_space<device>>
  %r = arith.index_castui %row : i32 to index
  memref.store %one, %T[%c4] : memref<?xi32, #enigma.address_space<device>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{uses memref.load (the producer runs only pure arithmetic and reads of buffers the kernel never writes), which a producer warpgroup cannot compute}}
    enigma.stage_copy %A[%r, %c0] of(%c16, %c16, %c16) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 16 : i64, box_cols = 16 : i64} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

// A transposing stage copy moves 32-bit elements only.
enigma.kernel @transpose_of_halves(%A: memref<?xf16, #enigma.address_space<device>> {enigma.name = "A"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %a = enigma.threadgroup_alloc : memref<4096xf16, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<4096xf16, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{'transpose' copies 32-bit elements only, got f16}}
    enigma.stage_copy %A[%c0, %c0] of(%c64, %c64, %c64) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 32 : i64, box_cols = 64 : i64, transpose} : memref<?xf16, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @transpose_box_not_of_fours(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %a = enigma.threadgroup_alloc : memref<4096xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<4096xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{'transpose' needs box sides that are multiples of 4 (it moves 4 x 4 blocks), got 32 x 30}}
    enigma.stage_copy %A[%c0, %c0] of(%c64, %c64, %c64) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 32 : i64, box_cols = 30 : i64, transpose} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

// The stage holds the 64 x 32 transpose: 2048 elements from offset 16 on.
enigma.kernel @transposed_box_outside_its_stage(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %a = enigma.threadgroup_alloc : memref<4096xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<4096xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{the transposed 32 x 64 box at offset 16 reaches element 2063 of a stage of 2048}}
    enigma.stage_copy %A[%c0, %c0] of(%c64, %c64, %c64) into %ring[%s] {buffer = 0 : i64, offset = 16 : i64, box_rows = 32 : i64, box_cols = 64 : i64, transpose} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @transpose_and_multicast(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %a = enigma.threadgroup_alloc : memref<4096xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2, cluster = 2} : memref<4096xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    // expected-error @+1 {{'transpose' and 'multicast' do not combine: a transposing copy is not the TMA's}}
    enigma.stage_copy %A[%c0, %c0] of(%c64, %c64, %c64) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 32 : i64, box_cols = 64 : i64, multicast, transpose} : memref<?xf32, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

enigma.kernel @ring_too_deep() attributes {enigma.threadgroup_size = 128 : i64} {
  %a = enigma.threadgroup_alloc : memref<1088xf32, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{attribute 'stages' failed to satisfy constraint}}
  %ring = enigma.pipeline_ring %a {stages = 17} : memref<1088xf32, #enigma.address_space<threadgroup>> -> memref<34xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

// Consumer groups: 1 to 4 of them.
enigma.kernel @five_consumer_groups() attributes {enigma.threadgroup_size = 128 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{consumer_groups = 5: 1 to 4 groups of consumer warpgroups}}
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } {consumer_groups = 5 : i64} : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

// Whole warpgroups in every group: 3 warpgroups cannot form 2 groups.
enigma.kernel @groups_of_unequal_warpgroups() attributes {enigma.threadgroup_size = 384 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2, consumer_registers = 152 : i64} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{consumer_groups = 2 needs a threadgroup of 256 threads or a multiple (whole warpgroups in every group), got 384}}
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } {consumer_groups = 2 : i64} : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}

// -----

// Turns order every warpgroup of every iteration; a group runs only its own.
enigma.kernel @groups_with_turns() attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %a = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a {stages = 2} : memref<1024xf32, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{with consumer_groups > 1 takes no consumer turns}}
  enigma.pipeline %ring[%c0, %c4) producer {
  ^bb0(%i: index, %s: index):
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index):
    enigma.consumer_turn_begin
    enigma.consumer_turn_end
    enigma.pipeline_yield
  } {consumer_groups = 2 : i64} : memref<4xi64, #enigma.address_space<threadgroup>>
  enigma.return
}
