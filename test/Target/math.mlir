// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// math dialect ops become calls of Metal's function of the same meaning
// (the CUDA and CPU preludes supply the Metal names).

// CHECK-LABEL: enigma_kernel_float_math(
// CHECK: float {{v[0-9]+}} = sqrt(x);
// CHECK-NEXT: float {{v[0-9]+}} = rsqrt(x);
// CHECK-NEXT: float {{v[0-9]+}} = abs(x);
// CHECK-NEXT: float {{v[0-9]+}} = ceil(x);
// CHECK-NEXT: float {{v[0-9]+}} = floor(x);
// CHECK-NEXT: float {{v[0-9]+}} = round(x);
// CHECK-NEXT: float {{v[0-9]+}} = rint(x);
// CHECK-NEXT: float {{v[0-9]+}} = trunc(x);
// CHECK-NEXT: float {{v[0-9]+}} = exp(x);
// CHECK-NEXT: float {{v[0-9]+}} = exp2(x);
// CHECK-NEXT: float {{v[0-9]+}} = log(x);
// CHECK-NEXT: float {{v[0-9]+}} = log2(x);
// CHECK-NEXT: float {{v[0-9]+}} = log10(x);
// CHECK-NEXT: float {{v[0-9]+}} = sin(x);
// CHECK-NEXT: float {{v[0-9]+}} = cos(x);
// CHECK-NEXT: float {{v[0-9]+}} = tan(x);
// CHECK-NEXT: float {{v[0-9]+}} = asin(x);
// CHECK-NEXT: float {{v[0-9]+}} = acos(x);
// CHECK-NEXT: float {{v[0-9]+}} = atan(x);
// CHECK-NEXT: float {{v[0-9]+}} = sinh(x);
// CHECK-NEXT: float {{v[0-9]+}} = cosh(x);
// CHECK-NEXT: float {{v[0-9]+}} = tanh(x);
// CHECK-NEXT: float {{v[0-9]+}} = pow(x, y);
// CHECK-NEXT: float {{v[0-9]+}} = atan2(x, y);
// CHECK-NEXT: float {{v[0-9]+}} = copysign(x, y);
// CHECK-NEXT: float {{v[0-9]+}} = fma(x, y, z);
enigma.kernel @float_math(%x: f32 {enigma.name = "x"}, %y: f32 {enigma.name = "y"}, %z: f32 {enigma.name = "z"}) {
  %0 = math.sqrt %x : f32
  %1 = math.rsqrt %x : f32
  %2 = math.absf %x : f32
  %3 = math.ceil %x : f32
  %4 = math.floor %x : f32
  %5 = math.round %x : f32
  %6 = math.roundeven %x : f32
  %7 = math.trunc %x : f32
  %8 = math.exp %x : f32
  %9 = math.exp2 %x : f32
  %10 = math.log %x : f32
  %11 = math.log2 %x : f32
  %12 = math.log10 %x : f32
  %13 = math.sin %x : f32
  %14 = math.cos %x : f32
  %15 = math.tan %x : f32
  %16 = math.asin %x : f32
  %17 = math.acos %x : f32
  %18 = math.atan %x : f32
  %19 = math.sinh %x : f32
  %20 = math.cosh %x : f32
  %21 = math.tanh %x : f32
  %22 = math.powf %x, %y : f32
  %23 = math.atan2 %x, %y : f32
  %24 = math.copysign %x, %y : f32
  %25 = math.fma %x, %y, %z : f32
  enigma.return
}

// CHECK-LABEL: enigma_kernel_half_math(
// CHECK: half {{v[0-9]+}} = sqrt(h);
// CHECK-NEXT: half {{v[0-9]+}} = exp(h);
// CHECK-NEXT: half {{v[0-9]+}} = fma(h, h, h);
// CHECK-NEXT: bfloat {{v[0-9]+}} = sin(b);
enigma.kernel @half_math(%h: f16 {enigma.name = "h"}, %b: bf16 {enigma.name = "b"}) {
  %0 = math.sqrt %h : f16
  %1 = math.exp %h : f16
  %2 = math.fma %h, %h, %h : f16
  %3 = math.sin %b : bf16
  enigma.return
}

// CHECK-LABEL: enigma_kernel_int_math(
// CHECK: uint {{v[0-9]+}} = popcount(x);
// CHECK-NEXT: uint {{v[0-9]+}} = clz(x);
// CHECK-NEXT: uint {{v[0-9]+}} = ctz(x);
// CHECK-NEXT: uchar {{v[0-9]+}} = popcount(b);
// CHECK-NEXT: ulong {{v[0-9]+}} = clz(w);
enigma.kernel @int_math(%x: i32 {enigma.name = "x"}, %b: i8 {enigma.name = "b"}, %w: i64 {enigma.name = "w"}) {
  %0 = math.ctpop %x : i32
  %1 = math.ctlz %x : i32
  %2 = math.cttz %x : i32
  %3 = math.ctpop %b : i8
  %4 = math.ctlz %w : i64
  enigma.return
}
