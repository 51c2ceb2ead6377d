// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Threadgroup memory is a per-group array, 16-byte aligned like buffers
// (vector accesses): `threadgroup` in MSL,
// `__shared__` in CUDA, and on the CPU an array declared once per group
// before the thread loops.
// MSL-LABEL: kernel void enigma_kernel_reverse(
// MSL: alignas(16) threadgroup float [[S:v[0-9]+]][256];
// MSL: [[S]][{{.*}}] = {{v[0-9]+}};
// MSL: threadgroup_barrier(mem_flags::mem_threadgroup);
// MSL: float {{v[0-9]+}} = [[S]][{{.*}}];
// CUDA-LABEL: void enigma_kernel_reverse(
// CUDA: alignas(16) __shared__ float [[S:v[0-9]+]][256];
// CUDA: __syncthreads();
// CPP-LABEL: extern "C" void enigma_kernel_reverse(
// CPP: for (uint64_t enigma_g = enigma_group_begin;
// CPP: alignas(16) float [[S:v[0-9]+]][256];
// CPP: for (uint enigma_lz = 0;
// CPP: [[S]][{{.*}}] =
// CPP: // threadgroup_barrier(mem_flags::mem_threadgroup)
// CPP: = [[S]][{{.*}}];
enigma.kernel @reverse(%a: memref<?xf32> {enigma.name = "a", enigma.dtype = "f32"},
                       %b: memref<?xf32> {enigma.name = "b", enigma.dtype = "f32"}) {
  %s = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<256xf32, #enigma.address_space<threadgroup>>
  %tid = enigma.thread_position_in_grid <x>
  %lid = enigma.thread_position_in_threadgroup <x>
  %n = enigma.threads_per_threadgroup <x>
  %i = arith.index_castui %tid : i32 to index
  %l = arith.index_castui %lid : i32 to index
  %x = memref.load %a[%i] : memref<?xf32>
  memref.store %x, %s[%l] : memref<256xf32, #enigma.address_space<threadgroup>>
  enigma.barrier <threadgroup>
  %c1 = arith.constant 1 : i32
  %last = arith.subi %n, %c1 : i32
  %r = arith.subi %last, %lid : i32
  %ri = arith.index_castui %r : i32 to index
  %y = memref.load %s[%ri] : memref<256xf32, #enigma.address_space<threadgroup>>
  memref.store %y, %b[%i] : memref<?xf32>
  enigma.return
}

// Two arrays of different types; a kernel without barriers keeps one
// thread loop on the CPU, with the arrays declared before it.
// MSL-LABEL: kernel void enigma_kernel_two(
// MSL: threadgroup uint {{v[0-9]+}}[16];
// MSL: threadgroup half {{v[0-9]+}}[8];
// CUDA-LABEL: void enigma_kernel_two(
// CUDA: __shared__ uint {{v[0-9]+}}[16];
// CUDA: __shared__ half {{v[0-9]+}}[8];
// CPP-LABEL: extern "C" void enigma_kernel_two(
// CPP: uint {{v[0-9]+}}[16];
// CPP-NEXT: half {{v[0-9]+}}[8];
// CPP: for (uint enigma_lz = 0;
enigma.kernel @two(%a: memref<?xi32> {enigma.name = "a", enigma.dtype = "i32"}) {
  %s = enigma.threadgroup_alloc : memref<16xi32, #enigma.address_space<threadgroup>>
  %h = enigma.threadgroup_alloc : memref<8xf16, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : index
  %x = memref.load %a[%c0] : memref<?xi32>
  memref.store %x, %s[%c0] : memref<16xi32, #enigma.address_space<threadgroup>>
  %y = memref.load %s[%c0] : memref<16xi32, #enigma.address_space<threadgroup>>
  memref.store %y, %a[%c0] : memref<?xi32>
  enigma.return
}
