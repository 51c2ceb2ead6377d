//===- FunctionBuilders.h - Building a table function's op -------*- C++ -*-===//
//
// Functions.cpp looks a function up in its family's table and hands it to
// the family's builder (Math.cpp, Vectors.cpp, Simd.cpp), which types the
// operands by the function's rule and builds the op the table names
// through createFunctionOp.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_BUILDER_FUNCTIONBUILDERS_H
#define ENIGMA_LIB_BUILDER_FUNCTIONBUILDERS_H

#include "BuilderImpl.h"
#include "enigma/Builder/Functions.h"

#include "llvm/ADT/StringRef.h"

#include <vector>

namespace enigma {

/// The op `op` of the table ("math.sqrt", "enigma.fract",
/// "arith.cmpi:slt") on `operands`, with result type `resultType`. The
/// `signed` attribute is set when `isSigned` and the op has one.
mlir::Value createFunctionOp(KernelBuilder &k, llvm::StringRef op,
                             llvm::ArrayRef<mlir::Value> operands,
                             mlir::Type resultType, bool isSigned);

/// The op of `fn` for operands of dtype `t` (by float / signed / unsigned).
const char *opForDType(const Function &fn, DType t);

/// Operands converted to one dtype and one lane count.
struct Unified {
  std::vector<mlir::Value> values;
  DType dtype;
};
/// Promotes `args` to one dtype (f32 when `toFloat` and it is not a float;
/// f32 for 8-bit floats unless the function only moves values,
/// `computes` false) and broadcasts scalars to the widest vector.
Unified unify(KernelBuilder &k, const std::vector<Value> &args,
              const char *what, bool toFloat = false, bool computes = true);

void requireInteger(DType t, const char *what);
void requireFloat(DType t, const char *what);

// The families' builders; each handles the rules of its functions.
Value buildMathFunction(KernelBuilder &k, const Function &fn,
                        const std::vector<Value> &args);
Value buildVectorFunction(KernelBuilder &k, const Function &fn,
                          const std::vector<Value> &args);
Value buildSimdFunction(KernelBuilder &k, const Function &fn,
                        const std::vector<Value> &args);

} // namespace enigma

#endif
