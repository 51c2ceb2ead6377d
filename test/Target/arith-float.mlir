// RUN: enigma-translate --enigma-to-msl %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cuda %s | FileCheck %s
// RUN: enigma-translate --enigma-to-cpp %s | FileCheck %s
// RUN: enigma-translate --enigma-to-msl %s -o %t.metal && %check_msl %t.metal
// RUN: enigma-translate --enigma-to-cpp %s -o %t.cpp && %host_cxx_syntax %t.cpp

// Float arith on half, bfloat and float: operators, fmod/fmax/fmin, every
// cmpf predicate (the unordered ones are true when either side is NaN),
// conversions to and from integers (to integers through
// metal_float_to_int.h, half and bfloat widened to float first), extf/truncf
// and bitcast.

// CHECK-LABEL: enigma_kernel_float_f16(
// CHECK: half {{v[0-9]+}} = x + y;
// CHECK-NEXT: half {{v[0-9]+}} = x - y;
// CHECK-NEXT: half {{v[0-9]+}} = x * y;
// CHECK-NEXT: half {{v[0-9]+}} = x / y;
// CHECK-NEXT: half {{v[0-9]+}} = (half)fmod(x, y);
// CHECK-NEXT: half {{v[0-9]+}} = (half)fmax(x, y);
// CHECK-NEXT: half {{v[0-9]+}} = (half)fmin(x, y);
// CHECK-NEXT: half {{v[0-9]+}} = -x;
// CHECK-NEXT: half {{v[0-9]+}} = -half(-1.5f);
// CHECK-NEXT: half {{v[0-9]+}} = x - half(-1.5f);
// CHECK-NEXT: bool {{v[0-9]+}} = false;
// CHECK-NEXT: bool {{v[0-9]+}} = x == y;
// CHECK-NEXT: bool {{v[0-9]+}} = x > y;
// CHECK-NEXT: bool {{v[0-9]+}} = x >= y;
// CHECK-NEXT: bool {{v[0-9]+}} = x < y;
// CHECK-NEXT: bool {{v[0-9]+}} = x <= y;
// CHECK-NEXT: bool {{v[0-9]+}} = (x < y || x > y);
// CHECK-NEXT: bool {{v[0-9]+}} = (!isnan(x) && !isnan(y));
// CHECK-NEXT: bool {{v[0-9]+}} = !(x < y || x > y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x <= y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x < y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x >= y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x > y);
// CHECK-NEXT: bool {{v[0-9]+}} = x != y;
// CHECK-NEXT: bool {{v[0-9]+}} = (isnan(x) || isnan(y));
// CHECK-NEXT: bool {{v[0-9]+}} = true;
// CHECK-NEXT: uint [[SI:v[0-9]+]] = (uint)enigma_float_to_int<int, int>({{x|float\(x\)}});
// CHECK-NEXT: uint [[UI:v[0-9]+]] = (uint)enigma_float_to_int<uint, uint>({{x|float\(x\)}});
// CHECK-NEXT: uchar [[SI8:v[0-9]+]] = (uchar)enigma_float_to_int<char, char>({{x|float\(x\)}});
// CHECK-NEXT: ulong [[UI64:v[0-9]+]] = (ulong)enigma_float_to_int<ulong, ulong>({{x|float\(x\)}});
// CHECK-NEXT: half {{v[0-9]+}} = (half)(int)[[SI]];
// CHECK-NEXT: half {{v[0-9]+}} = (half)[[UI]];
// CHECK-NEXT: half {{v[0-9]+}} = (half)(char)[[SI8]];
// CHECK-NEXT: half {{v[0-9]+}} = (half)[[UI64]];
// CHECK-NEXT: float [[W:v[0-9]+]] = (float)x;
// CHECK-NEXT: half {{v[0-9]+}} = (half)[[W]];
enigma.kernel @float_f16(%x: f16 {enigma.name = "x"}, %y: f16 {enigma.name = "y"}, %o: memref<?xf16> {enigma.name = "o"}) {
  %addf = arith.addf %x, %y : f16
  %subf = arith.subf %x, %y : f16
  %mulf = arith.mulf %x, %y : f16
  %divf = arith.divf %x, %y : f16
  %remf = arith.remf %x, %y : f16
  %maxnumf = arith.maxnumf %x, %y : f16
  %minnumf = arith.minnumf %x, %y : f16
  %neg = arith.negf %x : f16
  %m = arith.constant -1.5 : f16
  %negm = arith.negf %m : f16
  %subm = arith.subf %x, %m : f16
  %false = arith.cmpf false, %x, %y : f16
  %oeq = arith.cmpf oeq, %x, %y : f16
  %ogt = arith.cmpf ogt, %x, %y : f16
  %oge = arith.cmpf oge, %x, %y : f16
  %olt = arith.cmpf olt, %x, %y : f16
  %ole = arith.cmpf ole, %x, %y : f16
  %one = arith.cmpf one, %x, %y : f16
  %ord = arith.cmpf ord, %x, %y : f16
  %ueq = arith.cmpf ueq, %x, %y : f16
  %ugt = arith.cmpf ugt, %x, %y : f16
  %uge = arith.cmpf uge, %x, %y : f16
  %ult = arith.cmpf ult, %x, %y : f16
  %ule = arith.cmpf ule, %x, %y : f16
  %une = arith.cmpf une, %x, %y : f16
  %uno = arith.cmpf uno, %x, %y : f16
  %true = arith.cmpf true, %x, %y : f16
  %si = arith.fptosi %x : f16 to i32
  %ui = arith.fptoui %x : f16 to i32
  %si8 = arith.fptosi %x : f16 to i8
  %ui64 = arith.fptoui %x : f16 to i64
  %fs = arith.sitofp %si : i32 to f16
  %fu = arith.uitofp %ui : i32 to f16
  %fs8 = arith.sitofp %si8 : i8 to f16
  %fu64 = arith.uitofp %ui64 : i64 to f16
  %w = arith.extf %x : f16 to f32
  %n = arith.truncf %w : f32 to f16
  %c0 = arith.constant 0 : index
  memref.store %neg, %o[%c0] : memref<?xf16>
  enigma.return
}

// CHECK-LABEL: enigma_kernel_float_bf16(
// CHECK: bfloat {{v[0-9]+}} = x + y;
// CHECK-NEXT: bfloat {{v[0-9]+}} = x - y;
// CHECK-NEXT: bfloat {{v[0-9]+}} = x * y;
// CHECK-NEXT: bfloat {{v[0-9]+}} = x / y;
// CHECK-NEXT: bfloat {{v[0-9]+}} = (bfloat)fmod(x, y);
// CHECK-NEXT: bfloat {{v[0-9]+}} = (bfloat)fmax(x, y);
// CHECK-NEXT: bfloat {{v[0-9]+}} = (bfloat)fmin(x, y);
// CHECK-NEXT: bfloat {{v[0-9]+}} = -x;
// CHECK-NEXT: bfloat {{v[0-9]+}} = -bfloat(-1.5f);
// CHECK-NEXT: bfloat {{v[0-9]+}} = x - bfloat(-1.5f);
// CHECK-NEXT: bool {{v[0-9]+}} = false;
// CHECK-NEXT: bool {{v[0-9]+}} = x == y;
// CHECK-NEXT: bool {{v[0-9]+}} = x > y;
// CHECK-NEXT: bool {{v[0-9]+}} = x >= y;
// CHECK-NEXT: bool {{v[0-9]+}} = x < y;
// CHECK-NEXT: bool {{v[0-9]+}} = x <= y;
// CHECK-NEXT: bool {{v[0-9]+}} = (x < y || x > y);
// CHECK-NEXT: bool {{v[0-9]+}} = (!isnan(x) && !isnan(y));
// CHECK-NEXT: bool {{v[0-9]+}} = !(x < y || x > y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x <= y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x < y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x >= y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x > y);
// CHECK-NEXT: bool {{v[0-9]+}} = x != y;
// CHECK-NEXT: bool {{v[0-9]+}} = (isnan(x) || isnan(y));
// CHECK-NEXT: bool {{v[0-9]+}} = true;
// CHECK-NEXT: uint [[SI:v[0-9]+]] = (uint)enigma_float_to_int<int, int>({{x|float\(x\)}});
// CHECK-NEXT: uint [[UI:v[0-9]+]] = (uint)enigma_float_to_int<uint, uint>({{x|float\(x\)}});
// CHECK-NEXT: uchar [[SI8:v[0-9]+]] = (uchar)enigma_float_to_int<char, char>({{x|float\(x\)}});
// CHECK-NEXT: ulong [[UI64:v[0-9]+]] = (ulong)enigma_float_to_int<ulong, ulong>({{x|float\(x\)}});
// CHECK-NEXT: bfloat {{v[0-9]+}} = (bfloat)(int)[[SI]];
// CHECK-NEXT: bfloat {{v[0-9]+}} = (bfloat)[[UI]];
// CHECK-NEXT: bfloat {{v[0-9]+}} = (bfloat)(char)[[SI8]];
// CHECK-NEXT: bfloat {{v[0-9]+}} = (bfloat)[[UI64]];
// CHECK-NEXT: float [[W:v[0-9]+]] = (float)x;
// CHECK-NEXT: bfloat {{v[0-9]+}} = (bfloat)[[W]];
enigma.kernel @float_bf16(%x: bf16 {enigma.name = "x"}, %y: bf16 {enigma.name = "y"}, %o: memref<?xbf16> {enigma.name = "o"}) {
  %addf = arith.addf %x, %y : bf16
  %subf = arith.subf %x, %y : bf16
  %mulf = arith.mulf %x, %y : bf16
  %divf = arith.divf %x, %y : bf16
  %remf = arith.remf %x, %y : bf16
  %maxnumf = arith.maxnumf %x, %y : bf16
  %minnumf = arith.minnumf %x, %y : bf16
  %neg = arith.negf %x : bf16
  %m = arith.constant -1.5 : bf16
  %negm = arith.negf %m : bf16
  %subm = arith.subf %x, %m : bf16
  %false = arith.cmpf false, %x, %y : bf16
  %oeq = arith.cmpf oeq, %x, %y : bf16
  %ogt = arith.cmpf ogt, %x, %y : bf16
  %oge = arith.cmpf oge, %x, %y : bf16
  %olt = arith.cmpf olt, %x, %y : bf16
  %ole = arith.cmpf ole, %x, %y : bf16
  %one = arith.cmpf one, %x, %y : bf16
  %ord = arith.cmpf ord, %x, %y : bf16
  %ueq = arith.cmpf ueq, %x, %y : bf16
  %ugt = arith.cmpf ugt, %x, %y : bf16
  %uge = arith.cmpf uge, %x, %y : bf16
  %ult = arith.cmpf ult, %x, %y : bf16
  %ule = arith.cmpf ule, %x, %y : bf16
  %une = arith.cmpf une, %x, %y : bf16
  %uno = arith.cmpf uno, %x, %y : bf16
  %true = arith.cmpf true, %x, %y : bf16
  %si = arith.fptosi %x : bf16 to i32
  %ui = arith.fptoui %x : bf16 to i32
  %si8 = arith.fptosi %x : bf16 to i8
  %ui64 = arith.fptoui %x : bf16 to i64
  %fs = arith.sitofp %si : i32 to bf16
  %fu = arith.uitofp %ui : i32 to bf16
  %fs8 = arith.sitofp %si8 : i8 to bf16
  %fu64 = arith.uitofp %ui64 : i64 to bf16
  %w = arith.extf %x : bf16 to f32
  %n = arith.truncf %w : f32 to bf16
  %c0 = arith.constant 0 : index
  memref.store %neg, %o[%c0] : memref<?xbf16>
  enigma.return
}

// CHECK-LABEL: enigma_kernel_float_f32(
// CHECK: float {{v[0-9]+}} = x + y;
// CHECK-NEXT: float {{v[0-9]+}} = x - y;
// CHECK-NEXT: float {{v[0-9]+}} = x * y;
// CHECK-NEXT: float {{v[0-9]+}} = x / y;
// CHECK-NEXT: float {{v[0-9]+}} = (float)fmod(x, y);
// CHECK-NEXT: float {{v[0-9]+}} = (float)fmax(x, y);
// CHECK-NEXT: float {{v[0-9]+}} = (float)fmin(x, y);
// CHECK-NEXT: float {{v[0-9]+}} = -x;
// CHECK-NEXT: float {{v[0-9]+}} = -(-1.5f);
// CHECK-NEXT: float {{v[0-9]+}} = x - -1.5f;
// CHECK-NEXT: bool {{v[0-9]+}} = false;
// CHECK-NEXT: bool {{v[0-9]+}} = x == y;
// CHECK-NEXT: bool {{v[0-9]+}} = x > y;
// CHECK-NEXT: bool {{v[0-9]+}} = x >= y;
// CHECK-NEXT: bool {{v[0-9]+}} = x < y;
// CHECK-NEXT: bool {{v[0-9]+}} = x <= y;
// CHECK-NEXT: bool {{v[0-9]+}} = (x < y || x > y);
// CHECK-NEXT: bool {{v[0-9]+}} = (!isnan(x) && !isnan(y));
// CHECK-NEXT: bool {{v[0-9]+}} = !(x < y || x > y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x <= y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x < y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x >= y);
// CHECK-NEXT: bool {{v[0-9]+}} = !(x > y);
// CHECK-NEXT: bool {{v[0-9]+}} = x != y;
// CHECK-NEXT: bool {{v[0-9]+}} = (isnan(x) || isnan(y));
// CHECK-NEXT: bool {{v[0-9]+}} = true;
// CHECK-NEXT: uint [[SI:v[0-9]+]] = (uint)enigma_float_to_int<int, int>({{x|float\(x\)}});
// CHECK-NEXT: uint [[UI:v[0-9]+]] = (uint)enigma_float_to_int<uint, uint>({{x|float\(x\)}});
// CHECK-NEXT: uchar [[SI8:v[0-9]+]] = (uchar)enigma_float_to_int<char, char>({{x|float\(x\)}});
// CHECK-NEXT: ulong [[UI64:v[0-9]+]] = (ulong)enigma_float_to_int<ulong, ulong>({{x|float\(x\)}});
// CHECK-NEXT: float {{v[0-9]+}} = (float)(int)[[SI]];
// CHECK-NEXT: float {{v[0-9]+}} = (float)[[UI]];
// CHECK-NEXT: float {{v[0-9]+}} = (float)(char)[[SI8]];
// CHECK-NEXT: float {{v[0-9]+}} = (float)[[UI64]];
// CHECK-NEXT: half [[H:v[0-9]+]] = (half)x;
// CHECK-NEXT: bfloat [[B:v[0-9]+]] = (bfloat)x;
// CHECK-NEXT: float {{v[0-9]+}} = (float)[[H]];
// CHECK-NEXT: float {{v[0-9]+}} = (float)[[B]];
// CHECK-NEXT: uint [[BITS:v[0-9]+]] = as_type<uint>(x);
// CHECK-NEXT: float {{v[0-9]+}} = as_type<float>([[BITS]]);
// CHECK-NEXT: ushort {{v[0-9]+}} = as_type<ushort>([[H]]);
enigma.kernel @float_f32(%x: f32 {enigma.name = "x"}, %y: f32 {enigma.name = "y"}, %o: memref<?xf32> {enigma.name = "o"}) {
  %addf = arith.addf %x, %y : f32
  %subf = arith.subf %x, %y : f32
  %mulf = arith.mulf %x, %y : f32
  %divf = arith.divf %x, %y : f32
  %remf = arith.remf %x, %y : f32
  %maxnumf = arith.maxnumf %x, %y : f32
  %minnumf = arith.minnumf %x, %y : f32
  %neg = arith.negf %x : f32
  %m = arith.constant -1.5 : f32
  %negm = arith.negf %m : f32
  %subm = arith.subf %x, %m : f32
  %false = arith.cmpf false, %x, %y : f32
  %oeq = arith.cmpf oeq, %x, %y : f32
  %ogt = arith.cmpf ogt, %x, %y : f32
  %oge = arith.cmpf oge, %x, %y : f32
  %olt = arith.cmpf olt, %x, %y : f32
  %ole = arith.cmpf ole, %x, %y : f32
  %one = arith.cmpf one, %x, %y : f32
  %ord = arith.cmpf ord, %x, %y : f32
  %ueq = arith.cmpf ueq, %x, %y : f32
  %ugt = arith.cmpf ugt, %x, %y : f32
  %uge = arith.cmpf uge, %x, %y : f32
  %ult = arith.cmpf ult, %x, %y : f32
  %ule = arith.cmpf ule, %x, %y : f32
  %une = arith.cmpf une, %x, %y : f32
  %uno = arith.cmpf uno, %x, %y : f32
  %true = arith.cmpf true, %x, %y : f32
  %si = arith.fptosi %x : f32 to i32
  %ui = arith.fptoui %x : f32 to i32
  %si8 = arith.fptosi %x : f32 to i8
  %ui64 = arith.fptoui %x : f32 to i64
  %fs = arith.sitofp %si : i32 to f32
  %fu = arith.uitofp %ui : i32 to f32
  %fs8 = arith.sitofp %si8 : i8 to f32
  %fu64 = arith.uitofp %ui64 : i64 to f32
  %h = arith.truncf %x : f32 to f16
  %b = arith.truncf %x : f32 to bf16
  %hx = arith.extf %h : f16 to f32
  %bx = arith.extf %b : bf16 to f32
  %bits = arith.bitcast %x : f32 to i32
  %back = arith.bitcast %bits : i32 to f32
  %hb = arith.bitcast %h : f16 to i16
  %c0 = arith.constant 0 : index
  memref.store %neg, %o[%c0] : memref<?xf32>
  enigma.return
}
