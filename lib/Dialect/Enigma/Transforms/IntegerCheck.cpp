//===- IntegerCheck.cpp - Integer overflow in bounds-checked mode ---------===//
//
// Metal's integers wrap, and thread positions are unsigned, so `x - 2` in
// thread 0 is 4294967294 and a clamp of it reads the far edge. Rust's
// debug builds stop at such an operation; bounds-checked mode reports it:
// after each `+`, `-`, `*` or negation the user wrote (the builder marks
// them with kOverflowCheckAttr and its type's signedness) a test of the
// operands records the first one whose exact result does not fit. The
// result itself still wraps, so the kernel computes what Metal computes.
//
// Arithmetic whose value reaches only one arm of a select, through
// single-use pure ops and loads (`where(0.0, A[x - 1], x > 0)`), is
// checked only where that arm is taken: the program never uses the wrapped
// value elsewhere, as enigma-guard-selected-loads relies on too.
//
// The pass runs before the optimisation pipeline, on the ops as traced
// (canonicalisation would fold and rebuild them without their marks).
//
//===----------------------------------------------------------------------===//
#include "enigma/Dialect/Enigma/Transforms/Passes.h"

#include "CheckRecord.h"

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"
#include "enigma/Dialect/Enigma/Transforms/MemoryAccess.h"
#include "enigma/Support/BoundsRecord.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/IR/TypeUtilities.h"
#include "mlir/Pass/Pass.h"

#include <limits>

using namespace mlir;

namespace enigma {
namespace {
namespace rec = bounds_record;

constexpr const char *kCheckedIntegersAttr = "enigma.checked_integers";

enum class ArithKind { Add, Sub, Mul, Neg };

/// The select arm that alone uses a value, and whether the arm is taken
/// when the condition holds.
struct Guard {
  arith::SelectOp select;
  bool taken;
};

/// The select whose one arm is the only consumer of `value`, following
/// single uses through pure ops and loads; nothing when the value may be
/// observed otherwise.
std::optional<Guard> selectGuard(Value value) {
  for (unsigned depth = 0; depth < 16; ++depth) {
    if (!value.hasOneUse())
      return std::nullopt;
    OpOperand &use = *value.getUses().begin();
    Operation *user = use.getOwner();
    if (auto select = dyn_cast<arith::SelectOp>(user)) {
      if (use.getOperandNumber() == 0)
        return std::nullopt; // the condition itself
      return Guard{select, use.getOperandNumber() == 1};
    }
    // A simdgroup function hands the value to other lanes.
    if (user->getNumResults() != 1 || user->getNumRegions() > 0 ||
        user->hasTrait<Collective>())
      return std::nullopt;
    if (!isa<memref::LoadOp, vector::LoadOp>(user) &&
        !isMemoryEffectFree(user))
      return std::nullopt;
    value = user->getResult(0);
  }
  return std::nullopt;
}

class OverflowChecker {
public:
  OverflowChecker(KernelOp kernel)
      : kernel(kernel), b(kernel.getContext()), checks(kernel) {}

  void run() {
    struct Marked {
      Operation *op;
      std::string mark;
      std::optional<Guard> guard;
    };
    SmallVector<Marked> marked;
    kernel.walk([&](Operation *op) {
      auto mark = op->getAttrOfType<StringAttr>(kOverflowCheckAttr);
      if (!mark)
        return;
      op->removeAttr(kOverflowCheckAttr);
      // Fragment arithmetic (tensors held by a simdgroup, such as a
      // gather's indices) is not checked, as the fragment ops are not.
      if (isa<arith::AddIOp, arith::SubIOp, arith::MulIOp>(op) &&
          !inProducerRegion(op) &&
          !llvm::isa<RankedTensorType>(op->getResult(0).getType()))
        marked.push_back({op, mark.getValue().str(),
                          selectGuard(op->getResult(0))});
    });
    for (Marked &m : marked)
      instrument(m.op, m.mark, m.guard);
  }

private:
  /// A pipeline's producer region holds only copies and arithmetic (a
  /// producer warpgroup runs it on CUDA): no check can go there.
  static bool inProducerRegion(Operation *op) {
    for (Region *region = op->getParentRegion(); region;
         region = region->getParentRegion()) {
      Operation *parent = region->getParentOp();
      if (auto pipeline = dyn_cast<PipelineOp>(parent))
        if (region == &pipeline.getProducer())
          return true;
      if (auto roles = dyn_cast<WarpRolesOp>(parent))
        if (region == &roles.getProducer())
          return true;
      if (isa<KernelOp>(parent))
        return false;
    }
    return false;
  }

  Value constant(Location loc, Type type, int64_t value) {
    return b.create<arith::ConstantOp>(loc, b.getIntegerAttr(type, value));
  }

  /// Whether `a op c` (with wrapped result `r`) left its type.
  Value overflowed(Location loc, ArithKind op, bool isSigned, Value a,
                   Value c, Value r) {
    using P = arith::CmpIPredicate;
    Type type = a.getType();
    unsigned width = type.getIntOrFloatBitWidth();
    Type i64 = b.getI64Type();
    auto cmp = [&](P p, Value x, Value y) {
      return b.create<arith::CmpIOp>(loc, p, x, y).getResult();
    };
    auto xorOf = [&](Value x, Value y) {
      return b.create<arith::XOrIOp>(loc, x, y).getResult();
    };
    auto andOf = [&](Value x, Value y) {
      return b.create<arith::AndIOp>(loc, x, y).getResult();
    };
    Value zero = constant(loc, type, 0);
    switch (op) {
    case ArithKind::Add:
      if (!isSigned)
        return cmp(P::ult, r, a);
      return cmp(P::slt, andOf(xorOf(a, r), xorOf(c, r)), zero);
    case ArithKind::Sub:
    case ArithKind::Neg:
      if (!isSigned)
        return cmp(P::ult, a, c);
      return cmp(P::slt, andOf(xorOf(a, c), xorOf(a, r)), zero);
    case ArithKind::Mul:
      break;
    }
    if (width < 64) {
      // The exact product fits 64 bits; it must equal the wrapped one.
      auto widen = [&](Value v) {
        return isSigned ? b.create<arith::ExtSIOp>(loc, i64, v).getResult()
                        : b.create<arith::ExtUIOp>(loc, i64, v).getResult();
      };
      Value exact = b.create<arith::MulIOp>(loc, widen(a), widen(c));
      return cmp(P::ne, exact, widen(r));
    }
    // 64 bits: divide the wrapped product back, on a divisor that cannot
    // trap (0, and -1 with the most negative value, are decided apart).
    Value one = constant(loc, type, 1);
    Value aZero = cmp(P::eq, a, zero);
    if (!isSigned) {
      Value divisor = b.create<arith::SelectOp>(loc, aZero, one, a);
      Value back = b.create<arith::DivUIOp>(loc, r, divisor);
      Value trueValue = constant(loc, b.getI1Type(), 1);
      return andOf(xorOf(aZero, trueValue), cmp(P::ne, back, c));
    }
    Value minusOne = constant(loc, type, -1);
    Value lowest = constant(loc, type, std::numeric_limits<int64_t>::min());
    Value aMinusOne = cmp(P::eq, a, minusOne);
    Value special = b.create<arith::OrIOp>(loc, aZero, aMinusOne);
    Value divisor = b.create<arith::SelectOp>(loc, special, one, a);
    Value back = b.create<arith::DivSIOp>(loc, r, divisor);
    Value trueValue = constant(loc, b.getI1Type(), 1);
    Value general = andOf(xorOf(special, trueValue), cmp(P::ne, back, c));
    Value negated = andOf(aMinusOne, cmp(P::eq, c, lowest));
    return b.create<arith::OrIOp>(loc, general, negated);
  }

  /// Lane `lane` of `v` (the value itself for a scalar).
  Value laneOf(Location loc, Value v, int64_t lane) {
    if (!llvm::isa<VectorType>(v.getType()))
      return v;
    return b.create<vector::ExtractOp>(loc, v, ArrayRef<int64_t>{lane});
  }

  void instrument(Operation *op, StringRef mark, std::optional<Guard> guard) {
    Location loc = op->getLoc();
    bool isSigned = mark.starts_with("signed");
    ArithKind kind = mark.ends_with("negation") ? ArithKind::Neg
                      : isa<arith::AddIOp>(op)   ? ArithKind::Add
                      : isa<arith::SubIOp>(op)   ? ArithKind::Sub
                                                 : ArithKind::Mul;
    Value a = op->getOperand(0), c = op->getOperand(1), r = op->getResult(0);
    Type element = getElementTypeOrSelf(r.getType());
    unsigned width = element.getIntOrFloatBitWidth();
    static const char *names[] = {"add", "sub", "mul", "neg"};
    std::string dtype =
        (isSigned ? "i" : "u") + std::to_string(width);
    unsigned site = checks.addSite(
        {b.getNamedAttr("kind", b.getStringAttr("arithmetic")),
         b.getNamedAttr("access", b.getStringAttr(names[int(kind)])),
         b.getNamedAttr("buffer", b.getStringAttr(dtype)),
         b.getNamedAttr("location",
                        b.getStringAttr(describeLocation(loc))),
         b.getNamedAttr("extent", b.getI32IntegerAttr(1)),
         b.getNamedAttr("param", b.getI32IntegerAttr(-1)),
         b.getNamedAttr("size", b.getI64IntegerAttr(0))});

    int64_t lanes = 1;
    if (auto vec = llvm::dyn_cast<VectorType>(r.getType()))
      lanes = vec.getNumElements();
    // Where the check goes, and the condition under which the value is
    // used (per lane for a vector condition of as many lanes).
    Value condition;
    bool laneConditions = false;
    if (guard) {
      condition = guard->select.getCondition();
      auto condType = llvm::dyn_cast<VectorType>(condition.getType());
      laneConditions = condType && condType.getNumElements() == lanes &&
                       lanes > 1;
      if ((condType && !laneConditions) ||
          llvm::isa<RankedTensorType>(condition.getType()))
        condition = Value(); // lanes rearranged on the way, or a fragment
                             // select: check always
    }
    b.setInsertionPointAfter(condition ? guard->select.getOperation() : op);
    Value trueValue;
    for (int64_t lane = 0; lane < lanes; ++lane) {
      Value la = laneOf(loc, a, lane), lc = laneOf(loc, c, lane),
            lr = laneOf(loc, r, lane);
      Value failed = overflowed(loc, kind, isSigned, la, lc, lr);
      if (condition) {
        Value used = laneConditions ? laneOf(loc, condition, lane)
                                    : condition;
        if (!guard->taken) {
          if (!trueValue)
            trueValue = constant(loc, b.getI1Type(), 1);
          used = b.create<arith::XOrIOp>(loc, used, trueValue);
        }
        failed = b.create<arith::AndIOp>(loc, failed, used);
      }
      if (kind == ArithKind::Neg)
        checks.recordIf(b, loc, failed, rec::kCountArithmetic, site, lc,
                        Value(), isSigned);
      else
        checks.recordIf(b, loc, failed, rec::kCountArithmetic, site, la, lc,
                        isSigned);
    }
  }

  KernelOp kernel;
  OpBuilder b;
  CheckRecord checks;
};

struct IntegerCheckPass
    : public PassWrapper<IntegerCheckPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(IntegerCheckPass)

  StringRef getArgument() const override { return "enigma-integer-check"; }
  StringRef getDescription() const override {
    return "Record the first integer +, -, * or negation whose exact result "
           "does not fit its type (bounds-checked mode)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, scf::SCFDialect,
                    memref::MemRefDialect, vector::VectorDialect>();
  }
  void runOnOperation() override {
    getOperation().walk([](KernelOp kernel) {
      if (kernel->hasAttr(kCheckedIntegersAttr))
        return;
      kernel->setAttr(kCheckedIntegersAttr,
                      UnitAttr::get(kernel.getContext()));
      OverflowChecker(kernel).run();
    });
  }
};
} // namespace

std::unique_ptr<Pass> createIntegerCheckPass() {
  return std::make_unique<IntegerCheckPass>();
}

void dropOverflowMarks(Operation *root) {
  root->walk([](Operation *op) { op->removeAttr(kOverflowCheckAttr); });
}

} // namespace enigma
