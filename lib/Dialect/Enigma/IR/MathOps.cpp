//===- MathOps.cpp - The math op family -----------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace enigma;

#include "enigma/Dialect/Enigma/IR/EnigmaMathEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaMathAttributes.cpp.inc"
#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.cpp.inc"

void EnigmaDialect::registerMathOps() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaMathAttributes.cpp.inc"
      >();
}

/// Number of lanes of a scalar (1) or vector type.
static int64_t laneCount(Type type) {
  if (auto vec = llvm::dyn_cast<VectorType>(type))
    return vec.getNumElements();
  return 1;
}

static Type elementOf(Type type) {
  if (auto vec = llvm::dyn_cast<VectorType>(type))
    return vec.getElementType();
  return type;
}

LogicalResult ClampOp::verify() {
  if (getIsSigned() && !llvm::isa<IntegerType>(elementOf(getType())))
    return emitOpError("'signed' applies to integer operands only");
  return success();
}

/// A float predicate yields one bool per lane of its operand.
template <typename Op> static LogicalResult verifyPredicate(Op op) {
  if (laneCount(op.getX().getType()) != laneCount(op.getType()))
    return op.emitOpError("result must have one bool per operand lane");
  return success();
}
LogicalResult IsNanOp::verify() { return verifyPredicate(*this); }
LogicalResult IsInfOp::verify() { return verifyPredicate(*this); }
LogicalResult IsFiniteOp::verify() { return verifyPredicate(*this); }
LogicalResult SignBitOp::verify() { return verifyPredicate(*this); }
LogicalResult IsNormalOp::verify() { return verifyPredicate(*this); }

/// Checks a bit field against the element width when offset and bit count
/// are constants (Metal leaves a field beyond the width undefined).
static LogicalResult verifyBitField(Operation *op, Type valueType,
                                    Value offset, Value bits) {
  Type element = elementOf(valueType);
  if (element.isInteger(1))
    return op->emitOpError("needs an integer wider than bool");
  uint64_t width = element.getIntOrFloatBitWidth();
  APInt offsetValue, bitsValue;
  bool constOffset = matchPattern(offset, m_ConstantInt(&offsetValue));
  bool constBits = matchPattern(bits, m_ConstantInt(&bitsValue));
  if (constOffset && offsetValue.getZExtValue() > width)
    return op->emitOpError("offset ")
           << offsetValue.getZExtValue() << " is beyond the " << width
           << "-bit width";
  if (constBits && bitsValue.getZExtValue() > width)
    return op->emitOpError("bit count ")
           << bitsValue.getZExtValue() << " is beyond the " << width
           << "-bit width";
  if (constOffset && constBits &&
      offsetValue.getZExtValue() + bitsValue.getZExtValue() > width)
    return op->emitOpError("field [")
           << offsetValue.getZExtValue() << ", "
           << offsetValue.getZExtValue() + bitsValue.getZExtValue()
           << ") does not fit in " << width << " bits";
  return success();
}

LogicalResult ExtractBitsOp::verify() {
  return verifyBitField(*this, getType(), getOffset(), getBits());
}

LogicalResult InsertBitsOp::verify() {
  return verifyBitField(*this, getType(), getOffset(), getBits());
}
