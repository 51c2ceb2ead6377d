// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// The dynamic threadgroup array: MSL's [[threadgroup(0)]] parameter (sized
// with setThreadgroupMemoryLength), CUDA's extern __shared__ memory (after
// the threadgroup arrays carved out of it, when there are), and on the CPU
// an array on the group's stack of the launch's bytes. The bytes come as
// the hidden parameter enigma_threadgroup_memory_bytes.

// MSL-LABEL: kernel void enigma_kernel_dyn(
// MSL: device float* out {{\[\[}}buffer(0){{\]\]}},
// MSL: constant ulong& enigma_threadgroup_memory_bytes_ {{\[\[}}buffer(1){{\]\]}},
// MSL: threadgroup float* enigma_threadgroup_memory {{\[\[}}threadgroup(0){{\]\]}},
// MSL: enigma_threadgroup_memory[{{.*}}] = {{.*}};
// MSL: float [[R:v[0-9]+]] = enigma_threadgroup_memory[{{.*}}];
// MSL: out[{{.*}}] = [[R]];

// CUDA: extern __shared__ __align__(1024) unsigned char enigma_dynamic_shared[];
// CUDA: float *const [[D:v[0-9]+]] = reinterpret_cast<float *>(enigma_dynamic_shared + 0);
// CUDA: [[D]][{{.*}}] =

// CPP: unsigned char [[S:v[0-9]+]]_storage[(size_t)enigma_threadgroup_memory_bytes_ + 16];
// CPP: float *const [[S]] = (float *)(((uintptr_t)[[S]]_storage + 15) & ~(uintptr_t)15);
enigma.kernel @dyn(
    %out: memref<?xf32, #enigma.address_space<device>> {enigma.name = "out", enigma.dtype = "f32"},
    %bytes: i64 {enigma.name = "enigma_threadgroup_memory_bytes", enigma.dtype = "u64", enigma.threadgroup_memory_bytes}) {
  %d = enigma.dynamic_threadgroup_alloc %bytes : memref<?xf32, #enigma.address_space<threadgroup>>
  %tid = enigma.thread_position_in_threadgroup <x>
  %i = arith.index_castui %tid : i32 to index
  %v = arith.uitofp %tid : i32 to f32
  memref.store %v, %d[%i] : memref<?xf32, #enigma.address_space<threadgroup>>
  enigma.barrier <threadgroup>
  %r = memref.load %d[%i] : memref<?xf32, #enigma.address_space<threadgroup>>
  %g = enigma.thread_position_in_grid <x>
  %j = arith.index_castui %g : i32 to index
  memref.store %r, %out[%j] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}

// With threadgroup arrays of more than 48 KiB, CUDA carves them out of the
// same dynamic memory; the dynamic array follows them.
// CUDA-LABEL: enigma_kernel_carved(
// CUDA: extern __shared__ __align__(1024) unsigned char enigma_dynamic_shared[];
// CUDA: float *const {{v[0-9]+}} = reinterpret_cast<float *>(enigma_dynamic_shared + 0);
// CUDA: reinterpret_cast<float *>(enigma_dynamic_shared + 65536);
enigma.kernel @carved(
    %out: memref<?xf32, #enigma.address_space<device>> {enigma.name = "out", enigma.dtype = "f32"},
    %bytes: i64 {enigma.name = "enigma_threadgroup_memory_bytes", enigma.dtype = "u64", enigma.threadgroup_memory_bytes}) {
  %big = enigma.threadgroup_alloc {enigma.dtype = "f32"} : memref<16384xf32, #enigma.address_space<threadgroup>>
  %d = enigma.dynamic_threadgroup_alloc %bytes : memref<?xf32, #enigma.address_space<threadgroup>>
  %tid = enigma.thread_position_in_threadgroup <x>
  %i = arith.index_castui %tid : i32 to index
  %v = arith.uitofp %tid : i32 to f32
  memref.store %v, %big[%i] : memref<16384xf32, #enigma.address_space<threadgroup>>
  memref.store %v, %d[%i] : memref<?xf32, #enigma.address_space<threadgroup>>
  enigma.barrier <threadgroup>
  %a = memref.load %big[%i] : memref<16384xf32, #enigma.address_space<threadgroup>>
  %b = memref.load %d[%i] : memref<?xf32, #enigma.address_space<threadgroup>>
  %s = arith.addf %a, %b : f32
  %g = enigma.thread_position_in_grid <x>
  %j = arith.index_castui %g : i32 to index
  memref.store %s, %out[%j] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
