// RUN: enigma-opt %s | enigma-opt | FileCheck %s --check-prefix=IR
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Simdgroup 8x8 matrices: a vector<2xT> per lane in the IR (lane l holds
// elements 2l and 2l+1 in row-major order), Metal's simdgroup_float8x8 and
// functions in MSL, per-lane pairs in CUDA, collective calls on the CPU.

// IR-LABEL: enigma.kernel @matmul
// IR: enigma.simdgroup_matrix_load %{{.*}}[%{{.*}}], %{{.*}} : memref<?xf32, #enigma.address_space<device>> -> vector<2xf32>
// IR: enigma.simdgroup_multiply_accumulate %{{.*}}, %{{.*}}, %{{.*}} : vector<2xf32>
// IR: enigma.simdgroup_matrix_store %{{.*}}, %{{.*}}[%{{.*}}], %{{.*}} : vector<2xf32>, memref<?xf32, #enigma.address_space<device>>
// IR: enigma.make_filled_simdgroup_matrix %{{.*}} : f16 -> vector<2xf16>

// MSL-LABEL: kernel void enigma_kernel_matmul(
// MSL: simdgroup_float8x8 [[A:v[0-9]+]];
// MSL-NEXT: simdgroup_load([[A]], A + 0u, 8u);
// MSL-NEXT: simdgroup_float8x8 [[B:v[0-9]+]];
// MSL-NEXT: simdgroup_load([[B]], B + 0u, 8u);
// MSL: simdgroup_float8x8 [[C:v[0-9]+]] = make_filled_simdgroup_matrix<float, 8, 8>(
// MSL-NEXT: simdgroup_float8x8 [[D:v[0-9]+]];
// MSL-NEXT: simdgroup_multiply_accumulate([[D]], [[A]], [[B]], [[C]]);
// MSL-NEXT: simdgroup_store([[D]], O + {{v[0-9]+}}, 8u);
// MSL: simdgroup_half8x8 [[H:v[0-9]+]] = make_filled_simdgroup_matrix<half, 8, 8>(
// MSL: simdgroup_half8x8 [[T:v[0-9]+]];
// MSL-NEXT: simdgroup_load([[T]], {{v[0-9]+}} + 0u, 8u);
// MSL: simdgroup_store({{v[0-9]+}}, H + 0u, 8u);

// CUDA-LABEL: void enigma_kernel_matmul(
// CUDA: float2 [[A:v[0-9]+]] = enigma_simdgroup_matrix_load<float2>(A + 0u, 8u);
// CUDA: float2 {{v[0-9]+}} = enigma_make_filled_simdgroup_matrix<float2>(
// CUDA: float2 [[D:v[0-9]+]] = enigma_simdgroup_multiply_accumulate([[A]],
// CUDA: enigma_simdgroup_matrix_store([[D]], O + {{v[0-9]+}}, 8u);

// CPP-LABEL: void enigma_kernel_matmul(
// CPP: enigma_cpu_simdgroup_matrix_load(A, enigma_cpu::Uniform{0u}, enigma_cpu::Uniform{8u}, {{v[0-9]+}}, [[NT:v[0-9]+]], 0u, ((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5));
// CPP: enigma_cpu_make_filled_simdgroup_matrix(
// CPP: enigma_cpu_simdgroup_multiply_accumulate(
// CPP: enigma_cpu_simdgroup_matrix_store({{v[0-9]+}}, O, {{v[0-9]+}}, enigma_cpu::Uniform{8u}, [[NT]], 0u, ((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5));
enigma.kernel @matmul(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %B: memref<?xf32, #enigma.address_space<device>> {enigma.name = "B", enigma.dtype = "f32"},
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"},
    %H: memref<?xf16, #enigma.address_space<device>> {enigma.name = "H", enigma.dtype = "f16"}) {
  %t = enigma.threadgroup_alloc {enigma.dtype = "f16"} : memref<64xf16, #enigma.address_space<threadgroup>>
  %c0 = arith.constant 0 : i32
  %c8 = arith.constant 8 : i32
  %c64 = arith.constant 64 : i32
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f16
  %sg = enigma.simdgroup_index_in_threadgroup
  %off = arith.muli %sg, %c64 : i32
  %a = enigma.simdgroup_matrix_load %A[%c0], %c8 : memref<?xf32, #enigma.address_space<device>> -> vector<2xf32>
  %b = enigma.simdgroup_matrix_load %B[%c0], %c8 : memref<?xf32, #enigma.address_space<device>> -> vector<2xf32>
  %c = enigma.make_filled_simdgroup_matrix %zero : f32 -> vector<2xf32>
  %d = enigma.simdgroup_multiply_accumulate %a, %b, %c : vector<2xf32>
  enigma.simdgroup_matrix_store %d, %O[%off], %c8 : vector<2xf32>, memref<?xf32, #enigma.address_space<device>>
  %h = enigma.make_filled_simdgroup_matrix %one : f16 -> vector<2xf16>
  enigma.simdgroup_matrix_store %h, %t[%c0], %c8 : vector<2xf16>, memref<64xf16, #enigma.address_space<threadgroup>>
  enigma.barrier <threadgroup>
  %u = enigma.simdgroup_matrix_load %t[%c0], %c8 : memref<64xf16, #enigma.address_space<threadgroup>> -> vector<2xf16>
  %e = enigma.simdgroup_multiply_accumulate %u, %u, %h : vector<2xf16>
  enigma.simdgroup_matrix_store %e, %H[%c0], %c8 : vector<2xf16>, memref<?xf16, #enigma.address_space<device>>
  enigma.return
}

// A transposed load: Metal's transpose_matrix argument; the CUDA and CPU
// helpers take it as a template argument.
// IR-LABEL: enigma.kernel @transposed
// IR: enigma.simdgroup_matrix_load %{{.*}}[%{{.*}}], %{{.*}} {transpose} : memref<?xf32, #enigma.address_space<device>> -> vector<2xf32>
// MSL-LABEL: kernel void enigma_kernel_transposed(
// MSL: simdgroup_load({{v[0-9]+}}, A + 0u, 16u, ulong2(0, 0), true);
// CUDA-LABEL: void enigma_kernel_transposed(
// CUDA: float2 {{v[0-9]+}} = enigma_simdgroup_matrix_load<float2, true>(A + 0u, 16u);
// CPP-LABEL: void enigma_kernel_transposed(
// CPP: enigma_cpu_simdgroup_matrix_load_transposed(A, enigma_cpu::Uniform{0u}, enigma_cpu::Uniform{16u},
enigma.kernel @transposed(
    %A: memref<?xf32, #enigma.address_space<device>> {enigma.name = "A", enigma.dtype = "f32"},
    %O: memref<?xf32, #enigma.address_space<device>> {enigma.name = "O", enigma.dtype = "f32"}) {
  %c0 = arith.constant 0 : i32
  %c8 = arith.constant 8 : i32
  %c16 = arith.constant 16 : i32
  %a = enigma.simdgroup_matrix_load %A[%c0], %c16 {transpose} : memref<?xf32, #enigma.address_space<device>> -> vector<2xf32>
  enigma.simdgroup_matrix_store %a, %O[%c0], %c8 : vector<2xf32>, memref<?xf32, #enigma.address_space<device>>
  enigma.return
}
