// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Votes and lane queries. A ballot is Metal's simd_vote read as its vote_t
// (a ulong); CUDA's prelude has the same type over __ballot_sync. The CPU
// runs them between thread loops over per-thread arrays.

// MSL-LABEL: kernel void enigma_kernel_votes(
// MSL: bool [[ANY:v[0-9]+]] = simd_any([[P:v[0-9]+]]);
// MSL: bool {{v[0-9]+}} = simd_all([[P]]);
// MSL: ulong {{v[0-9]+}} = (ulong)(simd_vote::vote_t)simd_ballot([[P]]);
// MSL: ulong {{v[0-9]+}} = (ulong)(simd_vote::vote_t)simd_active_threads_mask();
// MSL: bool {{v[0-9]+}} = simd_is_first();

// CUDA: bool {{v[0-9]+}} = simd_any({{v[0-9]+}}, enigma_lanes);
// CUDA: bool {{v[0-9]+}} = simd_all({{v[0-9]+}}, enigma_lanes);
// CUDA: ulong {{v[0-9]+}} = (ulong)(simd_vote::vote_t)simd_ballot({{v[0-9]+}}, enigma_lanes);
// CUDA: ulong {{v[0-9]+}} = (ulong)(simd_vote::vote_t)simd_active_threads_mask(enigma_lanes);
// CUDA: bool {{v[0-9]+}} = simd_is_first(enigma_lanes);

// CPP: enigma_cpu_simd_any([[PA:v[0-9]+]], {{v[0-9]+}}, {{.*}});
// CPP: enigma_cpu_simd_all([[PA]], {{v[0-9]+}}, {{.*}});
// CPP: enigma_cpu_simd_ballot([[PA]], {{v[0-9]+}}, {{.*}});
// CPP: enigma_cpu_simd_active_threads_mask({{v[0-9]+}}, {{.*}});
// CPP: enigma_cpu_simd_is_first({{v[0-9]+}}, {{.*}});
enigma.kernel @votes(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %O: memref<?xi64, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "u64"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %x = memref.load %A[%i] : memref<?xf32, #enigma.address_space<device>>
  %zero = arith.constant 0.0 : f32
  %p = arith.cmpf ogt, %x, %zero : f32
  %any = enigma.simd_any %p : i1
  %all = enigma.simd_all %p : i1
  %ballot = enigma.simd_ballot %p : i64
  %mask = enigma.simd_active_threads_mask : i64
  %first = enigma.simd_is_first : i1
  %b1 = arith.andi %any, %all : i1
  %b2 = arith.andi %b1, %first : i1
  %w = arith.extui %b2 : i1 to i64
  %s1 = arith.addi %ballot, %mask : i64
  %s2 = arith.addi %s1, %w : i64
  memref.store %s2, %O[%i] : memref<?xi64, #enigma.address_space<device>>
  enigma.return
}
