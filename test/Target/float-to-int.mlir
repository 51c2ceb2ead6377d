// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefixes=CHECK,MSL
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Every target converts floats to integers through metal_float_to_int.h
// (NaN and values past the range defined): the call names the integer
// element type and the result type, signed for fptosi; half and bfloat
// operands are widened to float first. The MSL carries the header's text
// before the kernel; host C++ and CUDA get it from their preludes.

// MSL: template <> struct enigma_int_range<uint> {
// MSL: template <typename I, typename D, typename X>
// MSL-NEXT: inline D enigma_float_to_int(X x) {
// MSL-NOT: METAL_FUNC
// CHECK-LABEL: enigma_kernel_conversions(
// CHECK: uint {{v[0-9]+}} = (uint)enigma_float_to_int<uint, uint>(x);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)enigma_float_to_int<char, char>(x);
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)enigma_float_to_int<long, long>(float(h));
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)enigma_float_to_int<ushort, ushort>(float(b));
// CHECK: uint4 {{v[0-9]+}} = (uint4)enigma_float_to_int<int, int4>({{v[0-9]+}});
// CHECK: ushort4 {{v[0-9]+}} = (ushort4)enigma_float_to_int<ushort, ushort4>(float4({{v[0-9]+}}));
enigma.kernel @conversions(%x: f32 {enigma.name = "x"}, %h: f16 {enigma.name = "h"}, %b: bf16 {enigma.name = "b"}, %o: memref<?xi32> {enigma.name = "o"}, %o8: memref<?xi8> {enigma.name = "o8"}, %o64: memref<?xi64> {enigma.name = "o64"}, %o16: memref<?xi16> {enigma.name = "o16"}, %v: memref<?xvector<4xf32>> {enigma.name = "v"}, %vh: memref<?xvector<4xf16>> {enigma.name = "vh"}, %vo: memref<?xvector<4xi32>> {enigma.name = "vo"}, %vo16: memref<?xvector<4xi16>> {enigma.name = "vo16"}) {
  %c0 = arith.constant 0 : index
  %a = arith.fptoui %x : f32 to i32
  %s = arith.fptosi %x : f32 to i8
  %l = arith.fptosi %h : f16 to i64
  %u = arith.fptoui %b : bf16 to i16
  memref.store %a, %o[%c0] : memref<?xi32>
  memref.store %s, %o8[%c0] : memref<?xi8>
  memref.store %l, %o64[%c0] : memref<?xi64>
  memref.store %u, %o16[%c0] : memref<?xi16>
  %fv = memref.load %v[%c0] : memref<?xvector<4xf32>>
  %hv = memref.load %vh[%c0] : memref<?xvector<4xf16>>
  %iv = arith.fptosi %fv : vector<4xf32> to vector<4xi32>
  %uv = arith.fptoui %hv : vector<4xf16> to vector<4xi16>
  memref.store %iv, %vo[%c0] : memref<?xvector<4xi32>>
  memref.store %uv, %vo16[%c0] : memref<?xvector<4xi16>>
  enigma.return
}
