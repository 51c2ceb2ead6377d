//===- Math.cpp - KernelBuilder calls of the math family ------------------===//
//
// The math family's rules (Functions.h): each unifies its operands
// (promotion, scalar-to-vector broadcast), checks the operand kind the
// Metal function accepts and builds the op the table names for that kind:
// an upstream arith/math op where one has Metal's meaning, else an op of
// EnigmaMathOps.td. Ops are built on the operands' MLIR types, so vector
// operands work lane-wise without special cases.
//
//===----------------------------------------------------------------------===//
#include "enigma/Builder/Math.h"

#include "FunctionBuilders.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>

using namespace mlir;

namespace enigma {
namespace {

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

/// The i1 type (or vector of i1) with the lanes of `like`.
Type boolLike(MLIRContext *ctx, Type like) {
  Type i1 = IntegerType::get(ctx, 1);
  if (auto vec = llvm::dyn_cast<VectorType>(like))
    return VectorType::get(vec.getShape(), i1);
  return i1;
}

unsigned elementBits(DType t) { return unsigned(8 * byteWidth(t)); }

/// A bit-field position operand (Metal's uint offset / bits).
mlir::Value fieldOperand(KernelBuilder &k, Value v, const std::string &what,
                         unsigned width, uint64_t &constant, bool &isConst) {
  if (!isInteger(v.dtype()) || v.lanes() != 1)
    throw EnigmaError(what + " must be a scalar integer, got " +
                      shortName(v.dtype()));
  mlir::Value x = raw(k.cast(v, DType::U32));
  APInt value;
  isConst = matchPattern(x, m_ConstantInt(&value));
  constant = isConst ? value.getZExtValue() : 0;
  if (isConst && constant > width)
    throw EnigmaError(what + " " + std::to_string(constant) +
                      " is beyond the " + std::to_string(width) +
                      "-bit width");
  return x;
}

/// extract_bits(x, offset, bits) and insert_bits(base, insert, offset,
/// bits): the value operands unified, the field operands uint, a constant
/// field checked against the width.
Value bitField(KernelBuilder &k, const Function &fn,
               const std::vector<Value> &args) {
  std::string name = fn.name;
  size_t values = fn.rule == FunctionRule::ExtractBits ? 1 : 2;
  Unified u = unify(k, {args.begin(), args.begin() + values}, fn.name);
  requireInteger(u.dtype, fn.name);
  unsigned width = elementBits(u.dtype);
  uint64_t off = 0, count = 0;
  bool constOff, constCount;
  mlir::Value o = fieldOperand(k, args[values], name + " offset", width, off,
                               constOff);
  mlir::Value c = fieldOperand(k, args[values + 1], name + " bit count",
                               width, count, constCount);
  if (constOff && constCount && off + count > width)
    throw EnigmaError(name + ": the field [" + std::to_string(off) + ", " +
                      std::to_string(off + count) + ") does not fit in " +
                      shortName(u.dtype));
  std::vector<mlir::Value> operands = u.values;
  operands.push_back(o);
  operands.push_back(c);
  mlir::Value r = createFunctionOp(k, opForDType(fn, u.dtype), operands,
                                   u.values[0].getType(), isSigned(u.dtype));
  return wrap(&k, r, u.dtype);
}

/// A comparison's op for `t`: bools compare as 0 and 1, so their integer
/// predicates are the unsigned ones (true is 1, not -1).
std::string compareOp(const Function &fn, DType t) {
  std::string op = opForDType(fn, t);
  size_t colon = op.find(':');
  if (t == DType::Bool && op.compare(0, colon, "arith.cmpi") == 0 &&
      op[colon + 1] == 's')
    op[colon + 1] = 'u';
  return op;
}

} // namespace

Value buildMathFunction(KernelBuilder &k, const Function &fn,
                        const std::vector<Value> &args) {
  FunctionRule rule = fn.rule;
  if (rule == FunctionRule::ExtractBits || rule == FunctionRule::InsertBits)
    return bitField(k, fn, args);
  bool floatRule =
      rule == FunctionRule::Float || rule == FunctionRule::FloatPredicate;
  Unified u = unify(k, args, fn.name, floatRule);
  DType t = u.dtype;
  Type type = u.values[0].getType();
  KernelBuilder::Impl &impl = k.internals();
  DType resultDType = t;
  Type resultType = type;
  std::string op = opForDType(fn, t);
  switch (rule) {
  case FunctionRule::Float:
    requireFloat(t, fn.name);
    break;
  case FunctionRule::FloatPredicate:
    requireFloat(t, fn.name);
    resultDType = DType::Bool;
    resultType = boolLike(&impl.context, type);
    break;
  case FunctionRule::Numeric:
    if (!isFloat(t))
      requireInteger(t, fn.name);
    break;
  case FunctionRule::Integer:
    requireInteger(t, fn.name);
    break;
  case FunctionRule::IntegerToUnsigned: // the distance fits the unsigned type
    requireInteger(t, fn.name);
    resultDType = unsignedOf(t);
    break;
  case FunctionRule::Compare:
    op = compareOp(fn, t);
    resultDType = DType::Bool;
    resultType = boolLike(&impl.context, type);
    break;
  default:
    throw EnigmaError(std::string(fn.name) + ": rule " +
                      functionRuleName(rule) + " is not a math rule");
  }
  if (op == "identity") // e.g. |x| of an unsigned x is x
    return wrap(&k, u.values[0], resultDType);
  mlir::Value r = createFunctionOp(k, op, u.values, resultType,
                                   !isFloat(t) && isSigned(t));
  return wrap(&k, r, resultDType);
}

Value where(KernelBuilder &k, Value falseValue, Value trueValue, Value cond) {
  checkOwner(&k, cond, "where");
  if (cond.dtype() != DType::Bool)
    throw EnigmaError(std::string("where: the condition must be a bool, got ") +
                      shortName(cond.dtype()) + "; compare it first");
  // A selection moves values: 8-bit floats stay 8-bit.
  Unified u = unify(k, {falseValue, trueValue}, "where", false,
                    /*computes=*/false);
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
  // A fragment reinterprets element by element.
  Type toType = mlirType(&impl.context, to, x.lanes());
  if (auto t = llvm::dyn_cast<RankedTensorType>(raw(x).getType()))
    toType = RankedTensorType::get(t.getShape(), getElementTypeOrSelf(toType));
  mlir::Value r =
      impl.builder.create<arith::BitcastOp>(impl.location, toType, raw(x));
  return wrap(&k, r, to);
}

} // namespace enigma
