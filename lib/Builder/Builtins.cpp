//===- Builtins.cpp - KernelBuilder calls of the builtins family -------------===//
//
// Each function unifies its operands (promotion, scalar-to-vector
// broadcast), checks the operand kind the Metal function accepts, and builds
// an upstream arith/math op where one has Metal's meaning, else an op of
// EnigmaMathOps.td. Ops are built on the operands' MLIR types, so vector
// operands work lane-wise without special cases.
//
//===----------------------------------------------------------------------===//
#include "enigma/Builder/Builtins.h"

#include "BuilderImpl.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.h"

#include "mlir/IR/Matchers.h"

#include <algorithm>

using namespace mlir;

namespace enigma {
namespace {

struct FnInfo {
  MathFn fn;
  const char *name;
  unsigned arity;
};

const FnInfo kFunctions[] = {
    {MathFn::Sqrt, "sqrt", 1},         {MathFn::Rsqrt, "rsqrt", 1},
    {MathFn::Abs, "abs", 1},           {MathFn::Ceil, "ceil", 1},
    {MathFn::Floor, "floor", 1},       {MathFn::Round, "round", 1},
    {MathFn::Trunc, "trunc", 1},       {MathFn::Sign, "sign", 1},
    {MathFn::Saturate, "saturate", 1}, {MathFn::Fract, "fract", 1},
    {MathFn::Exp, "exp", 1},           {MathFn::Exp2, "exp2", 1},
    {MathFn::Log, "log", 1},           {MathFn::Log2, "log2", 1},
    {MathFn::Log10, "log10", 1},       {MathFn::Sin, "sin", 1},
    {MathFn::Cos, "cos", 1},           {MathFn::Tan, "tan", 1},
    {MathFn::Asin, "asin", 1},         {MathFn::Acos, "acos", 1},
    {MathFn::Atan, "atan", 1},         {MathFn::Sinh, "sinh", 1},
    {MathFn::Cosh, "cosh", 1},         {MathFn::Tanh, "tanh", 1},
    {MathFn::Fmin, "fmin", 2},         {MathFn::Fmax, "fmax", 2},
    {MathFn::Pow, "pow", 2},           {MathFn::Fmod, "fmod", 2},
    {MathFn::Atan2, "atan2", 2},       {MathFn::Step, "step", 2},
    {MathFn::Copysign, "copysign", 2}, {MathFn::Clamp, "clamp", 3},
    {MathFn::Fma, "fma", 3},           {MathFn::Mix, "mix", 3},
    {MathFn::Smoothstep, "smoothstep", 3},
    {MathFn::IsNan, "isnan", 1},       {MathFn::IsInf, "isinf", 1},
    {MathFn::IsFinite, "isfinite", 1}, {MathFn::SignBit, "signbit", 1},
    {MathFn::IsNormal, "isnormal", 1}, {MathFn::IMin, "imin", 2},
    {MathFn::IMax, "imax", 2},         {MathFn::IClamp, "iclamp", 3},
    {MathFn::AbsDiff, "abs_diff", 2},  {MathFn::AbsDiffUnary, "abs_diff_unary", 1},
    {MathFn::AddSat, "add_sat", 2},    {MathFn::SubSat, "sub_sat", 2},
    {MathFn::MulHi, "mul_hi", 2},      {MathFn::Rotate, "rotate", 2},
    {MathFn::MadSat, "mad_sat", 3},    {MathFn::Popcount, "popcount", 1},
    {MathFn::Clz, "clz", 1},           {MathFn::Ctz, "ctz", 1},
    {MathFn::ReverseBits, "reverse_bits", 1},
};

const FnInfo &info(MathFn fn) {
  for (const FnInfo &i : kFunctions)
    if (i.fn == fn)
      return i;
  throw EnigmaError("unknown math function");
}

/// The unsigned dtype of an integer dtype's width.
DType unsignedOf(DType t) {
  switch (t) {
  case DType::I8: return DType::U8;
  case DType::I16: return DType::U16;
  case DType::I32: return DType::U32;
  case DType::I64: return DType::U64;
  default: return t;
  }
}

/// Operands converted to one dtype and one lane count.
struct Unified {
  std::vector<mlir::Value> values;
  DType dtype;
};

Unified unify(KernelBuilder &k, const std::vector<Value> &args,
              const char *what, bool toFloat = false) {
  DType t = args.front().dtype();
  unsigned lanes = 1;
  for (const Value &v : args) {
    checkOwner(&k, v, what);
    t = KernelBuilder::promote(t, v.dtype());
    lanes = std::max(lanes, v.lanes());
  }
  if (toFloat && !isFloat(t))
    t = DType::F32; // Metal has no integer sqrt, sin, ...; compute in float
  KernelBuilder::Impl &impl = k.internals();
  Unified out{{}, t};
  for (const Value &v : args) {
    if (v.lanes() != 1 && v.lanes() != lanes)
      throw EnigmaError(std::string(what) + ": operands have " +
                        std::to_string(v.lanes()) + " and " +
                        std::to_string(lanes) + " lanes");
    mlir::Value x = raw(k.cast(v, t));
    if (v.lanes() != lanes)
      x = impl.builder.create<vector::BroadcastOp>(
          impl.location, mlirType(&impl.context, t, lanes), x);
    out.values.push_back(x);
  }
  return out;
}

void requireInteger(DType t, const char *what) {
  if (!isInteger(t))
    throw EnigmaError(std::string(what) + " needs integer operands, got " +
                      shortName(t));
}

void requireFloat(DType t, const char *what) {
  if (!isFloat(t))
    throw EnigmaError(std::string(what) + " needs float operands, got " +
                      shortName(t));
}

/// The i1 type (or vector of i1) with the lanes of `like`.
Type boolLike(MLIRContext *ctx, Type like) {
  Type i1 = IntegerType::get(ctx, 1);
  if (auto vec = llvm::dyn_cast<VectorType>(like))
    return VectorType::get(vec.getShape(), i1);
  return i1;
}

/// A bit-field position operand (Metal's uint offset / bits).
mlir::Value fieldOperand(KernelBuilder &k, Value v, const char *what,
                         unsigned width, uint64_t &constant, bool &isConst) {
  checkOwner(&k, v, what);
  if (!isInteger(v.dtype()) || v.lanes() != 1)
    throw EnigmaError(std::string(what) +
                      " must be a scalar integer, got " + shortName(v.dtype()));
  mlir::Value x = raw(k.cast(v, DType::U32));
  APInt value;
  isConst = matchPattern(x, m_ConstantInt(&value));
  constant = isConst ? value.getZExtValue() : 0;
  if (isConst && constant > width)
    throw EnigmaError(std::string(what) + " " + std::to_string(constant) +
                      " is beyond the " + std::to_string(width) +
                      "-bit width");
  return x;
}

unsigned elementBits(DType t) { return unsigned(8 * byteWidth(t)); }

} // namespace

std::optional<MathFn> mathFnByName(const std::string &name) {
  for (const FnInfo &i : kFunctions)
    if (name == i.name)
      return i.fn;
  return std::nullopt;
}

const char *mathFnName(MathFn fn) { return info(fn).name; }
unsigned mathFnArity(MathFn fn) { return info(fn).arity; }

Value mathCall(KernelBuilder &k, MathFn fn, const std::vector<Value> &args) {
  const FnInfo &fi = info(fn);
  if (args.size() != fi.arity)
    throw EnigmaError(std::string(fi.name) + " takes " +
                      std::to_string(fi.arity) + " operands, got " +
                      std::to_string(args.size()));
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &b = impl.builder;
  Location loc = impl.location;
  const char *name = fi.name;

  // Functions that accept integers as well as floats.
  bool mixedKind = fn == MathFn::Abs || fn == MathFn::Clamp;
  bool floatFn = fn <= MathFn::IsNormal && !mixedKind;
  Unified u = unify(k, args, name, floatFn);
  DType t = u.dtype;
  Type type = u.values[0].getType();
  auto a = [&](unsigned i) { return u.values[i]; };
  auto result = [&](mlir::Value v, DType dt) { return wrap(&k, v, dt); };
  auto same = [&](mlir::Value v) { return wrap(&k, v, t); };
  if (floatFn)
    requireFloat(t, name);
  bool s = isSigned(t);

  switch (fn) {
  case MathFn::Sqrt: return same(b.create<math::SqrtOp>(loc, a(0)));
  case MathFn::Rsqrt: return same(b.create<math::RsqrtOp>(loc, a(0)));
  case MathFn::Abs:
    if (isFloat(t))
      return same(b.create<math::AbsFOp>(loc, a(0)));
    requireInteger(t, name);
    if (!s)
      return same(a(0)); // |x| of an unsigned x is x
    return same(b.create<math::AbsIOp>(loc, a(0)));
  case MathFn::Ceil: return same(b.create<math::CeilOp>(loc, a(0)));
  case MathFn::Floor: return same(b.create<math::FloorOp>(loc, a(0)));
  case MathFn::Round: // math.round is half away from zero, as Metal's
    return same(b.create<math::RoundOp>(loc, a(0)));
  case MathFn::Trunc: return same(b.create<math::TruncOp>(loc, a(0)));
  case MathFn::Sign: return same(b.create<SignOp>(loc, type, a(0)));
  case MathFn::Saturate: return same(b.create<SaturateOp>(loc, type, a(0)));
  case MathFn::Fract: return same(b.create<FractOp>(loc, type, a(0)));
  case MathFn::Exp: return same(b.create<math::ExpOp>(loc, a(0)));
  case MathFn::Exp2: return same(b.create<math::Exp2Op>(loc, a(0)));
  case MathFn::Log: return same(b.create<math::LogOp>(loc, a(0)));
  case MathFn::Log2: return same(b.create<math::Log2Op>(loc, a(0)));
  case MathFn::Log10: return same(b.create<math::Log10Op>(loc, a(0)));
  case MathFn::Sin: return same(b.create<math::SinOp>(loc, a(0)));
  case MathFn::Cos: return same(b.create<math::CosOp>(loc, a(0)));
  case MathFn::Tan: return same(b.create<math::TanOp>(loc, a(0)));
  case MathFn::Asin: return same(b.create<math::AsinOp>(loc, a(0)));
  case MathFn::Acos: return same(b.create<math::AcosOp>(loc, a(0)));
  case MathFn::Atan: return same(b.create<math::AtanOp>(loc, a(0)));
  case MathFn::Sinh: return same(b.create<math::SinhOp>(loc, a(0)));
  case MathFn::Cosh: return same(b.create<math::CoshOp>(loc, a(0)));
  case MathFn::Tanh: return same(b.create<math::TanhOp>(loc, a(0)));
  case MathFn::Fmin: return same(b.create<FminOp>(loc, a(0), a(1)));
  case MathFn::Fmax: return same(b.create<FmaxOp>(loc, a(0), a(1)));
  case MathFn::Pow: return same(b.create<math::PowFOp>(loc, a(0), a(1)));
  case MathFn::Fmod: // arith.remf is C's fmod (sign of the dividend)
    return same(b.create<arith::RemFOp>(loc, a(0), a(1)));
  case MathFn::Atan2: return same(b.create<Atan2Op>(loc, a(0), a(1)));
  case MathFn::Step: return same(b.create<StepOp>(loc, type, a(0), a(1)));
  case MathFn::Copysign:
    return same(b.create<math::CopySignOp>(loc, a(0), a(1)));
  case MathFn::Clamp:
  case MathFn::IClamp:
    if (fn == MathFn::IClamp || !isFloat(t))
      requireInteger(t, name);
    return same(b.create<ClampOp>(loc, type, a(0), a(1), a(2),
                                  !isFloat(t) && s));
  case MathFn::Fma: return same(b.create<math::FmaOp>(loc, a(0), a(1), a(2)));
  case MathFn::Mix: return same(b.create<MixOp>(loc, type, a(0), a(1), a(2)));
  case MathFn::Smoothstep:
    return same(b.create<SmoothstepOp>(loc, type, a(0), a(1), a(2)));
  case MathFn::IsNan:
  case MathFn::IsInf:
  case MathFn::IsFinite:
  case MathFn::SignBit:
  case MathFn::IsNormal: {
    Type boolType = boolLike(&impl.context, type);
    mlir::Value r;
    if (fn == MathFn::IsNan) r = b.create<IsNanOp>(loc, boolType, a(0));
    if (fn == MathFn::IsInf) r = b.create<IsInfOp>(loc, boolType, a(0));
    if (fn == MathFn::IsFinite) r = b.create<IsFiniteOp>(loc, boolType, a(0));
    if (fn == MathFn::SignBit) r = b.create<SignBitOp>(loc, boolType, a(0));
    if (fn == MathFn::IsNormal) r = b.create<IsNormalOp>(loc, boolType, a(0));
    return result(r, DType::Bool);
  }
  default:
    break;
  }

  // Integer and bit functions.
  requireInteger(t, name);
  switch (fn) {
  case MathFn::IMin:
    return same(s ? b.create<arith::MinSIOp>(loc, a(0), a(1)).getResult()
                  : b.create<arith::MinUIOp>(loc, a(0), a(1)).getResult());
  case MathFn::IMax:
    return same(s ? b.create<arith::MaxSIOp>(loc, a(0), a(1)).getResult()
                  : b.create<arith::MaxUIOp>(loc, a(0), a(1)).getResult());
  case MathFn::AbsDiff: // the distance always fits the unsigned type
    return result(b.create<AbsDiffOp>(loc, type, a(0), a(1), s),
                  unsignedOf(t));
  case MathFn::AbsDiffUnary:
    if (!s)
      return same(a(0));
    // abs wraps INT_MIN to itself, whose unsigned reading is |INT_MIN|.
    return result(b.create<math::AbsIOp>(loc, a(0)), unsignedOf(t));
  case MathFn::AddSat:
    return same(b.create<AddSatOp>(loc, type, a(0), a(1), s));
  case MathFn::SubSat:
    return same(b.create<SubSatOp>(loc, type, a(0), a(1), s));
  case MathFn::MulHi:
    return same(b.create<MulHiOp>(loc, type, a(0), a(1), s));
  case MathFn::Rotate: // the rotation count is taken modulo the width
    return same(b.create<RotateOp>(loc, type, a(0), a(1), false));
  case MathFn::MadSat:
    return same(b.create<MadSatOp>(loc, type, a(0), a(1), a(2), s));
  case MathFn::Popcount: return same(b.create<math::CtPopOp>(loc, a(0)));
  case MathFn::Clz:
    return same(b.create<math::CountLeadingZerosOp>(loc, a(0)));
  case MathFn::Ctz:
    return same(b.create<math::CountTrailingZerosOp>(loc, a(0)));
  case MathFn::ReverseBits:
    return same(b.create<ReverseBitsOp>(loc, type, a(0)));
  default:
    throw EnigmaError(std::string("unhandled math function ") + name);
  }
}

Value extractBits(KernelBuilder &k, Value x, Value offset, Value bits) {
  checkOwner(&k, x, "extract_bits");
  requireInteger(x.dtype(), "extract_bits");
  unsigned width = elementBits(x.dtype());
  uint64_t off = 0, count = 0;
  bool constOff, constCount;
  mlir::Value o = fieldOperand(k, offset, "extract_bits offset", width, off,
                               constOff);
  mlir::Value c = fieldOperand(k, bits, "extract_bits bit count", width,
                               count, constCount);
  if (constOff && constCount && off + count > width)
    throw EnigmaError("extract_bits: the field [" + std::to_string(off) +
                      ", " + std::to_string(off + count) +
                      ") does not fit in " + shortName(x.dtype()));
  KernelBuilder::Impl &impl = k.internals();
  mlir::Value r = impl.builder.create<ExtractBitsOp>(
      impl.location, raw(x).getType(), raw(x), o, c, isSigned(x.dtype()));
  return wrap(&k, r, x.dtype());
}

Value insertBits(KernelBuilder &k, Value base, Value insert, Value offset,
                 Value bits) {
  Unified u = unify(k, {base, insert}, "insert_bits");
  requireInteger(u.dtype, "insert_bits");
  unsigned width = elementBits(u.dtype);
  uint64_t off = 0, count = 0;
  bool constOff, constCount;
  mlir::Value o = fieldOperand(k, offset, "insert_bits offset", width, off,
                               constOff);
  mlir::Value c = fieldOperand(k, bits, "insert_bits bit count", width,
                               count, constCount);
  if (constOff && constCount && off + count > width)
    throw EnigmaError("insert_bits: the field [" + std::to_string(off) +
                      ", " + std::to_string(off + count) +
                      ") does not fit in " + shortName(u.dtype));
  KernelBuilder::Impl &impl = k.internals();
  mlir::Value r = impl.builder.create<InsertBitsOp>(
      impl.location, u.values[0].getType(), u.values[0], u.values[1], o, c);
  return wrap(&k, r, u.dtype);
}

std::optional<CmpKind> cmpKindByName(const std::string &name) {
  static const char *names[] = {"cmp_eq",  "cmp_ne",  "cmp_lt",  "cmp_le",
                                "cmp_gt",  "cmp_ge",  "cmp_ult", "cmp_ule",
                                "cmp_ugt", "cmp_uge"};
  for (unsigned i = 0; i < std::size(names); ++i)
    if (name == names[i])
      return CmpKind(i);
  return std::nullopt;
}

Value cmp(KernelBuilder &k, CmpKind kind, Value a, Value b) {
  Unified u = unify(k, {a, b}, "comparison");
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &bd = impl.builder;
  mlir::Value r;
  if (isFloat(u.dtype)) {
    using P = arith::CmpFPredicate;
    static const P preds[] = {P::OEQ, P::ONE, P::OLT, P::OLE, P::OGT,
                              P::OGE, P::ULT, P::ULE, P::UGT, P::UGE};
    r = bd.create<arith::CmpFOp>(impl.location, preds[int(kind)], u.values[0],
                                 u.values[1]);
  } else {
    using P = arith::CmpIPredicate;
    static const P sp[] = {P::eq,  P::ne,  P::slt, P::sle, P::sgt,
                           P::sge, P::ult, P::ule, P::ugt, P::uge};
    static const P up[] = {P::eq,  P::ne,  P::ult, P::ule, P::ugt,
                           P::uge, P::ult, P::ule, P::ugt, P::uge};
    // true is 1, not -1: bools always compare unsigned.
    bool asSigned = u.dtype != DType::Bool;
    r = bd.create<arith::CmpIOp>(impl.location,
                                 asSigned ? sp[int(kind)] : up[int(kind)],
                                 u.values[0], u.values[1]);
  }
  return wrap(&k, r, DType::Bool);
}

Value where(KernelBuilder &k, Value falseValue, Value trueValue, Value cond) {
  checkOwner(&k, cond, "where");
  if (cond.dtype() != DType::Bool)
    throw EnigmaError(std::string("where: the condition must be a bool, got ") +
                      shortName(cond.dtype()) + "; compare it first");
  Unified u = unify(k, {falseValue, trueValue}, "where");
  KernelBuilder::Impl &impl = k.internals();
  unsigned lanes = std::max(falseValue.lanes(), trueValue.lanes());
  if (cond.lanes() > 1 && lanes != cond.lanes()) {
    if (lanes != 1)
      throw EnigmaError("where: the condition has " +
                        std::to_string(cond.lanes()) + " lanes, the values " +
                        std::to_string(lanes));
    Type vecType = mlirType(&impl.context, u.dtype, cond.lanes());
    for (mlir::Value &v : u.values)
      v = impl.builder.create<vector::BroadcastOp>(impl.location, vecType, v);
  }
  mlir::Value r = impl.builder.create<arith::SelectOp>(
      impl.location, raw(cond), u.values[1], u.values[0]);
  return wrap(&k, r, u.dtype);
}

Value asType(KernelBuilder &k, Value x, DType to) {
  checkOwner(&k, x, "as_type");
  DType from = x.dtype();
  if (from == DType::Bool || to == DType::Bool)
    throw EnigmaError("as_type does not reinterpret bool values; use "
                      "metal_cast or where");
  if (byteWidth(from) != byteWidth(to))
    throw EnigmaError(std::string("as_type needs equal widths, but ") +
                      shortName(from) + " has " +
                      std::to_string(elementBits(from)) + " bits and " +
                      shortName(to) + " has " +
                      std::to_string(elementBits(to)) +
                      "; use metal_cast for a value conversion");
  KernelBuilder::Impl &impl = k.internals();
  if (!isFloat(from) && !isFloat(to))
    return wrap(&k, raw(x), to); // same bits, new signedness
  Type toType = mlirType(&impl.context, to, x.lanes());
  mlir::Value r =
      impl.builder.create<arith::BitcastOp>(impl.location, toType, raw(x));
  return wrap(&k, r, to);
}

} // namespace enigma
