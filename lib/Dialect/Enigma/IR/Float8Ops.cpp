//===- Float8Ops.cpp - The 8-bit float family -----------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaFloat8Ops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace enigma;

namespace enigma {
static Type elementOf(Type t) {
  if (auto shaped = llvm::dyn_cast<ShapedType>(t))
    return shaped.getElementType();
  return t;
}

bool isFloat8Type(Type t) {
  Type e = elementOf(t);
  return e.isFloat8E4M3FN() || e.isFloat8E5M2();
}

llvm::StringRef float8Name(Type t) {
  Type e = elementOf(t);
  if (e.isFloat8E4M3FN())
    return "f8e4m3";
  if (e.isFloat8E5M2())
    return "f8e5m2";
  return "";
}
} // namespace enigma

LogicalResult TruncFSatOp::verify() {
  Type in = getIn().getType(), out = getOut().getType();
  auto inShaped = llvm::dyn_cast<ShapedType>(in);
  auto outShaped = llvm::dyn_cast<ShapedType>(out);
  if (bool(inShaped) != bool(outShaped) ||
      (inShaped && (inShaped.getShape() != outShaped.getShape() ||
                    llvm::isa<VectorType>(in) != llvm::isa<VectorType>(out))))
    return emitOpError("operand ") << in << " and result " << out
                                   << " must have the same shape";
  return success();
}

/// `x` rounded to `semantics` with magnitudes beyond its largest finite
/// value clamped to it first (the clamp makes the rounding exact there).
static APFloat saturated(APFloat x, const llvm::fltSemantics &semantics) {
  if (x.isNaN()) {
    APFloat nan = APFloat::getNaN(semantics, x.isNegative());
    return nan;
  }
  APFloat largest = APFloat::getLargest(semantics, x.isNegative());
  bool lost = false;
  APFloat wide = largest;
  wide.convert(x.getSemantics(), APFloat::rmNearestTiesToEven, &lost);
  if (x.isInfinity() ||
      (x.isNegative() ? x.compare(wide) == APFloat::cmpLessThan
                      : x.compare(wide) == APFloat::cmpGreaterThan))
    return largest;
  x.convert(semantics, APFloat::rmNearestTiesToEven, &lost);
  return x;
}

LogicalResult TruncFSatOp::canonicalize(TruncFSatOp op,
                                        PatternRewriter &rewriter) {
  Attribute in;
  if (!matchPattern(op.getIn(), m_Constant(&in)))
    return failure();
  Type outType = op.getOut().getType();
  auto outElement = llvm::cast<FloatType>(elementOf(outType));
  const llvm::fltSemantics &semantics = outElement.getFloatSemantics();
  TypedAttr folded;
  if (auto f = llvm::dyn_cast<FloatAttr>(in))
    folded = FloatAttr::get(outElement, saturated(f.getValue(), semantics));
  else if (auto splat = llvm::dyn_cast<SplatElementsAttr>(in))
    folded = SplatElementsAttr::get(
        llvm::cast<ShapedType>(outType),
        FloatAttr::get(outElement,
                       saturated(splat.getSplatValue<APFloat>(), semantics)));
  if (!folded)
    return failure();
  rewriter.replaceOpWithNewOp<arith::ConstantOp>(op, outType, folded);
  return success();
}

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaFloat8Ops.cpp.inc"

void EnigmaDialect::registerFloat8Ops() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaFloat8Ops.cpp.inc"
      >();
}
