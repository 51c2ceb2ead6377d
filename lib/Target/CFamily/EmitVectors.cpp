//===- EmitVectors.cpp - Vector construction, lanes, shuffles, reductions ===//
//
// Every spelling here is the same text in MSL, CUDA and host C++: the CUDA
// and host preludes define Metal's vector types (float4(x) broadcasts,
// float4(a, b, c, d) builds, .x .y .z .w read lanes).
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace enigma {

namespace {

/// `v.x`, `v.y`, ... for lane `i` of the vector expression `v`.
std::string laneOf(CFamilyEmitter &e, Value v, int64_t i) {
  static const char *names[] = {".x", ".y", ".z", ".w"};
  std::string base = e.expr(v);
  if (i < 4)
    return base + names[i];
  return base + "[" + std::to_string(i) + "]";
}

const char *reductionSymbol(vector::CombiningKind kind) {
  switch (kind) {
  case vector::CombiningKind::ADD: return " + ";
  case vector::CombiningKind::MUL: return " * ";
  case vector::CombiningKind::AND: return " & ";
  case vector::CombiningKind::OR: return " | ";
  case vector::CombiningKind::XOR: return " ^ ";
  default: return nullptr;
  }
}

} // namespace

LogicalResult emitVectorFamily(CFamilyEmitter &e, Operation *op,
                               bool &handled) {
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](vector::FromElementsOp v) -> LogicalResult {
        std::string args;
        for (Value element : v.getElements())
          args += (args.empty() ? "" : ", ") + e.expr(element);
        e.define(v.getResult(), e.typeName(v.getType()) + "(" + args + ")");
        return success();
      })
      .Case([&](vector::BroadcastOp v) -> LogicalResult {
        if (isa<VectorType>(v.getSourceType()))
          return v.emitOpError("broadcast of a vector cannot be printed");
        e.define(v.getResult(), e.typeName(v.getResultVectorType()) + "(" +
                                    e.expr(v.getSource()) + ")");
        return success();
      })
      .Case([&](vector::SplatOp v) -> LogicalResult {
        e.define(v.getResult(), e.typeName(v.getType()) + "(" +
                                    e.expr(v.getInput()) + ")");
        return success();
      })
      .Case([&](vector::ExtractOp v) -> LogicalResult {
        if (v.hasDynamicPosition() || v.getStaticPosition().size() != 1 ||
            isa<VectorType>(v.getResult().getType()))
          return v.emitOpError("only a constant lane of a 1-D vector can be "
                               "printed");
        e.define(v.getResult(),
                 laneOf(e, v.getVector(), v.getStaticPosition()[0]));
        return success();
      })
      .Case([&](vector::ShuffleOp v) -> LogicalResult {
        int64_t first = v.getV1VectorType().getNumElements();
        std::string args;
        for (Attribute lane : v.getMask()) {
          int64_t i = llvm::cast<IntegerAttr>(lane).getInt();
          args += args.empty() ? "" : ", ";
          args += i < first ? laneOf(e, v.getV1(), i)
                            : laneOf(e, v.getV2(), i - first);
        }
        e.define(v.getResult(), e.typeName(v.getResultVectorType()) + "(" +
                                    args + ")");
        return success();
      })
      .Case([&](vector::ReductionOp v) -> LogicalResult {
        const char *sym = reductionSymbol(v.getKind());
        if (!sym || v.getAcc())
          return v.emitOpError("this reduction cannot be printed");
        int64_t n = v.getSourceVectorType().getNumElements();
        std::string sum;
        for (int64_t i = 0; i < n; ++i)
          sum += (i ? sym : "") + laneOf(e, v.getVector(), i);
        // The lanes combine in order x, y, z, w; narrow integers come back
        // from C's int promotion through the cast.
        e.define(v.getResult(),
                 "(" + e.typeName(v.getType()) + ")(" + sum + ")");
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

} // namespace enigma
