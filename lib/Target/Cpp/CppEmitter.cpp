//===- CppEmitter.cpp - Host C++ for the CPU backend ----------------------===//
//
// A CPU kernel runs a range of threadgroups (enigma_cpu_abi.h). Inside a
// group, the threads of the group run one after another in a loop nest.
//
// Without barriers the whole body sits inside that loop nest: a plain loop
// the host compiler can vectorise. With barriers the body is split at each
// barrier into "runs" of barrier-free ops, each in its own thread loop, so
// every thread finishes one run before any starts the next: exactly the
// guarantee of threadgroup_barrier. Values that cross from one run to another
// live in per-thread arrays. Structured control flow that contains barriers
// is executed once per group (its condition and bounds are uniform, which the
// dialect's barrier verifier checks) with thread loops inside it.
//
// Simdgroup and quad functions (ops with the Collective trait) split the
// thread loops the same way: between two thread loops, emitCollective prints
// one call of enigma_cpu_simd.h that reads the operand's per-thread array and
// writes the result's, simdgroup by simdgroup. Their verifier only promises
// that the lanes of one *simdgroup* agree on control flow, so an scf.if /
// scf.for containing them whose condition or bounds may differ between
// simdgroups is run once per simdgroup ("simdgroup mode"): an outer loop over
// the group's simdgroups, the construct evaluated for the simdgroup's first
// lane, and every thread loop and collective inside restricted to that
// simdgroup's lanes. That order is a valid Metal schedule because no
// threadgroup barrier can sit inside such a construct.
//
//===----------------------------------------------------------------------===//
#include "CppEmitter.h"

#include "../CFamily/CFamilyEmitter.h"
#include "../CFamily/Families.h"
#include "../CFamily/KernelQueries.h"

#include "enigma/Dialect/Enigma/IR/Divergence.h"
#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace enigma {
namespace {

/// Upper bound on threads per threadgroup (Metal's limit), the size of
/// per-thread arrays.
constexpr unsigned kMaxThreads = 1024;

class CppEmitter : public CFamilyEmitter {
public:
  using CFamilyEmitter::CFamilyEmitter;

  Target target() const override { return Target::Cpp; }

protected:
  void emitFileHeader() override {
    os << "#include \"enigma_cpu_prelude.h\"\n\n";
  }

  LogicalResult emitKernelBody() override {
    barrierMode = needsGroupLevelSplit(kernel);
    emitFileScopeDeclarations(*this);
    os << "extern \"C\" void " << kernelFunctionName(kernel)
       << "(void *const *enigma_args, const EnigmaCpuLaunch *enigma_launch, "
          "uint64_t enigma_group_begin, uint64_t enigma_group_end) {\n";
    indentMore();
    Block &entry = kernel.getBody().front();
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
      std::string name = paramName(i);
      std::string type = paramElementType(i);
      if (kernel.isBufferParam(i)) {
        line() << type << " *ENIGMA_CPU_RESTRICT " << name << " = (" << type
               << " *)enigma_args[" << i << "];\n";
        alias(entry.getArgument(i), name);
      } else {
        line() << "const " << type << " " << name << " = *(const " << type
               << " *)enigma_args[" << i << "];\n";
        alias(entry.getArgument(i), scalarParamExpr(i, name));
      }
    }
    line() << "const uint64_t enigma_groups_xy = (uint64_t)enigma_launch->"
              "groups[0] * enigma_launch->groups[1];\n";
    line() << "for (uint64_t enigma_g = enigma_group_begin; enigma_g < "
              "enigma_group_end; ++enigma_g) {\n";
    indentMore();
    line() << "const uint enigma_gx = (uint)(enigma_g % "
              "enigma_launch->groups[0]);\n";
    line() << "const uint enigma_gy = (uint)((enigma_g / "
              "enigma_launch->groups[0]) % enigma_launch->groups[1]);\n";
    line() << "const uint enigma_gz = (uint)(enigma_g / enigma_groups_xy);\n";
    // The edge threadgroup is partial (dispatchThreads semantics).
    for (unsigned d = 0; d < 3; ++d)
      line() << "const uint enigma_n" << dimLetter(d)
             << " = enigma_min_u32(enigma_launch->threads[" << d
             << "], enigma_launch->grid[" << d << "] - enigma_g"
             << dimLetter(d) << " * enigma_launch->threads[" << d << "]);\n";
    // Threadgroup memory and other per-group state is declared once per
    // group, outside the thread loops.
    for (Operation &op : entry.without_terminator())
      if (op.hasTrait<GroupScope>() && failed(emitOp(&op)))
        return failure();
    line() << "const uint enigma_bx = enigma_gx * enigma_launch->threads[0];\n";
    LogicalResult result = success();
    if (!barrierMode) {
      openThreadLoop();
      for (Operation &op : entry.without_terminator())
        if (!op.hasTrait<GroupScope>() && failed(emitOp(&op)))
          result = failure();
      closeThreadLoop();
    } else {
      if (failed(planRuns(entry)))
        return failure();
      line() << "const uint enigma_nt = enigma_nx * enigma_ny * enigma_nz;\n";
      declareSpilledValues();
      result = emitGroupBlock(entry);
    }
    indentLess();
    line() << "}\n";
    indentLess();
    os << "}\n";
    return result;
  }

  std::string threadQuery(Operation *op) override {
    unsigned d = queryDim(op).value_or(0);
    std::string L(1, dimLetter(d)), D = std::to_string(d);
    std::string linear =
        "((enigma_lz * enigma_ny + enigma_ly) * enigma_nx + enigma_lx)";
    return llvm::TypeSwitch<Operation *, std::string>(op)
        .Case([&](ThreadPositionInGridOp) {
          if (d == 0)
            return std::string("enigma_tx");
          return "(enigma_g" + L + " * enigma_launch->threads[" + D +
                 "] + enigma_l" + L + ")";
        })
        .Case([&](ThreadPositionInThreadgroupOp) { return "enigma_l" + L; })
        .Case([&](ThreadgroupPositionInGridOp) { return "enigma_g" + L; })
        .Case([&](ThreadsPerThreadgroupOp) { return "enigma_n" + L; })
        .Case([&](ThreadsPerGridOp) {
          return "enigma_launch->grid[" + D + "]";
        })
        .Case([&](ThreadgroupsPerGridOp) {
          return "enigma_launch->groups[" + D + "]";
        })
        .Case([&](ThreadIndexInThreadgroupOp) { return linear; })
        .Case([&](ThreadIndexInSimdgroupOp) { return "(" + linear + " & 31u)"; })
        .Case([&](SimdgroupIndexInThreadgroupOp) {
          return "(" + linear + " >> 5)";
        })
        .Case([&](ThreadsPerSimdgroupOp) { return std::string("32u"); })
        .Case([&](SimdgroupsPerThreadgroupOp) {
          return std::string("((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5)");
        })
        .Default([](Operation *) { return std::string("<query>"); });
  }

  LogicalResult emitBarrier(Operation *op) override {
    // Reached only inside a thread loop, i.e. not split out by planRuns.
    return op->emitOpError("cannot be run by the CPU backend here");
  }

  // --- Per-thread values in barrier mode ----------------------------------

  bool foldIndexCasts() const override { return !barrierMode; }

  std::string expr(Value value) override {
    if (spilled.contains(value))
      return names.lookup(value) +
             (inThreadLoop ? "[enigma_lid]"
                           : (sgMode ? "[enigma_sg * 32u]" : "[0]"));
    return CFamilyEmitter::expr(value);
  }

  void define(Value value, const std::string &rhs) override {
    if (!spilled.contains(value))
      return CFamilyEmitter::define(value, rhs);
    line() << names.lookup(value) << "[enigma_lid] = " << rhs << ";\n";
  }

  void declareVariable(Value value, const std::string &init) override {
    if (!spilled.contains(value))
      return CFamilyEmitter::declareVariable(value, init);
    if (!init.empty())
      line() << names.lookup(value) << "[enigma_lid] = " << init << ";\n";
  }

private:
  void openThreadLoop() {
    if (sgMode) {
      // The lanes of simdgroup enigma_sg only.
      line() << "for (uint enigma_lid = enigma_sg * 32u, enigma_lend = "
                "enigma_min_u32(enigma_sg * 32u + 32u, enigma_nt); enigma_lid "
                "< enigma_lend; ++enigma_lid) {\n";
      indentMore();
      declareLanePosition("enigma_lid");
      inThreadLoop = true;
      return;
    }
    line() << "for (uint enigma_lz = 0; enigma_lz < enigma_nz; ++enigma_lz)\n";
    line() << "for (uint enigma_ly = 0; enigma_ly < enigma_ny; ++enigma_ly)\n";
    // The innermost loop counts the global x position so that indexing with
    // it is a plain unit-stride loop the host compiler can vectorise.
    line() << "for (uint enigma_tx = enigma_bx; enigma_tx < enigma_bx + "
              "enigma_nx; ++enigma_tx) {\n";
    indentMore();
    line() << "const uint enigma_lx = enigma_tx - enigma_bx;\n";
    if (barrierMode)
      line() << "const uint enigma_lid = (enigma_lz * enigma_ny + enigma_ly) "
                "* enigma_nx + enigma_lx;\n";
    inThreadLoop = true;
  }

  /// enigma_lx/ly/lz (and the grid x position enigma_tx) of the thread with
  /// linear index `lid`.
  void declareLanePosition(const char *lid) {
    line() << "const uint enigma_lx = " << lid << " % enigma_nx;\n";
    line() << "const uint enigma_ly = (" << lid
           << " / enigma_nx) % enigma_ny;\n";
    line() << "const uint enigma_lz = " << lid
           << " / (enigma_nx * enigma_ny);\n";
    line() << "const uint enigma_tx = enigma_bx + enigma_lx;\n";
  }

  /// Whether the condition or bounds of a group-level scf.if / scf.for may
  /// differ between the simdgroups of a threadgroup.
  static bool variesBetweenSimdgroups(Operation *op) {
    if (auto ifOp = dyn_cast<scf::IfOp>(op))
      return isThreadVarying(ifOp.getCondition(), SyncScope::Threadgroup);
    if (auto forOp = dyn_cast<scf::ForOp>(op))
      for (Value bound : {forOp.getLowerBound(), forOp.getUpperBound(),
                          forOp.getStep()})
        if (isThreadVarying(bound, SyncScope::Threadgroup))
          return true;
    return false;
  }

  /// Runs `op` (an scf.if / scf.for) once per simdgroup (see the file
  /// comment).
  LogicalResult emitPerSimdgroup(Operation *op) {
    line() << "for (uint enigma_sg = 0; enigma_sg < ((enigma_nt + 31u) >> 5); "
              "++enigma_sg) {\n";
    indentMore();
    declareLanePosition("(enigma_sg * 32u)");
    sgMode = true;
    LogicalResult result = isa<scf::ForOp>(op)
                               ? emitGroupFor(cast<scf::ForOp>(op))
                               : emitGroupIf(cast<scf::IfOp>(op));
    sgMode = false;
    indentLess();
    line() << "}\n";
    return result;
  }

  void closeThreadLoop() {
    inThreadLoop = false;
    indentLess();
    line() << "}\n";
  }

  /// Barriers and collectives split the thread loops.
  static bool isSplitPoint(Operation *op) {
    return isa<BarrierOp, SimdBarrierOp>(op) || op->hasTrait<Collective>();
  }

  static bool needsGroupLevelSplit(Operation *root) {
    bool found = false;
    root->walk([&](Operation *op) {
      if (isSplitPoint(op)) {
        found = true;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return found;
  }

  static bool isGroupLevel(Operation *op) {
    return isSplitPoint(op) ||
           (op->getNumRegions() > 0 && needsGroupLevelSplit(op));
  }

  /// Numbers the runs of every group-level block and marks the values that
  /// are used outside the run that defines them.
  LogicalResult planRuns(Block &block) {
    int run = nextRun++;
    for (Operation &op : block.without_terminator()) {
      if (op.hasTrait<GroupScope>()) {
        runOf[&op] = kGroupScope;
        continue;
      }
      if (!isGroupLevel(&op)) {
        runOf[&op] = run;
        continue;
      }
      runOf[&op] = -1;
      run = nextRun++;
      if (isSplitPoint(&op)) {
        for (Value result : op.getResults())
          markSpilled(result);
        continue;
      }
      if (!isa<scf::ForOp, scf::IfOp>(op))
        return op.emitOpError("contains a barrier; the CPU backend runs "
                              "barriers only at the top level of a kernel or "
                              "inside enigma.range / for_range loops and "
                              "enigma.if_ blocks with uniform bounds and "
                              "conditions (not in enigma.while_)");
      for (Region &region : op.getRegions())
        for (Block &nested : region)
          if (failed(planRuns(nested)))
            return failure();
      // Carried values and results are per thread.
      for (Value result : op.getResults())
        markSpilled(result);
      if (auto forOp = dyn_cast<scf::ForOp>(op))
        for (auto [arg, result] :
             llvm::zip(forOp.getRegionIterArgs(), forOp.getResults()))
          spillAlias.emplace_back(arg, result);
    }
    for (Operation &op : block.without_terminator()) {
      if (runOf[&op] < 0)
        continue;
      for (Value result : op.getResults()) {
        if (isa<arith::ConstantOp>(op) || !metalQueryName(&op).empty())
          continue; // printed inline wherever used
        if (llvm::isa<AsyncEventType>(result.getType()))
          continue; // carries nothing on the CPU (EmitAsyncCopy.cpp)
        for (Operation *user : result.getUsers()) {
          Operation *ancestor = block.findAncestorOpInBlock(*user);
          if (!ancestor || ancestor->hasTrait<OpTrait::IsTerminator>() ||
              runOf.lookup(ancestor) != runOf[&op]) {
            markSpilled(result);
            break;
          }
        }
      }
    }
    return success();
  }

  void markSpilled(Value value) {
    if (spilled.insert(value).second)
      spilledOrder.push_back(value);
  }

  void declareSpilledValues() {
    for (Value v : spilledOrder) {
      std::string name = freshName(v);
      if (auto mem = llvm::dyn_cast<MemRefType>(v.getType())) {
        // A register array live across a split: one array per thread.
        line() << typeName(mem.getElementType()) << " " << name << "["
               << kMaxThreads << "][" << mem.getNumElements() << "];\n";
        continue;
      }
      line() << typeName(v.getType()) << " " << name << "[" << kMaxThreads
             << "];\n";
    }
    for (auto [arg, result] : spillAlias) {
      names[arg] = names.lookup(result);
      spilled.insert(arg);
    }
  }

  LogicalResult emitRun(std::vector<Operation *> &run) {
    bool printsSomething = llvm::any_of(run, [](Operation *op) {
      return !isa<arith::ConstantOp>(op) && metalQueryName(op).empty();
    });
    if (printsSomething)
      openThreadLoop();
    for (Operation *op : run)
      if (failed(emitOp(op)))
        return failure();
    if (printsSomething)
      closeThreadLoop();
    run.clear();
    return success();
  }

  LogicalResult emitGroupBlock(Block &block) {
    std::vector<Operation *> run;
    for (Operation &op : block.without_terminator()) {
      if (runOf[&op] == kGroupScope)
        continue;
      if (runOf[&op] >= 0) {
        run.push_back(&op);
        continue;
      }
      if (failed(emitRun(run)))
        return failure();
      if (auto b = dyn_cast<BarrierOp>(op)) {
        line() << "// threadgroup_barrier(" << metalMemFlags(b.getFlags())
               << ")\n";
      } else if (auto b = dyn_cast<SimdBarrierOp>(op)) {
        line() << "// simdgroup_barrier(" << metalMemFlags(b.getFlags())
               << ")\n";
      } else if (op.hasTrait<Collective>()) {
        if (failed(emitCollective(&op)))
          return failure();
      } else if (!sgMode && variesBetweenSimdgroups(&op)) {
        if (failed(emitPerSimdgroup(&op)))
          return failure();
      } else if (auto forOp = dyn_cast<scf::ForOp>(op)) {
        if (failed(emitGroupFor(forOp)))
          return failure();
      } else if (failed(emitGroupIf(cast<scf::IfOp>(op)))) {
        return failure();
      }
    }
    return emitRun(run);
  }

  /// Prints a collective op between thread loops: it reads its operands
  /// from every thread's per-thread array and writes its per-thread result.
  LogicalResult emitCollective(Operation *op) {
    StringRef fn = op->getName().stripDialect();
    if (isa<AsyncCopyWaitOp>(op)) {
      // The lanes copied their shares in the thread loops before this split.
      line() << "// async_copy_wait: every lane's copies are done\n";
      return success();
    }
    if (isa<SimdgroupMatrixLoadOp, SimdgroupMatrixStoreOp,
            SimdgroupMultiplyAccumulateOp, MakeFilledSimdgroupMatrixOp>(op))
      return emitSimdgroupMatrix(op);
    if (op->getNumResults() != 1 || op->getNumOperands() < 1 ||
        !(fn.starts_with("simd_") || fn.starts_with("quad_")))
      return op->emitOpError("is not supported by the CPU backend yet");
    // Signed min / max read the unsigned storage as the signed type.
    bool asSigned = op->hasAttr("is_signed");
    Value x = op->getOperand(0), r = op->getResult(0);
    auto view = [&](const std::string &array, bool isConst) {
      if (!asSigned)
        return array;
      return "(" + std::string(isConst ? "const " : "") +
             typeName(x.getType(), true) + " *)" + array;
    };
    std::string call = "enigma_cpu_" + fn.str() + "(" +
                       view(perThreadArray(x), true);
    if (op->getNumOperands() > 1) {
      Value lane = op->getOperand(1);
      Operation *def = lane.getDefiningOp();
      bool uniform = !spilled.contains(lane) &&
                     ((def && isa<arith::ConstantOp>(def)) ||
                      (!def && llvm::isa<BlockArgument>(lane)));
      call += ", " + (uniform ? "enigma_cpu::Uniform{" + expr(lane) + "}"
                              : perThreadArray(lane));
    }
    call += ", " + view(names.lookup(r), false) + ", enigma_nt, " +
            (sgMode ? "enigma_sg, enigma_sg + 1u"
                    : "0u, (enigma_nt + 31u) >> 5") +
            ");\n";
    line() << call;
    return success();
  }

  /// A simdgroup matrix op: a call of enigma_cpu_simd.h over the per-thread
  /// float2 / half2 arrays (lane l holds elements 2l, 2l+1 of the tile),
  /// simdgroup by simdgroup. Offsets and row strides are read from the
  /// first lane of each simdgroup.
  LogicalResult emitSimdgroupMatrix(Operation *op) {
    std::string groups = sgMode ? "enigma_nt, enigma_sg, enigma_sg + 1u"
                                : "enigma_nt, 0u, (enigma_nt + 31u) >> 5";
    std::string fn = "enigma_cpu::" + op->getName().stripDialect().str();
    auto uniformOrArray = [&](Value v) {
      Operation *def = v.getDefiningOp();
      bool uniform = !spilled.contains(v) &&
                     ((def && isa<arith::ConstantOp>(def)) ||
                      (!def && llvm::isa<BlockArgument>(v)));
      return uniform ? "enigma_cpu::Uniform{" + expr(v) + "}"
                     : perThreadArray(v);
    };
    std::string args;
    if (auto load = dyn_cast<SimdgroupMatrixLoadOp>(op)) {
      if (load.getTranspose())
        fn += "<true>";
      args = expr(load.getMemref()) + ", " + uniformOrArray(load.getOffset()) +
             ", " + uniformOrArray(load.getElementsPerRow()) + ", " +
             names.lookup(load.getResult());
    } else if (auto store = dyn_cast<SimdgroupMatrixStoreOp>(op)) {
      args = perThreadArray(store.getValue()) + ", " +
             expr(store.getMemref()) + ", " +
             uniformOrArray(store.getOffset()) + ", " +
             uniformOrArray(store.getElementsPerRow());
    } else if (auto mma = dyn_cast<SimdgroupMultiplyAccumulateOp>(op)) {
      args = perThreadArray(mma.getA()) + ", " + perThreadArray(mma.getB()) +
             ", " + perThreadArray(mma.getC()) + ", " +
             names.lookup(mma.getResult());
    } else {
      auto fill = cast<MakeFilledSimdgroupMatrixOp>(op);
      args = perThreadArray(fill.getValue()) + ", " +
             names.lookup(fill.getResult());
    }
    line() << fn << "(" << args << ", " << groups << ");\n";
    return success();
  }

  /// The name of a per-thread array holding `v`: its own when it is one,
  /// else a temporary filled by a thread loop (constants, thread queries,
  /// parameters).
  std::string perThreadArray(Value v) {
    if (spilled.contains(v))
      return names.lookup(v);
    std::string temp = "t" + std::to_string(nextId++);
    line() << typeName(v.getType()) << " " << temp << "[" << kMaxThreads
           << "];\n";
    openThreadLoop();
    line() << temp << "[enigma_lid] = " << expr(v) << ";\n";
    closeThreadLoop();
    return temp;
  }

  /// Copies `values` into the per-thread variables `targets`, thread by
  /// thread, reading all before writing any.
  void copyPerThread(ValueRange targets, ValueRange values) {
    openThreadLoop();
    std::vector<std::string> temps;
    for (Value v : values) {
      std::string temp = "t" + std::to_string(nextId++);
      line() << typeName(v.getType()) << " " << temp << " = " << expr(v)
             << ";\n";
      temps.push_back(temp);
    }
    for (auto [target, temp] : llvm::zip(targets, temps))
      line() << names.lookup(target) << "[enigma_lid] = " << temp << ";\n";
    closeThreadLoop();
  }

  LogicalResult emitGroupFor(scf::ForOp op) {
    if (op.getNumResults())
      copyPerThread(op.getResults(), op.getInitArgs());
    Value iv = op.getInductionVar();
    std::string type = typeName(iv.getType());
    std::string signedType = typeName(iv.getType(), true);
    std::string lb = expr(op.getLowerBound()), ub = expr(op.getUpperBound()),
                step = expr(op.getStep());
    std::string name = freshName(iv);
    line() << "for (" << type << " " << name << " = " << lb << "; ("
           << signedType << ")" << name << " < (" << signedType << ")" << ub
           << "; " << name << " += " << step << ") {\n";
    indentMore();
    if (failed(emitGroupBlock(*op.getBody())))
      return failure();
    auto yield = cast<scf::YieldOp>(op.getBody()->getTerminator());
    if (!yield.getOperands().empty())
      copyPerThread(op.getResults(), yield.getOperands());
    indentLess();
    line() << "}\n";
    return success();
  }

  LogicalResult emitGroupIf(scf::IfOp op) {
    return emitIfArms(
        op, [&](Block &block) { return emitGroupBlock(block); },
        [&](ValueRange results, ValueRange values) {
          copyPerThread(results, values);
        });
  }

  bool barrierMode = false;
  bool inThreadLoop = false;
  bool sgMode = false; // inside a per-simdgroup construct (enigma_sg)
  static constexpr int kGroupScope = -2; // printed before the thread loops
  int nextRun = 0;
  llvm::DenseMap<Operation *, int> runOf; // -1: executed once per group
  llvm::DenseSet<Value> spilled;
  std::vector<Value> spilledOrder;
  std::vector<std::pair<Value, Value>> spillAlias; // iter arg -> loop result
};

} // namespace

LogicalResult emitCpp(KernelOp kernel, raw_ostream &os) {
  return CppEmitter(kernel, os).emit();
}

} // namespace enigma
