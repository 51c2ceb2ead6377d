//===- Math.h - KernelBuilder calls of the math family -----------*- C++ -*-===//
//
// Metal's math, integer, bit and comparison functions are rows of the math
// family's table: call them by name through callFunction (Functions.h),
//
//   enigma::Value y = enigma::callFunction(k, "clamp", {x, lo, hi});
//   enigma::Value b = enigma::callFunction(k, "cmp_ult", {i, n});
//
// Float functions convert integer operands to f32; integer functions reject
// floats. Selection and reinterpretation, which no table row describes,
// are the functions below.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_MATH_H
#define ENIGMA_BUILDER_MATH_H

#include "enigma/Builder/Functions.h"
#include "enigma/Builder/KernelBuilder.h"

namespace enigma {

/// `cond ? trueValue : falseValue` (Metal select(falseValue, trueValue,
/// cond)); per lane when cond is a bool vector.
Value where(KernelBuilder &k, Value falseValue, Value trueValue, Value cond);

/// Metal as_type<to>(x): the same bits read as `to`; the element widths must
/// be equal.
Value asType(KernelBuilder &k, Value x, DType to);

} // namespace enigma

#endif
