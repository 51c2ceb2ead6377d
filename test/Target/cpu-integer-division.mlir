// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefix=CPP
// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefix=GPU
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefix=GPU
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Host C++ divides through enigma_div / enigma_rem (the CPU prelude's
// enigma_cpu_integer_division.h), which give NVIDIA's values for a zero
// divisor and for MIN / -1 instead of trapping: scalars name their type
// (operands may be plain literals), vectors take the per-lane overloads.
// GPUs divide with / and %.

// CPP-LABEL: enigma_kernel_divisions(
// CPP: uint {{v[0-9]+}} = (uint)enigma_div<int>((int)x, (int)7u);
// CPP-NEXT: ulong {{v[0-9]+}} = (ulong)enigma_rem<ulong>(y, 3ul);
// CPP: uint4 {{v[0-9]+}} = (uint4)enigma_div((int4){{v[0-9]+}}, (int4){{v[0-9]+}});
// CPP-NEXT: uint4 {{v[0-9]+}} = (uint4)enigma_rem({{v[0-9]+}}, {{v[0-9]+}});
// GPU-LABEL: enigma_kernel_divisions(
// GPU: uint {{v[0-9]+}} = (uint)((int)x / (int)7u);
// GPU-NEXT: ulong {{v[0-9]+}} = (ulong)(y % 3ul);
// GPU-NOT: enigma_div
// GPU-NOT: enigma_rem
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
