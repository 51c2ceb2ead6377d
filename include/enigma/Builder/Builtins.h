//===- Builtins.h - KernelBuilder calls of the builtins family -----*- C++ -*-===//
//
// Metal's math, integer, bit, comparison, selection and reinterpretation
// functions (API.md section 7) for C++ kernels:
//
//   enigma::Value y = enigma::mathCall(k, enigma::MathFn::Clamp, {x, lo, hi});
//   enigma::Value b = enigma::cmp(k, enigma::CmpKind::ULT, i, n);
//
// Operands of different dtypes are promoted as by KernelBuilder::promote; a
// scalar operand meets a vector one lane-wise. Float functions convert
// integer operands to f32; integer functions reject floats.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_BUILTINS_H
#define ENIGMA_BUILDER_BUILTINS_H

#include "enigma/Builder/KernelBuilder.h"

#include <optional>
#include <string>
#include <vector>

namespace enigma {

/// The element-wise functions, named as in Python (enigma.<name>).
enum class MathFn : uint8_t {
  // Float, one operand.
  Sqrt, Rsqrt, Abs, Ceil, Floor, Round, Trunc, Sign, Saturate, Fract, Exp,
  Exp2, Log, Log2, Log10, Sin, Cos, Tan, Asin, Acos, Atan, Sinh, Cosh, Tanh,
  // Float, two and three operands.
  Fmin, Fmax, Pow, Fmod, Atan2, Step, Copysign,
  Clamp, Fma, Mix, Smoothstep,
  // Float predicates (bool results).
  IsNan, IsInf, IsFinite, SignBit, IsNormal,
  // Integer.
  IMin, IMax, IClamp, AbsDiff, AbsDiffUnary, AddSat, SubSat, MulHi, Rotate,
  MadSat,
  // Bits.
  Popcount, Clz, Ctz, ReverseBits,
};

/// The function called `name` in Python ("sqrt", "abs_diff", ...).
std::optional<MathFn> mathFnByName(const std::string &name);
/// The Python name of `fn`.
const char *mathFnName(MathFn fn);
/// How many operands `fn` takes.
unsigned mathFnArity(MathFn fn);

/// `fn(args...)` with Metal's definition. Throws EnigmaError on operands
/// the function does not accept.
Value mathCall(KernelBuilder &k, MathFn fn, const std::vector<Value> &args);

/// Metal extract_bits(x, offset, bits): sign-extended for signed dtypes.
Value extractBits(KernelBuilder &k, Value x, Value offset, Value bits);
/// Metal insert_bits(base, insert, offset, bits).
Value insertBits(KernelBuilder &k, Value base, Value insert, Value offset,
                 Value bits);

/// Comparisons by predicate rather than by dtype: the plain ones compare
/// integers as signed and floats ordered (false when either is NaN); the U
/// ones compare integers as unsigned and floats unordered (true when either
/// is NaN). Bools compare as 0 and 1.
enum class CmpKind : uint8_t { EQ, NE, LT, LE, GT, GE, ULT, ULE, UGT, UGE };
std::optional<CmpKind> cmpKindByName(const std::string &name);
Value cmp(KernelBuilder &k, CmpKind kind, Value a, Value b);

/// `cond ? trueValue : falseValue` (Metal select(falseValue, trueValue,
/// cond)); per lane when cond is a bool vector.
Value where(KernelBuilder &k, Value falseValue, Value trueValue, Value cond);

/// Metal as_type<to>(x): the same bits read as `to`; the element widths must
/// be equal.
Value asType(KernelBuilder &k, Value x, DType to);

} // namespace enigma

#endif
