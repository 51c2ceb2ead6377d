// RUN: enigma-opt %s | FileCheck %s
// RUN: enigma-opt %s -canonicalize | FileCheck %s --check-prefix=FOLD

// enigma.truncf_sat: float, half or bfloat to an 8-bit float of the same
// shape, clamping to the largest finite value. Constants fold with the
// same rule (a NaN stays NaN, infinities and magnitudes past the largest
// finite clamp, the rest rounds to nearest even). arith.truncf folds the
// plain conversion only where it is exact (MLIR 19): the rounding and the
// overflow (NaN for e4m3, infinity for e5m2) are left to the targets.

// CHECK-LABEL: enigma.kernel @roundtrip
// CHECK: enigma.truncf_sat %{{.*}} : f32 to f8E4M3FN
// CHECK: enigma.truncf_sat %{{.*}} : vector<2xbf16> to vector<2xf8E5M2>
// FOLD-LABEL: enigma.kernel @roundtrip
// FOLD-DAG: arith.constant 4.480000e+02 : f8E4M3FN
// FOLD-DAG: arith.constant -5.734400e+04 : f8E5M2
// FOLD-DAG: arith.constant 0x7F : f8E4M3FN
// FOLD-DAG: arith.constant 3.200000e+02 : f8E4M3FN
// FOLD-DAG: arith.truncf %{{.*}} : f32 to f8E4M3FN
// FOLD-DAG: arith.truncf %{{.*}} : f32 to f8E4M3FN
// FOLD-DAG: arith.truncf %{{.*}} : f32 to f8E5M2
enigma.kernel @roundtrip(%x: f32 {enigma.name = "x"}, %v: vector<2xbf16> {enigma.name = "v"},
                         %o: memref<?xf8E4M3FN> {enigma.name = "o"},
                         %o5: memref<?xf8E5M2> {enigma.name = "o5"},
                         %ov: memref<?xvector<2xf8E5M2>> {enigma.name = "ov"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %a = enigma.truncf_sat %x : f32 to f8E4M3FN
  %b = enigma.truncf_sat %v : vector<2xbf16> to vector<2xf8E5M2>
  %big = arith.constant 1.0e9 : f32
  %sat = enigma.truncf_sat %big : f32 to f8E4M3FN
  %ninf = arith.constant 0xFF800000 : f32
  %sat5 = enigma.truncf_sat %ninf : f32 to f8E5M2
  %nan = arith.constant 0x7FC00000 : f32
  %satnan = enigma.truncf_sat %nan : f32 to f8E4M3FN
  %tie = arith.constant 336.0 : f32
  %even = enigma.truncf_sat %tie : f32 to f8E4M3FN
  %plain = arith.truncf %big : f32 to f8E4M3FN
  %plain5 = arith.truncf %big : f32 to f8E5M2
  %tenth = arith.constant 0.1 : f32
  %inexact = arith.truncf %tenth : f32 to f8E4M3FN
  memref.store %inexact, %o[%c0] : memref<?xf8E4M3FN>
  memref.store %a, %o[%c0] : memref<?xf8E4M3FN>
  memref.store %sat, %o[%c1] : memref<?xf8E4M3FN>
  memref.store %satnan, %o[%c2] : memref<?xf8E4M3FN>
  memref.store %even, %o[%c3] : memref<?xf8E4M3FN>
  memref.store %plain, %o[%c3] : memref<?xf8E4M3FN>
  memref.store %sat5, %o5[%c0] : memref<?xf8E5M2>
  memref.store %plain5, %o5[%c1] : memref<?xf8E5M2>
  memref.store %b, %ov[%c0] : memref<?xvector<2xf8E5M2>>
  enigma.return
}
