// RUN: enigma-opt %s --enigma-split-warp-roles --canonicalize | FileCheck %s --check-prefix=ROLES
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP

// A persistent kernel: a uniform loop over output tiles around a pipeline
// on one ring, in clusters of two that share the A tile (multicast), with
// warpgroup products in flight across iterations. The producer keeps the
// tile loop and the arithmetic of its copies; the consumers release the
// previous stage after each iteration's first asynchronous product and the
// last one after waiting for the result.

// ROLES-LABEL: enigma.kernel @persistent
// ROLES: enigma.warp_roles producer {
// ROLES: scf.for
// ROLES: scf.for
// ROLES: %[[S:.*]] = enigma.ring_acquire
// ROLES: enigma.stage_copy {{.*}}multicast
// ROLES: enigma.ring_commit %{{.*}}[%[[S]]] {bytes = 16384 : i64}
// ROLES-NOT: enigma.mma
// ROLES-NOT: enigma.mma_store
// ROLES: } consumer {
// ROLES: scf.for
// ROLES: scf.for {{.*}} iter_args
// ROLES: enigma.ring_wait
// ROLES: enigma.mma {{.*}}asynchronous
// ROLES-NEXT: arith.cmpi sgt
// ROLES-NEXT: scf.if
// ROLES-NEXT: enigma.ring_release
// ROLES: scf.yield
// ROLES: enigma.mma_wait
// ROLES: scf.if
// ROLES-NEXT: enigma.ring_release
// ROLES: enigma.mma_store

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(256, 1) __cluster_dims__(2, 1, 1) enigma_kernel_persistent(
// CHECK: const __grid_constant__ EnigmaTensorMap enigma_tmap0,
// CHECK-NEXT: const __grid_constant__ EnigmaTensorMap enigma_tmap1,
// CHECK-NEXT: const uint enigma_tmap_valid) {
// CHECK-NOT: return;
// CHECK: __shared__ __align__(8) unsigned long long [[R:v[0-9]+]]_bars[4];
// CHECK: EnigmaRing<2> [[R]] = enigma_ring_begin<2, 2>([[R]]_bars, 4u, enigma_linear, (enigma_tmap_valid & 3u) == 3u && enigma_ring_aligned(
// CHECK: if (enigma_linear >= 128u) { // the producer warpgroup
// CHECK-NEXT: enigma_producer_registers<40>();
// CHECK-NEXT: if (enigma_linear < 160u) {
// CHECK: enigma_ring_acquire([[R]])
// CHECK: enigma_stage_copy<64, 64, 64, 4096, 3, 3, 3, true, 2>([[R]], {{.*}}, &enigma_tmap0,
// CHECK: enigma_stage_copy<64, 64, 64, 4096, 3, 3, 3, false, 2>([[R]], {{.*}}, &enigma_tmap1,
// CHECK: enigma_ring_commit([[R]], {{.*}}, 16384u, (enigma_linear & 31u));
// CHECK: } else { // the consumers: the threadgroup's threads
// CHECK-NEXT: enigma_consumer_registers<232, 255>();
// CHECK: enigma_ring_wait([[R]])
// CHECK: enigma_mma_sync<64, 64, false, 3, 3, 3, 0, 64, false, 3, 3, 3, 0, false, true, true>(
// CHECK: enigma_ring_release<2>([[R]], (enigma_linear & 31u));
// CHECK: enigma_mma_wait(
// CHECK: enigma_ring_release<2>([[R]], (enigma_linear & 31u));
// CHECK: enigma_consumer_barrier(128u);
// CHECK: enigma_mma_store
// CHECK: enigma_ring_end<2>();

// MSL-LABEL: kernel void enigma_kernel_persistent(
// MSL-NOT: ring
// MSL: enigma_copy_tile_async<64, 64, 64, 3, 3, 3, 0>(
// MSL: threadgroup_barrier(mem_flags::mem_threadgroup);
// MSL: enigma_mma_sync<

// CPP-LABEL: enigma_kernel_persistent
// CPP-NOT: ring_
// CPP: enigma_copy_tile_async<64, 64, 64, 3, 3, 3, 0>(
enigma.kernel @persistent(
    %A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "bf16"},
    %B: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "bf16"},
    %C: memref<?xf32, #enigma.address_space<device>> {enigma.name = "C", enigma.dtype = "f32"},
    %m: i32 {enigma.name = "m", enigma.dtype = "u32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"},
    %k: i32 {enigma.name = "k", enigma.dtype = "u32"},
    %tiles: i32 {enigma.name = "tiles", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 128 : i64} {
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
  %ring = enigma.pipeline_ring %a, %b {stages = 2, cluster = 2} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
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
      enigma.stage_copy %A[%row0, %kc] of(%M, %K, %K) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 64 : i64, box_cols = 64 : i64, swizzle = array<i32: 3, 3, 3>, multicast} : memref<?xbf16, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
      enigma.stage_copy %B[%kc, %col0] of(%K, %N, %N) into %ring[%s] {buffer = 1 : i64, offset = 0 : i64, box_rows = 64 : i64, box_cols = 64 : i64, swizzle = array<i32: 3, 3, 3>} : memref<?xbf16, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
      enigma.pipeline_yield
    } consumer {
    ^bb0(%i: index, %s: index, %acc: tensor<16x64xf32>):
      %base = arith.muli %s, %c4096 : index
      %aoff = arith.constant 0 : index
      %next = enigma.mma %acc, %a[%base, %aoff], %b[%base, %c0] {k = 64 : i64, a_ld = 64 : i64, b_ld = 64 : i64, a_swizzle = array<i32: 3, 3, 3>, b_swizzle = array<i32: 3, 3, 3>, warpgroup, asynchronous} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
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
