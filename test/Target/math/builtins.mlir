// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp
// RUN: enigma-opt %s | enigma-opt | FileCheck %s --check-prefix=ROUND
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=CUDA-ABS

// The math family's ops print as calls of the Metal function of the same
// meaning; `signed` integer ops cast operands to the signed type and the
// result back to the unsigned storage type.

// CHECK-LABEL: enigma_kernel_float_builtins(
// CHECK: float {{v[0-9]+}} = sign(x);
// CHECK-NEXT: float {{v[0-9]+}} = saturate(x);
// CHECK-NEXT: float {{v[0-9]+}} = fract(x);
// CHECK-NEXT: float {{v[0-9]+}} = step(x, y);
// CHECK-NEXT: float {{v[0-9]+}} = clamp(x, y, z);
// CHECK-NEXT: float {{v[0-9]+}} = mix(x, y, z);
// CHECK-NEXT: float {{v[0-9]+}} = smoothstep(x, y, z);
// CHECK-NEXT: bool {{v[0-9]+}} = isnan(x);
// CHECK-NEXT: bool {{v[0-9]+}} = isinf(x);
// CHECK-NEXT: bool {{v[0-9]+}} = isfinite(x);
// CHECK-NEXT: bool {{v[0-9]+}} = signbit(x);
// CHECK-NEXT: bool {{v[0-9]+}} = isnormal(x);
// CHECK-NEXT: half {{v[0-9]+}} = fract(h);
// CHECK-NEXT: float {{v[0-9]+}} = fmin(x, y);
// CHECK-NEXT: float {{v[0-9]+}} = fmax(x, y);
// CHECK-NEXT: float {{v[0-9]+}} = atan2(x, y);
// CHECK-NEXT: half {{v[0-9]+}} = fmax(h, h);
// ROUND-LABEL: enigma.kernel @float_builtins
// ROUND: enigma.sign %{{.*}} : f32
// ROUND: enigma.step %{{.*}}, %{{.*}} : f32
// ROUND: enigma.isnormal %{{.*}} : f32 -> i1
// ROUND: enigma.atan2 %{{.*}}, %{{.*}} : f32
enigma.kernel @float_builtins(%x: f32 {enigma.name = "x"}, %y: f32 {enigma.name = "y"}, %z: f32 {enigma.name = "z"}, %h: f16 {enigma.name = "h"}) {
  %0 = enigma.sign %x : f32
  %1 = enigma.saturate %x : f32
  %2 = enigma.fract %x : f32
  %3 = enigma.step %x, %y : f32
  %4 = enigma.clamp %x, %y, %z : f32
  %5 = enigma.mix %x, %y, %z : f32
  %6 = enigma.smoothstep %x, %y, %z : f32
  %7 = enigma.isnan %x : f32 -> i1
  %8 = enigma.isinf %x : f32 -> i1
  %9 = enigma.isfinite %x : f32 -> i1
  %10 = enigma.signbit %x : f32 -> i1
  %11 = enigma.isnormal %x : f32 -> i1
  %12 = enigma.fract %h : f16
  %13 = enigma.fmin %x, %y : f32
  %14 = enigma.fmax %x, %y : f32
  %15 = enigma.atan2 %x, %y : f32
  %16 = enigma.fmax %h, %h : f16
  enigma.return
}

// CHECK-LABEL: enigma_kernel_int_builtins(
// CHECK: uint {{v[0-9]+}} = (uint)absdiff((int)a, (int)b);
// CHECK-NEXT: uint {{v[0-9]+}} = absdiff(a, b);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)addsat((int)a, (int)b);
// CHECK-NEXT: uint {{v[0-9]+}} = subsat(a, b);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)mulhi((int)a, (int)b);
// CHECK-NEXT: uint {{v[0-9]+}} = rotate(a, b);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)madsat((int)a, (int)b, (int)c);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)clamp((int)a, (int)b, (int)c);
// CHECK-NEXT: uint {{v[0-9]+}} = reverse_bits(a);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)extract_bits((int)a, b, c);
// CHECK-NEXT: uint {{v[0-9]+}} = extract_bits(a, b, c);
// CHECK-NEXT: uint {{v[0-9]+}} = insert_bits(a, b, b, c);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint){{(enigma_)?}}abs((int)a);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)addsat((char)s, (char)s);
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)extract_bits((long)l, b, c);
// CUDA's abs(int) leaves INT_MIN undefined (NVRTC then takes the result as
// non-negative); the CUDA prelude's enigma_abs wraps it, as Metal does.
// CUDA-ABS-LABEL: enigma_kernel_int_builtins(
// CUDA-ABS: uint {{v[0-9]+}} = (uint)enigma_abs((int)a);
// ROUND-LABEL: enigma.kernel @int_builtins
// ROUND: enigma.absdiff signed %{{.*}}, %{{.*}} : i32
// ROUND: enigma.extract_bits signed %{{.*}}, %{{.*}}, %{{.*}} : i32
// ROUND: enigma.insert_bits %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : i32
enigma.kernel @int_builtins(%a: i32 {enigma.name = "a"}, %b: i32 {enigma.name = "b"}, %c: i32 {enigma.name = "c"}, %s: i8 {enigma.name = "s"}, %l: i64 {enigma.name = "l"}) {
  %0 = enigma.absdiff signed %a, %b : i32
  %1 = enigma.absdiff %a, %b : i32
  %2 = enigma.addsat signed %a, %b : i32
  %3 = enigma.subsat %a, %b : i32
  %4 = enigma.mulhi signed %a, %b : i32
  %5 = enigma.rotate %a, %b : i32
  %6 = enigma.madsat signed %a, %b, %c : i32
  %7 = enigma.clamp signed %a, %b, %c : i32
  %8 = enigma.reverse_bits %a : i32
  %9 = enigma.extract_bits signed %a, %b, %c : i32
  %10 = enigma.extract_bits %a, %b, %c : i32
  %11 = enigma.insert_bits %a, %b, %b, %c : i32
  %12 = math.absi %a : i32
  %13 = enigma.addsat signed %s, %s : i8
  %14 = enigma.extract_bits signed %l, %b, %c : i64
  enigma.return
}

// sinpi, cospi and tanpi print as Metal's functions on every target (the
// semantics library defines them for host C++; CUDA has its own sinpi and
// cospi, with the same values).
// CHECK-LABEL: enigma_kernel_pi_functions(
// CHECK: float {{v[0-9]+}} = sinpi(x);
// CHECK-NEXT: float {{v[0-9]+}} = cospi(x);
// CHECK-NEXT: float {{v[0-9]+}} = tanpi(x);
// CHECK-NEXT: half {{v[0-9]+}} = sinpi(h);
// ROUND-LABEL: enigma.kernel @pi_functions
// ROUND: enigma.sinpi %{{.*}} : f32
// ROUND: enigma.cospi %{{.*}} : f32
// ROUND: enigma.tanpi %{{.*}} : f32
enigma.kernel @pi_functions(%x: f32 {enigma.name = "x"}, %h: f16 {enigma.name = "h"}) {
  %0 = enigma.sinpi %x : f32
  %1 = enigma.cospi %x : f32
  %2 = enigma.tanpi %x : f32
  %3 = enigma.sinpi %h : f16
  enigma.return
}
