// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s --check-prefixes=CHECK,MSLCPP
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s --check-prefixes=CHECK,CUDA
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s --check-prefixes=CHECK,MSLCPP
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Integer arith on every width. Values live in the unsigned C type of their
// width; signed ops (divsi, remsi, shrsi, maxsi, minsi, signed compares,
// extsi) cast their operands to the signed type. + - * & | ^ << on 8 and 16
// bits compute in uint so C's promotion to (signed) int cannot overflow.
// / and % go through metal_total_division.h on every target (defined for a
// zero divisor and MIN / -1; printed into the MSL).

// CHECK-LABEL: enigma_kernel_int_i8(
// CHECK: uchar {{v[0-9]+}} = (uchar)((uint)x + (uint)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)((uint)x - (uint)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)((uint)x * (uint)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)enigma_sdiv<char, uchar>((char)x, (char)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)enigma_udiv<uchar>(x, y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)enigma_srem<char, uchar>((char)x, (char)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)enigma_urem<uchar>(x, y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)((uint)x << (uint)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)((char)x >> (char)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)(x >> y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)((uint)x & (uint)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)((uint)x | (uint)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)((uint)x ^ (uint)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)max((char)x, (char)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)min((char)x, (char)y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)max(x, y);
// CHECK-NEXT: uchar {{v[0-9]+}} = (uchar)min(x, y);
// CHECK-NEXT: bool {{v[0-9]+}} = x == y;
// CHECK-NEXT: bool {{v[0-9]+}} = x != y;
// CHECK-NEXT: bool [[SLT:v[0-9]+]] = (char)x < (char)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (char)x <= (char)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (char)x > (char)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (char)x >= (char)y;
// CHECK-NEXT: bool {{v[0-9]+}} = x < y;
// CHECK-NEXT: bool {{v[0-9]+}} = x <= y;
// CHECK-NEXT: bool {{v[0-9]+}} = x > y;
// CHECK-NEXT: bool {{v[0-9]+}} = x >= y;
// CHECK-NEXT: uchar {{v[0-9]+}} = [[SLT]] ? x : y;
// CHECK-NEXT: ulong [[SX:v[0-9]+]] = (ulong)(char)x;
// CHECK-NEXT: ulong [[ZX:v[0-9]+]] = (ulong)x;
// CHECK-NEXT: bool {{v[0-9]+}} = (bool)(x & 1);
// CHECK-NEXT: uchar [[B:v[0-9]+]] = (uchar)(long)((char)x);
// CHECK-NEXT: uchar [[BU:v[0-9]+]] = (uchar)x;
// CHECK-NEXT: o{{\[}}((char)x)] = [[B]];
// CHECK-NEXT: o{{\[}}x] = [[BU]];
// CHECK-NEXT: w[0ul] = [[SX]];
// CHECK-NEXT: w[1ul] = [[ZX]];
enigma.kernel @int_i8(%x: i8 {enigma.name = "x"}, %y: i8 {enigma.name = "y"}, %o: memref<?xi8> {enigma.name = "o"}, %w: memref<?xi64> {enigma.name = "w"}) {
  %addi = arith.addi %x, %y : i8
  %subi = arith.subi %x, %y : i8
  %muli = arith.muli %x, %y : i8
  %divsi = arith.divsi %x, %y : i8
  %divui = arith.divui %x, %y : i8
  %remsi = arith.remsi %x, %y : i8
  %remui = arith.remui %x, %y : i8
  %shli = arith.shli %x, %y : i8
  %shrsi = arith.shrsi %x, %y : i8
  %shrui = arith.shrui %x, %y : i8
  %andi = arith.andi %x, %y : i8
  %ori = arith.ori %x, %y : i8
  %xori = arith.xori %x, %y : i8
  %maxsi = arith.maxsi %x, %y : i8
  %minsi = arith.minsi %x, %y : i8
  %maxui = arith.maxui %x, %y : i8
  %minui = arith.minui %x, %y : i8
  %eq = arith.cmpi eq, %x, %y : i8
  %ne = arith.cmpi ne, %x, %y : i8
  %slt = arith.cmpi slt, %x, %y : i8
  %sle = arith.cmpi sle, %x, %y : i8
  %sgt = arith.cmpi sgt, %x, %y : i8
  %sge = arith.cmpi sge, %x, %y : i8
  %ult = arith.cmpi ult, %x, %y : i8
  %ule = arith.cmpi ule, %x, %y : i8
  %ugt = arith.cmpi ugt, %x, %y : i8
  %uge = arith.cmpi uge, %x, %y : i8
  %sel = arith.select %slt, %x, %y : i8
  %sx = arith.extsi %x : i8 to i64
  %zx = arith.extui %x : i8 to i64
  %tr = arith.trunci %x : i8 to i1
  %ic = arith.index_cast %x : i8 to index
  %icu = arith.index_castui %x : i8 to index
  %back = arith.index_cast %ic : index to i8
  %backu = arith.index_castui %icu : index to i8
  memref.store %back, %o[%ic] : memref<?xi8>
  memref.store %backu, %o[%icu] : memref<?xi8>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  memref.store %sx, %w[%c0] : memref<?xi64>
  memref.store %zx, %w[%c1] : memref<?xi64>
  enigma.return
}

// CHECK-LABEL: enigma_kernel_int_i16(
// 16-bit + - * on CUDA go through an opaque 32-bit value (NVRTC's neg.s16
// sign-extends -32768 wrongly on sm_90; docs/design/integer-emission.md).
// MSLCPP: ushort {{v[0-9]+}} = (ushort)((uint)x + (uint)y);
// MSLCPP-NEXT: ushort {{v[0-9]+}} = (ushort)((uint)x - (uint)y);
// MSLCPP-NEXT: ushort {{v[0-9]+}} = (ushort)((uint)x * (uint)y);
// CUDA: ushort {{v[0-9]+}} = (ushort)(enigma_opaque_u32((uint)x + (uint)y));
// CUDA-NEXT: ushort {{v[0-9]+}} = (ushort)(enigma_opaque_u32((uint)x - (uint)y));
// CUDA-NEXT: ushort {{v[0-9]+}} = (ushort)(enigma_opaque_u32((uint)x * (uint)y));
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)enigma_sdiv<short, ushort>((short)x, (short)y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)enigma_udiv<ushort>(x, y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)enigma_srem<short, ushort>((short)x, (short)y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)enigma_urem<ushort>(x, y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)((uint)x << (uint)y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)((short)x >> (short)y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)(x >> y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)((uint)x & (uint)y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)((uint)x | (uint)y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)((uint)x ^ (uint)y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)max((short)x, (short)y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)min((short)x, (short)y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)max(x, y);
// CHECK-NEXT: ushort {{v[0-9]+}} = (ushort)min(x, y);
// CHECK-NEXT: bool {{v[0-9]+}} = x == y;
// CHECK-NEXT: bool {{v[0-9]+}} = x != y;
// CHECK-NEXT: bool [[SLT:v[0-9]+]] = (short)x < (short)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (short)x <= (short)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (short)x > (short)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (short)x >= (short)y;
// CHECK-NEXT: bool {{v[0-9]+}} = x < y;
// CHECK-NEXT: bool {{v[0-9]+}} = x <= y;
// CHECK-NEXT: bool {{v[0-9]+}} = x > y;
// CHECK-NEXT: bool {{v[0-9]+}} = x >= y;
// CHECK-NEXT: ushort {{v[0-9]+}} = [[SLT]] ? x : y;
// CHECK-NEXT: ulong [[SX:v[0-9]+]] = (ulong)(short)x;
// CHECK-NEXT: ulong [[ZX:v[0-9]+]] = (ulong)x;
// CHECK-NEXT: bool {{v[0-9]+}} = (bool)(x & 1);
// CHECK-NEXT: ushort [[B:v[0-9]+]] = (ushort)(long)((short)x);
// CHECK-NEXT: ushort [[BU:v[0-9]+]] = (ushort)x;
// CHECK-NEXT: o{{\[}}((short)x)] = [[B]];
// CHECK-NEXT: o{{\[}}x] = [[BU]];
// CHECK-NEXT: w[0ul] = [[SX]];
// CHECK-NEXT: w[1ul] = [[ZX]];
enigma.kernel @int_i16(%x: i16 {enigma.name = "x"}, %y: i16 {enigma.name = "y"}, %o: memref<?xi16> {enigma.name = "o"}, %w: memref<?xi64> {enigma.name = "w"}) {
  %addi = arith.addi %x, %y : i16
  %subi = arith.subi %x, %y : i16
  %muli = arith.muli %x, %y : i16
  %divsi = arith.divsi %x, %y : i16
  %divui = arith.divui %x, %y : i16
  %remsi = arith.remsi %x, %y : i16
  %remui = arith.remui %x, %y : i16
  %shli = arith.shli %x, %y : i16
  %shrsi = arith.shrsi %x, %y : i16
  %shrui = arith.shrui %x, %y : i16
  %andi = arith.andi %x, %y : i16
  %ori = arith.ori %x, %y : i16
  %xori = arith.xori %x, %y : i16
  %maxsi = arith.maxsi %x, %y : i16
  %minsi = arith.minsi %x, %y : i16
  %maxui = arith.maxui %x, %y : i16
  %minui = arith.minui %x, %y : i16
  %eq = arith.cmpi eq, %x, %y : i16
  %ne = arith.cmpi ne, %x, %y : i16
  %slt = arith.cmpi slt, %x, %y : i16
  %sle = arith.cmpi sle, %x, %y : i16
  %sgt = arith.cmpi sgt, %x, %y : i16
  %sge = arith.cmpi sge, %x, %y : i16
  %ult = arith.cmpi ult, %x, %y : i16
  %ule = arith.cmpi ule, %x, %y : i16
  %ugt = arith.cmpi ugt, %x, %y : i16
  %uge = arith.cmpi uge, %x, %y : i16
  %sel = arith.select %slt, %x, %y : i16
  %sx = arith.extsi %x : i16 to i64
  %zx = arith.extui %x : i16 to i64
  %tr = arith.trunci %x : i16 to i1
  %ic = arith.index_cast %x : i16 to index
  %icu = arith.index_castui %x : i16 to index
  %back = arith.index_cast %ic : index to i16
  %backu = arith.index_castui %icu : index to i16
  memref.store %back, %o[%ic] : memref<?xi16>
  memref.store %backu, %o[%icu] : memref<?xi16>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  memref.store %sx, %w[%c0] : memref<?xi64>
  memref.store %zx, %w[%c1] : memref<?xi64>
  enigma.return
}

// CHECK-LABEL: enigma_kernel_int_i32(
// CHECK: uint {{v[0-9]+}} = x + y;
// CHECK-NEXT: uint {{v[0-9]+}} = x - y;
// CHECK-NEXT: uint {{v[0-9]+}} = x * y;
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)enigma_sdiv<int, uint>((int)x, (int)y);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)enigma_udiv<uint>(x, y);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)enigma_srem<int, uint>((int)x, (int)y);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)enigma_urem<uint>(x, y);
// CHECK-NEXT: uint {{v[0-9]+}} = x << y;
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)((int)x >> (int)y);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)(x >> y);
// CHECK-NEXT: uint {{v[0-9]+}} = x & y;
// CHECK-NEXT: uint {{v[0-9]+}} = x | y;
// CHECK-NEXT: uint {{v[0-9]+}} = x ^ y;
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)max((int)x, (int)y);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)min((int)x, (int)y);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)max(x, y);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)min(x, y);
// CHECK-NEXT: bool {{v[0-9]+}} = x == y;
// CHECK-NEXT: bool {{v[0-9]+}} = x != y;
// CHECK-NEXT: bool [[SLT:v[0-9]+]] = (int)x < (int)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (int)x <= (int)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (int)x > (int)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (int)x >= (int)y;
// CHECK-NEXT: bool {{v[0-9]+}} = x < y;
// CHECK-NEXT: bool {{v[0-9]+}} = x <= y;
// CHECK-NEXT: bool {{v[0-9]+}} = x > y;
// CHECK-NEXT: bool {{v[0-9]+}} = x >= y;
// CHECK-NEXT: uint {{v[0-9]+}} = [[SLT]] ? x : y;
// CHECK-NEXT: ulong [[SX:v[0-9]+]] = (ulong)(int)x;
// CHECK-NEXT: ulong [[ZX:v[0-9]+]] = (ulong)x;
// CHECK-NEXT: bool {{v[0-9]+}} = (bool)(x & 1);
// CHECK-NEXT: uint [[B:v[0-9]+]] = (uint)(long)((int)x);
// CHECK-NEXT: uint [[BU:v[0-9]+]] = (uint)x;
// CHECK-NEXT: o{{\[}}((int)x)] = [[B]];
// CHECK-NEXT: o{{\[}}x] = [[BU]];
// CHECK-NEXT: w[0ul] = [[SX]];
// CHECK-NEXT: w[1ul] = [[ZX]];
enigma.kernel @int_i32(%x: i32 {enigma.name = "x"}, %y: i32 {enigma.name = "y"}, %o: memref<?xi32> {enigma.name = "o"}, %w: memref<?xi64> {enigma.name = "w"}) {
  %addi = arith.addi %x, %y : i32
  %subi = arith.subi %x, %y : i32
  %muli = arith.muli %x, %y : i32
  %divsi = arith.divsi %x, %y : i32
  %divui = arith.divui %x, %y : i32
  %remsi = arith.remsi %x, %y : i32
  %remui = arith.remui %x, %y : i32
  %shli = arith.shli %x, %y : i32
  %shrsi = arith.shrsi %x, %y : i32
  %shrui = arith.shrui %x, %y : i32
  %andi = arith.andi %x, %y : i32
  %ori = arith.ori %x, %y : i32
  %xori = arith.xori %x, %y : i32
  %maxsi = arith.maxsi %x, %y : i32
  %minsi = arith.minsi %x, %y : i32
  %maxui = arith.maxui %x, %y : i32
  %minui = arith.minui %x, %y : i32
  %eq = arith.cmpi eq, %x, %y : i32
  %ne = arith.cmpi ne, %x, %y : i32
  %slt = arith.cmpi slt, %x, %y : i32
  %sle = arith.cmpi sle, %x, %y : i32
  %sgt = arith.cmpi sgt, %x, %y : i32
  %sge = arith.cmpi sge, %x, %y : i32
  %ult = arith.cmpi ult, %x, %y : i32
  %ule = arith.cmpi ule, %x, %y : i32
  %ugt = arith.cmpi ugt, %x, %y : i32
  %uge = arith.cmpi uge, %x, %y : i32
  %sel = arith.select %slt, %x, %y : i32
  %sx = arith.extsi %x : i32 to i64
  %zx = arith.extui %x : i32 to i64
  %tr = arith.trunci %x : i32 to i1
  %ic = arith.index_cast %x : i32 to index
  %icu = arith.index_castui %x : i32 to index
  %back = arith.index_cast %ic : index to i32
  %backu = arith.index_castui %icu : index to i32
  memref.store %back, %o[%ic] : memref<?xi32>
  memref.store %backu, %o[%icu] : memref<?xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  memref.store %sx, %w[%c0] : memref<?xi64>
  memref.store %zx, %w[%c1] : memref<?xi64>
  enigma.return
}

// CHECK-LABEL: enigma_kernel_int_i64(
// CHECK: ulong {{v[0-9]+}} = x + y;
// CHECK-NEXT: ulong {{v[0-9]+}} = x - y;
// CHECK-NEXT: ulong {{v[0-9]+}} = x * y;
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)enigma_sdiv<long, ulong>((long)x, (long)y);
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)enigma_udiv<ulong>(x, y);
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)enigma_srem<long, ulong>((long)x, (long)y);
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)enigma_urem<ulong>(x, y);
// CHECK-NEXT: ulong {{v[0-9]+}} = x << y;
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)((long)x >> (long)y);
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)(x >> y);
// CHECK-NEXT: ulong {{v[0-9]+}} = x & y;
// CHECK-NEXT: ulong {{v[0-9]+}} = x | y;
// CHECK-NEXT: ulong {{v[0-9]+}} = x ^ y;
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)max((long)x, (long)y);
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)min((long)x, (long)y);
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)max(x, y);
// CHECK-NEXT: ulong {{v[0-9]+}} = (ulong)min(x, y);
// CHECK-NEXT: bool {{v[0-9]+}} = x == y;
// CHECK-NEXT: bool {{v[0-9]+}} = x != y;
// CHECK-NEXT: bool [[SLT:v[0-9]+]] = (long)x < (long)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (long)x <= (long)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (long)x > (long)y;
// CHECK-NEXT: bool {{v[0-9]+}} = (long)x >= (long)y;
// CHECK-NEXT: bool {{v[0-9]+}} = x < y;
// CHECK-NEXT: bool {{v[0-9]+}} = x <= y;
// CHECK-NEXT: bool {{v[0-9]+}} = x > y;
// CHECK-NEXT: bool {{v[0-9]+}} = x >= y;
// CHECK-NEXT: ulong {{v[0-9]+}} = [[SLT]] ? x : y;
// CHECK-NEXT: bool {{v[0-9]+}} = (bool)(x & 1);
// CHECK-NEXT: ulong [[B:v[0-9]+]] = (ulong)(long)x;
// CHECK-NEXT: ulong [[BU:v[0-9]+]] = (ulong)x;
// CHECK-NEXT: o{{\[}}x] = [[B]];
// CHECK-NEXT: o{{\[}}x] = [[BU]];
enigma.kernel @int_i64(%x: i64 {enigma.name = "x"}, %y: i64 {enigma.name = "y"}, %o: memref<?xi64> {enigma.name = "o"}, %w: memref<?xi64> {enigma.name = "w"}) {
  %addi = arith.addi %x, %y : i64
  %subi = arith.subi %x, %y : i64
  %muli = arith.muli %x, %y : i64
  %divsi = arith.divsi %x, %y : i64
  %divui = arith.divui %x, %y : i64
  %remsi = arith.remsi %x, %y : i64
  %remui = arith.remui %x, %y : i64
  %shli = arith.shli %x, %y : i64
  %shrsi = arith.shrsi %x, %y : i64
  %shrui = arith.shrui %x, %y : i64
  %andi = arith.andi %x, %y : i64
  %ori = arith.ori %x, %y : i64
  %xori = arith.xori %x, %y : i64
  %maxsi = arith.maxsi %x, %y : i64
  %minsi = arith.minsi %x, %y : i64
  %maxui = arith.maxui %x, %y : i64
  %minui = arith.minui %x, %y : i64
  %eq = arith.cmpi eq, %x, %y : i64
  %ne = arith.cmpi ne, %x, %y : i64
  %slt = arith.cmpi slt, %x, %y : i64
  %sle = arith.cmpi sle, %x, %y : i64
  %sgt = arith.cmpi sgt, %x, %y : i64
  %sge = arith.cmpi sge, %x, %y : i64
  %ult = arith.cmpi ult, %x, %y : i64
  %ule = arith.cmpi ule, %x, %y : i64
  %ugt = arith.cmpi ugt, %x, %y : i64
  %uge = arith.cmpi uge, %x, %y : i64
  %sel = arith.select %slt, %x, %y : i64
  %tr = arith.trunci %x : i64 to i1
  %ic = arith.index_cast %x : i64 to index
  %icu = arith.index_castui %x : i64 to index
  %back = arith.index_cast %ic : index to i64
  %backu = arith.index_castui %icu : index to i64
  memref.store %back, %o[%ic] : memref<?xi64>
  memref.store %backu, %o[%icu] : memref<?xi64>
  enigma.return
}

// Truncation from i64 keeps the low bits; an index narrowed to i8 and
// widened again must not keep the index's high bits.
// CHECK-LABEL: enigma_kernel_narrowing(
// CHECK: uint [[T32:v[0-9]+]] = (uint)x;
// CHECK-NEXT: ushort [[T16:v[0-9]+]] = (ushort)x;
// CHECK-NEXT: uchar [[T8:v[0-9]+]] = (uchar)x;
// CHECK-NEXT: ulong [[SUM:v[0-9]+]] = x + 256ul;
// CHECK-NEXT: uchar [[N8:v[0-9]+]] = (uchar)(long)[[SUM]];
// CHECK-NEXT: uint [[W:v[0-9]+]] = (uint)[[N8]];
enigma.kernel @narrowing(%x: i64 {enigma.name = "x"}, %o: memref<?xi32> {enigma.name = "o"}) {
  %t32 = arith.trunci %x : i64 to i32
  %t16 = arith.trunci %x : i64 to i16
  %t8 = arith.trunci %x : i64 to i8
  %i = arith.index_castui %x : i64 to index
  %c256 = arith.constant 256 : index
  %s = arith.addi %i, %c256 : index
  %n8 = arith.index_cast %s : index to i8
  %w = arith.extui %n8 : i8 to i32
  %c0 = arith.constant 0 : index
  memref.store %w, %o[%c0] : memref<?xi32>
  enigma.return
}

// i1 as a signed number is 0 or -1.
// CHECK-LABEL: enigma_kernel_bools(
// CHECK: uint {{v[0-9]+}} = (uint)(-(int)b);
// CHECK-NEXT: uint {{v[0-9]+}} = (uint)b;
// CHECK-NEXT: float {{v[0-9]+}} = (float)(-(int)b);
// CHECK-NEXT: float {{v[0-9]+}} = (float)b;
// CHECK-NEXT: bool {{v[0-9]+}} = (-(int)b) < (-(int)c);
// CHECK-NEXT: bool {{v[0-9]+}} = b < c;
// CHECK-NEXT: bool {{v[0-9]+}} = b & c;
// CHECK-NEXT: bool {{v[0-9]+}} = b | c;
// CHECK-NEXT: bool {{v[0-9]+}} = b ^ c;
enigma.kernel @bools(%b: i1 {enigma.name = "b"}, %c: i1 {enigma.name = "c"}) {
  %s = arith.extsi %b : i1 to i32
  %z = arith.extui %b : i1 to i32
  %fs = arith.sitofp %b : i1 to f32
  %fu = arith.uitofp %b : i1 to f32
  %slt = arith.cmpi slt, %b, %c : i1
  %ult = arith.cmpi ult, %b, %c : i1
  %and = arith.andi %b, %c : i1
  %or = arith.ori %b, %c : i1
  %xor = arith.xori %b, %c : i1
  enigma.return
}
