// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Constants are printed inline where used: integers as unsigned literals of
// their width (negative values in two's complement), floats with enough
// digits to round-trip, NaN / infinities by name, -0.0 keeps its sign.

// CHECK-LABEL: enigma_kernel_ints(
// CHECK: o8[0ul] = (uchar)255;
// CHECK-NEXT: o8[1ul] = (uchar)127;
// CHECK-NEXT: o8[2ul] = (uchar)128;
// CHECK-NEXT: o16[0ul] = (ushort)65535;
// CHECK-NEXT: o16[1ul] = (ushort)32768;
// CHECK-NEXT: o32[0ul] = 4294967295u;
// CHECK-NEXT: o32[1ul] = 2147483648u;
// CHECK-NEXT: o32[2ul] = 2147483647u;
// CHECK-NEXT: o64[0ul] = 18446744073709551615ul;
// CHECK-NEXT: o64[1ul] = 9223372036854775808ul;
// CHECK-NEXT: o64[2ul] = 9223372036854775807ul;
// CHECK-NEXT: o64[3ul] = 1311768467463790320ul;
// CHECK-NEXT: ob[0ul] = true;
// CHECK-NEXT: ob[1ul] = false;
// CHECK-NEXT: o64[18446744073709551615ul] = 0ul;
enigma.kernel @ints(%o8: memref<?xi8> {enigma.name = "o8"}, %o16: memref<?xi16> {enigma.name = "o16"},
                    %o32: memref<?xi32> {enigma.name = "o32"}, %o64: memref<?xi64> {enigma.name = "o64"},
                    %ob: memref<?xi1> {enigma.name = "ob"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %m1_8 = arith.constant -1 : i8
  %max8 = arith.constant 127 : i8
  %min8 = arith.constant -128 : i8
  memref.store %m1_8, %o8[%c0] : memref<?xi8>
  memref.store %max8, %o8[%c1] : memref<?xi8>
  memref.store %min8, %o8[%c2] : memref<?xi8>
  %m1_16 = arith.constant -1 : i16
  %min16 = arith.constant -32768 : i16
  memref.store %m1_16, %o16[%c0] : memref<?xi16>
  memref.store %min16, %o16[%c1] : memref<?xi16>
  %m1_32 = arith.constant -1 : i32
  %min32 = arith.constant -2147483648 : i32
  %max32 = arith.constant 2147483647 : i32
  memref.store %m1_32, %o32[%c0] : memref<?xi32>
  memref.store %min32, %o32[%c1] : memref<?xi32>
  memref.store %max32, %o32[%c2] : memref<?xi32>
  %m1_64 = arith.constant -1 : i64
  %min64 = arith.constant -9223372036854775808 : i64
  %max64 = arith.constant 9223372036854775807 : i64
  %big = arith.constant 1311768467463790320 : i64
  memref.store %m1_64, %o64[%c0] : memref<?xi64>
  memref.store %min64, %o64[%c1] : memref<?xi64>
  memref.store %max64, %o64[%c2] : memref<?xi64>
  memref.store %big, %o64[%c3] : memref<?xi64>
  %t = arith.constant true
  %f = arith.constant false
  memref.store %t, %ob[%c0] : memref<?xi1>
  memref.store %f, %ob[%c1] : memref<?xi1>
  %neg_index = arith.constant -1 : index
  %zero64 = arith.constant 0 : i64
  memref.store %zero64, %o64[%neg_index] : memref<?xi64>
  enigma.return
}

// CHECK-LABEL: enigma_kernel_floats(
// CHECK: o[0ul] = NAN;
// CHECK-NEXT: o[1ul] = INFINITY;
// CHECK-NEXT: o[2ul] = (-INFINITY);
// CHECK-NEXT: o[3ul] = -0.0f;
// CHECK-NEXT: o[4ul] = 0.0f;
// CHECK-NEXT: o[5ul] = 0.100000001f;
// CHECK-NEXT: o[6ul] = 3.40282347e+38f;
// CHECK-NEXT: o[7ul] = 1.40129846e-45f;
// CHECK-NEXT: o[8ul] = 16777216.0f;
// CHECK-NEXT: o[9ul] = -2.5f;
// CHECK-NEXT: float [[N:v[0-9]+]] = -(-INFINITY);
// CHECK-NEXT: float [[Z:v[0-9]+]] = -(-0.0f);
// CHECK-NEXT: o[10ul] = [[N]];
// CHECK-NEXT: o[11ul] = [[Z]];
// CHECK-NEXT: h[0ul] = half(NAN);
// CHECK-NEXT: h[1ul] = half(INFINITY);
// CHECK-NEXT: h[2ul] = half(-0.0f);
// CHECK-NEXT: h[3ul] = half(65504.0f);
// CHECK-NEXT: h[4ul] = half(0.0999755859f);
// CHECK-NEXT: b[0ul] = bfloat((-INFINITY));
// CHECK-NEXT: b[1ul] = bfloat(3.38953139e+38f);
// CHECK-NEXT: b[2ul] = bfloat(NAN);
enigma.kernel @floats(%o: memref<?xf32> {enigma.name = "o"}, %h: memref<?xf16> {enigma.name = "h"},
                      %b: memref<?xbf16> {enigma.name = "b"}) {
  %i0 = arith.constant 0 : index
  %i1 = arith.constant 1 : index
  %i2 = arith.constant 2 : index
  %i3 = arith.constant 3 : index
  %i4 = arith.constant 4 : index
  %i5 = arith.constant 5 : index
  %i6 = arith.constant 6 : index
  %i7 = arith.constant 7 : index
  %i8 = arith.constant 8 : index
  %i9 = arith.constant 9 : index
  %i10 = arith.constant 10 : index
  %i11 = arith.constant 11 : index
  %nan = arith.constant 0x7FC00000 : f32
  %inf = arith.constant 0x7F800000 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %nzero = arith.constant -0.0 : f32
  %zero = arith.constant 0.0 : f32
  %tenth = arith.constant 0.1 : f32
  %max = arith.constant 3.40282347e+38 : f32
  %denorm = arith.constant 0x00000001 : f32
  %p24 = arith.constant 16777216.0 : f32
  %m25 = arith.constant -2.5 : f32
  memref.store %nan, %o[%i0] : memref<?xf32>
  memref.store %inf, %o[%i1] : memref<?xf32>
  memref.store %ninf, %o[%i2] : memref<?xf32>
  memref.store %nzero, %o[%i3] : memref<?xf32>
  memref.store %zero, %o[%i4] : memref<?xf32>
  memref.store %tenth, %o[%i5] : memref<?xf32>
  memref.store %max, %o[%i6] : memref<?xf32>
  memref.store %denorm, %o[%i7] : memref<?xf32>
  memref.store %p24, %o[%i8] : memref<?xf32>
  memref.store %m25, %o[%i9] : memref<?xf32>
  %negninf = arith.negf %ninf : f32
  %negnzero = arith.negf %nzero : f32
  memref.store %negninf, %o[%i10] : memref<?xf32>
  memref.store %negnzero, %o[%i11] : memref<?xf32>
  %hnan = arith.constant 0x7E00 : f16
  %hinf = arith.constant 0x7C00 : f16
  %hnz = arith.constant -0.0 : f16
  %hmax = arith.constant 65504.0 : f16
  %htenth = arith.constant 0.1 : f16
  memref.store %hnan, %h[%i0] : memref<?xf16>
  memref.store %hinf, %h[%i1] : memref<?xf16>
  memref.store %hnz, %h[%i2] : memref<?xf16>
  memref.store %hmax, %h[%i3] : memref<?xf16>
  memref.store %htenth, %h[%i4] : memref<?xf16>
  %bninf = arith.constant 0xFF80 : bf16
  %bmax = arith.constant 0x7F7F : bf16
  %bnan = arith.constant 0x7FC0 : bf16
  memref.store %bninf, %b[%i0] : memref<?xbf16>
  memref.store %bmax, %b[%i1] : memref<?xbf16>
  memref.store %bnan, %b[%i2] : memref<?xbf16>
  enigma.return
}
