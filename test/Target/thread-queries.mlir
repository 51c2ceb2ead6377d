// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Every thread query. In MSL each becomes a kernel parameter with Metal's
// attribute (uint3 for the per-dimension ones), declared once, in order of
// first use; a query the body does not use is not declared.

// MSL-LABEL: kernel void enigma_kernel_queries(
// MSL-NEXT: device uint* out {{\[\[}}buffer(0){{\]\]}},
// MSL-NEXT: uint3 thread_position_in_grid {{\[\[}}thread_position_in_grid{{\]\]}},
// MSL-NEXT: uint3 thread_position_in_threadgroup {{\[\[}}thread_position_in_threadgroup{{\]\]}},
// MSL-NEXT: uint3 threadgroup_position_in_grid {{\[\[}}threadgroup_position_in_grid{{\]\]}},
// MSL-NEXT: uint3 threads_per_threadgroup {{\[\[}}threads_per_threadgroup{{\]\]}},
// MSL-NEXT: uint3 threads_per_grid {{\[\[}}threads_per_grid{{\]\]}},
// MSL-NEXT: uint3 threadgroups_per_grid {{\[\[}}threadgroups_per_grid{{\]\]}},
// MSL-NEXT: uint thread_index_in_threadgroup {{\[\[}}thread_index_in_threadgroup{{\]\]}},
// MSL-NEXT: uint thread_index_in_simdgroup {{\[\[}}thread_index_in_simdgroup{{\]\]}},
// MSL-NEXT: uint simdgroup_index_in_threadgroup {{\[\[}}simdgroup_index_in_threadgroup{{\]\]}},
// MSL-NEXT: uint threads_per_simdgroup {{\[\[}}threads_per_simdgroup{{\]\]}},
// MSL-NEXT: uint simdgroups_per_threadgroup {{\[\[}}simdgroups_per_threadgroup{{\]\]}}) {
// MSL-NEXT: out[0ul] = thread_position_in_grid.x;
// MSL-NEXT: out[1ul] = thread_position_in_grid.y;
// MSL-NEXT: out[2ul] = thread_position_in_grid.z;
// MSL-NEXT: out[3ul] = thread_position_in_threadgroup.x;
// MSL-NEXT: out[4ul] = thread_position_in_threadgroup.y;
// MSL-NEXT: out[5ul] = thread_position_in_threadgroup.z;
// MSL-NEXT: out[6ul] = threadgroup_position_in_grid.x;
// MSL-NEXT: out[7ul] = threadgroup_position_in_grid.y;
// MSL-NEXT: out[8ul] = threadgroup_position_in_grid.z;
// MSL-NEXT: out[9ul] = threads_per_threadgroup.x;
// MSL-NEXT: out[10ul] = threads_per_threadgroup.y;
// MSL-NEXT: out[11ul] = threads_per_threadgroup.z;
// MSL-NEXT: out[12ul] = threads_per_grid.x;
// MSL-NEXT: out[13ul] = threads_per_grid.y;
// MSL-NEXT: out[14ul] = threads_per_grid.z;
// MSL-NEXT: out[15ul] = threadgroups_per_grid.x;
// MSL-NEXT: out[16ul] = threadgroups_per_grid.y;
// MSL-NEXT: out[17ul] = threadgroups_per_grid.z;
// MSL-NEXT: out[18ul] = thread_index_in_threadgroup;
// MSL-NEXT: out[19ul] = thread_index_in_simdgroup;
// MSL-NEXT: out[20ul] = simdgroup_index_in_threadgroup;
// MSL-NEXT: out[21ul] = threads_per_simdgroup;
// MSL-NEXT: out[22ul] = simdgroups_per_threadgroup;
// MSL-NEXT: out[23ul] = thread_position_in_grid.x;
// MSL-NEXT: {{^}}}

// CUDA-LABEL: extern "C" __global__ void enigma_kernel_queries(
// CUDA: out[0ul] = (blockIdx.x * blockDim.x + threadIdx.x);
// CUDA-NEXT: out[1ul] = (blockIdx.y * blockDim.y + threadIdx.y);
// CUDA-NEXT: out[2ul] = (blockIdx.z * blockDim.z + threadIdx.z);
// CUDA-NEXT: out[3ul] = threadIdx.x;
// CUDA-NEXT: out[4ul] = threadIdx.y;
// CUDA-NEXT: out[5ul] = threadIdx.z;
// CUDA-NEXT: out[6ul] = blockIdx.x;
// CUDA-NEXT: out[7ul] = blockIdx.y;
// CUDA-NEXT: out[8ul] = blockIdx.z;
// The edge block may be partial, as with Metal's dispatchThreads.
// CUDA-NEXT: out[9ul] = enigma_group_size(blockIdx.x, blockDim.x, enigma_launch.grid[0]);
// CUDA-NEXT: out[10ul] = enigma_group_size(blockIdx.y, blockDim.y, enigma_launch.grid[1]);
// CUDA-NEXT: out[11ul] = enigma_group_size(blockIdx.z, blockDim.z, enigma_launch.grid[2]);
// CUDA-NEXT: out[12ul] = enigma_launch.grid[0];
// CUDA-NEXT: out[13ul] = enigma_launch.grid[1];
// CUDA-NEXT: out[14ul] = enigma_launch.grid[2];
// CUDA-NEXT: out[15ul] = gridDim.x;
// CUDA-NEXT: out[16ul] = gridDim.y;
// CUDA-NEXT: out[17ul] = gridDim.z;
// CUDA-NEXT: out[18ul] = ((threadIdx.z * enigma_group_size(blockIdx.y, blockDim.y, enigma_launch.grid[1]) + threadIdx.y) * enigma_group_size(blockIdx.x, blockDim.x, enigma_launch.grid[0]) + threadIdx.x);
// CUDA-NEXT: out[19ul] = (({{.*}}) & 31u);
// CUDA-NEXT: out[20ul] = (({{.*}}) >> 5);
// CUDA-NEXT: out[21ul] = 32u;
// CUDA-NEXT: out[22ul] = ((enigma_group_size(blockIdx.x, blockDim.x, enigma_launch.grid[0]) * enigma_group_size(blockIdx.y, blockDim.y, enigma_launch.grid[1]) * enigma_group_size(blockIdx.z, blockDim.z, enigma_launch.grid[2]) + 31u) >> 5);

// CPP-LABEL: extern "C" void enigma_kernel_queries(
// CPP: out[0ul] = enigma_tx;
// CPP-NEXT: out[1ul] = (enigma_gy * enigma_launch->threads[1] + enigma_ly);
// CPP-NEXT: out[2ul] = (enigma_gz * enigma_launch->threads[2] + enigma_lz);
// CPP-NEXT: out[3ul] = enigma_lx;
// CPP-NEXT: out[4ul] = enigma_ly;
// CPP-NEXT: out[5ul] = enigma_lz;
// CPP-NEXT: out[6ul] = enigma_gx;
// CPP-NEXT: out[7ul] = enigma_gy;
// CPP-NEXT: out[8ul] = enigma_gz;
// CPP-NEXT: out[9ul] = enigma_nx;
// CPP-NEXT: out[10ul] = enigma_ny;
// CPP-NEXT: out[11ul] = enigma_nz;
// CPP-NEXT: out[12ul] = enigma_launch->grid[0];
// CPP-NEXT: out[13ul] = enigma_launch->grid[1];
// CPP-NEXT: out[14ul] = enigma_launch->grid[2];
// CPP-NEXT: out[15ul] = enigma_launch->groups[0];
// CPP-NEXT: out[16ul] = enigma_launch->groups[1];
// CPP-NEXT: out[17ul] = enigma_launch->groups[2];
// CPP-NEXT: out[18ul] = enigma_lid;
// CPP-NEXT: out[19ul] = (enigma_lid & 31u);
// CPP-NEXT: out[20ul] = (enigma_lid >> 5);
// CPP-NEXT: out[21ul] = 32u;
// CPP-NEXT: out[22ul] = ((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5);

enigma.kernel @queries(%out: memref<?xi32> {enigma.name = "out", enigma.dtype = "u32"}) {
  %q0 = enigma.thread_position_in_grid <x>
  %q1 = enigma.thread_position_in_grid <y>
  %q2 = enigma.thread_position_in_grid <z>
  %q3 = enigma.thread_position_in_threadgroup <x>
  %q4 = enigma.thread_position_in_threadgroup <y>
  %q5 = enigma.thread_position_in_threadgroup <z>
  %q6 = enigma.threadgroup_position_in_grid <x>
  %q7 = enigma.threadgroup_position_in_grid <y>
  %q8 = enigma.threadgroup_position_in_grid <z>
  %q9 = enigma.threads_per_threadgroup <x>
  %q10 = enigma.threads_per_threadgroup <y>
  %q11 = enigma.threads_per_threadgroup <z>
  %q12 = enigma.threads_per_grid <x>
  %q13 = enigma.threads_per_grid <y>
  %q14 = enigma.threads_per_grid <z>
  %q15 = enigma.threadgroups_per_grid <x>
  %q16 = enigma.threadgroups_per_grid <y>
  %q17 = enigma.threadgroups_per_grid <z>
  %q18 = enigma.thread_index_in_threadgroup
  %q19 = enigma.thread_index_in_simdgroup
  %q20 = enigma.simdgroup_index_in_threadgroup
  %q21 = enigma.threads_per_simdgroup
  %q22 = enigma.simdgroups_per_threadgroup
  %q23 = enigma.thread_position_in_grid <x>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c5 = arith.constant 5 : index
  %c6 = arith.constant 6 : index
  %c7 = arith.constant 7 : index
  %c8 = arith.constant 8 : index
  %c9 = arith.constant 9 : index
  %c10 = arith.constant 10 : index
  %c11 = arith.constant 11 : index
  %c12 = arith.constant 12 : index
  %c13 = arith.constant 13 : index
  %c14 = arith.constant 14 : index
  %c15 = arith.constant 15 : index
  %c16 = arith.constant 16 : index
  %c17 = arith.constant 17 : index
  %c18 = arith.constant 18 : index
  %c19 = arith.constant 19 : index
  %c20 = arith.constant 20 : index
  %c21 = arith.constant 21 : index
  %c22 = arith.constant 22 : index
  %c23 = arith.constant 23 : index
  memref.store %q0, %out[%c0] : memref<?xi32>
  memref.store %q1, %out[%c1] : memref<?xi32>
  memref.store %q2, %out[%c2] : memref<?xi32>
  memref.store %q3, %out[%c3] : memref<?xi32>
  memref.store %q4, %out[%c4] : memref<?xi32>
  memref.store %q5, %out[%c5] : memref<?xi32>
  memref.store %q6, %out[%c6] : memref<?xi32>
  memref.store %q7, %out[%c7] : memref<?xi32>
  memref.store %q8, %out[%c8] : memref<?xi32>
  memref.store %q9, %out[%c9] : memref<?xi32>
  memref.store %q10, %out[%c10] : memref<?xi32>
  memref.store %q11, %out[%c11] : memref<?xi32>
  memref.store %q12, %out[%c12] : memref<?xi32>
  memref.store %q13, %out[%c13] : memref<?xi32>
  memref.store %q14, %out[%c14] : memref<?xi32>
  memref.store %q15, %out[%c15] : memref<?xi32>
  memref.store %q16, %out[%c16] : memref<?xi32>
  memref.store %q17, %out[%c17] : memref<?xi32>
  memref.store %q18, %out[%c18] : memref<?xi32>
  memref.store %q19, %out[%c19] : memref<?xi32>
  memref.store %q20, %out[%c20] : memref<?xi32>
  memref.store %q21, %out[%c21] : memref<?xi32>
  memref.store %q22, %out[%c22] : memref<?xi32>
  memref.store %q23, %out[%c23] : memref<?xi32>
  enigma.return
}

// Only the queries a kernel uses are declared; the scalar form is uint.
// MSL-LABEL: kernel void enigma_kernel_one_query(
// MSL-NEXT: device uint* out {{\[\[}}buffer(0){{\]\]}},
// MSL-NEXT: uint thread_index_in_threadgroup {{\[\[}}thread_index_in_threadgroup{{\]\]}}) {
// MSL-NEXT: out[thread_index_in_threadgroup] = thread_index_in_threadgroup;
// MSL-NEXT: {{^}}}
enigma.kernel @one_query(%out: memref<?xi32> {enigma.name = "out", enigma.dtype = "u32"}) {
  %q = enigma.thread_index_in_threadgroup
  %i = arith.index_castui %q : i32 to index
  memref.store %q, %out[%i] : memref<?xi32>
  enigma.return
}
