// RUN: enigma-opt %s | enigma-opt | FileCheck %s --check-prefix=IR
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Every simd / quad op prints as the Metal function its mnemonic names.

// IR-LABEL: enigma.kernel @reductions
// IR: enigma.simd_sum %{{.*}} : f32
// IR: enigma.simd_min %{{.*}} {is_signed} : i32
// IR: enigma.quad_shuffle_xor %{{.*}}, %{{.*}} : f32

// MSL-LABEL: kernel void enigma_kernel_reductions(
// MSL: float [[X:v[0-9]+]] = A[
// MSL: float [[S:v[0-9]+]] = simd_sum([[X]]);
// MSL-NEXT: float {{v[0-9]+}} = simd_product([[X]]);
// MSL-NEXT: float {{v[0-9]+}} = simd_max([[X]]);
// MSL-NEXT: float {{v[0-9]+}} = simd_prefix_exclusive_sum([[X]]);
// MSL-NEXT: float {{v[0-9]+}} = simd_prefix_inclusive_product([[X]]);
// MSL-NEXT: float {{v[0-9]+}} = quad_sum([[X]]);
// MSL-NEXT: float {{v[0-9]+}} = quad_prefix_inclusive_sum([[X]]);
// MSL: uint [[I:v[0-9]+]] = I[
// MSL: uint {{v[0-9]+}} = (uint)simd_min((int)[[I]]);
// MSL-NEXT: uint {{v[0-9]+}} = simd_max([[I]]);
// MSL-NEXT: uint {{v[0-9]+}} = simd_and([[I]]);
// MSL-NEXT: uint {{v[0-9]+}} = simd_or([[I]]);
// MSL-NEXT: uint {{v[0-9]+}} = simd_xor([[I]]);
// MSL-NEXT: uint {{v[0-9]+}} = (uint)quad_max((int)[[I]]);
// MSL-NEXT: float {{v[0-9]+}} = simd_shuffle([[X]], [[I]]);
// MSL-NEXT: float {{v[0-9]+}} = simd_shuffle_up([[X]], 1u);
// MSL-NEXT: float {{v[0-9]+}} = simd_shuffle_down([[X]], 2u);
// MSL-NEXT: float {{v[0-9]+}} = simd_shuffle_xor([[X]], 16u);
// MSL-NEXT: float {{v[0-9]+}} = simd_broadcast([[X]], 0u);
// MSL-NEXT: float {{v[0-9]+}} = quad_shuffle([[X]], [[I]]);
// MSL-NEXT: float {{v[0-9]+}} = quad_shuffle_up([[X]], 1u);
// MSL-NEXT: float {{v[0-9]+}} = quad_shuffle_down([[X]], 1u);
// MSL-NEXT: float {{v[0-9]+}} = quad_shuffle_xor([[X]], 1u);
// MSL-NEXT: float {{v[0-9]+}} = quad_broadcast([[X]], 3u);

// A kernel with simdgroup functions runs in 1-D blocks and places its
// threads from the linear index over the group's actual size, so warps are
// Metal's simdgroups also in partial 2-D and 3-D groups.
// CUDA-LABEL: void enigma_kernel_reductions(
// CUDA: const uint enigma_sx = enigma_group_size(blockIdx.x, enigma_launch.threads[0], enigma_launch.grid[0]);
// CUDA: const uint enigma_linear = threadIdx.x;
// CUDA-NEXT: const EnigmaLanes enigma_lanes = enigma_linear_lanes(enigma_linear, enigma_sx * enigma_sy * enigma_sz);
// CUDA-NEXT: if (enigma_linear >= enigma_sx * enigma_sy * enigma_sz) return;
// CUDA: float {{v[0-9]+}} = simd_sum({{v[0-9]+}}, enigma_lanes);
// CUDA: uint {{v[0-9]+}} = (uint)simd_min((int)
// CUDA: float {{v[0-9]+}} = quad_broadcast({{v[0-9]+}}, 3u, enigma_lanes);

// On the CPU every op is a call between thread loops that reads and writes
// per-thread arrays, simdgroup by simdgroup over the whole group.
// CPP-LABEL: void enigma_kernel_reductions(
// CPP: uint [[NT:v[0-9]+]] = {{v[0-9]+}} * enigma_nz;
// CPP: float [[A:v[0-9]+]] = A[
// CPP-NEXT: [[X:v[0-9]+]][enigma_slot] = [[A]];
// CPP: enigma_cpu_simd_sum([[X]], {{v[0-9]+}}, [[NT]], 0u, ((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5));
// CPP: uint [[IV:v[0-9]+]] = I[
// CPP-NEXT: [[I:v[0-9]+]][enigma_slot] = [[IV]];
// CPP: enigma_cpu_simd_min((int *)[[I]], (int *){{v[0-9]+}}, [[NT]], 0u, ((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5));
// CPP: enigma_cpu_simd_shuffle([[X]], [[I]], {{v[0-9]+}}, [[NT]],
// CPP: enigma_cpu_simd_shuffle_up([[X]], enigma_cpu::Uniform{1u}, {{v[0-9]+}}, [[NT]],
// CPP: enigma_cpu_quad_broadcast([[X]], enigma_cpu::Uniform{3u}, {{v[0-9]+}}, [[NT]],
enigma.kernel @reductions(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %I: memref<?xi32, #enigma.address_space<device>> {enigma.name = "I", enigma.dtype = "i32"},
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"},
    %P: memref<?xi32, #enigma.address_space<device>> {enigma.name = "P", enigma.dtype = "i32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
  %s0 = enigma.simd_sum %x : f32
  %s1 = enigma.simd_product %x : f32
  %s2 = enigma.simd_max %x : f32
  %s3 = enigma.simd_prefix_exclusive_sum %x : f32
  %s4 = enigma.simd_prefix_inclusive_product %x : f32
  %s5 = enigma.quad_sum %x : f32
  %s6 = enigma.quad_prefix_inclusive_sum %x : f32
  %k = memref.load %I[%i] : memref<?xi32, #enigma.address_space<device>>
  %t0 = enigma.simd_min %k {is_signed} : i32
  %t1 = enigma.simd_max %k : i32
  %t2 = enigma.simd_and %k : i32
  %t3 = enigma.simd_or %k : i32
  %t4 = enigma.simd_xor %k : i32
  %t5 = enigma.quad_max %k {is_signed} : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %c2 = arith.constant 2 : i32
  %c3 = arith.constant 3 : i32
  %c16 = arith.constant 16 : i32
  %u0 = enigma.simd_shuffle %x, %k : f32
  %u1 = enigma.simd_shuffle_up %x, %c1 : f32
  %u2 = enigma.simd_shuffle_down %x, %c2 : f32
  %u3 = enigma.simd_shuffle_xor %x, %c16 : f32
  %u4 = enigma.simd_broadcast %x, %c0 : f32
  %q0 = enigma.quad_shuffle %x, %k : f32
  %q1 = enigma.quad_shuffle_up %x, %c1 : f32
  %q2 = enigma.quad_shuffle_down %x, %c1 : f32
  %q3 = enigma.quad_shuffle_xor %x, %c1 : f32
  %q4 = enigma.quad_broadcast %x, %c3 : f32
  %f0 = arith.addf %s0, %s1 : f32
  %f1 = arith.addf %f0, %s2 : f32
  %f2 = arith.addf %f1, %s3 : f32
  %f3 = arith.addf %f2, %s4 : f32
  %f4 = arith.addf %f3, %s5 : f32
  %f5 = arith.addf %f4, %s6 : f32
  %f6 = arith.addf %f5, %u0 : f32
  %f7 = arith.addf %f6, %u1 : f32
  %f8 = arith.addf %f7, %u2 : f32
  %f9 = arith.addf %f8, %u3 : f32
  %f10 = arith.addf %f9, %u4 : f32
  %f11 = arith.addf %f10, %q0 : f32
  %f12 = arith.addf %f11, %q1 : f32
  %f13 = arith.addf %f12, %q2 : f32
  %f14 = arith.addf %f13, %q3 : f32
  %f15 = arith.addf %f14, %q4 : f32
  memref.store %f15, %O[%i] : memref<?xf32, #enigma.address_space<device>>
  %i0 = arith.addi %t0, %t1 : i32
  %i1 = arith.addi %i0, %t2 : i32
  %i2 = arith.addi %i1, %t3 : i32
  %i3 = arith.addi %i2, %t4 : i32
  %i4 = arith.addi %i3, %t5 : i32
  memref.store %i4, %P[%i] : memref<?xi32, #enigma.address_space<device>>
  enigma.return
}

// -----

// Narrow and half types keep their C spelling.
// MSL-LABEL: kernel void enigma_kernel_types(
// MSL: half {{v[0-9]+}} = simd_sum({{v[0-9]+}});
// MSL: ushort {{v[0-9]+}} = quad_or({{v[0-9]+}});
// MSL: bool {{v[0-9]+}} = simd_broadcast({{v[0-9]+}}, 0u);
enigma.kernel @types(
    %H: memref<?xf16, #enigma.address_space<device>> {enigma.name = "H", enigma.dtype = "f16"},
    %S: memref<?xi16, #enigma.address_space<device>> {enigma.name = "S", enigma.dtype = "u16"},
    %B: memref<?xi1, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "b1"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %h = memref.load %H[%i] : memref<?xf16, #enigma.address_space<device>>
  %hs = enigma.simd_sum %h : f16
  memref.store %hs, %H[%i] : memref<?xf16, #enigma.address_space<device>>
  %s = memref.load %S[%i] : memref<?xi16, #enigma.address_space<device>>
  %so = enigma.quad_or %s : i16
  memref.store %so, %S[%i] : memref<?xi16, #enigma.address_space<device>>
  %b = memref.load %B[%i] : memref<?xi1, #enigma.address_space<device>>
  %c0 = arith.constant 0 : i32
  %bb = enigma.simd_broadcast %b, %c0 : i1
  memref.store %bb, %B[%i] : memref<?xi1, #enigma.address_space<device>>
  enigma.return
}
