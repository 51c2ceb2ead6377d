// RUN: enigma-opt %s --enigma-split-warp-roles --canonicalize | FileCheck %s --check-prefix=ROLES
// RUN: enigma-opt %s --enigma-lower-pipelines | FileCheck %s --check-prefix=LOWER
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP

// Two consumer groups (256 consumer threads, one warpgroup each) take the
// iterations of a pipeline in turn, each carrying its own asynchronous
// product. Both lowerings run the consumer under the guard
// (simdgroup / 4) % 2 == (i - lower) % 2, whose else-branch yields the
// carried value. CUDA releases stage i - 2 after iteration i (a group's
// product of i - 2 is complete once its product of i is issued) and the
// last two after the loop, where the products are waited for. The
// producer prints in its TMA form (one thread) beside the warp's
// cp.async fallback.

// ROLES-LABEL: enigma.kernel @groups
// ROLES: enigma.warp_roles producer {
// ROLES: enigma.ring_acquire
// ROLES: } consumer {
// ROLES: scf.for %[[I:[^ ]*]] = %c0 to {{.*}} iter_args
// ROLES: enigma.ring_wait
// ROLES: enigma.simdgroup_index_in_threadgroup
// ROLES: %[[WG:.*]] = arith.divui %{{.*}}, %c4
// ROLES: %[[GROUP:.*]] = arith.remui %[[WG]], %c2
// ROLES: %[[TURN:.*]] = arith.remui %[[I]], %c2
// ROLES: %[[TAKES:.*]] = arith.cmpi eq, %[[GROUP]], %[[TURN]]
// ROLES: scf.if %[[TAKES]] -> (tensor<16x64xf32>) {
// ROLES: enigma.mma {{.*}}asynchronous
// ROLES: } else {
// ROLES-NEXT: scf.yield %{{.*}} : tensor<16x64xf32>
// ROLES: arith.cmpi sge, %[[I]], %c2
// ROLES: scf.if
// ROLES-NEXT: enigma.ring_release
// ROLES: enigma.mma_wait
// ROLES-COUNT-2: enigma.ring_release

// LOWER-LABEL: enigma.kernel @groups
// LOWER: scf.for
// LOWER: enigma.simdgroup_index_in_threadgroup
// LOWER: scf.if %{{.*}} -> (tensor<16x64xf32>) {
// LOWER: enigma.mma
// LOWER-NOT: enigma.ring

// CHECK-LABEL: extern "C" __global__ void __launch_bounds__(384, 1) enigma_kernel_groups(
// CHECK: if (enigma_linear >= 256u) { // the producer warpgroup
// The producer's TMA form, one thread issuing boxes, beside the fallback.
// CHECK: if ([[RING:v[0-9]+]].tma) { // through the TMA
// CHECK-NEXT: if ((enigma_linear & 31u) == 0u) {
// CHECK: enigma_ring_acquire([[RING]])
// CHECK: enigma_stage_copy_tma<64, 64, 64, 4096, false, 1>([[RING]],
// CHECK: enigma_stage_copy_tma<64, 64, 64, 4096, false, 1>([[RING]],
// CHECK: enigma_ring_commit_tma([[RING]], {{.*}}, 16384u);
// CHECK: } else { // cp.async by the warp
// CHECK: enigma_stage_copy<64, 64, 64, 4096, 3, 3, 3, false, 1>(
// CHECK: enigma_ring_commit([[RING]], {{.*}}, 16384u, (enigma_linear & 31u));
// CHECK: } else { // the consumers: the threadgroup's threads
// CHECK: for (
// CHECK: enigma_ring_wait(
// CHECK: bool [[TAKES:v[0-9]+]] = {{.*}} == {{.*}};
// CHECK-NEXT: enigma_frag<float, 16, 64> [[NEXT:v[0-9]+]];
// CHECK-NEXT: if ([[TAKES]]) {
// CHECK: enigma_mma_sync<
// CHECK: } else {
// CHECK: bool [[PAST:v[0-9]+]] = (long){{.*}} >= (long){{.*}};
// CHECK-NEXT: if ([[PAST]]) {
// CHECK-NEXT: enigma_ring_release<1>(
// CHECK: enigma_mma_wait(
// CHECK-COUNT-2: enigma_ring_release<1>(

// MSL-LABEL: kernel void enigma_kernel_groups(
// MSL: if (
// MSL: enigma_mma_sync<

// CPP-LABEL: enigma_kernel_groups
// CPP: enigma_mma_sync<
enigma.kernel @groups(
    %A: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "bf16"},
    %B: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "bf16"},
    %C: memref<?xf32, #enigma.address_space<device>> {enigma.name = "C", enigma.dtype = "f32"},
    %m: i32 {enigma.name = "m", enigma.dtype = "u32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"},
    %k: i32 {enigma.name = "k", enigma.dtype = "u32"}) attributes {enigma.threadgroup_size = 256 : i64} {
  %c0 = arith.constant 0 : index
  %c63 = arith.constant 63 : index
  %c64 = arith.constant 64 : index
  %c1024 = arith.constant 1024 : index
  %c4096 = arith.constant 4096 : index
  %zero = arith.constant 0.0 : f32
  %M = arith.index_castui %m : i32 to index
  %N = arith.index_castui %n : i32 to index
  %K = arith.index_castui %k : i32 to index
  %a = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %b = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %ring = enigma.pipeline_ring %a, %b {stages = 2} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>> -> memref<4xi64, #enigma.address_space<threadgroup>>
  %k63 = arith.addi %K, %c63 : index
  %kt = arith.divui %k63, %c64 : index
  %sg32 = enigma.simdgroup_index_in_threadgroup
  %sg = arith.index_castui %sg32 : i32 to index
  %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
  %r = enigma.pipeline %ring[%c0, %kt) iter_args(%acc0 : tensor<16x64xf32>) producer {
  ^bb0(%i: index, %s: index):
    %kc = arith.muli %i, %c64 : index
    enigma.stage_copy %A[%c0, %kc] of(%M, %K, %K) into %ring[%s] {buffer = 0 : i64, offset = 0 : i64, box_rows = 64 : i64, box_cols = 64 : i64, swizzle = array<i32: 3, 3, 3>} : memref<?xbf16, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.stage_copy %B[%kc, %c0] of(%K, %N, %N) into %ring[%s] {buffer = 1 : i64, offset = 0 : i64, box_rows = 64 : i64, box_cols = 64 : i64, swizzle = array<i32: 3, 3, 3>} : memref<?xbf16, #enigma.address_space<device>>, memref<4xi64, #enigma.address_space<threadgroup>>
    enigma.pipeline_yield
  } consumer {
  ^bb0(%i: index, %s: index, %acc: tensor<16x64xf32>):
    %base = arith.muli %s, %c4096 : index
    %next = enigma.mma %acc, %a[%base, %c0], %b[%base, %c0] {k = 64 : i64, a_ld = 64 : i64, b_ld = 64 : i64, a_swizzle = array<i32: 3, 3, 3>, b_swizzle = array<i32: 3, 3, 3>, warpgroup, asynchronous} : memref<8192xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    enigma.pipeline_yield %next : tensor<16x64xf32>
  } {consumer_groups = 2 : i64} : memref<4xi64, #enigma.address_space<threadgroup>> -> tensor<16x64xf32>
  %w = enigma.mma_wait %r : tensor<16x64xf32>
  %rows = arith.muli %sg, %c1024 : index
  enigma.mma_store %w, %C[%rows], %N : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
