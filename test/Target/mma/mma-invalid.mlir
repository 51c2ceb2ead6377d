// RUN: enigma-opt %s -split-input-file -verify-diagnostics

// The verifier's rules for fragments, products and tile copies.

enigma.kernel @side_not_a_multiple_of_16() {
  %z = arith.constant 0.0 : f32
  // expected-error @+1 {{'enigma.mma_fill' op the result tensor<24x32xf32>: fragment sides must be positive multiples of 16}}
  %f = enigma.mma_fill %z : f32 -> tensor<24x32xf32>
  enigma.return
}

// -----

enigma.kernel @too_large() {
  %z = arith.constant 0.0 : f32
  // expected-error @+1 {{has 16384 elements; a fragment holds at most 8192 (256 per lane)}}
  %f = enigma.mma_fill %z : f32 -> tensor<128x128xf32>
  enigma.return
}

// -----

enigma.kernel @operand_in_device_memory(%A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %t = enigma.threadgroup_alloc : memref<1024xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x16xf32>
  // expected-error @+1 {{operand A must be in threadgroup memory}}
  %r = enigma.mma %acc, %A[%c0, %c0], %t[%c0, %c0] {k = 16, a_ld = 16, b_ld = 16} : memref<?xbf16, #enigma.address_space<device>>, memref<1024xbf16, #enigma.address_space<threadgroup>>, tensor<16x16xf32>
  enigma.return
}

// -----

enigma.kernel @mixed_operands() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %t = enigma.threadgroup_alloc : memref<1024xbf16, #enigma.address_space<threadgroup>>
  %u = enigma.threadgroup_alloc : memref<1024xf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x16xf32>
  // expected-error @+1 {{multiplies bf16 by f16; both operands must have one element type}}
  %r = enigma.mma %acc, %t[%c0, %c0], %u[%c0, %c0] {k = 16, a_ld = 16, b_ld = 16} : memref<1024xbf16, #enigma.address_space<threadgroup>>, memref<1024xf16, #enigma.address_space<threadgroup>>, tensor<16x16xf32>
  enigma.return
}

// -----

enigma.kernel @k_step() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %t = enigma.threadgroup_alloc : memref<1024xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x16xf32>
  // expected-error @+1 {{K = 8 must be a multiple of 16 for bf16 operands}}
  %r = enigma.mma %acc, %t[%c0, %c0], %t[%c0, %c0] {k = 8, a_ld = 16, b_ld = 16} : memref<1024xbf16, #enigma.address_space<threadgroup>>, memref<1024xbf16, #enigma.address_space<threadgroup>>, tensor<16x16xf32>
  enigma.return
}

// -----

enigma.kernel @tf32_needs_float() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %t = enigma.threadgroup_alloc : memref<1024xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x16xf32>
  // expected-error @+1 {{'tf32' applies to f32 operands only}}
  %r = enigma.mma %acc, %t[%c0, %c0], %t[%c0, %c0] {k = 16, a_ld = 16, b_ld = 16, tf32} : memref<1024xbf16, #enigma.address_space<threadgroup>>, memref<1024xbf16, #enigma.address_space<threadgroup>>, tensor<16x16xf32>
  enigma.return
}

// -----

enigma.kernel @tile_outside_allocation() {
  %c0 = arith.constant 0 : index
  %c200 = arith.constant 200 : index
  %z = arith.constant 0.0 : f32
  %t = enigma.threadgroup_alloc : memref<256xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x16xf32>
  // expected-error @+1 {{operand B: the 16 x 16 tile reaches element 455 of a threadgroup array of 256}}
  %r = enigma.mma %acc, %t[%c0, %c0], %t[%c0, %c200] {k = 16, a_ld = 16, b_ld = 16} : memref<256xbf16, #enigma.address_space<threadgroup>>, memref<256xbf16, #enigma.address_space<threadgroup>>, tensor<16x16xf32>
  enigma.return
}

// -----

enigma.kernel @swizzle_splits_chunks() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %t = enigma.threadgroup_alloc : memref<1024xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x16xf32>
  // expected-error @+1 {{operand A swizzle Swizzle(2, 1, 4) splits 16-byte chunks of bf16; its base must be at least 3}}
  %r = enigma.mma %acc, %t[%c0, %c0], %t[%c0, %c0] {k = 16, a_ld = 32, b_ld = 16, a_swizzle = array<i32: 2, 1, 4>} : memref<1024xbf16, #enigma.address_space<threadgroup>>, memref<1024xbf16, #enigma.address_space<threadgroup>>, tensor<16x16xf32>
  enigma.return
}

// -----

// A negative shift reads the bits below the base: inside a chunk here.
enigma.kernel @swizzle_reads_inside_chunks() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %t = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x16xf32>
  // expected-error @+1 {{operand B swizzle Swizzle(3, 2, -3) splits 16-byte chunks of f32; its base + shift must be at least 2}}
  %r = enigma.mma %acc, %t[%c0, %c0], %t[%c0, %c0] {k = 16, a_ld = 32, b_ld = 16, b_swizzle = array<i32: 3, 2, -3>} : memref<1024xf32, #enigma.address_space<threadgroup>>, memref<1024xf32, #enigma.address_space<threadgroup>>, tensor<16x16xf32>
  enigma.return
}

// -----

enigma.kernel @pitch_not_16_bytes() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %t = enigma.threadgroup_alloc : memref<1024xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x16xf32>
  // expected-error @+1 {{operand A: its pitch 20 must be a multiple of 16 bytes (8 elements)}}
  %r = enigma.mma %acc, %t[%c0, %c0], %t[%c0, %c0] {k = 16, a_ld = 20, b_ld = 16} : memref<1024xbf16, #enigma.address_space<threadgroup>>, memref<1024xbf16, #enigma.address_space<threadgroup>>, tensor<16x16xf32>
  enigma.return
}

// -----

enigma.kernel @lane_dependent(%O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O"}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c4 = arith.constant 4 : i32
  %z = arith.constant 0.0 : f32
  %f = enigma.mma_fill %z : f32 -> tensor<16x16xf32>
  %lane = enigma.thread_index_in_simdgroup
  %c = arith.cmpi ult, %lane, %c4 : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{is under control flow that depends on the thread's lane; a fragment is held by the whole simdgroup, so every lane must reach it}}
    enigma.mma_store %f, %O[%c0], %c16 : tensor<16x16xf32>, memref<?xf32, #enigma.address_space<device>>
  }
  enigma.return
}

// -----

enigma.kernel @copy_thread_dependent(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : i32
  %t = enigma.threadgroup_alloc : memref<256xf32, #enigma.address_space<threadgroup>>
  %tid = enigma.thread_index_in_threadgroup
  %c = arith.cmpi ult, %tid, %c64 : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %c {
    // expected-error @+1 {{the threads of the threadgroup share the copy, so every thread must reach it}}
    enigma.copy_tile_async %t[%c0], %A[%c0], %c16, %c16, %c16 {rows = 16, cols = 16, dst_ld = 16} : memref<256xf32, #enigma.address_space<threadgroup>>, memref<?xf32, #enigma.address_space<device>>
  }
  enigma.return
}

// -----

enigma.kernel @copy_row_not_16_bytes(%A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %t = enigma.threadgroup_alloc : memref<256xbf16, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{copies rows of 4 elements with pitch 4; both must be multiples of 16 bytes (8 elements of bf16)}}
  enigma.copy_tile_async %t[%c0], %A[%c0], %c4, %c4, %c4 {rows = 4, cols = 4, dst_ld = 4} : memref<256xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @copy_blocks_uneven(%A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %t = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{stores 96 columns in blocks of 64; the pitch must divide them}}
  enigma.copy_tile_async %t[%c0], %A[%c0], %c8, %c8, %c8 {rows = 8, cols = 96, dst_ld = 64, block_stride = 1024} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @copy_blocks_overlap(%A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %t = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{blocks of 8 x 32 elements are 128 apart; they would overlap}}
  enigma.copy_tile_async %t[%c0], %A[%c0], %c8, %c8, %c8 {rows = 8, cols = 64, dst_ld = 32, block_stride = 128} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @copy_blocks_unaligned(%A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %t = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{blocks 260 elements apart must start at multiples of 16 bytes}}
  enigma.copy_tile_async %t[%c0], %A[%c0], %c8, %c8, %c8 {rows = 8, cols = 64, dst_ld = 32, block_stride = 260} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @copy_blocks_past_the_end(%A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %t = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  // expected-error @+1 {{the 8 x 128 tile reaches element 4607 of a threadgroup array of 4096}}
  enigma.copy_tile_async %t[%c0], %A[%c0], %c8, %c8, %c8 {rows = 8, cols = 128, dst_ld = 64, block_stride = 4096} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @store_needs_matching_memory(%O: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "O"}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %z = arith.constant 0.0 : f32
  %f = enigma.mma_fill %z : f32 -> tensor<16x16xf32>
  // expected-error @+1 {{memory of bf16 with a fragment of f32; convert the fragment first}}
  enigma.mma_store %f, %O[%c0], %c16 : tensor<16x16xf32>, memref<?xbf16, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @fill_value_per_lane() {
  %lane = enigma.thread_index_in_simdgroup
  // expected-error @+1 {{the fill value must be the same in every lane of the simdgroup}}
  %f = enigma.mma_fill %lane : i32 -> tensor<16x16xi32>
  enigma.return
}

// -----

enigma.kernel @reduce_shape() {
  %z = arith.constant 0.0 : f32
  %f = enigma.mma_fill %z : f32 -> tensor<16x32xf32>
  // expected-error @+1 {{gives a row vector of tensor<32xf32> for tensor<16x32xf32>}}
  %r = enigma.mma_reduce_rows sum %f : tensor<16x32xf32> -> tensor<32xf32>
  enigma.return
}

// -----

enigma.kernel @warpgroup_rows() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %b = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<32x64xf32>
  // expected-error @+1 {{with 'warpgroup' each simdgroup holds 16 rows of the group's product; the accumulator has 32}}
  %r = enigma.mma %acc, %a[%c0, %c0], %b[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<32x64xf32>
  enigma.return
}

// -----

enigma.kernel @overlapping_blocks() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %b = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x128xf32>
  // expected-error @+1 {{operand B: blocks of 64 x 64 elements are 2048 apart; they would overlap}}
  %r = enigma.mma %acc, %a[%c0, %c0], %b[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, b_block_stride = 2048} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
  enigma.return
}

// -----

enigma.kernel @blocks_beyond_the_array() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %b = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x128xf32>
  // expected-error @+1 {{operand B: the 64 x 128 tile reaches element 8191 of a threadgroup array of 4096}}
  %r = enigma.mma %acc, %a[%c0, %c0], %b[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, b_block_stride = 4096} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
  enigma.return
}

// -----

enigma.kernel @warpgroup_divergent() {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : i32
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %b = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %sg = enigma.simdgroup_index_in_threadgroup
  %p = arith.cmpi ult, %sg, %c2 : i32
  // expected-note @+1 {{divergent control flow is here}}
  scf.if %p {
    // expected-error @+1 {{with 'warpgroup' is under control flow that depends on the thread's position}}
    %r = enigma.mma %acc, %a[%c0, %c0], %b[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  }
  enigma.return
}

// -----

enigma.kernel @asynchronous_needs_warpgroup() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  // expected-error @+1 {{'asynchronous' applies to warpgroup products only}}
  %r = enigma.mma %acc, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  enigma.return
}

// -----

enigma.kernel @in_flight_result_read(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  // expected-error @+1 {{is asynchronous: its result may be read only by another asynchronous product (as the accumulator) or by enigma.mma_wait}}
  %r = enigma.mma %acc, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  // expected-note @+1 {{read here}}
  enigma.mma_store %r, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

// Through an scf.if the rule follows the if's result: a store of it is a
// read of the in-flight accumulator.
enigma.kernel @in_flight_through_an_if(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c1_i32 = arith.constant 1 : i32
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  // expected-error @+1 {{is asynchronous}}
  %r = enigma.mma %acc, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  %c = arith.cmpi ult, %n, %c1_i32 : i32
  %s = scf.if %c -> (tensor<16x64xf32>) {
    scf.yield %r : tensor<16x64xf32>
  } else {
    scf.yield %r : tensor<16x64xf32>
  }
  // expected-note @+1 {{read here}}
  enigma.mma_store %s, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @in_flight_through_a_loop(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %out = scf.for %i = %c0 to %c4 step %c1 iter_args(%x = %acc) -> (tensor<16x64xf32>) {
    // expected-error @+1 {{is asynchronous}}
    %r = enigma.mma %x, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    scf.yield %r : tensor<16x64xf32>
  }
  // expected-note @+1 {{read here}}
  enigma.mma_store %out, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

// One wgmma reads one B for the four simdgroups of a group.
enigma.kernel @warpgroup_varying_b() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %b = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %sg = enigma.simdgroup_index_in_threadgroup
  %sgi = arith.index_cast %sg : i32 to index
  // expected-error @+1 {{with 'warpgroup', operand B's offsets must be the same in every thread of the warpgroup}}
  %r = enigma.mma %acc, %a[%c0, %c0], %b[%c0, %sgi] {k = 64, a_ld = 64, b_ld = 64, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  enigma.return
}

// -----

enigma.kernel @warpgroup_reg_rows() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : bf16
  %b = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<32x64xf32>
  %a = enigma.mma_fill %zh : bf16 -> tensor<32x64xbf16>
  // expected-error @+1 {{with 'warpgroup' each simdgroup holds 16 rows of the group's product; the accumulator has 32}}
  %r = enigma.mma_reg %acc, %a, %b[%c0, %c0] {b_ld = 64, warpgroup} : tensor<32x64xbf16>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<32x64xf32>
  enigma.return
}

// -----

enigma.kernel @warpgroup_reg_varying_b() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : bf16
  %b = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %a = enigma.mma_fill %zh : bf16 -> tensor<16x64xbf16>
  %sg = enigma.simdgroup_index_in_threadgroup
  %sgi = arith.index_cast %sg : i32 to index
  // expected-error @+1 {{with 'warpgroup', operand B's offsets must be the same in every thread of the warpgroup}}
  %r = enigma.mma_reg %acc, %a, %b[%sgi, %c0] {b_ld = 64, warpgroup} : tensor<16x64xbf16>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  enigma.return
}

// -----

enigma.kernel @reg_overlapping_blocks() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : bf16
  %b = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x128xf32>
  %a = enigma.mma_fill %zh : bf16 -> tensor<16x64xbf16>
  // expected-error @+1 {{operand B: blocks of 64 x 64 elements are 2048 apart; they would overlap}}
  %r = enigma.mma_reg %acc, %a, %b[%c0, %c0] {b_ld = 64, b_block_stride = 2048} : tensor<16x64xbf16>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
  enigma.return
}

// -----

// A wait that leaves a product in flight needs that product to come after
// the accumulator's own: here the accumulator is the newest.
enigma.kernel @pending_wait_on_the_newest_product(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %r = enigma.mma %acc, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  // expected-error @+1 {{leaves 1 asynchronous product in flight, but only 0 run after its accumulator's product in this block: the accumulator may still be in flight (wait with pending = 0)}}
  %w = enigma.mma_wait %r {pending = 1} : tensor<16x64xf32>
  enigma.mma_store %w, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

// A product under an scf.if may not run: it does not count.
enigma.kernel @pending_wait_counts_only_unconditional_products(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %c64_i32 = arith.constant 64 : i32
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%prev = %acc) -> (tensor<16x64xf32>) {
    %big = arith.cmpi ugt, %n, %c64_i32 : i32
    %next = scf.if %big -> (tensor<16x64xf32>) {
      %p = enigma.mma %acc, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
      scf.yield %p : tensor<16x64xf32>
    } else {
      scf.yield %acc : tensor<16x64xf32>
    }
    // expected-error @+1 {{leaves 1 asynchronous product in flight, but only 0 run after}}
    %w = enigma.mma_wait %prev {pending = 1} : tensor<16x64xf32>
    enigma.mma_store %w, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
    scf.yield %next : tensor<16x64xf32>
  }
  %last = enigma.mma_wait %r : tensor<16x64xf32>
  enigma.mma_store %last, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @pending_out_of_range() {
  %z = arith.constant 0.0 : f32
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  // expected-error @+1 {{attribute 'pending' failed to satisfy constraint}}
  %w = enigma.mma_wait %acc {pending = 8} : tensor<16x64xf32>
  enigma.return
}

// -----

// A warpgroup product under a branch on the simdgroup within its
// warpgroup: the four simdgroups would not all reach it.
enigma.kernel @warpgroup_split_by_simdgroup() {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %sg = enigma.simdgroup_index_in_threadgroup
  %sgi = arith.index_castui %sg : i32 to index
  %lane = arith.remui %sgi, %c4 : index
  %first = arith.cmpi eq, %lane, %c0 : index
  // expected-note @+1 {{divergent control flow is here}}
  %r = scf.if %first -> (tensor<16x64xf32>) {
    // expected-error @+1 {{with 'warpgroup' is under control flow that depends on the thread's position within its warpgroup}}
    %p = enigma.mma %acc, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    scf.yield %p : tensor<16x64xf32>
  } else {
    scf.yield %acc : tensor<16x64xf32>
  }
  enigma.return
}

// -----

// A branch on the warpgroup (simdgroup index / 4) keeps its four
// simdgroups together: accepted.
enigma.kernel @warpgroup_branch_on_warpgroup(%O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O"}) {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %sg = enigma.simdgroup_index_in_threadgroup
  %sgi = arith.index_castui %sg : i32 to index
  %wg = arith.divui %sgi, %c4 : index
  %first = arith.cmpi eq, %wg, %c0 : index
  %r = scf.if %first -> (tensor<16x64xf32>) {
    %p = enigma.mma %acc, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    scf.yield %p : tensor<16x64xf32>
  } else {
    scf.yield %acc : tensor<16x64xf32>
  }
  enigma.mma_store %r, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @register_a_asynchronous_needs_warpgroup() {
  %c0 = arith.constant 0 : index
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %v = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %p = enigma.mma_fill %one : bf16 -> tensor<16x64xbf16>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  // expected-error @+1 {{'asynchronous' applies to warpgroup products only}}
  %r = enigma.mma_reg %acc, %p, %v[%c0, %c0] {b_ld = 64, asynchronous} : tensor<16x64xbf16>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  enigma.return
}

// -----

enigma.kernel @register_a_in_flight_result_read(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %v = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %p = enigma.mma_fill %one : bf16 -> tensor<16x64xbf16>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  // expected-error @+1 {{is asynchronous: its result may be read only by another asynchronous product (as the accumulator) or by enigma.mma_wait}}
  %r = enigma.mma_reg %acc, %p, %v[%c0, %c0] {b_ld = 64, b_swizzle = array<i32: 3, 3, 3>, warpgroup, asynchronous} : tensor<16x64xbf16>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  // expected-note @+1 {{read here}}
  enigma.mma_store %r, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

// A register-A product counts among the products a wait leaves in flight.
enigma.kernel @register_a_product_counts_for_pending(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %p = enigma.mma_fill %one : bf16 -> tensor<16x64xbf16>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %s = enigma.mma %acc, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  %o = enigma.mma_reg %acc, %p, %a[%c0, %c0] {b_ld = 64, warpgroup, asynchronous} : tensor<16x64xbf16>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  %sw = enigma.mma_wait %s {pending = 1} : tensor<16x64xf32>
  // expected-error @+1 {{leaves 1 asynchronous product in flight, but only 0 run after its accumulator's product}}
  %ow = enigma.mma_wait %o {pending = 1} : tensor<16x64xf32>
  enigma.mma_store %sw, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.mma_store %ow, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// -----

enigma.kernel @gather_index_of_another_shape(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %i = enigma.mma_iota 1 : tensor<16x32xi32>
  // expected-error @+1 {{gathers a tensor<16x16xf32> with indices of another shape, tensor<16x32xi32>}}
  %f = enigma.mma_gather %A[%c0 + %i] : memref<?xf32, #enigma.address_space<device>>, tensor<16x32xi32> -> tensor<16x16xf32>
  enigma.return
}

// -----

enigma.kernel @gather_of_another_type(%A: memref<?xf16, #enigma.address_space<device>> {enigma.name = "A"}) {
  %c0 = arith.constant 0 : index
  %i = enigma.mma_iota 1 : tensor<16x16xi32>
  // expected-error @+1 {{memory of f16 with a fragment of f32}}
  %f = enigma.mma_gather %A[%c0 + %i] : memref<?xf16, #enigma.address_space<device>>, tensor<16x16xi32> -> tensor<16x16xf32>
  enigma.return
}

// -----

enigma.kernel @gather_offset_per_lane(%A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A"}) {
  %lane = enigma.thread_index_in_simdgroup
  %off = arith.index_cast %lane : i32 to index
  %i = enigma.mma_iota 1 : tensor<16x16xi32>
  // expected-error @+1 {{the offset must be the same in every lane of the simdgroup}}
  %f = enigma.mma_gather %A[%off + %i] : memref<?xf32, #enigma.address_space<device>>, tensor<16x16xi32> -> tensor<16x16xf32>
  enigma.return
}

// -----

enigma.kernel @halves_of_the_wrong_width() {
  %w = enigma.mma_iota 0 : tensor<16x16xi32>
  // expected-error @+1 {{gives tensor<16x16xbf16> for tensor<16x16xi32>; the halves of M x N words are M x 2N}}
  %h = enigma.mma_halves %w : tensor<16x16xi32> -> tensor<16x16xbf16>
  enigma.return
}

// -----

enigma.kernel @halves_of_words_past_a_fragment_side() {
  %w = arith.constant dense<0> : tensor<16x8xi32>
  // expected-error @+1 {{the words tensor<16x8xi32>: fragment sides must be positive multiples of 16}}
  %h = enigma.mma_halves %w : tensor<16x8xi32> -> tensor<16x16xbf16>
  enigma.return
}
