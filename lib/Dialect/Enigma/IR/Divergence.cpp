//===- Divergence.cpp -----------------------------------------------------===//
#include "enigma/Dialect/Enigma/IR/Divergence.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaThreadLoopOps.h"

#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace enigma {

static bool isVaryingQuery(Operation *op, SyncScope scope) {
  if (isa<ThreadPositionInGridOp, ThreadPositionInThreadgroupOp,
          ThreadIndexInThreadgroupOp, ThreadIndexInSimdgroupOp>(op))
    return true;
  // The simdgroup index is shared by the lanes of one simdgroup.
  return scope == SyncScope::Threadgroup &&
         isa<SimdgroupIndexInThreadgroupOp>(op);
}

/// After enigma-serialize-threads a value reaches a thread loop through a
/// per-thread array indexed by the thread, which the use-def walk would take
/// as varying. The pass runs on verified kernels and keeps what was uniform
/// uniform, so checks there have nothing left to find.
static bool inSerializedKernel(Operation *op) {
  auto kernel = op ? op->getParentOfType<KernelOp>() : KernelOp();
  return kernel && kernel->hasAttr(kSerializedThreadsAttr);
}

bool isThreadVarying(Value root, SyncScope scope) {
  if (inSerializedKernel(root.getParentBlock()->getParentOp()))
    return false;
  llvm::DenseSet<Value> seen;
  SmallVector<Value> work{root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (auto loop = dyn_cast<scf::ForOp>(owner)) {
        if (arg == loop.getInductionVar()) {
          work.append({loop.getLowerBound(), loop.getUpperBound(),
                       loop.getStep()});
        } else {
          // Carried value: its initial value and what each iteration yields.
          unsigned i = arg.getArgNumber() - 1;
          work.push_back(loop.getInitArgs()[i]);
          work.push_back(loop.getBody()->getTerminator()->getOperand(i));
        }
      } else if (auto loop = dyn_cast<scf::WhileOp>(owner)) {
        unsigned i = arg.getArgNumber();
        if (arg.getOwner() == loop.getBeforeBody()) {
          // Before block: the initial value, then what the body yields.
          work.push_back(loop.getInits()[i]);
          work.push_back(loop.getYieldOp().getOperand(i));
        } else {
          // After block: what the condition forwards.
          work.push_back(loop.getConditionOp().getArgs()[i]);
        }
      } else if (auto pipeline = dyn_cast<PipelineOp>(owner)) {
        // (index, slot[, carried...]): the index follows the bounds, the
        // slot is the ring's, carried values as a loop's.
        unsigned i = arg.getArgNumber();
        if (i == 0)
          work.append({pipeline.getLower(), pipeline.getUpper()});
        else if (i >= 2) {
          work.push_back(pipeline.getInits()[i - 2]);
          work.push_back(
              pipeline.getConsumer().front().getTerminator()->getOperand(i - 2));
        }
      }
      continue; // kernel parameters are uniform
    }
    Operation *def = v.getDefiningOp();
    if (isVaryingQuery(def, scope))
      return true;
    if (auto forOp = dyn_cast<scf::ForOp>(def)) {
      unsigned i = llvm::cast<OpResult>(v).getResultNumber();
      work.push_back(forOp.getInitArgs()[i]);
      work.push_back(forOp.getBody()->getTerminator()->getOperand(i));
      work.append({forOp.getLowerBound(), forOp.getUpperBound(),
                   forOp.getStep()});
      continue;
    }
    if (auto whileOp = dyn_cast<scf::WhileOp>(def)) {
      // The value forwarded when the loop exits, after a number of
      // iterations that the condition decides.
      unsigned i = llvm::cast<OpResult>(v).getResultNumber();
      scf::ConditionOp cond = whileOp.getConditionOp();
      work.push_back(cond.getArgs()[i]);
      work.push_back(cond.getCondition());
      continue;
    }
    if (auto pipeline = dyn_cast<PipelineOp>(def)) {
      unsigned i = llvm::cast<OpResult>(v).getResultNumber();
      work.push_back(pipeline.getInits()[i]);
      work.push_back(
          pipeline.getConsumer().front().getTerminator()->getOperand(i));
      continue;
    }
    if (auto ifOp = dyn_cast<scf::IfOp>(def)) {
      unsigned i = llvm::cast<OpResult>(v).getResultNumber();
      work.push_back(ifOp.getCondition());
      work.push_back(ifOp.thenYield().getOperand(i));
      if (!ifOp.getElseRegion().empty())
        work.push_back(ifOp.elseYield().getOperand(i));
      continue;
    }
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  return false;
}

Operation *findDivergentRegionOwner(Operation *op, SyncScope scope) {
  if (inSerializedKernel(op))
    return nullptr;
  for (Operation *p = op->getParentOp(); p && !isa<KernelOp>(p);
       p = p->getParentOp()) {
    if (auto ifOp = dyn_cast<scf::IfOp>(p)) {
      if (isThreadVarying(ifOp.getCondition(), scope))
        return p;
    } else if (auto forOp = dyn_cast<scf::ForOp>(p)) {
      for (Value bound : {forOp.getLowerBound(), forOp.getUpperBound(),
                          forOp.getStep()})
        if (isThreadVarying(bound, scope))
          return p;
    } else if (auto whileOp = dyn_cast<scf::WhileOp>(p)) {
      if (isThreadVarying(whileOp.getConditionOp().getCondition(), scope))
        return p;
    }
  }
  return nullptr;
}

} // namespace enigma
