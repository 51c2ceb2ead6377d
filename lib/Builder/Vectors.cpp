//===- Vectors.cpp - KernelBuilder calls of the vectors family -------------===//
//
// Construction and lanes, the geometry and packing rows of the math
// family's table (ops of EnigmaMathOps.td, printed as Metal's functions;
// the Metal semantics library computes them for the CPU and CUDA), and the
// original DSL's quantisation helpers, built from arith/vector ops.
//
//===----------------------------------------------------------------------===//
#include "enigma/Builder/Vectors.h"

#include "FunctionBuilders.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;

namespace enigma {

namespace {

std::string lanesText(const Value &v) {
  return v.lanes() == 1 ? std::string("a scalar")
                        : "a " + std::to_string(v.lanes()) + "-lane vector";
}

/// A constant vector with one value per lane (all lanes the same when
/// `values` has one entry).
Value laneConstant(KernelBuilder &k, const std::vector<double> &values,
                   DType dtype, unsigned lanes) {
  KernelBuilder::Impl &impl = k.internals();
  Type element = mlirType(&impl.context, dtype);
  SmallVector<Attribute> attrs;
  for (unsigned i = 0; i < lanes; ++i) {
    double v = values.size() == 1 ? values[0] : values[i];
    if (isFloat(dtype))
      attrs.push_back(FloatAttr::get(element, v));
    else
      attrs.push_back(IntegerAttr::get(element, static_cast<int64_t>(v)));
  }
  auto type = VectorType::get({int64_t(lanes)}, element);
  auto op = impl.builder.create<arith::ConstantOp>(
      impl.location, DenseElementsAttr::get(type, attrs));
  return wrap(&k, op.getResult(), dtype);
}

/// Checks that `v` is a float vector (of `lanes` lanes when non-zero).
void requireFloatVector(const Value &v, const char *what, unsigned lanes = 0) {
  if (!isFloat(v.dtype()) || v.lanes() < 2)
    throw EnigmaError(std::string(what) + " takes float vectors, got " +
                      lanesText(v) + " of " + shortName(v.dtype()));
  if (lanes && v.lanes() != lanes)
    throw EnigmaError(std::string(what) + " takes " + std::to_string(lanes) +
                      "-lane vectors, got " + lanesText(v));
}

/// Checks that geometric operands agree in dtype and lane count.
void requireSame(const Value &a, const Value &b, const char *what) {
  if (a.dtype() != b.dtype() || a.lanes() != b.lanes())
    throw EnigmaError(std::string(what) + ": operands differ (" +
                      lanesText(a) + " of " + shortName(a.dtype()) + " and " +
                      lanesText(b) + " of " + shortName(b.dtype()) +
                      "); convert one with metal_cast");
}

Value reduce(KernelBuilder &k, vector::CombiningKind kind, Value v) {
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<vector::ReductionOp>(impl.location, kind,
                                                     raw(v));
  return wrap(&k, op.getResult(), v.dtype());
}

Value sub(KernelBuilder &k, Value a, Value b) { return k.binary(BinaryOp::Sub, a, b); }
Value mul(KernelBuilder &k, Value a, Value b) { return k.binary(BinaryOp::Mul, a, b); }

/// Parameter `i` of `fn` as Python names it.
std::string argName(const Function &fn, size_t i) {
  llvm::SmallVector<llvm::StringRef> names;
  llvm::StringRef(fn.args).split(names, ',');
  return i < names.size() ? names[i].str() : "operand " + std::to_string(i);
}

} // namespace

//===----------------------------------------------------------------------===//
// Construction and lanes
//===----------------------------------------------------------------------===//

Value makeVec(KernelBuilder &k, const std::vector<Value> &components) {
  if (components.size() < 2 || components.size() > 4)
    throw EnigmaError("make_vec takes 2, 3 or 4 components, got " +
                      std::to_string(components.size()));
  DType t = components[0].dtype();
  SmallVector<mlir::Value> values;
  for (const Value &c : components) {
    checkOwner(&k, c, "make_vec");
    if (c.lanes() != 1)
      throw EnigmaError("make_vec takes scalars, got " + lanesText(c));
    if (c.dtype() != t)
      throw EnigmaError(std::string("make_vec components have different "
                                    "types (") +
                        shortName(t) + " and " + shortName(c.dtype()) +
                        "); convert them with metal_cast");
    values.push_back(raw(c));
  }
  KernelBuilder::Impl &impl = k.internals();
  auto type = llvm::cast<VectorType>(
      mlirType(&impl.context, t, components.size()));
  auto op = impl.builder.create<vector::FromElementsOp>(impl.location, type,
                                                        values);
  return wrap(&k, op.getResult(), t);
}

Value vecExtract(KernelBuilder &k, Value v, unsigned lane) {
  checkOwner(&k, v, "vec_extract");
  if (v.lanes() < 2)
    throw EnigmaError("vec_extract takes a vector, got a scalar " +
                      std::string(shortName(v.dtype())));
  if (lane >= v.lanes())
    throw EnigmaError("lane " + std::to_string(lane) + " is out of range for " +
                      lanesText(v) + " (lanes 0.." +
                      std::to_string(v.lanes() - 1) + ")");
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<vector::ExtractOp>(
      impl.location, raw(v), ArrayRef<int64_t>{int64_t(lane)});
  return wrap(&k, op.getResult(), v.dtype());
}

//===----------------------------------------------------------------------===//
// Geometry and packing: the rules of the table's geometry and pack rows
//===----------------------------------------------------------------------===//

Value buildVectorFunction(KernelBuilder &k, const Function &fn,
                          const std::vector<Value> &given) {
  KernelBuilder::Impl &impl = k.internals();
  std::vector<Value> args; // 8-bit floats compute in f32
  for (const Value &v : given)
    args.push_back(computable(k, v));
  const char *name = fn.name;
  std::vector<mlir::Value> operands;
  switch (fn.rule) {
  case FunctionRule::Vector:
  case FunctionRule::VectorToScalar:
  case FunctionRule::VectorAndScalar: {
    // Geometric operands agree in dtype and lane count (no promotion: a
    // float3 and a half3 are a mistake, not a conversion).
    const Value &first = args.front();
    requireFloatVector(first, name, fn.lanes);
    size_t vectors = args.size();
    if (fn.rule == FunctionRule::VectorAndScalar)
      --vectors;
    for (size_t i = 0; i < vectors; ++i) {
      requireSame(first, args[i], name);
      operands.push_back(raw(args[i]));
    }
    if (fn.rule == FunctionRule::VectorAndScalar) {
      const Value &s = args.back();
      if (s.lanes() != 1 || !isFloat(s.dtype()))
        throw EnigmaError(std::string(name) + ": " +
                          argName(fn, args.size() - 1) +
                          " must be a float scalar, got " + lanesText(s) +
                          " of " + shortName(s.dtype()));
      operands.push_back(raw(k.cast(s, first.dtype())));
    }
    Type result = fn.rule == FunctionRule::VectorToScalar
                      ? mlirType(&impl.context, first.dtype())
                      : raw(first).getType();
    return wrap(&k, createFunctionOp(k, fn.floatOp, operands, result, false),
                first.dtype());
  }
  case FunctionRule::Pack: {
    // Metal packs float vectors; half or bfloat lanes convert to float.
    requireFloatVector(args[0], name, fn.lanes);
    operands.push_back(raw(k.cast(args[0], DType::F32)));
    mlir::Value r = createFunctionOp(k, fn.floatOp, operands,
                                     mlirType(&impl.context, DType::U32),
                                     false);
    return wrap(&k, r, DType::U32);
  }
  case FunctionRule::Unpack: {
    const Value &packed = args[0];
    if (packed.lanes() != 1 || !isInteger(packed.dtype()) ||
        byteWidth(packed.dtype()) != 4)
      throw EnigmaError(std::string(name) +
                        " takes a 32-bit integer, got " + lanesText(packed) +
                        " of " + shortName(packed.dtype()));
    operands.push_back(raw(k.cast(packed, DType::U32)));
    mlir::Value r = createFunctionOp(
        k, opForDType(fn, packed.dtype()), operands,
        mlirType(&impl.context, DType::F32, fn.lanes), false);
    return wrap(&k, r, DType::F32);
  }
  default:
    throw EnigmaError(std::string(name) + ": rule " +
                      functionRuleName(fn.rule) + " is not a vector rule");
  }
}

//===----------------------------------------------------------------------===//
// Quantisation
//===----------------------------------------------------------------------===//

namespace {
void requireIntVector(const Value &v, const char *what, unsigned lanes) {
  if (!isInteger(v.dtype()) || v.lanes() != lanes)
    throw EnigmaError(std::string(what) + " takes a " + std::to_string(lanes) +
                      "-lane integer vector, got " + lanesText(v) + " of " +
                      shortName(v.dtype()));
}
} // namespace

Value packUint8x4(KernelBuilder &k, Value v) {
  checkOwner(&k, v, "pack_uint8x4");
  requireIntVector(v, "pack_uint8x4", 4);
  Value bits = k.cast(k.cast(v, DType::U8), DType::U32);
  bits = k.binary(BinaryOp::Shl, bits,
                  laneConstant(k, {0, 8, 16, 24}, DType::U32, 4));
  return reduce(k, vector::CombiningKind::OR, bits);
}

Value unpackUint8x4(KernelBuilder &k, Value packed) {
  checkOwner(&k, packed, "unpack_uint8x4");
  if (packed.lanes() != 1 || !isInteger(packed.dtype()) ||
      byteWidth(packed.dtype()) != 4)
    throw EnigmaError("unpack_uint8x4 takes a 32-bit integer, got " +
                      lanesText(packed) + " of " + shortName(packed.dtype()));
  Value bits = k.broadcast(k.cast(packed, DType::U32), 4);
  bits = k.binary(BinaryOp::Shr, bits,
                  laneConstant(k, {0, 8, 16, 24}, DType::U32, 4));
  return k.binary(BinaryOp::And, bits, laneConstant(k, {0xff}, DType::U32, 4));
}

Value packInt4x2(KernelBuilder &k, Value v) {
  checkOwner(&k, v, "pack_int4x2");
  requireIntVector(v, "pack_int4x2", 2);
  Value bits = k.cast(v, DType::U32);
  bits = k.binary(BinaryOp::And, bits, laneConstant(k, {0xf}, DType::U32, 2));
  bits = k.binary(BinaryOp::Shl, bits, laneConstant(k, {0, 4}, DType::U32, 2));
  return reduce(k, vector::CombiningKind::OR, bits);
}

Value unpackInt4x2(KernelBuilder &k, Value packed) {
  checkOwner(&k, packed, "unpack_int4x2");
  if (packed.lanes() != 1 || !isInteger(packed.dtype()))
    throw EnigmaError("unpack_int4x2 takes an integer scalar, got " +
                      lanesText(packed) + " of " + shortName(packed.dtype()));
  // Move each nibble to the top of an int, then shift it back down with
  // sign extension.
  Value words = k.broadcast(k.cast(k.cast(packed, DType::U32), DType::I32), 2);
  words = k.binary(BinaryOp::Shl, words,
                   laneConstant(k, {28, 24}, DType::I32, 2));
  return k.binary(BinaryOp::Shr, words, laneConstant(k, {28}, DType::I32, 2));
}

Value dequantizeInt8(KernelBuilder &k, Value x, Value scale, Value zeroPoint) {
  checkOwner(&k, x, "dequantize_int8");
  checkOwner(&k, scale, "dequantize_int8");
  checkOwner(&k, zeroPoint, "dequantize_int8");
  for (const Value *v : {&x, &scale, &zeroPoint})
    if (v->dtype() == DType::Bool)
      throw EnigmaError("dequantize_int8 takes numbers, got a bool");
  if (scale.lanes() != 1)
    throw EnigmaError("dequantize_int8: scale must be a scalar, got " +
                      lanesText(scale));
  if (zeroPoint.lanes() != 1)
    throw EnigmaError("dequantize_int8: zero_point must be a scalar");
  // The original DSL's formula: the difference in int, then float.
  Value diff = sub(k, k.cast(x, DType::I32), k.cast(zeroPoint, DType::I32));
  return mul(k, k.cast(diff, DType::F32), k.cast(scale, DType::F32));
}

} // namespace enigma
