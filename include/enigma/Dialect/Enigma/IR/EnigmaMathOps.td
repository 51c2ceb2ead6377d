//===- EnigmaMathOps.td - The math op family ----------*- tablegen -*-===//
//
// Metal's element-wise builtins that upstream arith/math lack (sign, fract,
// clamp, saturating and bit-field integer functions, float predicates).
// Every op here is a call of one Metal function: it derives from
// Enigma_BuiltinOp, which records the function's name (kMetalName) so one
// emitter path prints `name(args)` for all of them. Integer ops whose result
// depends on signedness carry a `signed` unit attribute, since MLIR integers
// are signless.
//
// A family of ops generated into its own EnigmaMathOps.h.inc so that it
// builds independently; it includes only the dialect base, never other
// families' files (TableGen would emit their records again).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MATH_OPS_TD
#define ENIGMA_MATH_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// A pure call of the Metal function `metalName`; operands print in order.
class Enigma_BuiltinOp<string mnemonic, string metalName,
                       list<Trait> traits = []>
    : Enigma_Op<mnemonic, !listconcat(traits, [Pure])> {
  let extraClassDeclaration = [{
    /// The Metal standard library function this op calls.
    static constexpr ::llvm::StringLiteral kMetalName = "}] # metalName # [{";
  }];
}

//===----------------------------------------------------------------------===//
// Float functions
//===----------------------------------------------------------------------===//

class Enigma_FloatUnaryOp<string mnemonic, string summaryText>
    : Enigma_BuiltinOp<mnemonic, mnemonic, [SameOperandsAndResultType]> {
  let summary = summaryText;
  let arguments = (ins FloatLike:$x);
  let results = (outs FloatLike:$result);
  let assemblyFormat = "$x attr-dict `:` type($result)";
}

def Enigma_SignOp : Enigma_FloatUnaryOp<"sign",
    "Metal sign(x): 1 or -1 by sign, x itself for +-0, 0 for NaN">;
def Enigma_SaturateOp : Enigma_FloatUnaryOp<"saturate",
    "Metal saturate(x): x clamped to [0, 1]">;
def Enigma_FractOp : Enigma_FloatUnaryOp<"fract",
    "Metal fract(x): x - floor(x), clamped below 1">;

def Enigma_StepOp : Enigma_BuiltinOp<"step", "step",
                                     [SameOperandsAndResultType]> {
  let summary = "Metal step(edge, x): 0 when x < edge, else 1";
  let arguments = (ins FloatLike:$edge, FloatLike:$x);
  let results = (outs FloatLike:$result);
  let assemblyFormat = "$edge `,` $x attr-dict `:` type($result)";
}

// fmin, fmax and atan2 exist upstream (arith.minnumf/maxnumf, math.atan2),
// but MLIR 19's folders disagree with Metal, and so with what the backends
// compute at run time: maxnumf(0, NaN) and atan2(0, 0) fold to NaN, and
// minnumf(x, +inf) folds to x even when x is NaN. These ops have no folder,
// so a result never depends on whether the operands were constants.
class Enigma_FloatBinaryOp<string mnemonic, string summaryText>
    : Enigma_BuiltinOp<mnemonic, mnemonic, [SameOperandsAndResultType]> {
  let summary = summaryText;
  let arguments = (ins FloatLike:$lhs, FloatLike:$rhs);
  let results = (outs FloatLike:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Enigma_FminOp : Enigma_FloatBinaryOp<"fmin",
    "Metal fmin(x, y): the smaller; when one is NaN, the other">;
def Enigma_FmaxOp : Enigma_FloatBinaryOp<"fmax",
    "Metal fmax(x, y): the larger; when one is NaN, the other">;
def Enigma_Atan2Op : Enigma_FloatBinaryOp<"atan2",
    "Metal atan2(y, x): the angle of (x, y), C's special values">;

class Enigma_FloatTernaryOp<string mnemonic, string summaryText>
    : Enigma_BuiltinOp<mnemonic, mnemonic, [SameOperandsAndResultType]> {
  let summary = summaryText;
  let arguments = (ins FloatLike:$a, FloatLike:$b, FloatLike:$c);
  let results = (outs FloatLike:$result);
  let assemblyFormat = "$a `,` $b `,` $c attr-dict `:` type($result)";
}

def Enigma_MixOp : Enigma_FloatTernaryOp<"mix",
    "Metal mix(x, y, a): x + (y - x) * a">;
def Enigma_SmoothstepOp : Enigma_FloatTernaryOp<"smoothstep",
    "Metal smoothstep(edge0, edge1, x): Hermite interpolation in [0, 1]">;

def Enigma_ClampOp : Enigma_BuiltinOp<"clamp", "clamp",
                                      [SameOperandsAndResultType]> {
  let summary = "Metal clamp(x, lo, hi) for floats and integers";
  let description = [{
    `min(max(x, lo), hi)`. For integers `signed` selects the signed
    comparison; it is rejected on floats.
  }];
  let arguments = (ins SignlessIntegerOrFloatLike:$x,
                       SignlessIntegerOrFloatLike:$lo,
                       SignlessIntegerOrFloatLike:$hi,
                       UnitAttr:$is_signed);
  let results = (outs SignlessIntegerOrFloatLike:$result);
  let assemblyFormat = [{
    (`signed` $is_signed^)? $x `,` $lo `,` $hi attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

// Predicates: a bool (vector of bools) of the operand's shape.
class Enigma_FloatPredicateOp<string mnemonic, string summaryText>
    : Enigma_BuiltinOp<mnemonic, mnemonic> {
  let summary = summaryText;
  let arguments = (ins FloatLike:$x);
  let results = (outs BoolLike:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Enigma_IsNanOp : Enigma_FloatPredicateOp<"isnan", "Metal isnan(x)">;
def Enigma_IsInfOp : Enigma_FloatPredicateOp<"isinf", "Metal isinf(x)">;
def Enigma_IsFiniteOp : Enigma_FloatPredicateOp<"isfinite",
    "Metal isfinite(x)">;
def Enigma_SignBitOp : Enigma_FloatPredicateOp<"signbit",
    "Metal signbit(x): the sign bit is set (also for -0 and -NaN)">;
def Enigma_IsNormalOp : Enigma_FloatPredicateOp<"isnormal",
    "Metal isnormal(x): neither zero, subnormal, infinite nor NaN">;

//===----------------------------------------------------------------------===//
// Integer functions
//===----------------------------------------------------------------------===//

class Enigma_IntBinaryOp<string mnemonic, string metalName,
                         string summaryText>
    : Enigma_BuiltinOp<mnemonic, metalName, [SameOperandsAndResultType]> {
  let summary = summaryText;
  let arguments = (ins SignlessIntegerLike:$lhs, SignlessIntegerLike:$rhs,
                       UnitAttr:$is_signed);
  let results = (outs SignlessIntegerLike:$result);
  let assemblyFormat = [{
    (`signed` $is_signed^)? $lhs `,` $rhs attr-dict `:` type($result)
  }];
}

def Enigma_AbsDiffOp : Enigma_IntBinaryOp<"absdiff", "absdiff",
    "Metal absdiff(x, y): |x - y| as the unsigned value of the width">;
def Enigma_AddSatOp : Enigma_IntBinaryOp<"addsat", "addsat",
    "Metal addsat(x, y): x + y saturated to the type's range">;
def Enigma_SubSatOp : Enigma_IntBinaryOp<"subsat", "subsat",
    "Metal subsat(x, y): x - y saturated to the type's range">;
def Enigma_MulHiOp : Enigma_IntBinaryOp<"mulhi", "mulhi",
    "Metal mulhi(x, y): the high half of the double-width product">;
def Enigma_RotateOp : Enigma_IntBinaryOp<"rotate", "rotate",
    "Metal rotate(v, i): v rotated left by i modulo the width">;

def Enigma_MadSatOp : Enigma_BuiltinOp<"madsat", "madsat",
                                       [SameOperandsAndResultType]> {
  let summary = "Metal madsat(a, b, c): a * b + c saturated";
  let arguments = (ins SignlessIntegerLike:$a, SignlessIntegerLike:$b,
                       SignlessIntegerLike:$c, UnitAttr:$is_signed);
  let results = (outs SignlessIntegerLike:$result);
  let assemblyFormat = [{
    (`signed` $is_signed^)? $a `,` $b `,` $c attr-dict `:` type($result)
  }];
}

def Enigma_ReverseBitsOp : Enigma_BuiltinOp<"reverse_bits", "reverse_bits",
                                            [SameOperandsAndResultType]> {
  let summary = "Metal reverse_bits(x): the bit order reversed";
  let arguments = (ins SignlessIntegerLike:$x);
  let results = (outs SignlessIntegerLike:$result);
  let assemblyFormat = "$x attr-dict `:` type($result)";
}

def Enigma_ExtractBitsOp : Enigma_BuiltinOp<"extract_bits", "extract_bits",
    [AllTypesMatch<["x", "result"]>]> {
  let summary = "Metal extract_bits(x, offset, bits)";
  let description = [{
    Bits [offset, offset + bits) of x moved to the bottom, zero-extended, or
    sign-extended from the top extracted bit when `signed`. bits == 0 gives
    0. offset + bits beyond the width is undefined in Metal; the verifier
    rejects it when both are constants.
  }];
  let arguments = (ins SignlessIntegerLike:$x, I32:$offset, I32:$bits,
                       UnitAttr:$is_signed);
  let results = (outs SignlessIntegerLike:$result);
  let assemblyFormat = [{
    (`signed` $is_signed^)? $x `,` $offset `,` $bits attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

def Enigma_InsertBitsOp : Enigma_BuiltinOp<"insert_bits", "insert_bits",
    [AllTypesMatch<["base", "insert", "result"]>]> {
  let summary = "Metal insert_bits(base, insert, offset, bits)";
  let description = [{
    The low `bits` bits of insert placed at [offset, offset + bits) of base;
    bits == 0 gives base.
  }];
  let arguments = (ins SignlessIntegerLike:$base, SignlessIntegerLike:$insert,
                       I32:$offset, I32:$bits);
  let results = (outs SignlessIntegerLike:$result);
  let assemblyFormat = [{
    $base `,` $insert `,` $offset `,` $bits attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Packing
//===----------------------------------------------------------------------===//

def Enigma_UnpackUnorm4x8SrgbOp
    : Enigma_BuiltinOp<"unpack_unorm4x8_srgb", "unpack_unorm4x8_srgb_to_float"> {
  let summary = "Metal unpack_unorm4x8_srgb_to_float(x): sRGB bytes to linear";
  let description = [{
    Byte i of x (i = 0 at the lowest bits) as a unorm value c = byte / 255;
    lanes 0-2 (r, g, b) converted from sRGB to linear (c / 12.92 when
    c <= 0.04045, else ((c + 0.055) / 1.055)^2.4), lane 3 (alpha) kept.
  }];
  let arguments = (ins I32:$x);
  let results = (outs VectorOfLengthAndType<[4], [F32]>:$result);
  let assemblyFormat = "$x attr-dict `:` type($result)";
}

#endif
