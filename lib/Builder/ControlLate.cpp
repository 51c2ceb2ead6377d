//===- ControlLate.cpp - Results for values first given inside a construct ===//
//
// The front end opens an scf.if / scf.for / scf.while carrying the values
// that exist when it starts. A variable first assigned inside (Python's
// `x = a` in both arms of an if, or a helper's early `return v`) is known
// only when its arm or body has been traced: the construct is then rebuilt
// with one more result per such value, its regions moved over unchanged.
//
//===----------------------------------------------------------------------===//
#include "enigma/Builder/Control.h"

#include "BuilderImpl.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <string>

using namespace mlir;

namespace enigma {

namespace {

Type lateType(KernelBuilder::Impl &impl, const LateType &t) {
  if (t.lanes < 1 || t.lanes > 4)
    throw EnigmaError("a late value has 1 to 4 lanes, got " +
                      std::to_string(t.lanes));
  return mlirType(&impl.context, t.dtype, t.lanes);
}

/// A zero of `type` at the builder's insertion point.
mlir::Value zeroOf(KernelBuilder::Impl &impl, Type type) {
  Type element = type;
  if (auto vec = llvm::dyn_cast<VectorType>(type))
    element = vec.getElementType();
  OpBuilder &b = impl.builder;
  TypedAttr scalar = llvm::isa<FloatType>(element)
                         ? TypedAttr(b.getFloatAttr(element, 0.0))
                         : TypedAttr(b.getIntegerAttr(element, 0));
  if (auto vec = llvm::dyn_cast<VectorType>(type))
    return b.create<arith::ConstantOp>(impl.location,
                                       DenseElementsAttr::get(vec, scalar));
  return b.create<arith::ConstantOp>(impl.location, scalar);
}

/// `value` converted to `t` at the builder's insertion point, or a zero of
/// `t` for an empty Value.
mlir::Value lateOperand(KernelBuilder &k, const Value &value,
                        const LateType &t, const char *what) {
  KernelBuilder::Impl &impl = k.internals();
  Type type = lateType(impl, t);
  if (!value.valid())
    return zeroOf(impl, type);
  checkOwner(&k, value, what);
  if (value.lanes() != t.lanes)
    throw EnigmaError(std::string(what) + ": a value of " +
                      std::to_string(value.lanes()) + " lane(s) for a result "
                      "of " + std::to_string(t.lanes));
  mlir::Value out = raw(k.cast(value, t.dtype));
  if (out.getType() != type)
    throw EnigmaError(std::string(what) + ": a fragment or matrix value "
                      "cannot be a late result");
  return out;
}

/// Appends `values` to the terminator of `block` (inserting conversions and
/// zeros before it): `make(i)` gives each.
template <typename Make>
void appendToTerminator(KernelBuilder::Impl &impl, Block *block, size_t n,
                        Make make) {
  OpBuilder::InsertionGuard guard(impl.builder);
  Operation *term = block->getTerminator();
  impl.builder.setInsertionPoint(term);
  SmallVector<mlir::Value> values;
  for (size_t i = 0; i < n; ++i)
    values.push_back(make(i));
  term->insertOperands(term->getNumOperands(), values);
}

std::vector<Value> wrapResults(KernelBuilder &k, Operation *op,
                               const std::vector<DType> &carried,
                               const std::vector<LateType> &types) {
  std::vector<Value> out;
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    DType dtype = i < carried.size() ? carried[i]
                                     : types[i - carried.size()].dtype;
    out.push_back(wrap(&k, op->getResult(i), dtype));
  }
  return out;
}

void checkSizes(size_t a, size_t b, const char *what) {
  if (a != b)
    throw EnigmaError(std::string(what) + ": expected one entry per late "
                      "value");
}

} // namespace

std::vector<Value> endIfLate(KernelBuilder &k, const std::vector<Value> &last,
                             const std::vector<Value> &thenLate,
                             const std::vector<Value> &elseLate,
                             const std::vector<LateType> &types) {
  checkSizes(thenLate.size(), types.size(), "endIfLate");
  checkSizes(elseLate.size(), types.size(), "endIfLate");
  KernelBuilder::Impl &impl = k.internals();
  if (impl.frames.empty() || !isa<scf::IfOp>(impl.frames.back().op) ||
      !impl.frames.back().inElse)
    throw EnigmaError("endIfLate outside the else branch of an if");
  if (types.empty())
    return k.endIf(last);
  BuilderFrame frame = impl.frames.back();
  auto old = cast<scf::IfOp>(frame.op);
  // The regular results first, as endIf yields them; the else block keeps
  // the builder's insertion point.
  Block *elseBlock = &old.getElseRegion().front();
  Block *thenBlock = &old.getThenRegion().front();
  if (!frame.carried.empty()) {
    if (last.size() != frame.carried.size())
      throw EnigmaError("end of branch: expected " +
                        std::to_string(frame.carried.size()) + " values");
    SmallVector<mlir::Value> values;
    for (auto [v, t] : llvm::zip(last, frame.carried)) {
      checkOwner(&k, v, "end of branch");
      values.push_back(raw(k.cast(v, t)));
    }
    impl.builder.setInsertionPointToEnd(elseBlock);
    impl.builder.create<scf::YieldOp>(impl.location, values);
  }
  appendToTerminator(impl, thenBlock, types.size(), [&](size_t i) {
    return lateOperand(k, thenLate[i], types[i], "then branch");
  });
  appendToTerminator(impl, elseBlock, types.size(), [&](size_t i) {
    return lateOperand(k, elseLate[i], types[i], "else branch");
  });
  SmallVector<Type> resultTypes(old.getResultTypes());
  for (const LateType &t : types)
    resultTypes.push_back(lateType(impl, t));
  impl.frames.pop_back();
  impl.builder.setInsertionPoint(old);
  auto rebuilt = impl.builder.create<scf::IfOp>(
      old.getLoc(), resultTypes, old.getCondition(), /*addThenBlock=*/false,
      /*addElseBlock=*/false);
  rebuilt.getThenRegion().takeBody(old.getThenRegion());
  rebuilt.getElseRegion().takeBody(old.getElseRegion());
  old->erase(); // its results were never handed out
  impl.builder.setInsertionPointAfter(rebuilt);
  return wrapResults(k, rebuilt, frame.carried, types);
}

std::vector<Value> endForLate(KernelBuilder &k, const std::vector<Value> &next,
                              const std::vector<Value> &late,
                              const std::vector<LateType> &types) {
  checkSizes(late.size(), types.size(), "endForLate");
  KernelBuilder::Impl &impl = k.internals();
  if (impl.frames.empty() || !isa<scf::ForOp>(impl.frames.back().op))
    throw EnigmaError("endForLate without a matching beginFor");
  if (types.empty())
    return k.endFor(next);
  BuilderFrame frame = impl.frames.back();
  auto old = cast<scf::ForOp>(frame.op);
  Block *body = old.getBody();
  // A loop opened without carried values got an empty scf.yield at once.
  if (!body->empty() && body->back().hasTrait<OpTrait::IsTerminator>())
    body->back().erase();
  if (next.size() != frame.carried.size())
    throw EnigmaError("end of loop body: expected " +
                      std::to_string(frame.carried.size()) + " values");
  SmallVector<mlir::Value> yielded;
  for (auto [v, t] : llvm::zip(next, frame.carried)) {
    checkOwner(&k, v, "end of loop body");
    yielded.push_back(raw(k.cast(v, t)));
  }
  for (size_t i = 0; i < types.size(); ++i) {
    if (!late[i].valid())
      throw EnigmaError("endForLate: a late value of a loop comes from its "
                        "body");
    yielded.push_back(lateOperand(k, late[i], types[i], "end of loop body"));
  }
  impl.builder.setInsertionPointToEnd(body);
  impl.builder.create<scf::YieldOp>(impl.location, yielded);
  // Zeros before the loop start the new carried values.
  impl.builder.setInsertionPoint(old);
  SmallVector<mlir::Value> inits(old.getInitArgs());
  for (const LateType &t : types)
    inits.push_back(zeroOf(impl, lateType(impl, t)));
  impl.frames.pop_back();
  auto rebuilt = impl.builder.create<scf::ForOp>(
      old.getLoc(), old.getLowerBound(), old.getUpperBound(), old.getStep(),
      inits);
  rebuilt.getRegion().takeBody(old.getRegion());
  for (const LateType &t : types)
    rebuilt.getBody()->addArgument(lateType(impl, t), old.getLoc());
  old->erase();
  impl.builder.setInsertionPointAfter(rebuilt);
  return wrapResults(k, rebuilt, frame.carried, types);
}

std::vector<Value> endWhileLate(KernelBuilder &k,
                                const std::vector<Value> &next,
                                const std::vector<Value> &fromCondition,
                                const std::vector<Value> &fromBody,
                                const std::vector<LateType> &types) {
  checkSizes(fromCondition.size(), types.size(), "endWhileLate");
  checkSizes(fromBody.size(), types.size(), "endWhileLate");
  KernelBuilder::Impl &impl = k.internals();
  if (impl.frames.empty() || !isa<scf::WhileOp>(impl.frames.back().op) ||
      !impl.frames.back().inElse)
    throw EnigmaError("endWhileLate without a matching whileCondition");
  if (types.empty())
    return endWhile(k, next);
  BuilderFrame frame = impl.frames.back();
  auto old = cast<scf::WhileOp>(frame.op);
  Block *before = &old.getBefore().front();
  Block *after = &old.getAfter().front();
  if (next.size() != frame.carried.size())
    throw EnigmaError("end of while body: expected " +
                      std::to_string(frame.carried.size()) + " values");
  SmallVector<mlir::Value> yielded;
  for (auto [v, t] : llvm::zip(next, frame.carried)) {
    checkOwner(&k, v, "end of while body");
    yielded.push_back(raw(k.cast(v, t)));
  }
  // New block arguments first: an absent late value forwards its own.
  SmallVector<BlockArgument> beforeArgs, afterArgs;
  for (const LateType &t : types) {
    beforeArgs.push_back(before->addArgument(lateType(impl, t), old.getLoc()));
    afterArgs.push_back(after->addArgument(lateType(impl, t), old.getLoc()));
  }
  for (size_t i = 0; i < types.size(); ++i)
    yielded.push_back(fromBody[i].valid()
                          ? lateOperand(k, fromBody[i], types[i],
                                        "end of while body")
                          : mlir::Value(afterArgs[i]));
  impl.builder.setInsertionPointToEnd(after);
  impl.builder.create<scf::YieldOp>(impl.location, yielded);
  appendToTerminator(impl, before, types.size(), [&](size_t i) {
    return fromCondition[i].valid()
               ? lateOperand(k, fromCondition[i], types[i], "while condition")
               : mlir::Value(beforeArgs[i]);
  });
  impl.builder.setInsertionPoint(old);
  SmallVector<mlir::Value> inits(old.getInits());
  SmallVector<Type> resultTypes(old.getResultTypes());
  for (const LateType &t : types) {
    inits.push_back(zeroOf(impl, lateType(impl, t)));
    resultTypes.push_back(lateType(impl, t));
  }
  impl.frames.pop_back();
  auto rebuilt =
      impl.builder.create<scf::WhileOp>(old.getLoc(), resultTypes, inits);
  rebuilt->setAttrs(old->getAttrs());
  rebuilt.getBefore().takeBody(old.getBefore());
  rebuilt.getAfter().takeBody(old.getAfter());
  old->erase();
  impl.builder.setInsertionPointAfter(rebuilt);
  return wrapResults(k, rebuilt, frame.carried, types);
}

} // namespace enigma
