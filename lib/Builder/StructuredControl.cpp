//===- StructuredControl.cpp - KernelBuilder's for and if ----------------===//
//
// The scf.for and scf.if a trace opens and closes (beginFor / endFor,
// beginIf / beginElse / endIf), with the values they carry. The later
// forms (results for values first given inside a construct) are in
// ControlLate.cpp; loops over ranges and guarded memory in Control.cpp.
//
//===----------------------------------------------------------------------===//
#include "BuilderImpl.h"
#include "enigma/Builder/Control.h"

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"

using namespace mlir;

namespace enigma {

static void enterBlock(OpBuilder &b, Block *block) {
  if (!block->empty() && block->back().hasTrait<OpTrait::IsTerminator>())
    b.setInsertionPoint(block->getTerminator());
  else
    b.setInsertionPointToEnd(block);
}

std::vector<Value> KernelBuilder::beginFor(Value lo, Value hi, Value step,
                                           const std::vector<Value> &inits) {
  for (const Value *v : {&lo, &hi, &step}) {
    checkOwner(this, *v, "loop bound");
    if (!isInteger(v->dtype()))
      throw EnigmaError(std::string("loop bounds and step must be integers, "
                                    "got ") +
                        shortName(v->dtype()));
  }
  DType t = promote(promote(lo.dtype(), hi.dtype()), step.dtype());
  lo = cast(lo, t);
  hi = cast(hi, t);
  step = cast(step, t);
  SmallVector<mlir::Value> initValues;
  BuilderFrame frame;
  for (const Value &v : inits) {
    checkOwner(this, v, "loop-carried value");
    initValues.push_back(raw(v));
    frame.carried.push_back(v.dtype());
  }
  auto loop = impl->builder.create<scf::ForOp>(impl->location, raw(lo),
                                               raw(hi), raw(step), initValues);
  frame.op = loop;
  impl->frames.push_back(frame);
  enterBlock(impl->builder, loop.getBody());
  std::vector<Value> out{wrap(this, loop.getInductionVar(), t)};
  for (auto [arg, dtype] : llvm::zip(loop.getRegionIterArgs(), frame.carried))
    out.push_back(wrap(this, arg, dtype));
  return out;
}

static SmallVector<mlir::Value> yieldValues(KernelBuilder &kb,
                                            const std::vector<Value> &values,
                                            const std::vector<DType> &types,
                                            TypeRange resultTypes,
                                            const char *what) {
  SmallVector<mlir::Value> out = carriedValues(kb, values, types, what);
  for (auto [i, yielded] : llvm::enumerate(out))
    if (yielded.getType() != resultTypes[i])
      throw EnigmaError(std::string(what) + ": value " + std::to_string(i) +
                        " has " + std::to_string(values[i].lanes()) +
                        " lane(s), the construct carries " +
                        std::to_string(lanesOf(resultTypes[i])));
  return out;
}

std::vector<Value> KernelBuilder::endFor(const std::vector<Value> &next) {
  if (impl->frames.empty() || !isa<scf::ForOp>(impl->frames.back().op))
    throw EnigmaError("endFor without a matching beginFor");
  BuilderFrame frame = impl->frames.back();
  auto loop = llvm::cast<scf::ForOp>(frame.op);
  SmallVector<mlir::Value> values =
      yieldValues(*this, next, frame.carried, loop.getResultTypes(),
                  "end of loop body");
  impl->frames.pop_back();
  Block *body = loop.getBody();
  if (body->empty() || !body->back().hasTrait<OpTrait::IsTerminator>()) {
    impl->builder.setInsertionPointToEnd(body);
    impl->builder.create<scf::YieldOp>(impl->location, values);
  }
  impl->builder.setInsertionPointAfter(loop);
  std::vector<Value> out;
  for (auto [r, t] : llvm::zip(loop.getResults(), frame.carried))
    out.push_back(wrap(this, r, t));
  return out;
}

/// Opens an scf.if with results of `types` (dtypes `dtypes`) and enters its
/// then block.
static void openIf(KernelBuilder &kb, KernelBuilder::Impl &impl, Value cond,
                   TypeRange types, const std::vector<DType> &dtypes,
                   bool withElse) {
  checkOwner(&kb, cond, "if condition");
  requireCondition(cond, "an if condition");
  if (!types.empty())
    withElse = true; // both branches must yield
  auto ifOp =
      impl.builder.create<scf::IfOp>(impl.location, types, raw(cond), withElse);
  impl.frames.push_back(BuilderFrame{ifOp, dtypes, false});
  enterBlock(impl.builder, &ifOp.getThenRegion().front());
}

void KernelBuilder::beginIf(Value cond, const std::vector<DType> &resultTypes,
                            bool withElse) {
  SmallVector<Type> types;
  for (DType t : resultTypes)
    types.push_back(mlirType(&impl->context, t));
  openIf(*this, *impl, cond, types, resultTypes, withElse);
}

void KernelBuilder::beginIfCarrying(Value cond,
                                    const std::vector<Value> &carried) {
  SmallVector<Type> types;
  std::vector<DType> dtypes;
  for (const Value &v : carried) {
    checkOwner(this, v, "value carried by an if");
    types.push_back(raw(v).getType());
    dtypes.push_back(v.dtype());
  }
  openIf(*this, *impl, cond, types, dtypes, /*withElse=*/true);
}

void KernelBuilder::beginElse(const std::vector<Value> &thenValues) {
  if (impl->frames.empty() || !isa<scf::IfOp>(impl->frames.back().op) ||
      impl->frames.back().inElse)
    throw EnigmaError("else without a matching if");
  BuilderFrame &frame = impl->frames.back();
  auto ifOp = llvm::cast<scf::IfOp>(frame.op);
  if (ifOp.getElseRegion().empty())
    throw EnigmaError("this if was opened without an else branch");
  SmallVector<mlir::Value> values =
      yieldValues(*this, thenValues, frame.carried, ifOp.getResultTypes(),
                  "end of then branch");
  Block *thenBlock = &ifOp.getThenRegion().front();
  if (!frame.carried.empty()) {
    impl->builder.setInsertionPointToEnd(thenBlock);
    impl->builder.create<scf::YieldOp>(impl->location, values);
  }
  frame.inElse = true;
  enterBlock(impl->builder, &ifOp.getElseRegion().front());
}

std::vector<Value> KernelBuilder::endIf(const std::vector<Value> &lastValues) {
  if (impl->frames.empty() || !isa<scf::IfOp>(impl->frames.back().op))
    throw EnigmaError("endIf without a matching if");
  BuilderFrame frame = impl->frames.back();
  auto ifOp = llvm::cast<scf::IfOp>(frame.op);
  if (!frame.carried.empty() && !frame.inElse)
    throw EnigmaError("an if with results needs both branches");
  SmallVector<mlir::Value> values =
      yieldValues(*this, lastValues, frame.carried, ifOp.getResultTypes(),
                  "end of branch");
  impl->frames.pop_back();
  if (!frame.carried.empty()) {
    impl->builder.setInsertionPointToEnd(&ifOp.getElseRegion().front());
    impl->builder.create<scf::YieldOp>(impl->location, values);
  } else if (!ifOp.getElseRegion().empty() &&
             llvm::hasSingleElement(ifOp.getElseRegion().front())) {
    // An else holding only its terminator is dropped here: the canonicalizer
    // would drop it too, but each such change re-queues every enclosing op,
    // which costs the cube of the depth in deeply nested if_ blocks.
    ifOp.getElseRegion().front().erase();
  }
  impl->builder.setInsertionPointAfter(ifOp);
  std::vector<Value> out;
  for (auto [r, t] : llvm::zip(ifOp.getResults(), frame.carried))
    out.push_back(wrap(this, r, t));
  return out;
}

} // namespace enigma
