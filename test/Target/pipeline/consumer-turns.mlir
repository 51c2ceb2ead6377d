// RUN: enigma-opt %s --enigma-split-warp-roles --canonicalize | FileCheck %s --check-prefix=ROLES
// RUN: enigma-opt %s --enigma-lower-pipelines | FileCheck %s --check-prefix=LOWER
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP

// Turns of two consumer warpgroups (256 consumer threads) in a pipeline
// under a persistent tile loop: each iteration takes two turns, the first
// around an asynchronous product, the second waiting for a value. The
// split keeps them in the consumers' loop; CUDA opens the turns once when
// the consumers start (the last warpgroup's first arrival) and closes
// them once at their end (warpgroup 0 takes the last arrival), outside
// every loop, so the arrivals match the waits whatever the trip counts.
// The CPU and Metal drop them.

// ROLES-LABEL: enigma.kernel @turns
// ROLES: enigma.warp_roles producer {
// ROLES-NOT: enigma.consumer_turn
// ROLES: } consumer {
// ROLES: scf.for
// ROLES: scf.for {{.*}} iter_args
// ROLES: enigma.ring_wait
// ROLES: enigma.consumer_turn_begin{{$}}
// ROLES-NEXT: enigma.mma {{.*}}asynchronous
// ROLES: enigma.consumer_turn_end
// ROLES-NEXT: enigma.consumer_turn_begin after(%{{.*}} : f32)
// ROLES-NEXT: enigma.consumer_turn_end
// ROLES-NEXT: scf.yield

// LOWER-LABEL: enigma.kernel @turns
// LOWER-NOT: enigma.consumer_turn
// LOWER: enigma.return

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(384, 1) enigma_kernel_turns(
// CHECK: if (enigma_linear >= 256u) { // the producer warpgroup
// CHECK-NOT: enigma_turn
// CHECK: } else { // the consumers: the threadgroup's threads
// CHECK-NEXT: enigma_consumer_registers<
// CHECK-NEXT: enigma_turns_open<2u>(enigma_linear);
// CHECK: for (
// CHECK: for (
// CHECK: enigma_ring_wait(
// CHECK: enigma_turn_begin<2u>(enigma_linear, 0u);
// CHECK-NEXT: enigma_frag<float, 16, 64> [[P:v[0-9]+]] = enigma_mma_sync<
// CHECK: enigma_turn_end<2u>(enigma_linear);
// CHECK-NEXT: float [[X:v[0-9]+]] = 0.0f * 0.0f;
// CHECK-NEXT: enigma_turn_begin<2u>(enigma_linear, enigma_turn_after(0u, [[X]]));
// CHECK-NEXT: enigma_turn_end<2u>(enigma_linear);
// CHECK: enigma_consumer_barrier(256u);
// CHECK: enigma_mma_store
// CHECK-NEXT: }
// CHECK-NEXT: enigma_turns_close<2u>(enigma_linear);
// CHECK-NEXT: }
// CHECK-NEXT: enigma_ring_end<1>();

// MSL-LABEL: kernel void enigma_kernel_turns(
// MSL-NOT: turn
// MSL: enigma_mma_sync<
// MSL-NOT: turn

// CPP-LABEL: enigma_kernel_turns
// CPP-NOT: turn
enigma.kernel @turns(
    %A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "bf16"},
    %B: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "bf16"},
    %C: memref<?xf32, #enigma.address_space<device>> {enigma.name = "C", enigma.dtype = "f32"},
    %m: i32 {enigma.name = "m", enigma.dtype = "u32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"},
    %k: i32 {enigma.name = "k", enigma.dtype = "u32"},
    %tiles: i32 {enigma.name = "tiles", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %c1024 = arith.constant 1024 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %M = arith.index_castui %m : i32 to index
  %N = arith.index_castui %n : i32 to index
  %K = arith.index_castui %k : i32 to index
  %T = arith.index_castui %tiles : i32 to index
  %a = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %b = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a, %b {stages = 2} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  %k63 = arith.addi %K, %c63 : index
  %kt = arith.divui %k63, %c64 : index
  %tg32 = enigma.threadgroup_position_in_grid <x>
  %ntg32 = enigma.threadgroups_per_grid <x>
  %tg = arith.index_castui %tg32 : i32 to index
  %ntg = arith.index_castui %ntg32 : i32 to index
  %sg32 = enigma.simdgroup_index_in_threadgroup
  %sg = arith.index_castui %sg32 : i32 to index
  scf.for %t = %tg to %T step %ntg {
    %pair = arith.divui %t, %c2 : index
    %rank = arith.remui %t, %c2 : index
    %row0 = arith.muli %pair, %c64 : index
    %col0 = arith.muli %rank, %c64 : index
    %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
    %r = enigma.pipeline %ring[%c0, %kt) iter_args(%acc0 : tensor<16x64xf32>) producer {
    ^bb0(%i: index, %s: index):
      %kc = arith.muli %i, %c64 : index
      enigma.stage_copy %A[%row0, %kc] of(%M, %K, %K) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 64 : i64, box_cols = 64 : i64, swizzle = array<i32: 3, 3, 3>} : memref<?xbf16, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
      enigma.stage_copy %B[%kc, %col0] of(%K, %N, %N) into %ring[%s] {buffer = 1 : i64, offset = 0 : i64, box_rows = 64 : i64, box_cols = 64 : i64, swizzle = array<i32: 3, 3, 3>} : memref<?xbf16, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
      enigma.pipeline_yield
    } consumer {
    ^bb0(%i: index, %s: index, %acc: tensor<16x64xf32>):
      %base = arith.muli %s, %c4096 : index
      %aoff = arith.constant 0 : index
      enigma.consumer_turn_begin
      %next = enigma.mma %acc, %a[%base, %aoff], %b[%base, %c0] {k = 64 : i64, a_ld = 64 : i64, b_ld = 64 : i64, a_swizzle = array<i32: 3, 3, 3>, b_swizzle = array<i32: 3, 3, 3>, warpgroup, asynchronous} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
      enigma.consumer_turn_end
      %scale = arith.mulf %zero, %zero : f32
      enigma.consumer_turn_begin after(%scale : f32)
      enigma.consumer_turn_end
      enigma.pipeline_yield %next : tensor<16x64xf32>
    } : memref<4xi64, #enigma.address_space<threadgroup>> -> tensor<16x64xf32>
    %w = enigma.mma_wait %r : tensor<16x64xf32>
    enigma.barrier <threadgroup>
    %rows = arith.muli %sg, %c1024 : index
    %cbase = arith.muli %row0, %N : index
    %coff = arith.addi %cbase, %rows : index
    enigma.mma_store %w, %C[%coff], %N : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  }
  enigma.return
}
