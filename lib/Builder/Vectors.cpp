//===- Vectors.cpp - KernelBuilder calls of the vectors family -------------===//
//
// Geometry and packing are built from arith/math/vector ops rather than
// opaque calls, so the verifier checks every step and each backend runs the
// same formulas (Metal's, as written in docs/reference/vectors.md).
//
//===----------------------------------------------------------------------===//
#include "enigma/Builder/Vectors.h"

#include "BuilderImpl.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.h"

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

Value scalarConstant(KernelBuilder &k, double v, DType dtype) {
  return isFloat(dtype) ? k.constant(v, dtype)
                        : k.constantInt(static_cast<int64_t>(v), dtype);
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

template <typename MathOp> Value mathUnary(KernelBuilder &k, Value x) {
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<MathOp>(impl.location, raw(x));
  return wrap(&k, op.getResult(), x.dtype());
}

Value powf(KernelBuilder &k, Value x, Value y) {
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<math::PowFOp>(impl.location, raw(x), raw(y));
  return wrap(&k, op.getResult(), x.dtype());
}

Value reduce(KernelBuilder &k, vector::CombiningKind kind, Value v) {
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<vector::ReductionOp>(impl.location, kind,
                                                     raw(v));
  return wrap(&k, op.getResult(), v.dtype());
}

Value select(KernelBuilder &k, Value cond, Value ifTrue, Value ifFalse) {
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<arith::SelectOp>(impl.location, raw(cond),
                                                 raw(ifTrue), raw(ifFalse));
  return wrap(&k, op.getResult(), ifTrue.dtype());
}

/// Lanes a shuffle of `v` with itself picks, e.g. {1, 2, 0} is v.yzx.
Value swizzle(KernelBuilder &k, Value v, ArrayRef<int64_t> lanes) {
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<vector::ShuffleOp>(impl.location, raw(v),
                                                   raw(v), lanes);
  return wrap(&k, op.getResult(), v.dtype());
}

Value add(KernelBuilder &k, Value a, Value b) { return k.binary(BinaryOp::Add, a, b); }
Value sub(KernelBuilder &k, Value a, Value b) { return k.binary(BinaryOp::Sub, a, b); }
Value mul(KernelBuilder &k, Value a, Value b) { return k.binary(BinaryOp::Mul, a, b); }
Value div(KernelBuilder &k, Value a, Value b) { return k.binary(BinaryOp::Div, a, b); }
Value fmax(KernelBuilder &k, Value a, Value b) { return k.binary(BinaryOp::Max, a, b); }
Value fmin(KernelBuilder &k, Value a, Value b) { return k.binary(BinaryOp::Min, a, b); }

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
// Geometry
//===----------------------------------------------------------------------===//

Value dot(KernelBuilder &k, Value a, Value b) {
  checkOwner(&k, a, "dot");
  checkOwner(&k, b, "dot");
  requireFloatVector(a, "dot");
  requireSame(a, b, "dot");
  return reduce(k, vector::CombiningKind::ADD, mul(k, a, b));
}

Value length(KernelBuilder &k, Value v) {
  checkOwner(&k, v, "length");
  requireFloatVector(v, "length");
  return mathUnary<math::SqrtOp>(k, dot(k, v, v));
}

Value distance(KernelBuilder &k, Value a, Value b) {
  checkOwner(&k, a, "distance");
  checkOwner(&k, b, "distance");
  requireFloatVector(a, "distance");
  requireSame(a, b, "distance");
  return length(k, sub(k, a, b));
}

Value normalize(KernelBuilder &k, Value v) {
  checkOwner(&k, v, "normalize");
  requireFloatVector(v, "normalize");
  return mul(k, v, mathUnary<math::RsqrtOp>(k, dot(k, v, v)));
}

Value cross(KernelBuilder &k, Value a, Value b) {
  checkOwner(&k, a, "cross");
  checkOwner(&k, b, "cross");
  requireFloatVector(a, "cross", 3);
  requireSame(a, b, "cross");
  // a.yzx * b.zxy - a.zxy * b.yzx
  Value lhs = mul(k, swizzle(k, a, {1, 2, 0}), swizzle(k, b, {2, 0, 1}));
  Value rhs = mul(k, swizzle(k, a, {2, 0, 1}), swizzle(k, b, {1, 2, 0}));
  return sub(k, lhs, rhs);
}

Value reflect(KernelBuilder &k, Value i, Value n) {
  checkOwner(&k, i, "reflect");
  checkOwner(&k, n, "reflect");
  requireFloatVector(i, "reflect");
  requireSame(i, n, "reflect");
  // i - 2 * dot(n, i) * n
  Value twice = mul(k, scalarConstant(k, 2.0, i.dtype()), dot(k, n, i));
  return sub(k, i, mul(k, twice, n));
}

Value refract(KernelBuilder &k, Value i, Value n, Value eta) {
  checkOwner(&k, i, "refract");
  checkOwner(&k, n, "refract");
  checkOwner(&k, eta, "refract");
  requireFloatVector(i, "refract");
  requireSame(i, n, "refract");
  if (eta.lanes() != 1 || !isFloat(eta.dtype()))
    throw EnigmaError("refract: eta must be a float scalar, got " +
                      lanesText(eta) + " of " + shortName(eta.dtype()));
  DType t = i.dtype();
  eta = k.cast(eta, t);
  Value one = scalarConstant(k, 1.0, t);
  // k = 1 - eta^2 (1 - dot(n, i)^2); k < 0 is total internal reflection.
  Value d = dot(k, n, i);
  Value kk = sub(k, one, mul(k, mul(k, eta, eta), sub(k, one, mul(k, d, d))));
  Value bent = sub(k, mul(k, eta, i),
                   mul(k, add(k, mul(k, eta, d), mathUnary<math::SqrtOp>(k, kk)),
                       n));
  Value zero = k.broadcast(scalarConstant(k, 0.0, t), i.lanes());
  Value total = k.compare(CompareOp::LT, kk, scalarConstant(k, 0.0, t));
  return select(k, total, zero, bent);
}

Value faceforward(KernelBuilder &k, Value n, Value i, Value nref) {
  for (const Value *v : {&n, &i, &nref})
    checkOwner(&k, *v, "faceforward");
  requireFloatVector(n, "faceforward");
  requireSame(n, i, "faceforward");
  requireSame(n, nref, "faceforward");
  Value facing = k.compare(CompareOp::LT, dot(k, nref, i),
                           scalarConstant(k, 0.0, n.dtype()));
  return select(k, facing, n, k.unary(UnaryOp::Neg, n));
}

//===----------------------------------------------------------------------===//
// Normalized-integer packing
//===----------------------------------------------------------------------===//

namespace {

/// How one format lays its lanes into a uint.
struct PackLayout {
  const char *name;
  unsigned lanes;
  bool isSigned;
  std::vector<double> scale; // per lane: 2^bits - 1 (unorm), 2^(bits-1) - 1
  std::vector<double> shift; // bit offset of each lane
  std::vector<double> mask;  // bits of each lane
};

const PackLayout &layoutOf(PackFormat f) {
  static const PackLayout layouts[] = {
      {"snorm4x8", 4, true, {127}, {0, 8, 16, 24}, {0xff}},
      {"unorm4x8", 4, false, {255}, {0, 8, 16, 24}, {0xff}},
      {"snorm2x16", 2, true, {32767}, {0, 16}, {0xffff}},
      {"unorm2x16", 2, false, {65535}, {0, 16}, {0xffff}},
      {"srgb_unorm4x8", 4, false, {255}, {0, 8, 16, 24}, {0xff}},
      {"unorm10a2", 4, false, {1023, 1023, 1023, 3}, {0, 10, 20, 30},
       {0x3ff, 0x3ff, 0x3ff, 3}},
  };
  return layouts[static_cast<int>(f)];
}

/// Applies the scalar function `fn` to the first `count` lanes of `v`,
/// keeping the others. Clamps go through here: the compiler expands
/// fmax/fmin into selects, which the emitters print for scalars only.
template <typename Fn>
Value mapLanes(KernelBuilder &k, Value v, Fn fn, unsigned count = 4) {
  std::vector<Value> lanes;
  for (unsigned i = 0; i < v.lanes(); ++i) {
    Value c = vecExtract(k, v, i);
    lanes.push_back(i < count ? fn(c) : c);
  }
  return makeVec(k, lanes);
}

/// Applies `fn` to lanes 0..2 (r, g, b) of a float4, keeping alpha.
template <typename Fn> Value mapColour(KernelBuilder &k, Value v, Fn fn) {
  return mapLanes(k, v, fn, 3);
}

} // namespace

unsigned packLanes(PackFormat format) { return layoutOf(format).lanes; }

Value packFloat(KernelBuilder &k, PackFormat format, Value v) {
  const PackLayout &L = layoutOf(format);
  checkOwner(&k, v, "pack");
  std::string what = std::string("pack_float_to_") + L.name;
  requireFloatVector(v, what.c_str(), L.lanes);
  v = k.cast(v, DType::F32);
  const DType F = DType::F32;
  auto c = [&](double x) { return scalarConstant(k, x, F); };
  if (format == PackFormat::Srgb4x8) {
    // Metal's linear -> sRGB: clamp (NaN -> 0), then the transfer curve.
    v = mapColour(k, v, [&](Value x) {
      x = fmin(k, fmax(k, x, c(0)), c(1));
      Value linear = mul(k, x, c(12.92));
      Value curve = sub(k, mul(k, c(1.055), powf(k, x, c(1.0 / 2.4))),
                        c(0.055));
      return select(k, k.compare(CompareOp::LE, x, c(0.0031308)), linear,
                    curve);
    });
  }
  unsigned n = L.lanes;
  // clamp to [0, 1] or [-1, 1]; fmax/fmin turn NaN into 0 in both forms.
  Value clamped = mapLanes(k, v, [&](Value x) {
    Value positive = fmin(k, fmax(k, x, c(0)), c(1));
    if (!L.isSigned)
      return positive;
    return add(k, positive, fmax(k, fmin(k, x, c(0)), c(-1)));
  });
  Value scaled = mul(k, clamped, laneConstant(k, L.scale, F, n));
  Value rounded = mathUnary<math::RoundEvenOp>(k, scaled);
  Value bits = k.cast(k.cast(rounded, L.isSigned ? DType::I32 : DType::U32),
                      DType::U32);
  bits = k.binary(BinaryOp::And, bits, laneConstant(k, L.mask, DType::U32, n));
  bits = k.binary(BinaryOp::Shl, bits, laneConstant(k, L.shift, DType::U32, n));
  return reduce(k, vector::CombiningKind::OR, bits);
}

Value unpackToFloat(KernelBuilder &k, PackFormat format, Value packed) {
  const PackLayout &L = layoutOf(format);
  checkOwner(&k, packed, "unpack");
  if (packed.lanes() != 1 || !isInteger(packed.dtype()) ||
      byteWidth(packed.dtype()) != 4)
    throw EnigmaError(std::string("unpack_") + L.name +
                      "_to_float takes a 32-bit integer, got " +
                      lanesText(packed) + " of " + shortName(packed.dtype()));
  const DType F = DType::F32;
  auto c = [&](double x) { return scalarConstant(k, x, F); };
  unsigned n = L.lanes;
  if (format == PackFormat::Srgb4x8) {
    // Metal's own function (the sRGB curve is the library's, not a formula
    // of ours), printed as a call in every target.
    KernelBuilder::Impl &impl = k.internals();
    auto op = impl.builder.create<UnpackUnorm4x8SrgbOp>(
        impl.location, mlirType(&impl.context, F, 4),
        raw(k.cast(packed, DType::U32)));
    return wrap(&k, op.getResult(), F);
  }
  Value bits = k.broadcast(k.cast(packed, DType::U32), n);
  bits = k.binary(BinaryOp::Shr, bits, laneConstant(k, L.shift, DType::U32, n));
  bits = k.binary(BinaryOp::And, bits, laneConstant(k, L.mask, DType::U32, n));
  Value scale = laneConstant(k, L.scale, F, n);
  if (!L.isSigned)
    return div(k, k.cast(bits, F), scale);
  // Sign-extend each lane from its width, then max(-1, i / scale).
  DType narrow = L.mask[0] == 0xff ? DType::I8 : DType::I16;
  Value ints = k.cast(k.cast(bits, narrow), F);
  return mapLanes(k, div(k, ints, scale),
                  [&](Value x) { return fmax(k, x, c(-1)); });
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
