//===- GuardSelectedLoads.cpp - Loads that a select may discard -----------===//
//
// `enigma.where(0.0, A[i - 1], i > 0)` reads A[i - 1] in every thread and
// keeps the value only where the condition holds. On a GPU the discarded
// read is usually harmless; on the CPU (and on CUDA, for a wrapped-around
// unsigned index) it can fault. When a load's value reaches nothing but one
// arm of a select, the load is moved next to the select and its index is
// selected as well (element 0 where the arm is not taken), the way load_if
// is lowered: every result the program can observe stays the same, no
// branch is added, and the read always stays inside the buffer.
//
//===----------------------------------------------------------------------===//
#include "enigma/Dialect/Enigma/Transforms/Passes.h"

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "CheckRecord.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace enigma {
namespace {

/// Ops between a moved load and its select must not write memory or
/// synchronise, or the load would see another value after the move.
bool mayChangeMemory(Operation *op) {
  if (op->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
      op->getNumRegions() > 0)
    return !isMemoryEffectFree(op);
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return true; // unknown: assume it writes
  return effects.hasEffect<MemoryEffects::Write>() ||
         effects.hasEffect<MemoryEffects::Free>() ||
         effects.hasEffect<MemoryEffects::Allocate>();
}

/// A rank-1 load whose index can be replaced.
std::optional<unsigned> loadIndexOperand(Operation *op) {
  if (auto load = dyn_cast<memref::LoadOp>(op))
    return load.getMemRefType().getRank() == 1 ? std::optional<unsigned>(1)
                                               : std::nullopt;
  if (auto load = dyn_cast<vector::LoadOp>(op))
    return load.getMemRefType().getRank() == 1 ? std::optional<unsigned>(1)
                                               : std::nullopt;
  return std::nullopt;
}

/// The ops computing `value` that exist only for it: defined in `block`,
/// used once, pure or a load. Collected operands-first; empty when the
/// cone holds no load worth guarding.
void collectCone(Value value, Block *block, llvm::SetVector<Operation *> &cone,
                 unsigned depth) {
  Operation *op = value.getDefiningOp();
  if (!op || op->getBlock() != block || depth > 8 || !value.hasOneUse() ||
      op->getNumResults() != 1 || op->getNumRegions() > 0 ||
      op->hasTrait<OpTrait::ConstantLike>())
    return;
  // A simdgroup function or a fragment reads the operands of other lanes,
  // including lanes that do not take the arm: their loads must stay.
  if (op->hasTrait<Collective>() || llvm::isa<RankedTensorType>(value.getType()))
    return;
  if (loadIndexOperand(op)) {
    cone.insert(op);
    return;
  }
  if (!isMemoryEffectFree(op))
    return;
  for (Value operand : op->getOperands())
    collectCone(operand, block, cone, depth + 1);
  cone.insert(op);
}

/// Guards the loads feeding one arm of `select`; `taken` says when the arm
/// is used (true: the condition holds).
void guardArm(arith::SelectOp select, Value arm, bool taken) {
  Block *block = select->getBlock();
  llvm::SetVector<Operation *> cone;
  collectCone(arm, block, cone, 0);
  if (!llvm::any_of(cone, [](Operation *op) { return loadIndexOperand(op); }))
    return;
  // Pure ops of the cone that reach no load stay where they are.
  Operation *first = nullptr;
  for (Operation *op : cone)
    if (!first || op->isBeforeInBlock(first))
      first = op;
  // The checks of bounds-checked mode write only their own record.
  for (Operation *op = first; op != select.getOperation();
       op = op->getNextNode())
    if (!cone.contains(op) && !op->hasAttr(kCheckAttr) && mayChangeMemory(op))
      return;

  SmallVector<Operation *> ordered(cone.begin(), cone.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *op : ordered)
    op->moveBefore(select);

  OpBuilder builder(select);
  Value cond = select.getCondition();
  for (Operation *op : ordered) {
    std::optional<unsigned> at = loadIndexOperand(op);
    if (!at)
      continue;
    builder.setInsertionPoint(op);
    Value index = op->getOperand(*at);
    Value zero = builder.create<arith::ConstantIndexOp>(op->getLoc(), 0);
    Value safe = builder.create<arith::SelectOp>(
        op->getLoc(), cond, taken ? index : zero, taken ? zero : index);
    op->setOperand(*at, safe);
  }
}

struct GuardSelectedLoadsPass
    : public PassWrapper<GuardSelectedLoadsPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(GuardSelectedLoadsPass)

  StringRef getArgument() const override {
    return "enigma-guard-selected-loads";
  }
  StringRef getDescription() const override {
    return "Keep loads whose value only one arm of a select uses inside "
           "their buffer where that arm is not taken";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect>();
  }
  void runOnOperation() override {
    SmallVector<arith::SelectOp> selects;
    getOperation().walk([&](arith::SelectOp select) {
      if (select.getCondition().getType().isInteger(1))
        selects.push_back(select);
    });
    for (arith::SelectOp select : selects) {
      guardArm(select, select.getTrueValue(), /*taken=*/true);
      guardArm(select, select.getFalseValue(), /*taken=*/false);
    }
  }
};
} // namespace

std::unique_ptr<Pass> createGuardSelectedLoadsPass() {
  return std::make_unique<GuardSelectedLoadsPass>();
}

} // namespace enigma
