// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// MSL-LABEL: kernel void enigma_kernel_flags(
// MSL: threadgroup_barrier(mem_flags::mem_none);
// MSL-NEXT: threadgroup_barrier(mem_flags::mem_device);
// MSL-NEXT: threadgroup_barrier(mem_flags::mem_threadgroup);
// MSL-NEXT: threadgroup_barrier(mem_flags::mem_texture);
// MSL-NEXT: threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
// MSL-NEXT: threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup | mem_flags::mem_texture);
// MSL-NEXT: simdgroup_barrier(mem_flags::mem_none);
// MSL-NEXT: simdgroup_barrier(mem_flags::mem_threadgroup);
// MSL-NEXT: simdgroup_barrier(mem_flags::mem_device | mem_flags::mem_texture);
// MSL-NEXT: {{^}}}

// Device-memory ordering needs a fence in CUDA; __syncthreads orders shared
// memory already.
// CUDA-LABEL: void enigma_kernel_flags(
// CUDA: return;
// CUDA-NEXT: __syncthreads();
// CUDA-NEXT: __threadfence();
// CUDA-NEXT: __syncthreads();
// CUDA-NEXT: __syncthreads();
// CUDA-NEXT: __syncthreads();
// CUDA-NEXT: __threadfence();
// CUDA-NEXT: __syncthreads();
// CUDA-NEXT: __threadfence();
// CUDA-NEXT: __syncthreads();
// CUDA-NEXT: __syncwarp();
// CUDA-NEXT: __syncwarp();
// CUDA-NEXT: __threadfence();
// CUDA-NEXT: __syncwarp();
// CUDA-NEXT: {{^}}}
enigma.kernel @flags() {
  enigma.barrier <none>
  enigma.barrier <device>
  enigma.barrier <threadgroup>
  enigma.barrier <texture>
  enigma.barrier <device | threadgroup>
  enigma.barrier <device | threadgroup | texture>
  enigma.simd_barrier <none>
  enigma.simd_barrier <threadgroup>
  enigma.simd_barrier <device | texture>
  enigma.return
}

// The CPU backend runs the threads of a group one after another, so it
// splits the body at each barrier into thread loops; a value computed before
// a barrier and used after it lives in a per-thread array.
// CPP-LABEL: extern "C" void enigma_kernel_top_level(
// CPP: for (uint64_t enigma_g = enigma_group_begin;
// CPP: ulong [[I:v[0-9]+]]{{\[}}1032];
// CPP-NEXT: float [[X:v[0-9]+]]{{\[}}1040];
// CPP-NEXT: uint [[BASE:v[0-9]+]] = enigma_gx * enigma_nx;
// CPP-NEXT: for (uint enigma_lz = 0; enigma_lz < enigma_nz; ++enigma_lz)
// CPP-NEXT: for (uint enigma_ly = 0; enigma_ly < enigma_ny; ++enigma_ly)
// CPP-NEXT: for (uint64_t enigma_x = enigma_bx; enigma_x < (uint64_t)enigma_bx + enigma_nx; ++enigma_x) {
// CPP-NEXT: const uint enigma_tx = (uint)enigma_x;
// CPP-NEXT: const uint enigma_lx = enigma_tx - enigma_bx;
// CPP-NEXT: const uint enigma_lid = (enigma_lz * enigma_ny + enigma_ly) * enigma_nx + enigma_lx;
// CPP-NEXT: const uint64_t enigma_slot = ((uint64_t)enigma_lz * enigma_ny + enigma_ly) * enigma_nx + (enigma_x - enigma_bx);
// CPP-NEXT: uint [[GID:v[0-9]+]] = [[BASE]] + enigma_lid;
// CPP-NEXT: [[I]][enigma_slot] = [[GID]];
// CPP-NEXT: float [[A:v[0-9]+]] = a{{\[}}[[GID]]];
// CPP-NEXT: [[X]][enigma_slot] = [[A]];
// CPP-NEXT: }
// CPP-NEXT: // threadgroup_barrier(mem_flags::mem_threadgroup)
// CPP-NEXT: for (uint enigma_lz = 0; enigma_lz < enigma_nz; ++enigma_lz)
// CPP-NEXT: for (uint enigma_ly = 0; enigma_ly < enigma_ny; ++enigma_ly)
// CPP-NEXT: for (uint64_t enigma_x = enigma_bx; enigma_x < (uint64_t)enigma_bx + enigma_nx; ++enigma_x) {
// CPP-NEXT: const uint enigma_tx = (uint)enigma_x;
// CPP-NEXT: const uint enigma_lx = enigma_tx - enigma_bx;
// CPP-NEXT: const uint enigma_lid = (enigma_lz * enigma_ny + enigma_ly) * enigma_nx + enigma_lx;
// CPP-NEXT: const uint64_t enigma_slot = ((uint64_t)enigma_lz * enigma_ny + enigma_ly) * enigma_nx + (enigma_x - enigma_bx);
// CPP-NEXT: ulong [[J:v[0-9]+]] = [[I]][enigma_slot];
// CPP-NEXT: float [[XV:v[0-9]+]] = [[X]][enigma_slot];
// CPP-NEXT: float [[Y:v[0-9]+]] = [[XV]] * 2.0f;
// CPP-NEXT: b{{\[}}[[J]]] = [[Y]];
// CPP-NEXT: }
// CPP-NEXT: }
// CPP-NEXT: {{^}}}
// MSL-LABEL: kernel void enigma_kernel_top_level(
// MSL: threadgroup_barrier(mem_flags::mem_threadgroup);
enigma.kernel @top_level(%a: memref<?xf32> {enigma.name = "a"}, %b: memref<?xf32> {enigma.name = "b"}) {
  %lid = enigma.thread_index_in_threadgroup
  %g = enigma.threadgroup_position_in_grid <x>
  %n = enigma.threads_per_threadgroup <x>
  %base = arith.muli %g, %n : i32
  %gid = arith.addi %base, %lid : i32
  %i = arith.index_castui %gid : i32 to index
  %x = memref.load %a[%i] : memref<?xf32>
  enigma.barrier <threadgroup>
  %two = arith.constant 2.0 : f32
  %y = arith.mulf %x, %two : f32
  memref.store %y, %b[%i] : memref<?xf32>
  enigma.return
}

// A barrier inside a uniform loop: the loop runs once per group with thread
// loops inside it; the carried value is a per-thread array, copied thread by
// thread at the start and at the end of each iteration.
// CPP-LABEL: extern "C" void enigma_kernel_in_loop(
// CPP: float [[ACC:v[0-9]+]]{{\[}}1040];
// CPP: [[ACC]][enigma_slot] = 0.0f;
// CPP-NEXT: }
// CPP-NEXT: for (uint [[K:v[0-9]+]] = 0u; (int)[[K]] < (int)((uint)n); [[K]] += 1u) {
// CPP: float [[V:v[0-9]+]] = a{{\[}}{{.*}}];
// CPP: // threadgroup_barrier(mem_flags::mem_device)
// CPP: [[ACC]][enigma_slot] =
// CPP: }
// CPP: float [[R:v[0-9]+]] = [[ACC]][enigma_slot];
// CPP-NEXT: b{{\[}}{{.*}}] = [[R]];
// MSL-LABEL: kernel void enigma_kernel_in_loop(
// MSL: for (uint [[K:v[0-9]+]] = 0u; (int)[[K]] < (int)((uint)n); [[K]] += 1u) {
// MSL: threadgroup_barrier(mem_flags::mem_device);
enigma.kernel @in_loop(%a: memref<?xf32> {enigma.name = "a"}, %b: memref<?xf32> {enigma.name = "b"},
                       %n: i32 {enigma.name = "n", enigma.dtype = "i32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %zero = arith.constant 0.0 : f32
  %r = scf.for %k = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) : i32 {
    %v = memref.load %a[%i] : memref<?xf32>
    %s = arith.addf %acc, %v : f32
    enigma.barrier <device>
    memref.store %s, %a[%i] : memref<?xf32>
    %t = arith.mulf %s, %s : f32
    scf.yield %t : f32
  }
  memref.store %r, %b[%i] : memref<?xf32>
  enigma.return
}
