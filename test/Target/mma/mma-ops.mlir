// RUN: enigma-opt %s | enigma-opt | FileCheck %s --check-prefix=IR
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Fragments are builtin tensors held by a simdgroup; every op of the family
// prints as one call of the target's helpers, and element-wise arith on
// fragments as a loop over the lane's elements.

// IR-LABEL: enigma.kernel @attention_step
// IR: enigma.copy_tile_async %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}], %{{.*}}, %{{.*}}, %{{.*}} {cols = 64 : i64, dst_ld = 64 : i64, dst_swizzle = array<i32: 3, 3, 3>, rows = 32 : i64}
// IR: enigma.copy_async_commit
// IR: enigma.copy_async_wait 1
// IR: enigma.mma_load %{{.*}}[%{{.*}}], %{{.*}} bounds %{{.*}}, %{{.*}} : memref<?xbf16, #enigma.address_space<device>> -> tensor<16x64xbf16>
// IR: enigma.mma_fill %{{.*}} : f32 -> tensor<16x32xf32>
// IR: enigma.mma_reg %{{.*}}, %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {b_ld = 64 : i64, b_swizzle = array<i32: 3, 3, 3>, b_transpose} : tensor<16x64xbf16>, memref<2048xbf16, #enigma.address_space<threadgroup>>, tensor<16x32xf32>
// IR: enigma.mma_iota 1 : tensor<16x32xi32>
// IR: enigma.mma_reduce_rows max %{{.*}} : tensor<16x32xf32> -> tensor<16xf32>
// IR: enigma.mma_broadcast_rows %{{.*}} : tensor<16xf32> -> tensor<16x32xf32>
// IR: math.exp2 %{{.*}} : tensor<16x32xf32>
// IR: enigma.mma %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}, %{{.*}}] {a_ld = 32 : i64, a_transpose, b_ld = 64 : i64, k = 32 : i64, tf32}
// IR: enigma.mma_store %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}} {transpose} : tensor<16x32xf32>, memref<?xf32, #enigma.address_space<device>>

// MSL: template <typename T, int M, int N> struct enigma_frag {
// MSL: simd_shuffle_xor(x, m)
// MSL: simdgroup_multiply_accumulate(cm, am, bm, cm);
// MSL-LABEL: kernel void enigma_kernel_attention_step(
// MSL: uint thread_index_in_simdgroup {{\[\[}}thread_index_in_simdgroup{{\]\]}}
// MSL: uint thread_index_in_threadgroup {{\[\[}}thread_index_in_threadgroup{{\]\]}}
// MSL: uint3 threads_per_threadgroup {{\[\[}}threads_per_threadgroup{{\]\]}}
// MSL: enigma_copy_tile_async<32, 64, 64, 3, 3, 3, 0>(
// MSL-SAME: (uint)thread_index_in_threadgroup, (uint)(threads_per_threadgroup.x * threads_per_threadgroup.y * threads_per_threadgroup.z));
// MSL: enigma_frag<bfloat, 16, 64> [[Q:v[0-9]+]] = enigma_mma_load<enigma_frag<bfloat, 16, 64>, false, true>(Q,
// MSL: enigma_frag<float, 16, 32> [[S:v[0-9]+]] = enigma_mma_reg<64, true, 3, 3, 3, 0, false, false>({{v[0-9]+}}, [[Q]], {{v[0-9]+}}, {{.*}}, (uint)thread_index_in_simdgroup);
// MSL: enigma_row<float, 16> [[M:v[0-9]+]] = enigma_mma_reduce_rows<1>([[S]]);
// MSL: enigma_frag<float, 16, 32> [[B:v[0-9]+]] = enigma_mma_broadcast_rows<enigma_frag<float, 16, 32>>([[M]]);
// MSL: for (int enigma_i = 0; enigma_i < enigma_frag<float, 16, 32>::size; ++enigma_i) [[D:v[0-9]+]].v[enigma_i] = [[S]].v[enigma_i] - [[B]].v[enigma_i];
// MSL: [[E:v[0-9]+]].v[enigma_i] = exp2([[D]].v[enigma_i]);
// MSL: enigma_mma_sync<32, 32, true, 0, 0, 0, 0, 64, false, 0, 0, 0, 0, true, false, false>(

// CUDA: #include "enigma_cuda_prelude.cuh"
// CUDA-LABEL: extern "C" __global__ void enigma_kernel_attention_step(
// CUDA: const uint enigma_linear = threadIdx.x;
// CUDA: enigma_copy_tile_async<32, 64, 64, 3, 3, 3, 0>({{v[0-9]+}}, 0ul, K, {{.*}}, (uint)enigma_linear, (uint)(enigma_sx * enigma_sy * enigma_sz));
// CUDA: enigma_copy_async_commit();
// CUDA: enigma_copy_async_wait<1>();
// CUDA: enigma_mma_reg<64, true, 3, 3, 3, 0, false, false>({{.*}}, (uint)(enigma_linear & 31u));
// CUDA: #pragma unroll
// CUDA: enigma_mma_store<true, false>(

// CPP: #include "enigma_cpu_prelude.h"
// CPP-LABEL: extern "C" void enigma_kernel_attention_step(
// CPP: enigma_copy_tile_async<32, 64, 64, 3, 3, 3, 0>(
// CPP: // threadgroup_barrier(mem_flags::mem_threadgroup)
// CPP: enigma_mma_reg<64, true, 3, 3, 3, 0, false, false>(
// CPP-NOT: #pragma unroll
// CPP: enigma_mma_store<true, false>(
enigma.kernel @attention_step(
    %Q: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "Q", enigma.dtype = "bf16"},
    %K: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "K", enigma.dtype = "bf16"},
    %X: memref<?xf32, #enigma.address_space<device>> {enigma.name = "X", enigma.dtype = "f32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"},
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %nn = arith.index_castui %n : i32 to index
  %k_s = enigma.threadgroup_alloc : memref<2048xbf16, #enigma.address_space<threadgroup>>
  %a_s = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %b_s = enigma.threadgroup_alloc : memref<2048xf32, #enigma.address_space<threadgroup>>
  enigma.copy_tile_async %k_s[%c0], %K[%c0], %c64, %nn, %c64 {rows = 32, cols = 64, dst_ld = 64, dst_swizzle = array<i32: 3, 3, 3>} : memref<2048xbf16, #enigma.address_space<threadgroup>>, memref<?xbf16, #enigma.address_space<device>>
  enigma.copy_async_commit
  enigma.copy_async_wait 1
  enigma.barrier <threadgroup>
  %q = enigma.mma_load %Q[%c0], %c64 bounds %nn, %c64 : memref<?xbf16, #enigma.address_space<device>> -> tensor<16x64xbf16>
  %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x32xf32>
  %s = enigma.mma_reg %acc0, %q, %k_s[%c0, %c0] {b_ld = 64, b_transpose, b_swizzle = array<i32: 3, 3, 3>} : tensor<16x64xbf16>, memref<2048xbf16, #enigma.address_space<threadgroup>>, tensor<16x32xf32>
  %cols = enigma.mma_iota 1 : tensor<16x32xi32>
  %m = enigma.mma_reduce_rows max %s : tensor<16x32xf32> -> tensor<16xf32>
  %mb = enigma.mma_broadcast_rows %m : tensor<16xf32> -> tensor<16x32xf32>
  %d = arith.subf %s, %mb : tensor<16x32xf32>
  %e = math.exp2 %d : tensor<16x32xf32>
  %acc = enigma.mma %e, %a_s[%c0, %c16], %b_s[%c0, %c0] {k = 32, a_ld = 32, a_transpose, b_ld = 64, tf32} : memref<1024xf32, #enigma.address_space<threadgroup>>, memref<2048xf32, #enigma.address_space<threadgroup>>, tensor<16x32xf32>
  %ci = arith.sitofp %cols : tensor<16x32xi32> to tensor<16x32xf32>
  %r = arith.addf %acc, %ci : tensor<16x32xf32>
  enigma.mma_store %r, %O[%c0], %c32 {transpose} : tensor<16x32xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// On the CPU no op of the family is a collective (a lane owns whole rows);
// a fragment live across a barrier is kept per thread like any value.
// CPP-LABEL: extern "C" void enigma_kernel_across_barrier(
// CPP: enigma_frag<float, 16, 16> [[F:v[0-9]+]][1024];
// CPP: enigma_frag<float, 16, 16> [[Z:v[0-9]+]] = enigma_mma_fill<enigma_frag<float, 16, 16>>(0.0f);
// CPP-NEXT: [[F]][enigma_slot] = [[Z]];
// CPP: // threadgroup_barrier(mem_flags::mem_threadgroup)
// CPP: enigma_frag<float, 16, 16> [[G:v[0-9]+]] = [[F]][enigma_slot];
// CPP-NEXT: enigma_mma_store<false, false>([[G]], O,
enigma.kernel @across_barrier(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %f = enigma.mma_fill %zero : f32 -> tensor<16x16xf32>
  enigma.barrier <threadgroup>
  enigma.mma_store %f, %O[%c0], %c16 : tensor<16x16xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// A warpgroup product with B in column blocks (the Hopper GEMM's shape):
// the attributes round-trip and every target passes the block stride and
// the warpgroup flag to its helper (CUDA runs it as wgmma on sm_90a), and
// the zero accumulator's flag (ZeroAcc: wgmma's scale-d 0 on sm_90a).
// IR-LABEL: enigma.kernel @warpgroup_product
// IR: enigma.mma %{{.*}} {a_ld = 64 : i64, a_swizzle = array<i32: 3, 3, 3>, asynchronous, b_block_stride = 4096 : i64, b_ld = 64 : i64, b_swizzle = array<i32: 3, 3, 3>, k = 64 : i64, warpgroup}
// IR: enigma.mma_wait %{{.*}} : tensor<16x128xf32>
// MSL-LABEL: kernel void enigma_kernel_warpgroup_product(
// MSL: enigma_mma_sync<64, 64, false, 3, 3, 3, 0, 64, false, 3, 3, 3, 4096, false, true, true, true>(
// MSL: enigma_mma_wait(
// CUDA-LABEL: void enigma_kernel_warpgroup_product(
// CUDA: enigma_mma_sync<64, 64, false, 3, 3, 3, 0, 64, false, 3, 3, 3, 4096, false, true, true, true>(
// CUDA: enigma_mma_wait(
// CPP-LABEL: void enigma_kernel_warpgroup_product(
// (The CPU's products are complete at once: enigma-serialize-threads
// drops 'asynchronous'.)
// CPP: enigma_mma_sync<64, 64, false, 3, 3, 3, 0, 64, false, 3, 3, 3, 4096, false, true, false, true>(
// CPP: enigma_mma_wait(
enigma.kernel @warpgroup_product(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %a_s = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %b_s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %acc0 = enigma.mma_fill %zero : f32 -> tensor<16x128xf32>
  %acc1 = enigma.mma %acc0, %a_s[%c0, %c0], %b_s[%c0, %c0] {k = 64, a_ld = 64, a_swizzle = array<i32: 3, 3, 3>, b_ld = 64, b_swizzle = array<i32: 3, 3, 3>, b_block_stride = 4096, warpgroup, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
  %acc = enigma.mma_wait %acc1 : tensor<16x128xf32>
  enigma.mma_store %acc, %O[%c0], %c128 : tensor<16x128xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// A product in flight while the previous one is added in (FP8 GEMM's
// promotion): the wait leaves the newest product running. CUDA waits with
// wgmma.wait_group 1; the CPU's products are complete at once, so there
// the wait is the plain one.
// IR-LABEL: enigma.kernel @wait_leaving_one_in_flight
// IR: enigma.mma_wait %{{.*}} {pending = 1 : i64} : tensor<16x64xf32>
// IR: enigma.mma_wait %{{.*}} : tensor<16x64xf32>
// MSL-LABEL: kernel void enigma_kernel_wait_leaving_one_in_flight(
// MSL: enigma_mma_wait_pending<1>(
// CUDA-LABEL: void enigma_kernel_wait_leaving_one_in_flight(
// CUDA: enigma_mma_sync<64, 64, false, 0, 0, 0, 0, 64, false, 0, 0, 0, 0, false, true, true, true>(
// CUDA: enigma_mma_wait_pending<1>(
// CUDA: enigma_mma_wait(
// CPP-LABEL: void enigma_kernel_wait_leaving_one_in_flight(
// CPP-NOT: enigma_mma_wait_pending
// CPP: enigma_mma_wait(
enigma.kernel @wait_leaving_one_in_flight(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %zero = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %r:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%done = %zero, %prev = %zero) -> (tensor<16x64xf32>, tensor<16x64xf32>) {
    %part = enigma.mma %zero, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    %older = enigma.mma_wait %prev {pending = 1} : tensor<16x64xf32>
    %sum = arith.addf %done, %older : tensor<16x64xf32>
    scf.yield %sum, %part : tensor<16x64xf32>, tensor<16x64xf32>
  }
  %last = enigma.mma_wait %r#1 : tensor<16x64xf32>
  %total = arith.addf %r#0, %last : tensor<16x64xf32>
  enigma.mma_store %total, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// A warpgroup product with A in registers (flash attention's P V on
// Hopper) and B in 64-column blocks, both ways round.
// IR-LABEL: enigma.kernel @warpgroup_register_product
// IR: enigma.mma_reg %{{.*}}, %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {b_block_stride = 4096 : i64, b_ld = 64 : i64, b_swizzle = array<i32: 3, 3, 3>, b_transpose, warpgroup} : tensor<16x128xbf16>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
// IR: enigma.mma_reg %{{.*}}, %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}] {b_block_stride = 4096 : i64, b_ld = 64 : i64, b_swizzle = array<i32: 3, 3, 3>, warpgroup} : tensor<16x64xbf16>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
// MSL-LABEL: kernel void enigma_kernel_warpgroup_register_product(
// MSL: enigma_mma_reg<64, true, 3, 3, 3, 4096, true, false>(
// MSL: enigma_mma_reg<64, false, 3, 3, 3, 4096, true, false>(
// CUDA-LABEL: void enigma_kernel_warpgroup_register_product(
// CUDA: enigma_mma_reg<64, true, 3, 3, 3, 4096, true, false>(
// CUDA: enigma_mma_reg<64, false, 3, 3, 3, 4096, true, false>(
// CPP-LABEL: void enigma_kernel_warpgroup_register_product(
// CPP: enigma_mma_reg<64, true, 3, 3, 3, 4096, true, false>(
// CPP: enigma_mma_reg<64, false, 3, 3, 3, 4096, true, false>(
enigma.kernel @warpgroup_register_product(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c128 = arith.constant 128 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %k_s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %v_s = enigma.threadgroup_alloc : memref<8192xbf16, #enigma.address_space<threadgroup>>
  %q = enigma.mma_fill %one : bf16 -> tensor<16x128xbf16>
  %s0 = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
  %s = enigma.mma_reg %s0, %q, %k_s[%c0, %c0] {b_ld = 64, b_transpose, b_swizzle = array<i32: 3, 3, 3>, b_block_stride = 4096, warpgroup} : tensor<16x128xbf16>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  %p = arith.truncf %s : tensor<16x64xf32> to tensor<16x64xbf16>
  %o0 = enigma.mma_fill %zero : f32 -> tensor<16x128xf32>
  %o = enigma.mma_reg %o0, %p, %v_s[%c0, %c0] {b_ld = 64, b_swizzle = array<i32: 3, 3, 3>, b_block_stride = 4096, warpgroup} : tensor<16x64xbf16>, memref<8192xbf16, #enigma.address_space<threadgroup>>, tensor<16x128xf32>
  enigma.mma_store %s, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.mma_store %o, %O[%c0], %c128 : tensor<16x128xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// A warpgroup product whose fragment A comes from before the loop asks for
// the register form only where A is computed in the loop (ptxas reused a
// loop-invariant A's registers): the flag is false for it on every target.
// So is an A computed in the loop from values that do not change there
// (the host compiler may hoist it).
// CUDA-LABEL: void enigma_kernel_warpgroup_loop_invariant_a(
// CUDA: enigma_mma_reg<64, true, 3, 3, 3, 0, false, false>(
// CUDA: enigma_mma_reg<64, true, 3, 3, 3, 0, false, false>(
// CUDA: enigma_mma_reg<64, false, 3, 3, 3, 0, true, false>(
enigma.kernel @warpgroup_loop_invariant_a(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : bf16
  %k_s = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %v_s = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %q = enigma.mma_fill %one : bf16 -> tensor<16x64xbf16>
  %o0 = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
  %qf = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
  %o = scf.for %j = %c0 to %c3 step %c1 iter_args(%acc = %o0) -> (tensor<16x64xf32>) {
    %s0 = enigma.mma_fill %zero : f32 -> tensor<16x64xf32>
    %s1 = enigma.mma_reg %s0, %q, %k_s[%c0, %c0] {b_ld = 64, b_transpose, b_swizzle = array<i32: 3, 3, 3>, warpgroup} : tensor<16x64xbf16>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    %q2 = arith.truncf %qf : tensor<16x64xf32> to tensor<16x64xbf16>
    %s = enigma.mma_reg %s1, %q2, %k_s[%c0, %c0] {b_ld = 64, b_transpose, b_swizzle = array<i32: 3, 3, 3>, warpgroup} : tensor<16x64xbf16>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    %p = arith.truncf %s : tensor<16x64xf32> to tensor<16x64xbf16>
    %next = enigma.mma_reg %acc, %p, %v_s[%c0, %c0] {b_ld = 64, b_swizzle = array<i32: 3, 3, 3>, warpgroup} : tensor<16x64xbf16>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
    scf.yield %next : tensor<16x64xf32>
  }
  enigma.mma_store %o, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// An in-flight accumulator may pass through an scf.if that carries it (the
// front end's ifs carry every live value) on its way to enigma.mma_wait.
// IR-LABEL: enigma.kernel @in_flight_through_an_if
// IR: scf.if
// IR: enigma.mma_wait
enigma.kernel @in_flight_through_an_if(
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"},
    %n: i32 {enigma.name = "n", enigma.dtype = "u32"}) {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %c1_i32 = arith.constant 1 : i32
  %z = arith.constant 0.0 : f32
  %a = enigma.threadgroup_alloc : memref<4096xbf16, #enigma.address_space<threadgroup>>
  %acc = enigma.mma_fill %z : f32 -> tensor<16x64xf32>
  %r = enigma.mma %acc, %a[%c0, %c0], %a[%c0, %c0] {k = 64, a_ld = 64, b_ld = 64, warpgroup, asynchronous} : memref<4096xbf16, #enigma.address_space<threadgroup>>, memref<4096xbf16, #enigma.address_space<threadgroup>>, tensor<16x64xf32>
  %c = arith.cmpi ult, %n, %c1_i32 : i32
  %s = scf.if %c -> (tensor<16x64xf32>) {
    scf.yield %r : tensor<16x64xf32>
  } else {
    scf.yield %r : tensor<16x64xf32>
  }
  %w = enigma.mma_wait %s : tensor<16x64xf32>
  enigma.mma_store %w, %O[%c0], %c64 : tensor<16x64xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
