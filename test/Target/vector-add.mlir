// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// The seed example: C[tid] = A[tid] + B[tid].

// MSL: #include <metal_stdlib>
// MSL-NEXT: using namespace metal;
// MSL-EMPTY:
// MSL-NEXT: kernel void enigma_kernel_vector_add(
// MSL-NEXT: {{^    }}device float* A {{\[\[}}buffer(0){{\]\]}},
// MSL-NEXT: {{^    }}device float* B {{\[\[}}buffer(1){{\]\]}},
// MSL-NEXT: {{^    }}device float* C {{\[\[}}buffer(2){{\]\]}},
// MSL-NEXT: {{^    }}uint3 thread_position_in_grid {{\[\[}}thread_position_in_grid{{\]\]}}) {
// MSL-NEXT: float [[A:v[0-9]+]] = A[thread_position_in_grid.x];
// MSL-NEXT: float [[B:v[0-9]+]] = B[thread_position_in_grid.x];
// MSL-NEXT: float [[C:v[0-9]+]] = [[A]] + [[B]];
// MSL-NEXT: C[thread_position_in_grid.x] = [[C]];
// MSL-NEXT: {{^}}}
// MSL-NOT: threadgroup_barrier

// CUDA: #include "enigma_cuda_prelude.cuh"
// CUDA: extern "C" __global__ void enigma_kernel_vector_add(
// CUDA-NEXT: float* A,
// CUDA-NEXT: float* B,
// CUDA-NEXT: float* C,
// CUDA-NEXT: const EnigmaCudaLaunch enigma_launch) {
// Threads past the grid do not exist in Metal's model.
// CUDA-NEXT: if ((blockIdx.x * blockDim.x + threadIdx.x) >= enigma_launch.grid[0] || (enigma_launch.partial_yz && ({{.*}} >= enigma_launch.grid[1] || {{.*}} >= enigma_launch.grid[2]))) return;
// CUDA-NEXT: float [[A:v[0-9]+]] = A[(blockIdx.x * blockDim.x + threadIdx.x)];
// CUDA-NEXT: float [[B:v[0-9]+]] = B[(blockIdx.x * blockDim.x + threadIdx.x)];
// CUDA-NEXT: float [[C:v[0-9]+]] = [[A]] + [[B]];
// CUDA-NEXT: C[(blockIdx.x * blockDim.x + threadIdx.x)] = [[C]];
// CUDA-NEXT: {{^}}}

// CPP: #include "enigma_cpu_prelude.h"
// CPP: extern "C" void enigma_kernel_vector_add(void *const *enigma_args, const EnigmaCpuLaunch *enigma_launch, uint64_t enigma_group_begin, uint64_t enigma_group_end) {
// CPP-NEXT: float *ENIGMA_CPU_RESTRICT A = (float *)enigma_args[0];
// CPP-NEXT: float *ENIGMA_CPU_RESTRICT B = (float *)enigma_args[1];
// CPP-NEXT: float *ENIGMA_CPU_RESTRICT C = (float *)enigma_args[2];
// CPP: for (uint64_t enigma_g = enigma_group_begin; enigma_g < enigma_group_end; ++enigma_g) {
// CPP: for (uint enigma_lz = 0; enigma_lz < enigma_nz; ++enigma_lz)
// CPP-NEXT: for (uint enigma_ly = 0; enigma_ly < enigma_ny; ++enigma_ly)
// The innermost loop counts the global x position: a unit-stride loop.
// CPP-NEXT: for (uint64_t enigma_x = enigma_bx; enigma_x < (uint64_t)enigma_bx + enigma_nx; ++enigma_x) {
// CPP-NEXT: const uint enigma_tx = (uint)enigma_x;
// CPP-NEXT: const uint enigma_lx = enigma_tx - enigma_bx;
// CPP-NEXT: const uint enigma_lid = (enigma_lz * enigma_ny + enigma_ly) * enigma_nx + enigma_lx;
// CPP-NEXT: const uint64_t enigma_slot = ((uint64_t)enigma_lz * enigma_ny + enigma_ly) * enigma_nx + (enigma_x - enigma_bx);
// CPP-NEXT: float [[A:v[0-9]+]] = A[enigma_x];
// CPP-NEXT: float [[B:v[0-9]+]] = B[enigma_x];
// CPP-NEXT: float [[C:v[0-9]+]] = [[A]] + [[B]];
// CPP-NEXT: C[enigma_x] = [[C]];
// CPP-NEXT: }
// CPP-NEXT: }
// CPP-NEXT: {{^}}}

enigma.kernel @vector_add(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %B: memref<?xf32, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "f32"},
    %C: memref<?xf32, #enigma.address_space<device>> {enigma.name = "C", enigma.dtype = "f32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %a = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
  %b = memref.load %B[%i] : memref<?xf32, #enigma.address_space<device>>
  %c = arith.addf %a, %b : f32
  memref.store %c, %C[%i] : memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
