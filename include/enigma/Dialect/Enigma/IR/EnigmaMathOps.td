//===- EnigmaMathOps.td - The math op family ----------*- tablegen -*-===//
//
// Metal's element-wise math, integer and bit functions, comparisons,
// geometry and packing: the ops upstream arith/math lack, and the table of
// every function of the family (Enigma_Function records), upstream-backed
// ones included. enigma-tblgen -gen-function-table prints that table and
// the ops' Metal spellings into EnigmaMathFunctions.inc; the builder, the
// Python bindings and wrappers and the emitters read it, so a new function
// is one record here plus its semantics in the Metal semantics library
// (docs/design/op-families.md).
//
// Every op here is a call of one Metal function: it derives from
// Enigma_BuiltinOp, which records the function's name so one emitter path
// prints `name(args)` for all of them. Integer ops whose result depends on
// signedness carry a `signed` unit attribute, since MLIR integers are
// signless.
//
// A family of ops generated into its own EnigmaMathOps.h.inc so that it
// builds independently; it includes only the dialect base, never other
// families' files (TableGen would emit their records again).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MATH_OPS_TD
#define ENIGMA_MATH_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "enigma/Dialect/Enigma/IR/EnigmaFunctionTable.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// A pure call of the Metal function `metalName`; operands print in order.
class Enigma_BuiltinOp<string mnemonic, string metalName,
                       list<Trait> traits = []>
    : Enigma_Op<mnemonic, !listconcat(traits, [Pure])>,
      Enigma_Spelling<metalName>;

// An op that is also the function `enigma.<mnemonic>` of the math family.
class Enigma_MathFunctionOp<string mnemonic, list<string> args, string rule,
                            string doc, list<Trait> traits = []>
    : Enigma_BuiltinOp<mnemonic, mnemonic, traits>,
      Enigma_Function<"math", mnemonic, args, rule, doc> {
  let summary = "Metal " # mnemonic # "(" # !interleave(args, ", ") # ")";
  let description = doc;
}

// A function of the math family built from an upstream op (or from an
// enigma op under another name).
class Enigma_MathFunction<string name, list<string> args, string rule,
                          string op, string doc>
    : Enigma_Function<"math", name, args, rule, doc> {
  let fnOp = op;
}

//===----------------------------------------------------------------------===//
// Float functions of one operand
//===----------------------------------------------------------------------===//

class Enigma_FloatUnaryOp<string mnemonic, string doc>
    : Enigma_MathFunctionOp<mnemonic, ["x"], "Float", doc,
                            [SameOperandsAndResultType]> {
  let arguments = (ins FloatLike:$x);
  let results = (outs FloatLike:$result);
  let assemblyFormat = "$x attr-dict `:` type($result)";
}

def : Enigma_MathFunction<"sqrt", ["x"], "Float", "math.sqrt",
    "Square root (MSL ``sqrt``).">;
def : Enigma_MathFunction<"rsqrt", ["x"], "Float", "math.rsqrt",
    "Reciprocal square root 1/sqrt(x) (MSL ``rsqrt``).">;
def : Enigma_MathFunction<"abs", ["x"], "Numeric", "", [{Absolute value (MSL
``abs``). Floats clear the sign bit; signed integers wrap ``abs(INT_MIN)`` to
``INT_MIN``; unsigned values pass.}]> {
  let fnFloatOp = "math.absf";
  let fnSignedOp = "math.absi";
  let fnUnsignedOp = "identity";
}
def : Enigma_MathFunction<"ceil", ["x"], "Float", "math.ceil",
    "Round toward +infinity (MSL ``ceil``).">;
def : Enigma_MathFunction<"floor", ["x"], "Float", "math.floor",
    "Round toward -infinity (MSL ``floor``).">;
// math.round is half away from zero, as Metal's round.
def : Enigma_MathFunction<"round", ["x"], "Float", "math.round",
    "Round to nearest, halfway cases away from zero (MSL ``round``).">;
def : Enigma_MathFunction<"trunc", ["x"], "Float", "math.trunc",
    "Round toward zero (MSL ``trunc``).">;
def Enigma_SignOp : Enigma_FloatUnaryOp<"sign", [{1.0 for x > 0, -1.0 for
x < 0, x itself for +-0, 0 for NaN (MSL ``sign``).}]>;
def Enigma_SaturateOp : Enigma_FloatUnaryOp<"saturate",
    "x clamped to [0, 1] (MSL ``saturate``).">;
def Enigma_FractOp : Enigma_FloatUnaryOp<"fract", [{x - floor(x), clamped to
the largest value below 1 (MSL ``fract``).}]>;
def : Enigma_MathFunction<"exp", ["x"], "Float", "math.exp",
    "e to the x (MSL ``exp``).">;
def : Enigma_MathFunction<"exp2", ["x"], "Float", "math.exp2",
    "2 to the x (MSL ``exp2``).">;
def : Enigma_MathFunction<"log", ["x"], "Float", "math.log",
    "Natural logarithm (MSL ``log``).">;
def : Enigma_MathFunction<"log2", ["x"], "Float", "math.log2",
    "Base-2 logarithm (MSL ``log2``).">;
def : Enigma_MathFunction<"log10", ["x"], "Float", "math.log10",
    "Base-10 logarithm (MSL ``log10``).">;
def : Enigma_MathFunction<"sin", ["x"], "Float", "math.sin",
    "Sine of x radians (MSL ``sin``).">;
def : Enigma_MathFunction<"cos", ["x"], "Float", "math.cos",
    "Cosine of x radians (MSL ``cos``).">;
def : Enigma_MathFunction<"tan", ["x"], "Float", "math.tan",
    "Tangent of x radians (MSL ``tan``).">;
def Enigma_SinpiOp : Enigma_FloatUnaryOp<"sinpi", [{sin(pi x), exact at
integers and half-integers (MSL ``sinpi``).}]>;
def Enigma_CospiOp : Enigma_FloatUnaryOp<"cospi", [{cos(pi x), exact at
integers and half-integers (MSL ``cospi``).}]>;
def Enigma_TanpiOp : Enigma_FloatUnaryOp<"tanpi", [{tan(pi x), exact at
integers, +-infinity at half-integers (MSL ``tanpi``).}]>;
def : Enigma_MathFunction<"asin", ["x"], "Float", "math.asin",
    "Arc sine in radians (MSL ``asin``).">;
def : Enigma_MathFunction<"acos", ["x"], "Float", "math.acos",
    "Arc cosine in radians (MSL ``acos``).">;
def : Enigma_MathFunction<"atan", ["x"], "Float", "math.atan",
    "Arc tangent in radians (MSL ``atan``).">;
def : Enigma_MathFunction<"sinh", ["x"], "Float", "math.sinh",
    "Hyperbolic sine (MSL ``sinh``).">;
def : Enigma_MathFunction<"cosh", ["x"], "Float", "math.cosh",
    "Hyperbolic cosine (MSL ``cosh``).">;
def : Enigma_MathFunction<"tanh", ["x"], "Float", "math.tanh",
    "Hyperbolic tangent (MSL ``tanh``).">;

//===----------------------------------------------------------------------===//
// Float functions of two and three operands
//===----------------------------------------------------------------------===//

// fmin, fmax and atan2 exist upstream (arith.minnumf/maxnumf, math.atan2),
// but MLIR 19's folders disagree with Metal, and so with what the backends
// compute at run time: maxnumf(0, NaN) and atan2(0, 0) fold to NaN, and
// minnumf(x, +inf) folds to x even when x is NaN. These ops have no folder,
// so a result never depends on whether the operands were constants.
class Enigma_FloatBinaryOp<string mnemonic, list<string> args, string doc>
    : Enigma_MathFunctionOp<mnemonic, args, "Float", doc,
                            [SameOperandsAndResultType]> {
  let arguments = (ins FloatLike:$lhs, FloatLike:$rhs);
  let results = (outs FloatLike:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Enigma_FminOp : Enigma_FloatBinaryOp<"fmin", ["a", "b"],
    "Smaller of a and b; when one is NaN, the other (MSL ``fmin``).">;
def Enigma_FmaxOp : Enigma_FloatBinaryOp<"fmax", ["a", "b"],
    "Larger of a and b; when one is NaN, the other (MSL ``fmax``).">;
def : Enigma_MathFunction<"pow", ["a", "b"], "Float", "math.powf",
    "a to the b (MSL ``pow``).">;
// arith.remf is C's fmod (the sign of the dividend).
def : Enigma_MathFunction<"fmod", ["a", "b"], "Float", "arith.remf",
    "a - b * trunc(a / b), the sign of a (MSL ``fmod``).">;
def Enigma_Atan2Op : Enigma_FloatBinaryOp<"atan2", ["a", "b"], [{Arc tangent
of a / b using both signs for the quadrant (MSL ``atan2(y, x)`` with y = a,
x = b).}]>;
def Enigma_StepOp : Enigma_FloatBinaryOp<"step", ["edge", "x"],
    "0.0 when x < edge, else 1.0 (MSL ``step``).">;
def : Enigma_MathFunction<"copysign", ["a", "b"], "Float", "math.copysign",
    "The magnitude of a with the sign of b (MSL ``copysign``).">;

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
def : Enigma_MathFunction<"clamp", ["x", "lo", "hi"], "Numeric",
    "enigma.clamp",
    "min(max(x, lo), hi) for floats and integers (MSL ``clamp``).">;
def : Enigma_MathFunction<"fma", ["a", "b", "c"], "Float", "math.fma",
    "a * b + c with one rounding (MSL ``fma``).">;

class Enigma_FloatTernaryOp<string mnemonic, list<string> args, string doc>
    : Enigma_MathFunctionOp<mnemonic, args, "Float", doc,
                            [SameOperandsAndResultType]> {
  let arguments = (ins FloatLike:$a, FloatLike:$b, FloatLike:$c);
  let results = (outs FloatLike:$result);
  let assemblyFormat = "$a `,` $b `,` $c attr-dict `:` type($result)";
}

def Enigma_MixOp : Enigma_FloatTernaryOp<"mix", ["a", "b", "t"],
    "Linear blend a + (b - a) * t (MSL ``mix``).">;
def Enigma_SmoothstepOp : Enigma_FloatTernaryOp<"smoothstep",
    ["e0", "e1", "x"], [{Hermite interpolation: t*t*(3 - 2t) with
t = clamp((x - e0) / (e1 - e0), 0, 1) (MSL ``smoothstep``).}]>;

//===----------------------------------------------------------------------===//
// Float predicates: a bool (vector of bools) of the operand's shape
//===----------------------------------------------------------------------===//

class Enigma_FloatPredicateOp<string mnemonic, string doc>
    : Enigma_MathFunctionOp<mnemonic, ["x"], "FloatPredicate", doc> {
  let arguments = (ins FloatLike:$x);
  let results = (outs BoolLike:$result);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($result)";
  let hasVerifier = 1;
}

def Enigma_IsNanOp : Enigma_FloatPredicateOp<"isnan",
    "True where x is NaN (MSL ``isnan``); a bool IRValue.">;
def Enigma_IsInfOp : Enigma_FloatPredicateOp<"isinf",
    "True where x is +-infinity (MSL ``isinf``).">;
def Enigma_IsFiniteOp : Enigma_FloatPredicateOp<"isfinite",
    "True where x is neither infinite nor NaN (MSL ``isfinite``).">;
def Enigma_SignBitOp : Enigma_FloatPredicateOp<"signbit", [{True where the
sign bit of x is set, -0.0 and -NaN included (MSL ``signbit``).}]>;
def Enigma_IsNormalOp : Enigma_FloatPredicateOp<"isnormal", [{True where x is
a normal number of its type: not zero, subnormal, infinite or NaN (MSL
``isnormal``).}]>;

//===----------------------------------------------------------------------===//
// Integer functions
//===----------------------------------------------------------------------===//

def : Enigma_MathFunction<"imin", ["a", "b"], "Integer", "", [{Smaller of
two integers, signed or unsigned by dtype (MSL ``min``).}]> {
  let fnSignedOp = "arith.minsi";
  let fnUnsignedOp = "arith.minui";
}
def : Enigma_MathFunction<"imax", ["a", "b"], "Integer", "", [{Larger of two
integers, signed or unsigned by dtype (MSL ``max``).}]> {
  let fnSignedOp = "arith.maxsi";
  let fnUnsignedOp = "arith.maxui";
}
def : Enigma_MathFunction<"iclamp", ["x", "lo", "hi"], "Integer",
    "enigma.clamp", "Integer clamp min(max(x, lo), hi) (MSL ``clamp``).">;

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

// The bits move alike whatever the signedness, so rotate has no `signed`.
def Enigma_RotateOp : Enigma_BuiltinOp<"rotate", "rotate",
                                       [SameOperandsAndResultType]> {
  let summary = "Metal rotate(v, i): v rotated left by i modulo the width";
  let arguments = (ins SignlessIntegerLike:$lhs, SignlessIntegerLike:$rhs);
  let results = (outs SignlessIntegerLike:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

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

def : Enigma_MathFunction<"abs_diff", ["a", "b"], "IntegerToUnsigned",
    "enigma.absdiff", [{|a - b| without overflow; the result is the unsigned
type of the operands' width (MSL ``absdiff``).}]>;
// abs wraps INT_MIN to itself, whose unsigned reading is |INT_MIN|.
def : Enigma_MathFunction<"abs_diff_unary", ["x"], "IntegerToUnsigned", "",
    [{|x| as the unsigned type of x's width, so |INT_MIN| is exact (MSL
``abs``, read as unsigned).}]> {
  let fnSignedOp = "math.absi";
  let fnUnsignedOp = "identity";
}
def : Enigma_MathFunction<"add_sat", ["a", "b"], "Integer", "enigma.addsat",
    "a + b saturated to the type's range (MSL ``addsat``).">;
def : Enigma_MathFunction<"sub_sat", ["a", "b"], "Integer", "enigma.subsat",
    "a - b saturated to the type's range (MSL ``subsat``).">;
// The arithmetic operators' ops without the overflow mark: bounds-checked
// mode does not report these (Rust's wrapping_add and co.).
def : Enigma_MathFunction<"wrapping_add", ["a", "b"], "Integer", "arith.addi",
    [{a + b wrapping around the type's range, as ``+`` does; bounds-checked
mode does not report it.}]>;
def : Enigma_MathFunction<"wrapping_sub", ["a", "b"], "Integer", "arith.subi",
    [{a - b wrapping around the type's range, as ``-`` does; bounds-checked
mode does not report it.}]>;
def : Enigma_MathFunction<"wrapping_mul", ["a", "b"], "Integer", "arith.muli",
    [{a * b wrapping around the type's range, as ``*`` does; bounds-checked
mode does not report it.}]>;
def : Enigma_MathFunction<"mul_hi", ["a", "b"], "Integer", "enigma.mulhi",
    "The high half of the double-width product a * b (MSL ``mulhi``).">;
def : Enigma_MathFunction<"rotate", ["a", "b"], "Integer", "enigma.rotate",
    [{a rotated left by b bits, b taken modulo the width (MSL
``rotate``).}]>;
def : Enigma_MathFunction<"mad_sat", ["a", "b", "c"], "Integer",
    "enigma.madsat",
    "a * b + c computed exactly, then saturated (MSL ``madsat``).">;

//===----------------------------------------------------------------------===//
// Bits
//===----------------------------------------------------------------------===//

def : Enigma_MathFunction<"popcount", ["x"], "Integer", "math.ctpop",
    "Number of set bits (MSL ``popcount``).">;
def : Enigma_MathFunction<"clz", ["x"], "Integer", "math.ctlz",
    "Number of leading zero bits; clz(0) is the width (MSL ``clz``).">;
def : Enigma_MathFunction<"ctz", ["x"], "Integer", "math.cttz",
    "Number of trailing zero bits; ctz(0) is the width (MSL ``ctz``).">;

def Enigma_ReverseBitsOp : Enigma_MathFunctionOp<"reverse_bits", ["x"],
    "Integer", "The bits of x in reverse order (MSL ``reverse_bits``).",
    [SameOperandsAndResultType]> {
  let arguments = (ins SignlessIntegerLike:$x);
  let results = (outs SignlessIntegerLike:$result);
  let assemblyFormat = "$x attr-dict `:` type($result)";
}

// extract_bits's offset and bit count stay uint whatever the value's type.
def Enigma_ExtractBitsOp : Enigma_MathFunctionOp<"extract_bits",
    ["value", "offset", "bits"], "ExtractBits", [{Bits [offset, offset +
bits) of value moved to the bottom: zero-extended for unsigned values,
sign-extended for signed ones; bits == 0 gives 0 (MSL ``extract_bits``).}],
    [AllTypesMatch<["x", "result"]>]> {
  let description = [{
    Bits [offset, offset + bits) of x moved to the bottom, zero-extended, or
    sign-extended from the top extracted bit when `signed`. bits == 0 gives
    0. offset + bits beyond the width is undefined in Metal; the verifier
    rejects it when both are constants.
  }];
  let signedOperands = 1;
  let arguments = (ins SignlessIntegerLike:$x, I32:$offset, I32:$bits,
                       UnitAttr:$is_signed);
  let results = (outs SignlessIntegerLike:$result);
  let assemblyFormat = [{
    (`signed` $is_signed^)? $x `,` $offset `,` $bits attr-dict `:`
    type($result)
  }];
  let hasVerifier = 1;
}

def Enigma_InsertBitsOp : Enigma_MathFunctionOp<"insert_bits",
    ["base", "insert", "offset", "bits"], "InsertBits", [{base with bits
[offset, offset + bits) replaced by the low bits of insert; bits == 0 gives
base (MSL ``insert_bits``).}],
    [AllTypesMatch<["base", "insert", "result"]>]> {
  let arguments = (ins SignlessIntegerLike:$base, SignlessIntegerLike:$insert,
                       I32:$offset, I32:$bits);
  let results = (outs SignlessIntegerLike:$result);
  let assemblyFormat = [{
    $base `,` $insert `,` $offset `,` $bits attr-dict `:` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Comparisons by predicate rather than by dtype: the plain ones compare
// integers as signed and floats ordered (false when either is NaN); the u
// ones compare integers as unsigned and floats unordered (true when either
// is NaN). Bools compare as 0 and 1.
//===----------------------------------------------------------------------===//

class Enigma_Comparison<string name, string floatPredicate,
                        string intPredicate, string doc>
    : Enigma_MathFunction<name, ["a", "b"], "Compare", "", doc> {
  let fnFloatOp = "arith.cmpf:" # floatPredicate;
  let fnSignedOp = "arith.cmpi:" # intPredicate;
  let fnUnsignedOp = "arith.cmpi:" # intPredicate;
}

def : Enigma_Comparison<"cmp_eq", "oeq", "eq",
    "a == b; false when either float is NaN.">;
def : Enigma_Comparison<"cmp_ne", "one", "ne",
    "a != b, ordered: false when either float is NaN (unlike ``!=``).">;
def : Enigma_Comparison<"cmp_lt", "olt", "slt",
    "a < b, integers compared as signed whatever their dtype.">;
def : Enigma_Comparison<"cmp_le", "ole", "sle",
    "a <= b, integers compared as signed whatever their dtype.">;
def : Enigma_Comparison<"cmp_gt", "ogt", "sgt",
    "a > b, integers compared as signed whatever their dtype.">;
def : Enigma_Comparison<"cmp_ge", "oge", "sge",
    "a >= b, integers compared as signed whatever their dtype.">;
def : Enigma_Comparison<"cmp_ult", "ult", "ult", [{a < b, integers compared
as unsigned whatever their dtype; for floats unordered (true when either is
NaN).}]>;
def : Enigma_Comparison<"cmp_ule", "ule", "ule",
    "a <= b, integers compared as unsigned; floats unordered.">;
def : Enigma_Comparison<"cmp_ugt", "ugt", "ugt",
    "a > b, integers compared as unsigned; floats unordered.">;
def : Enigma_Comparison<"cmp_uge", "uge", "uge",
    "a >= b, integers compared as unsigned; floats unordered.">;

//===----------------------------------------------------------------------===//
// Geometry: float vectors of one type (docs/reference/vectors.md)
//===----------------------------------------------------------------------===//

def Enigma_FloatVector : VectorOfRankAndType<[1], [F16, F32, BF16]>;
def Enigma_FloatScalar : AnyTypeOf<[F16, F32, BF16]>;

class Enigma_GeometryOp<string mnemonic, list<string> args, string rule,
                        string doc, list<Trait> traits = []>
    : Enigma_BuiltinOp<mnemonic, mnemonic, traits>,
      Enigma_Function<"geometry", mnemonic, args, rule, doc> {
  let summary = "Metal " # mnemonic # "(" # !interleave(args, ", ") # ")";
  let description = doc;
}

// The element type of the vector operand `vector` is that of `scalar`.
class Enigma_ElementOf<string vector, string scalar>
    : TypesMatchWith<"the scalar is the vector's element type", vector,
                     scalar,
                     "::llvm::cast<::mlir::VectorType>($_self).getElementType()">;

class Enigma_VectorToScalarOp<string mnemonic, list<string> args, string doc>
    : Enigma_GeometryOp<mnemonic, args, "VectorToScalar", doc,
                        !listconcat([Enigma_ElementOf<"a", "result">],
                                    !if(!eq(!size(args), 1), []<Trait>,
                                        [AllTypesMatch<["a", "b"]>]))> {
  let arguments = !if(!eq(!size(args), 1), (ins Enigma_FloatVector:$a),
                      (ins Enigma_FloatVector:$a, Enigma_FloatVector:$b));
  let results = (outs Enigma_FloatScalar:$result);
  let assemblyFormat = !if(!eq(!size(args), 1), "$a attr-dict `:` type($a)",
                           "$a `,` $b attr-dict `:` type($a)");
}

def Enigma_DotOp : Enigma_VectorToScalarOp<"dot", ["a", "b"],
    "Metal ``dot(a, b)``: the sum of the lane products, a scalar.">;
def Enigma_LengthOp : Enigma_VectorToScalarOp<"length", ["v"],
    "Metal ``length(v)`` = ``sqrt(dot(v, v))``.">;
def Enigma_DistanceOp : Enigma_VectorToScalarOp<"distance", ["a", "b"],
    "Metal ``distance(a, b)`` = ``length(a - b)``.">;

def Enigma_NormalizeOp : Enigma_GeometryOp<"normalize", ["v"], "Vector",
    "Metal ``normalize(v)`` = ``v * rsqrt(dot(v, v))``.",
    [SameOperandsAndResultType]> {
  let arguments = (ins Enigma_FloatVector:$v);
  let results = (outs Enigma_FloatVector:$result);
  let assemblyFormat = "$v attr-dict `:` type($v)";
}

def Enigma_CrossOp : Enigma_GeometryOp<"cross", ["a", "b"], "Vector",
    "Metal ``cross(a, b)`` of two float3 vectors.",
    [SameOperandsAndResultType]> {
  let fnLanes = 3;
  let arguments = (ins VectorOfLengthAndType<[3], [F16, F32, BF16]>:$a,
                       VectorOfLengthAndType<[3], [F16, F32, BF16]>:$b);
  let results = (outs VectorOfLengthAndType<[3], [F16, F32, BF16]>:$result);
  let assemblyFormat = "$a `,` $b attr-dict `:` type($a)";
}

def Enigma_ReflectOp : Enigma_GeometryOp<"reflect", ["incident", "normal"],
    "Vector", [{Metal ``reflect(i, n)`` = ``i - 2 * dot(n, i) * n`` (n
normalized).}], [SameOperandsAndResultType]> {
  let arguments = (ins Enigma_FloatVector:$i, Enigma_FloatVector:$n);
  let results = (outs Enigma_FloatVector:$result);
  let assemblyFormat = "$i `,` $n attr-dict `:` type($i)";
}

def Enigma_RefractOp : Enigma_GeometryOp<"refract",
    ["incident", "normal", "eta"], "VectorAndScalar", [{Metal ``refract(i,
n, eta)``: with ``k = 1 - eta^2 (1 - dot(n, i)^2)``, zero when ``k < 0``,
else ``eta * i - (eta * dot(n, i) + sqrt(k)) * n``.}],
    [AllTypesMatch<["i", "n", "result"]>, Enigma_ElementOf<"i", "eta">]> {
  let arguments = (ins Enigma_FloatVector:$i, Enigma_FloatVector:$n,
                       Enigma_FloatScalar:$eta);
  let results = (outs Enigma_FloatVector:$result);
  let assemblyFormat = "$i `,` $n `,` $eta attr-dict `:` type($i)";
}

def Enigma_FaceforwardOp : Enigma_GeometryOp<"faceforward",
    ["n", "incident", "nref"], "Vector", [{Metal ``faceforward(n, i,
nref)``: ``n`` if ``dot(nref, i) < 0``, else ``-n``.}],
    [SameOperandsAndResultType]> {
  let arguments = (ins Enigma_FloatVector:$n, Enigma_FloatVector:$i,
                       Enigma_FloatVector:$nref);
  let results = (outs Enigma_FloatVector:$result);
  let assemblyFormat = "$n `,` $i `,` $nref attr-dict `:` type($n)";
}

//===----------------------------------------------------------------------===//
// Normalized-integer packing (docs/reference/vectors.md gives the formulas)
//===----------------------------------------------------------------------===//

// pack_float_to_<format>: a float vector -> uint. The Python function also
// takes the lanes one by one.
class Enigma_PackOp<string format, int lanes, string doc>
    : Enigma_BuiltinOp<"pack_" # format, "pack_float_to_" # format>,
      Enigma_Function<"pack", "pack_float_to_" # format, ["*v"], "Pack",
                      doc> {
  let summary = "Metal pack_float_to_" # format # "(v)";
  let description = doc;
  let fnLanes = lanes;
  let arguments = (ins VectorOfLengthAndType<[lanes], [F32]>:$v);
  let results = (outs I32:$result);
  let assemblyFormat = "$v attr-dict `:` type($v)";
}

def Enigma_PackSnorm4x8Op : Enigma_PackOp<"snorm4x8", 4, [{Metal
``pack_float_to_snorm4x8(float4)`` -> uint: each lane clamped to [-1, 1]
(NaN -> 0), times 127, rounded to nearest even, lane 0 in the low byte.
Takes a float4 or 4 components.}]>;
def Enigma_PackUnorm4x8Op : Enigma_PackOp<"unorm4x8", 4, [{Metal
``pack_float_to_unorm4x8(float4)`` -> uint: lanes clamped to [0, 1] (NaN ->
0), times 255, rounded to nearest even.}]>;
def Enigma_PackSnorm2x16Op : Enigma_PackOp<"snorm2x16", 2,
    "Metal ``pack_float_to_snorm2x16(float2)`` -> uint (scale 32767).">;
def Enigma_PackUnorm2x16Op : Enigma_PackOp<"unorm2x16", 2,
    "Metal ``pack_float_to_unorm2x16(float2)`` -> uint (scale 65535).">;
def Enigma_PackSrgbUnorm4x8Op : Enigma_PackOp<"srgb_unorm4x8", 4, [{Metal
``pack_float_to_srgb_unorm4x8(float4)``: r, g, b through the linear-to-sRGB
curve, alpha linear, then as unorm4x8.}]>;
def Enigma_PackUnorm10a2Op : Enigma_PackOp<"unorm10a2", 4, [{Metal
``pack_float_to_unorm10a2(float4)``: r, g, b as 10-bit unorm in bits 0-29,
alpha as 2-bit unorm in bits 30-31.}]>;

// unpack_<format>_to_float: uint -> a float vector.
class Enigma_UnpackOp<string mnemonic, string metalName, int lanes,
                      string doc>
    : Enigma_BuiltinOp<mnemonic, metalName>,
      Enigma_Function<"pack", metalName, ["x"], "Unpack", doc> {
  let summary = "Metal " # metalName # "(x)";
  let description = doc;
  let fnLanes = lanes;
  let arguments = (ins I32:$x);
  let results = (outs VectorOfLengthAndType<[lanes], [F32]>:$result);
  let assemblyFormat = "$x attr-dict `:` type($result)";
}

def Enigma_UnpackSnorm4x8Op : Enigma_UnpackOp<"unpack_snorm4x8",
    "unpack_snorm4x8_to_float", 4, [{Metal ``unpack_snorm4x8_to_float(uint)``
-> float4: ``max(-1, char(byte) / 127)`` per lane, lane 0 from the low
byte.}]>;
def Enigma_UnpackUnorm4x8Op : Enigma_UnpackOp<"unpack_unorm4x8",
    "unpack_unorm4x8_to_float", 4,
    "Metal ``unpack_unorm4x8_to_float(uint)`` -> float4: ``byte / 255``.">;
def Enigma_UnpackSnorm2x16Op : Enigma_UnpackOp<"unpack_snorm2x16",
    "unpack_snorm2x16_to_float", 2, [{Metal
``unpack_snorm2x16_to_float(uint)`` -> float2: ``max(-1, short(half) /
32767)``.}]>;
def Enigma_UnpackUnorm2x16Op : Enigma_UnpackOp<"unpack_unorm2x16",
    "unpack_unorm2x16_to_float", 2, [{Metal
``unpack_unorm2x16_to_float(uint)`` -> float2: ``half / 65535``.}]>;
// Byte i of x (i = 0 at the lowest bits) as a unorm value c = byte / 255;
// lanes 0-2 (r, g, b) converted from sRGB to linear (c / 12.92 when
// c <= 0.04045, else ((c + 0.055) / 1.055)^2.4), lane 3 (alpha) kept.
def Enigma_UnpackUnorm4x8SrgbOp : Enigma_UnpackOp<"unpack_unorm4x8_srgb",
    "unpack_unorm4x8_srgb_to_float", 4, [{Metal
``unpack_unorm4x8_srgb_to_float(uint)`` -> float4: unorm4x8, then r, g, b
through the sRGB-to-linear curve; alpha linear.}]>;
def : Enigma_Function<"pack", "unpack_srgb_unorm4x8_to_float", ["x"],
    "Unpack", [{The original DSL's name of ``unpack_unorm4x8_srgb_to_float``
(the inverse of ``pack_float_to_srgb_unorm4x8``).}]> {
  let fnOp = "enigma.unpack_unorm4x8_srgb";
  let fnLanes = 4;
}
def Enigma_UnpackUnorm10a2Op : Enigma_UnpackOp<"unpack_unorm10a2",
    "unpack_unorm10a2_to_float", 4,
    "Metal ``unpack_unorm10a2_to_float(uint)`` -> float4.">;

//===----------------------------------------------------------------------===//
// Upstream ops printed as Metal calls
//===----------------------------------------------------------------------===//

def : Enigma_UpstreamSpelling<"math.sqrt", "sqrt">;
def : Enigma_UpstreamSpelling<"math.rsqrt", "rsqrt">;
def : Enigma_UpstreamSpelling<"math.absf", "abs">;
// absi reads its operand as signed; abs(INT_MIN) wraps to INT_MIN. CUDA's
// abs(int) leaves INT_MIN undefined and NVRTC exploits it (the result was
// taken as non-negative): the CUDA prelude's enigma_abs wraps.
def : Enigma_UpstreamSpelling<"math.absi", "abs"> {
  let cudaName = "enigma_abs";
  let alwaysSigned = 1;
}
def : Enigma_UpstreamSpelling<"math.ceil", "ceil">;
def : Enigma_UpstreamSpelling<"math.floor", "floor">;
def : Enigma_UpstreamSpelling<"math.round", "round">;
def : Enigma_UpstreamSpelling<"math.roundeven", "rint">;
def : Enigma_UpstreamSpelling<"math.trunc", "trunc">;
def : Enigma_UpstreamSpelling<"math.exp", "exp">;
def : Enigma_UpstreamSpelling<"math.exp2", "exp2">;
def : Enigma_UpstreamSpelling<"math.log", "log">;
def : Enigma_UpstreamSpelling<"math.log2", "log2">;
def : Enigma_UpstreamSpelling<"math.log10", "log10">;
def : Enigma_UpstreamSpelling<"math.sin", "sin">;
def : Enigma_UpstreamSpelling<"math.cos", "cos">;
def : Enigma_UpstreamSpelling<"math.tan", "tan">;
def : Enigma_UpstreamSpelling<"math.asin", "asin">;
def : Enigma_UpstreamSpelling<"math.acos", "acos">;
def : Enigma_UpstreamSpelling<"math.atan", "atan">;
def : Enigma_UpstreamSpelling<"math.sinh", "sinh">;
def : Enigma_UpstreamSpelling<"math.cosh", "cosh">;
def : Enigma_UpstreamSpelling<"math.tanh", "tanh">;
def : Enigma_UpstreamSpelling<"math.powf", "pow">;
def : Enigma_UpstreamSpelling<"math.atan2", "atan2">;
def : Enigma_UpstreamSpelling<"math.copysign", "copysign">;
def : Enigma_UpstreamSpelling<"math.fma", "fma">;
def : Enigma_UpstreamSpelling<"math.ctpop", "popcount">;
def : Enigma_UpstreamSpelling<"math.ctlz", "clz">;
def : Enigma_UpstreamSpelling<"math.cttz", "ctz">;

#endif
