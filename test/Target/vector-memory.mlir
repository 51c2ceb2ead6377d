// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// vector.load / vector.store of scalar memory print as one wide access
// (lib/Target/CFamily/EmitVectorMemory.cpp).

// MSL-LABEL: kernel void enigma_kernel_wide_copy(
// MSL: float4 [[F:v[0-9]+]] = *(device float4*)(A + [[I:.+]]);
// MSL: *(device float4*)(C + [[I]]) = [[F]];
// Signed integers are held unsigned: the pointer is cast to uint2.
// MSL: uint2 [[N:v[0-9]+]] = *(device uint2*)(D + [[J:.+]]);
// MSL: *(device uint2*)(D + [[J]]) = [[N]];

// CUDA-LABEL: void enigma_kernel_wide_copy(
// CUDA: float4 [[F:v[0-9]+]] = *(float4*)(A + [[I:.+]]);
// CUDA: *(float4*)(C + [[I]]) = [[F]];
// CUDA: uint2 [[N:v[0-9]+]] = *(uint2*)(D + [[J:.+]]);
// CUDA: *(uint2*)(D + [[J]]) = [[N]];

// CPP-LABEL: void enigma_kernel_wide_copy(
// CPP: float4 [[F:v[0-9]+]] = enigma_vector_load<float4>(A + [[I:.+]]);
// CPP: enigma_vector_store(C + [[I]], [[F]]);
// CPP: uint2 [[N:v[0-9]+]] = enigma_vector_load<uint2>(D + [[J:.+]]);
// CPP: enigma_vector_store(D + [[J]], [[N]]);

enigma.kernel @wide_copy(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %D: memref<?xi32, #enigma.address_space<device>> {enigma.name = "D", enigma.dtype = "i32"},
    %C: memref<?xf32, #enigma.address_space<device>> {enigma.name = "C", enigma.dtype = "f32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %c4 = arith.constant 4 : i32
  %c2 = arith.constant 2 : i32
  %i32 = arith.muli %tid, %c4 : i32
  %i = arith.index_castui %i32 : i32 to index
  %v = vector.load %A[%i] : memref<?xf32, #enigma.address_space<device>>, vector<4xf32>
  vector.store %v, %C[%i] : memref<?xf32, #enigma.address_space<device>>, vector<4xf32>
  %j32 = arith.muli %tid, %c2 : i32
  %j = arith.index_castui %j32 : i32 to index
  %n = vector.load %D[%j] : memref<?xi32, #enigma.address_space<device>>, vector<2xi32>
  vector.store %n, %D[%j] : memref<?xi32, #enigma.address_space<device>>, vector<2xi32>
  enigma.return
}

// Threadgroup memory, and a loaded vector used after a barrier: the CPU
// flavour splits the thread loop there and keeps the vector per thread.

// MSL-LABEL: kernel void enigma_kernel_staged(
// MSL: float4 [[V:v[0-9]+]] = *(device float4*)(A + [[I:.+]]);
// MSL: *(threadgroup float4*)([[T:v[0-9]+]] + [[K:.+]]) = [[V]];
// MSL: threadgroup_barrier(mem_flags::mem_threadgroup);
// MSL: float4 [[W:v[0-9]+]] = *(threadgroup float4*)([[T]] + [[K]]);
// MSL: float4 [[S:v[0-9]+]] = [[W]] + [[V]];
// MSL: *(device float4*)(C + [[I]]) = [[S]];

// CUDA-LABEL: void enigma_kernel_staged(
// CUDA: *(float4*)([[T:v[0-9]+]] + [[K:.+]]) = [[V:v[0-9]+]];
// CUDA: float4 [[W:v[0-9]+]] = *(float4*)([[T]] + [[K]]);

// CPP-LABEL: void enigma_kernel_staged(
// The vector crosses the barrier: a per-thread array (1024 entries and one
// cache line more, which staggers the arrays' cache lines).
// CPP: float4 [[V:v[0-9]+]][1028];
// CPP: float4 [[L:v[0-9]+]] = enigma_vector_load<float4>(A + {{.+}});
// CPP-NEXT: [[V]][enigma_slot] = [[L]];
// CPP-NEXT: enigma_vector_store([[T:v[0-9]+]] + {{.+}}, [[L]]);
// CPP: // threadgroup_barrier(mem_flags::mem_threadgroup)
// CPP: float4 [[VL:v[0-9]+]] = [[V]][enigma_slot];
// CPP-NEXT: float4 [[W:v[0-9]+]] = enigma_vector_load<float4>([[T]] + {{.+}});
// CPP-NEXT: float4 {{v[0-9]+}} = [[W]] + [[VL]];

enigma.kernel @staged(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %C: memref<?xf32, #enigma.address_space<device>> {enigma.name = "C", enigma.dtype = "f32"}) {
  %t = enigma.threadgroup_alloc : memref<1024xf32, #enigma.address_space<threadgroup>>
  %tid = enigma.thread_position_in_grid <x>
  %lid = enigma.thread_index_in_threadgroup
  %c4 = arith.constant 4 : i32
  %i32 = arith.muli %tid, %c4 : i32
  %i = arith.index_castui %i32 : i32 to index
  %k32 = arith.muli %lid, %c4 : i32
  %k = arith.index_castui %k32 : i32 to index
  %v = vector.load %A[%i] : memref<?xf32, #enigma.address_space<device>>, vector<4xf32>
  vector.store %v, %t[%k] : memref<1024xf32, #enigma.address_space<threadgroup>>, vector<4xf32>
  enigma.barrier <threadgroup>
  %w = vector.load %t[%k] : memref<1024xf32, #enigma.address_space<threadgroup>>, vector<4xf32>
  %s = arith.addf %w, %v : vector<4xf32>
  vector.store %s, %C[%i] : memref<?xf32, #enigma.address_space<device>>, vector<4xf32>
  enigma.return
}

// Memory that atomics also use: in MSL its element type is atomic and it is
// reached through a view, so a vector access there goes lane by lane; CUDA
// and host C++ keep the wide access.

// MSL-LABEL: kernel void enigma_kernel_atomic_memory(
// MSL: device atomic_float* C {{\[\[}}buffer(1)
// MSL: const enigma_atomics_device<float, atomic_float> [[C:enigma_view_1]]{C};
// MSL: float4 [[O:v[0-9]+]] = float4(float([[C]]{{\[}}[[I:.+]] + 0]), float([[C]]{{\[}}[[I]] + 1]), float([[C]]{{\[}}[[I]] + 2]), float([[C]]{{\[}}[[I]] + 3]));
// MSL: [[C]]{{\[}}[[I]] + 0] = ([[S:v[0-9]+]]).x;
// MSL-NEXT: [[C]]{{\[}}[[I]] + 1] = ([[S]]).y;
// MSL-NEXT: [[C]]{{\[}}[[I]] + 2] = ([[S]]).z;
// MSL-NEXT: [[C]]{{\[}}[[I]] + 3] = ([[S]]).w;

// CUDA-LABEL: void enigma_kernel_atomic_memory(
// CUDA: float4 {{v[0-9]+}} = *(float4*)(C + [[I:.+]]);
// CUDA: *(float4*)(C + [[I]]) = {{v[0-9]+}};

// CPP-LABEL: void enigma_kernel_atomic_memory(
// CPP: float4 {{v[0-9]+}} = enigma_vector_load<float4>(C + [[I:.+]]);
// CPP: enigma_vector_store(C + [[I]], {{v[0-9]+}});

enigma.kernel @atomic_memory(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %C: memref<?xf32, #enigma.address_space<device>> {enigma.name = "C", enigma.dtype = "f32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %old = enigma.atomic_rmw add %C[%c0], %one relaxed : memref<?xf32, #enigma.address_space<device>>
  %c4 = arith.constant 4 : i32
  %tid4 = arith.muli %tid, %c4 : i32
  %i32 = arith.addi %tid4, %c4 : i32
  %i = arith.index_castui %i32 : i32 to index
  %v = vector.load %A[%i] : memref<?xf32, #enigma.address_space<device>>, vector<4xf32>
  %o = vector.load %C[%i] : memref<?xf32, #enigma.address_space<device>>, vector<4xf32>
  %s = arith.addf %o, %v : vector<4xf32>
  vector.store %s, %C[%i] : memref<?xf32, #enigma.address_space<device>>, vector<4xf32>
  enigma.return
}
