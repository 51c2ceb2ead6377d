// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefixes=CHECK,MSL
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Every target divides through metal_total_division.h (a zero divisor and
// MIN / -1 are defined, never a trap or undefined behaviour): scalars and
// vectors name their type, signed ones also the unsigned counterpart. The
// MSL carries the header's text before the kernel; host C++ and CUDA get it
// from their preludes.

// MSL: template <typename T, typename U>
// MSL-NEXT: inline T enigma_sdiv(T a, T b) {
// MSL-NOT: METAL_FUNC
// CHECK-LABEL: enigma_kernel_divisions(
// CHECK: uint {{v[0-9]+}} = (uint)enigma_sdiv<int, uint>((int)x, (int)7u);
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)enigma_urem<ulong>(y, 3ul);
// CHECK: uint4 {{v[0-9]+}} = (uint4)enigma_sdiv<int4, uint4>((int4){{v[0-9]+}}, (int4){{v[0-9]+}});
// CHECK-NEXT: uint4 {{v[0-9]+}} = (uint4)enigma_urem<uint4>({{v[0-9]+}}, {{v[0-9]+}});
enigma.kernel @divisions(%x: i32 {enigma.name = "x"}, %y: i64 {enigma.name = "y"}, %o: memref<?xi32> {enigma.name = "o"}, %w: memref<?xi64> {enigma.name = "w"}, %v: memref<?xvector<4xi32>> {enigma.name = "v", enigma.dtype = "u32"}) {
  %c7 = arith.constant 7 : i32
  %c3 = arith.constant 3 : i64
  %q = arith.divsi %x, %c7 : i32
  %r = arith.remui %y, %c3 : i64
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %a = memref.load %v[%c0] : memref<?xvector<4xi32>>
  %b = memref.load %v[%c1] : memref<?xvector<4xi32>>
  %vq = arith.divsi %a, %b : vector<4xi32>
  %vr = arith.remui %a, %b : vector<4xi32>
  memref.store %q, %o[%c0] : memref<?xi32>
  memref.store %r, %w[%c0] : memref<?xi64>
  memref.store %vq, %v[%c0] : memref<?xvector<4xi32>>
  memref.store %vr, %v[%c1] : memref<?xvector<4xi32>>
  enigma.return
}
