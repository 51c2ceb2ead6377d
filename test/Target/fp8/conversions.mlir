// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefixes=CHECK,MSL
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// 8-bit floats (docs/design/fp8.md) are bytes in every target; their
// conversions are the semantics library's calls (metal_fp8.h), whose text
// MSL carries at file scope. Half and bfloat widen to float first (exact),
// so each encoding rounds once. Constants print as their bits; NaNs as the
// conversions make them (every low bit set).

// MSL: ENIGMA_METAL_FP8_H
// MSL: inline uchar enigma_float_to_f8e4m3(float x)
// CHECK-LABEL: enigma_kernel_scalars(
// CHECK: uchar [[P:v[0-9]+]] = enigma_float_to_f8e4m3(x);
// CHECK-NEXT: uchar [[S:v[0-9]+]] = enigma_float_to_f8e5m2_sat(x);
// CHECK-NEXT: uchar [[H:v[0-9]+]] = enigma_float_to_f8e4m3(enigma_fp8_widen(h));
// CHECK-NEXT: uchar [[B:v[0-9]+]] = enigma_float_to_f8e5m2_sat((float)b);
// CHECK-NEXT: float {{v[0-9]+}} = enigma_f8e4m3_to_float([[P]]);
// CHECK-NEXT: half {{v[0-9]+}} = (half)(enigma_f8e5m2_to_float([[S]]));
// CHECK-NEXT: bfloat {{v[0-9]+}} = (bfloat)(enigma_f8e4m3_to_float([[H]]));
// CHECK-NEXT: uchar {{v[0-9]+}} = as_type<uchar>([[B]]);
// CHECK-NEXT: uchar {{v[0-9]+}} = c ? [[P]] : (uchar)0x7e;
// CHECK: o8[{{.*}}] = (uchar)0x7f;
// CHECK: o8[{{.*}}] = (uchar)0xff;
// CHECK: o8[{{.*}}] = (uchar)0x80;
enigma.kernel @scalars(%x: f32 {enigma.name = "x"}, %h: f16 {enigma.name = "h"},
                       %b: bf16 {enigma.name = "b"}, %c: i1 {enigma.name = "c"},
                       %o8: memref<?xf8E4M3FN> {enigma.name = "o8"},
                       %of: memref<?xf32> {enigma.name = "of"},
                       %oh: memref<?xf16> {enigma.name = "oh"},
                       %ob: memref<?xbf16> {enigma.name = "ob"},
                       %oi: memref<?xi8> {enigma.name = "oi"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %p = arith.truncf %x : f32 to f8E4M3FN
  %s = enigma.truncf_sat %x : f32 to f8E5M2
  %ph = arith.truncf %h : f16 to f8E4M3FN
  %sb = enigma.truncf_sat %b : bf16 to f8E5M2
  %w = arith.extf %p : f8E4M3FN to f32
  %wh = arith.extf %s : f8E5M2 to f16
  %wb = arith.extf %ph : f8E4M3FN to bf16
  %bits = arith.bitcast %sb : f8E5M2 to i8
  %max = arith.constant 448.0 : f8E4M3FN
  %sel = arith.select %c, %p, %max : f8E4M3FN
  memref.store %sel, %o8[%c0] : memref<?xf8E4M3FN>
  memref.store %w, %of[%c0] : memref<?xf32>
  memref.store %wh, %oh[%c0] : memref<?xf16>
  memref.store %wb, %ob[%c0] : memref<?xbf16>
  memref.store %bits, %oi[%c0] : memref<?xi8>
  %nan = arith.constant 0x7F : f8E4M3FN
  %mnan = arith.constant 0xFF : f8E4M3FN
  %mzero = arith.constant -0.0 : f8E4M3FN
  memref.store %nan, %o8[%c0] : memref<?xf8E4M3FN>
  memref.store %mnan, %o8[%c1] : memref<?xf8E4M3FN>
  memref.store %mzero, %o8[%c2] : memref<?xf8E4M3FN>
  enigma.return
}

// Vectors are uchar vectors, converted lane by lane by the vector forms.
// CHECK-LABEL: enigma_kernel_vectors(
// CHECK: uchar4 [[V:v[0-9]+]] = enigma_float_to_f8e4m3_sat(v);
// CHECK-NEXT: uchar4 [[W:v[0-9]+]] = enigma_float_to_f8e5m2((float4)hv);
// CHECK-NEXT: float4 {{v[0-9]+}} = enigma_f8e4m3_to_float([[V]]);
// CHECK-NEXT: half4 {{v[0-9]+}} = (half4)(enigma_f8e5m2_to_float([[W]]));
enigma.kernel @vectors(%v: vector<4xf32> {enigma.name = "v"},
                       %hv: vector<4xf16> {enigma.name = "hv"},
                       %of: memref<?xvector<4xf32>> {enigma.name = "of"},
                       %oh: memref<?xvector<4xf16>> {enigma.name = "oh"}) {
  %c0 = arith.constant 0 : index
  %s = enigma.truncf_sat %v : vector<4xf32> to vector<4xf8E4M3FN>
  %p = arith.truncf %hv : vector<4xf16> to vector<4xf8E5M2>
  %ws = arith.extf %s : vector<4xf8E4M3FN> to vector<4xf32>
  %wp = arith.extf %p : vector<4xf8E5M2> to vector<4xf16>
  memref.store %ws, %of[%c0] : memref<?xvector<4xf32>>
  memref.store %wp, %oh[%c0] : memref<?xvector<4xf16>>
  enigma.return
}
