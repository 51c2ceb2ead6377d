// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Buffers are bound at [[buffer(i)]] in parameter order, scalars too
// (`constant T&`); element types come from enigma.dtype, which keeps the
// signedness that MLIR's signless integers lose.

// MSL-LABEL: kernel void enigma_kernel_scalars(
// MSL-NEXT: device int* x {{\[\[}}buffer(0){{\]\]}},
// MSL-NEXT: constant half* h {{\[\[}}buffer(1){{\]\]}},
// MSL-NEXT: device uchar* bytes {{\[\[}}buffer(2){{\]\]}},
// MSL-NEXT: constant int& n {{\[\[}}buffer(3){{\]\]}},
// MSL-NEXT: constant float& alpha {{\[\[}}buffer(4){{\]\]}},
// MSL-NEXT: constant uint& m {{\[\[}}buffer(5){{\]\]}},
// MSL-NEXT: constant bool& flag {{\[\[}}buffer(6){{\]\]}},
// MSL-NEXT: device bool* mask {{\[\[}}buffer(7){{\]\]}},
// MSL-NEXT: device float4* vec {{\[\[}}buffer(8){{\]\]}},
// MSL-NEXT: constant short& s {{\[\[}}buffer(9){{\]\]}},
// MSL-NEXT: device long* wide {{\[\[}}buffer(10){{\]\]}},
// MSL-NEXT: device bfloat* bf {{\[\[}}buffer(11){{\]\]}},
// MSL-NEXT: uint3 thread_position_in_grid {{\[\[}}thread_position_in_grid{{\]\]}}) {
// Signed scalars are read through the unsigned type the body computes in.
// MSL: uint [[S:v[0-9]+]] = ((uint)n) + m;
// MSL: ushort [[T:v[0-9]+]] = (ushort)((uint)((ushort)s) + (uint)(ushort)1);

// CUDA-LABEL: extern "C" __global__ void enigma_kernel_scalars(
// CUDA-NEXT: int* x,
// CUDA-NEXT: half* h,
// CUDA-NEXT: uchar* bytes,
// CUDA-NEXT: const int n,
// CUDA-NEXT: const float alpha,
// CUDA-NEXT: const uint m,
// CUDA-NEXT: const bool flag,
// CUDA-NEXT: bool* mask,
// CUDA-NEXT: float4* vec,
// CUDA-NEXT: const short s,
// CUDA-NEXT: long* wide,
// CUDA-NEXT: bfloat* bf,
// CUDA-NEXT: const EnigmaCudaLaunch enigma_launch) {
// CUDA: uint {{v[0-9]+}} = ((uint)n) + m;

// CPP-LABEL: extern "C" void enigma_kernel_scalars(
// CPP-NEXT: int *ENIGMA_CPU_RESTRICT x = (int *)enigma_args[0];
// CPP-NEXT: half *ENIGMA_CPU_RESTRICT h = (half *)enigma_args[1];
// CPP-NEXT: uchar *ENIGMA_CPU_RESTRICT bytes = (uchar *)enigma_args[2];
// CPP-NEXT: const int n = *(const int *)enigma_args[3];
// CPP-NEXT: const float alpha = *(const float *)enigma_args[4];
// CPP-NEXT: const uint m = *(const uint *)enigma_args[5];
// CPP-NEXT: const bool flag = *(const bool *)enigma_args[6];
// CPP-NEXT: bool *ENIGMA_CPU_RESTRICT mask = (bool *)enigma_args[7];
// CPP-NEXT: float4 *ENIGMA_CPU_RESTRICT vec = (float4 *)enigma_args[8];
// CPP-NEXT: const short s = *(const short *)enigma_args[9];
// CPP-NEXT: long *ENIGMA_CPU_RESTRICT wide = (long *)enigma_args[10];
// CPP-NEXT: bfloat *ENIGMA_CPU_RESTRICT bf = (bfloat *)enigma_args[11];
// CPP: uint {{v[0-9]+}} = ((uint)n) + m;
enigma.kernel @scalars(
    %x: memref<?xi32, #enigma.address_space<device>> {enigma.name = "x", enigma.dtype = "i32"},
    %h: memref<?xf16, #enigma.address_space<constant>> {enigma.name = "h", enigma.dtype = "f16"},
    %bytes: memref<?xi8, #enigma.address_space<device>> {enigma.name = "bytes", enigma.dtype = "u8"},
    %n: i32 {enigma.name = "n", enigma.dtype = "i32"},
    %alpha: f32 {enigma.name = "alpha", enigma.dtype = "f32"},
    %m: i32 {enigma.name = "m", enigma.dtype = "u32"},
    %flag: i1 {enigma.name = "flag", enigma.dtype = "b1"},
    %mask: memref<?xi1, #enigma.address_space<device>> {enigma.name = "mask", enigma.dtype = "b1"},
    %vec: memref<?xvector<4xf32>, #enigma.address_space<device>> {enigma.name = "vec", enigma.dtype = "f32"},
    %s: i16 {enigma.name = "s", enigma.dtype = "i16"},
    %wide: memref<?xi64, #enigma.address_space<device>> {enigma.name = "wide", enigma.dtype = "i64"},
    %bf: memref<?xbf16, #enigma.address_space<device>> {enigma.name = "bf", enigma.dtype = "bf16"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %sum = arith.addi %n, %m : i32
  memref.store %sum, %x[%i] : memref<?xi32, #enigma.address_space<device>>
  %one = arith.constant 1 : i16
  %s1 = arith.addi %s, %one : i16
  %s64 = arith.extsi %s1 : i16 to i64
  memref.store %s64, %wide[%i] : memref<?xi64, #enigma.address_space<device>>
  %hv = memref.load %h[%i] : memref<?xf16, #enigma.address_space<constant>>
  %hf = arith.extf %hv : f16 to f32
  %scaled = arith.mulf %hf, %alpha : f32
  %b = arith.truncf %scaled : f32 to bf16
  memref.store %b, %bf[%i] : memref<?xbf16, #enigma.address_space<device>>
  memref.store %flag, %mask[%i] : memref<?xi1, #enigma.address_space<device>>
  %byte = memref.load %bytes[%i] : memref<?xi8, #enigma.address_space<device>>
  %v = memref.load %vec[%i] : memref<?xvector<4xf32>, #enigma.address_space<device>>
  memref.store %v, %vec[%i] : memref<?xvector<4xf32>, #enigma.address_space<device>>
  enigma.return
}

// Names that are not C identifiers, are keywords of one of the languages,
// or could clash with the emitter's own names are changed.
// MSL-LABEL: kernel void enigma_kernel_names(
// MSL-NEXT: device float* my_buf {{\[\[}}buffer(0){{\]\]}},
// MSL-NEXT: device float* p_2d {{\[\[}}buffer(1){{\]\]}},
// MSL-NEXT: device float* kernel_ {{\[\[}}buffer(2){{\]\]}},
// MSL-NEXT: device float* v0_ {{\[\[}}buffer(3){{\]\]}},
// MSL-NEXT: device float* enigma_x_ {{\[\[}}buffer(4){{\]\]}},
// MSL-NEXT: device float* threadgroup_ {{\[\[}}buffer(5){{\]\]}},
// MSL-NEXT: device float* arg6 {{\[\[}}buffer(6){{\]\]}},
// MSL-NEXT: constant uint& thread_position_in_grid_ {{\[\[}}buffer(7){{\]\]}},
// MSL-NEXT: uint3 thread_position_in_grid {{\[\[}}thread_position_in_grid{{\]\]}}) {
// MSL: float [[V:v[0-9]+]] = my_buf[thread_position_in_grid.x];
// MSL: v0_[thread_position_in_grid.x] = [[V]];
enigma.kernel @names(
    %a: memref<?xf32> {enigma.name = "my-buf"},
    %b: memref<?xf32> {enigma.name = "2d"},
    %c: memref<?xf32> {enigma.name = "kernel"},
    %d: memref<?xf32> {enigma.name = "v0"},
    %e: memref<?xf32> {enigma.name = "enigma_x"},
    %f: memref<?xf32> {enigma.name = "threadgroup"},
    %g: memref<?xf32>,
    %h: i32 {enigma.name = "thread_position_in_grid", enigma.dtype = "u32"}) {
  %tid = enigma.thread_position_in_grid <x>
  %i = arith.index_castui %tid : i32 to index
  %v = memref.load %a[%i] : memref<?xf32>
  memref.store %v, %d[%i] : memref<?xf32>
  enigma.return
}

// Parameter names that would collide after sanitising, or with the
// emitter's temporaries (t<N>), stay distinct.
// MSL-LABEL: kernel void enigma_kernel_clashes(
// MSL-NEXT: device float* a_b {{\[\[}}buffer(0){{\]\]}},
// MSL-NEXT: device float* a_b_1 {{\[\[}}buffer(1){{\]\]}},
// MSL-NEXT: device float* a_b_2 {{\[\[}}buffer(2){{\]\]}},
// MSL-NEXT: constant float& t1_ {{\[\[}}buffer(3){{\]\]}}) {
// MSL: a_b_2[0ul] = t1_;
// CPP-LABEL: extern "C" void enigma_kernel_clashes(
// CPP-NEXT: float *ENIGMA_CPU_RESTRICT a_b = (float *)enigma_args[0];
// CPP-NEXT: float *ENIGMA_CPU_RESTRICT a_b_1 = (float *)enigma_args[1];
// CPP-NEXT: float *ENIGMA_CPU_RESTRICT a_b_2 = (float *)enigma_args[2];
// CPP-NEXT: const float t1_ = *(const float *)enigma_args[3];
enigma.kernel @clashes(%x: memref<?xf32> {enigma.name = "a-b"}, %y: memref<?xf32> {enigma.name = "a_b"},
                       %z: memref<?xf32> {enigma.name = "a-b"}, %t: f32 {enigma.name = "t1"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %r:2 = scf.for %i = %c0 to %c2 step %c1 iter_args(%p = %t, %q = %t) -> (f32, f32) {
    scf.yield %q, %p : f32, f32
  }
  memref.store %r#0, %x[%c0] : memref<?xf32>
  memref.store %r#1, %y[%c0] : memref<?xf32>
  memref.store %t, %z[%c0] : memref<?xf32>
  enigma.return
}
