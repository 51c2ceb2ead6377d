//===- BuilderImpl.h - KernelBuilder internals for its op families -*- C++ -*-===//
//
// KernelBuilder.cpp holds the core (parameters, arithmetic, loads/stores,
// loops and ifs); each op family (math, vectors, cooperation, ...) adds its
// functions in its own file on top of these helpers.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_BUILDER_BUILDERIMPL_H
#define ENIGMA_LIB_BUILDER_BUILDERIMPL_H

#include "enigma/Builder/KernelBuilder.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/InitAll.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"

#include <vector>

namespace enigma {

/// An open scf.for / scf.if (/ scf.while) being built.
struct BuilderFrame {
  mlir::Operation *op;
  std::vector<DType> carried; // dtypes of carried values / results
  bool inElse = false;
};

struct KernelBuilder::Impl {
  explicit Impl(const std::string &name)
      : kernelName(name), builder(&context),
        location(mlir::UnknownLoc::get(&context)) {
    loadAllDialects(context);
    module = mlir::ModuleOp::create(location);
    builder.setInsertionPointToEnd(module->getBody());
    kernel = builder.create<KernelOp>(location, name,
                                      builder.getFunctionType({}, {}));
    mlir::Block &entry = kernel.getBody().front();
    builder.setInsertionPointToEnd(&entry);
    builder.create<ReturnOp>(location);
    builder.setInsertionPoint(entry.getTerminator());
  }

  mlir::MLIRContext context;
  std::string kernelName;
  mlir::OpBuilder builder;
  mlir::Location location;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  KernelOp kernel;
  std::vector<BuilderFrame> frames;
};

/// The MLIR type of a dtype; a vector type when `lanes` > 1.
inline mlir::Type mlirType(mlir::MLIRContext *ctx, DType t,
                           unsigned lanes = 1) {
  mlir::Type element;
  switch (t) {
  case DType::F32: element = mlir::Float32Type::get(ctx); break;
  case DType::F16: element = mlir::Float16Type::get(ctx); break;
  case DType::BF16: element = mlir::BFloat16Type::get(ctx); break;
  case DType::F8E4M3: element = mlir::Float8E4M3FNType::get(ctx); break;
  case DType::F8E5M2: element = mlir::Float8E5M2Type::get(ctx); break;
  case DType::Bool: element = mlir::IntegerType::get(ctx, 1); break;
  default: element = mlir::IntegerType::get(ctx, 8 * byteWidth(t)); break;
  }
  if (lanes > 1)
    return mlir::VectorType::get({int64_t(lanes)}, element);
  return element;
}

/// The mlir::Value behind a traced Value.
inline mlir::Value raw(const Value &v) {
  return mlir::Value::getFromOpaquePointer(v.handle());
}

/// Throws EnigmaError unless `v` is a value of builder `b`.
void checkOwner(const KernelBuilder *b, const Value &v, const char *what);

/// `values` (each this builder's) converted to `types`, one each, for a
/// construct's carried values or results; `what` names it in errors.
llvm::SmallVector<mlir::Value> carriedValues(KernelBuilder &k,
                                             const std::vector<Value> &values,
                                             const std::vector<DType> &types,
                                             const char *what);

/// Wraps an mlir::Value of builder `b` (a friend of Value).
struct ValueAccess {
  static Value wrap(KernelBuilder *b, mlir::Value v, DType t,
                    unsigned lanes = 1) {
    return Value(b, v.getAsOpaquePointer(), t, lanes);
  }
};
/// Memory of scalar elements (`what`: "a threadgroup array") cannot take
/// a vector: an EnigmaError naming the lanes.
inline void requireScalar(const Value &value, const std::string &what) {
  if (value.lanes() != 1)
    throw EnigmaError("cannot store a " + std::to_string(value.lanes()) +
                      "-lane vector into " + what +
                      ", which holds scalars; store its lanes one by one "
                      "(v.x, v.y, ...)");
}

/// A branch, loop or select condition (`what`: "an if condition") must be
/// one bool: an EnigmaError for other types and for bool vectors.
inline void requireCondition(const Value &cond, const std::string &what) {
  if (cond.dtype() != DType::Bool)
    throw EnigmaError(what + " must be a bool, got " +
                      shortName(cond.dtype()) + "; compare it first");
  if (cond.lanes() != 1)
    throw EnigmaError(what + " must be one bool, got a " +
                      std::to_string(cond.lanes()) +
                      "-lane bool vector (a comparison of vectors); test "
                      "one lane (c.x) or combine them (enigma.any(c), "
                      "enigma.all(c))");
}

/// Lanes of a value of type `t`: a vector's element count, else 1.
inline unsigned lanesOf(mlir::Type t) {
  if (auto vec = llvm::dyn_cast<mlir::VectorType>(t))
    return vec.getNumElements();
  return 1;
}
inline Value wrap(KernelBuilder *b, mlir::Value v, DType t) {
  return ValueAccess::wrap(b, v, t, lanesOf(v.getType()));
}

/// The value arithmetic works on: 8-bit floats are only stored and
/// converted, and compute in f32 (docs/design/fp8.md), as CUDA's
/// __nv_fp8 types do; other values are themselves.
inline Value computable(KernelBuilder &k, const Value &v) {
  return isFloat8(v.dtype()) ? k.cast(v, DType::F32) : v;
}

} // namespace enigma

#endif
