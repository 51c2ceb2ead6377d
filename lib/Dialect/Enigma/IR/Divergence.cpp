//===- Divergence.cpp -----------------------------------------------------===//
#include "enigma/Dialect/Enigma/IR/Divergence.h"
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaThreadLoopOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/DenseSet.h"

using namespace mlir;

namespace enigma {

static bool isVaryingQuery(Operation *op, SyncScope scope) {
  if (isa<ThreadPositionInGridOp, ThreadPositionInThreadgroupOp,
          ThreadIndexInThreadgroupOp, ThreadIndexInSimdgroupOp>(op))
    return true;
  // The simdgroup index is shared by the lanes of one simdgroup.
  return scope != SyncScope::Simdgroup &&
         isa<SimdgroupIndexInThreadgroupOp>(op);
}

/// `simdgroup index / 4k` (through casts): the same in the four simdgroups
/// of a warpgroup.
static bool isWarpgroupQuotient(Operation *op) {
  auto div = dyn_cast<arith::DivUIOp>(op);
  if (!div)
    return false;
  auto divisor = div.getRhs().getDefiningOp<arith::ConstantOp>();
  auto value = divisor ? llvm::dyn_cast<IntegerAttr>(divisor.getValue())
                       : IntegerAttr();
  if (!value || value.getInt() <= 0 || value.getInt() % 4)
    return false;
  Value index = div.getLhs();
  while (Operation *def = index.getDefiningOp()) {
    if (isa<SimdgroupIndexInThreadgroupOp>(def))
      return true;
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtUIOp>(def))
      return false;
    index = def->getOperand(0);
  }
  return false;
}

/// Scans give each lane the combination of the lanes below it.
static bool isScan(Operation *op) {
  return isa<SimdPrefixExclusiveSumOp, SimdPrefixInclusiveSumOp,
             SimdPrefixExclusiveProductOp, SimdPrefixInclusiveProductOp,
             QuadPrefixExclusiveSumOp, QuadPrefixInclusiveSumOp,
             QuadPrefixExclusiveProductOp, QuadPrefixInclusiveProductOp>(op);
}

/// Sums, products and xors depend on how many lanes a group has, even of a
/// uniform operand; a partial threadgroup's last simdgroup (and a partial
/// simdgroup's last quad) has fewer. Min, max, and, or do not.
static bool countsLanes(Operation *op, SyncScope scope) {
  if (isa<QuadSumOp, QuadProductOp, QuadXorOp>(op))
    return true;
  return scope != SyncScope::Simdgroup &&
         isa<SimdSumOp, SimdProductOp, SimdXorOp>(op);
}

/// Whether the kernel around `load` changes the memory it reads atomically:
/// then threads racing with those writes may read different values.
static bool writtenAtomically(AtomicLoadOp load) {
  auto kernel = load->getParentOfType<KernelOp>();
  if (!kernel)
    return false;
  Value memory = load.getMemref();
  return kernel
      ->walk([&](Operation *op) {
        Value written;
        if (auto rmw = dyn_cast<AtomicRMWOp>(op))
          written = rmw.getMemref();
        else if (auto store = dyn_cast<AtomicStoreOp>(op))
          written = store.getMemref();
        else if (auto cas = dyn_cast<AtomicCompareExchangeOp>(op))
          written = cas.getMemref();
        return written == memory ? WalkResult::interrupt()
                                 : WalkResult::advance();
      })
      .wasInterrupted();
}

/// The ops that use a thread's private array (a register tensor), through
/// views of it: what they store decides what its loads give.
static void collectPrivateUsers(Value memory, SmallVectorImpl<Operation *> &out,
                                llvm::DenseSet<Value> &seen) {
  if (!seen.insert(memory).second)
    return;
  for (Operation *user : memory.getUsers()) {
    out.push_back(user);
    for (Value result : user->getResults())
      if (llvm::isa<BaseMemRefType>(result.getType()))
        collectPrivateUsers(result, out, seen);
  }
}

/// After enigma-serialize-threads a value reaches a thread loop through a
/// per-thread array indexed by the thread, which the use-def walk would take
/// as varying. The pass runs on verified kernels and keeps what was uniform
/// uniform, so checks there have nothing left to find.
static bool inSerializedKernel(Operation *op) {
  auto kernel = op ? op->getParentOfType<KernelOp>() : KernelOp();
  return kernel && kernel->hasAttr(kSerializedThreadsAttr);
}

Operation *findVaryingSource(Value root, SyncScope scope) {
  if (inSerializedKernel(root.getParentBlock()->getParentOp()))
    return nullptr;
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
    if (scope == SyncScope::Warpgroup && isWarpgroupQuotient(def))
      continue;
    if (isVaryingQuery(def, scope))
      return def;
    // Each thread gets its own old value, its own success, its own prefix.
    if (isa<AtomicRMWOp, AtomicCompareExchangeOp>(def) || isScan(def) ||
        countsLanes(def, scope))
      return def;
    if (auto load = dyn_cast<AtomicLoadOp>(def))
      if (writtenAtomically(load))
        return def;
    if (isa<memref::AllocaOp>(def)) {
      // A thread's own array: its loads give what the thread stored.
      SmallVector<Operation *> users;
      llvm::DenseSet<Value> views;
      collectPrivateUsers(v, users, views);
      for (Operation *user : users)
        work.append(user->operand_begin(), user->operand_end());
    }
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
  return nullptr;
}

bool isThreadVarying(Value value, SyncScope scope) {
  return findVaryingSource(value, scope) != nullptr;
}

/// The values that decide where control flow inside `owner` goes.
static SmallVector<Value, 3> controlValues(Operation *owner) {
  if (auto ifOp = dyn_cast<scf::IfOp>(owner))
    return {ifOp.getCondition()};
  if (auto forOp = dyn_cast<scf::ForOp>(owner))
    return {forOp.getLowerBound(), forOp.getUpperBound(), forOp.getStep()};
  if (auto whileOp = dyn_cast<scf::WhileOp>(owner))
    return {whileOp.getConditionOp().getCondition()};
  return {};
}

Operation *findDivergentRegionOwner(Operation *op, SyncScope scope) {
  if (inSerializedKernel(op))
    return nullptr;
  for (Operation *p = op->getParentOp(); p && !isa<KernelOp>(p);
       p = p->getParentOp())
    for (Value control : controlValues(p))
      if (isThreadVarying(control, scope))
        return p;
  return nullptr;
}

/// Why the result of `source` (not a thread query) differs between threads,
/// in the words of the Python and C++ front ends.
static std::string whyVarying(Operation *source) {
  std::string name = source->getName().getStringRef().str();
  if (auto rmw = dyn_cast<AtomicRMWOp>(source)) {
    std::string kind = stringifyAtomicKind(rmw.getKind()).str();
    if (kind == "umin" || kind == "umax") // unsigned memory, same function
      kind = kind.substr(1);
    name = "enigma.atomic_" +
           (kind == "exchange" ? kind : "fetch_" + kind);
    return name + "() gives each thread a different old value";
  }
  if (isa<AtomicCompareExchangeOp>(source))
    return name + "() succeeds in some threads and fails in others, and each "
                  "sees a different value in memory";
  if (isa<AtomicLoadOp>(source))
    return name + "() reads memory that the kernel changes atomically, so "
                  "threads may read different values (after a barrier, read "
                  "it with a plain load)";
  if (isScan(source))
    return name + "() gives each lane the combination of the lanes below it";
  bool quad = name.rfind("enigma.quad_", 0) == 0;
  return name + "() depends on how many lanes its " +
         (quad ? "quad" : "simdgroup") + " has, and the last " +
         (quad ? "quad of a partial simdgroup" :
                 "simdgroup of a partial threadgroup") +
         " has fewer";
}

void attachDivergenceNotes(InFlightDiagnostic &diag, Operation *owner,
                           SyncScope scope) {
  diag.attachNote(owner->getLoc()) << "divergent control flow is here";
  for (Value control : controlValues(owner)) {
    Operation *source = findVaryingSource(control, scope);
    if (!source)
      continue;
    if (!isVaryingQuery(source, scope))
      diag.attachNote(source->getLoc())
          << "its condition differs between threads: "
          << whyVarying(source);
    return;
  }
}

} // namespace enigma
