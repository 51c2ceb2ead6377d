//===- ThreadgroupCheck.cpp - Threadgroups with missing threads -----------===//
//
// A grid that is not a multiple of the threadgroup size leaves a partial
// last threadgroup (Metal's dispatchThreads): its missing threads write
// nothing and take no part in simdgroup functions. A kernel written for
// full groups then reads threadgroup memory nobody wrote (a scan's block
// total, a histogram's bins never zeroed) or shuffles from lanes that do
// not exist, and gets garbage without an error. In bounds-checked mode
// this pass records, in the record of the other checks:
//
//  - a load or atomic of a threadgroup array element that no thread of the
//    threadgroup has written: each tracked array gets a shadow bitmap in
//    threadgroup memory (one bit per element, cleared by the group's
//    threads at the start behind a barrier), stores and atomics set bits,
//    reads test them;
//  - a simdgroup or quad shuffle whose source lane lies inside the group's
//    width but does not exist (Metal leaves its value undefined);
//  - a simdgroup matrix operation in a simdgroup of fewer than 32 lanes.
//
// Only arrays whose every use is an element access this pass understands
// are tracked (an async copy or a simdgroup matrix store writes where it
// cannot see), and the shadows never push a kernel past a threadgroup
// memory limit it met before (Metal's 32 KiB, CUDA's 48 KiB of static
// shared memory, the 227 KiB most): arrays that do not fit are left out.
//
// Runs after enigma-bounds-check, so the accesses it sees are in bounds.
//
//===----------------------------------------------------------------------===//
#include "enigma/Dialect/Enigma/Transforms/Passes.h"

#include "CheckRecord.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"
#include "enigma/Dialect/Enigma/Transforms/MemoryAccess.h"
#include "enigma/Support/BoundsRecord.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/Pass.h"

#include "llvm/ADT/MapVector.h"

using namespace mlir;

namespace enigma {
namespace {
namespace rec = bounds_record;

constexpr const char *kCheckedThreadgroupsAttr = "enigma.checked_threadgroups";

/// Threadgroup memory limits of the targets, smallest first: a kernel that
/// met one before its shadows still meets it.
constexpr uint64_t kLimits[] = {ThreadgroupAllocOp::kMetalMaxBytes, 48 * 1024,
                                ThreadgroupAllocOp::kMaxBytes};

/// Whether an access reads the element before (or instead of) writing it,
/// and whether it writes it.
struct Effect {
  bool reads, writes;
};
std::optional<Effect> effectOf(Operation *op) {
  if (isa<memref::LoadOp, vector::LoadOp, AtomicLoadOp>(op))
    return Effect{true, false};
  if (isa<memref::StoreOp, vector::StoreOp, AtomicStoreOp>(op))
    return Effect{false, true};
  if (isa<AtomicRMWOp, AtomicCompareExchangeOp>(op))
    return Effect{true, true};
  return std::nullopt; // masked vector ops and anything else: not tracked
}

class ThreadgroupChecker {
public:
  explicit ThreadgroupChecker(KernelOp kernel)
      : kernel(kernel), b(kernel.getContext()), checks(kernel) {}

  void run() {
    trackArrays();
    SmallVector<Operation *> shuffles, matrices;
    kernel.walk([&](Operation *op) {
      if (isa<SimdgroupMatrixLoadOp, SimdgroupMatrixStoreOp,
              SimdgroupMultiplyAccumulateOp, MakeFilledSimdgroupMatrixOp>(op))
        matrices.push_back(op);
      else if (shuffleWidth(op))
        shuffles.push_back(op);
    });
    if (!shadows.empty())
      instrumentArrays();
    for (Operation *op : shuffles)
      checkShuffle(op);
    for (Operation *op : matrices)
      checkMatrix(op);
  }

private:
  // --- Threadgroup memory ------------------------------------------------

  /// Accesses of `array` when they are all element accesses with a known
  /// effect; nothing otherwise.
  std::optional<SmallVector<std::pair<Operation *, MemoryAccess>>>
  accessesOf(Value array) {
    SmallVector<std::pair<Operation *, MemoryAccess>> accesses;
    for (Operation *user : array.getUsers()) {
      std::optional<MemoryAccess> access = describeMemoryAccess(user);
      if (!access || access->memref != array || !effectOf(user))
        return std::nullopt;
      accesses.push_back({user, *access});
    }
    return accesses;
  }

  void trackArrays() {
    uint64_t total = ThreadgroupAllocOp::totalBytes(kernel);
    uint64_t limit = kLimits[2];
    for (uint64_t l : kLimits)
      if (total <= l) {
        limit = l;
        break;
      }
    for (Operation &op : kernel.getBody().front()) {
      auto alloc = dyn_cast<ThreadgroupAllocOp>(op);
      if (!alloc)
        continue;
      auto type = llvm::cast<MemRefType>(alloc.getType());
      if (type.getRank() != 1 || !accessesOf(alloc.getResult()))
        continue;
      uint64_t words = (uint64_t(type.getDimSize(0)) + 31) / 32;
      uint64_t bytes = (words * 4 + ThreadgroupAllocOp::kAlignment - 1) /
                       ThreadgroupAllocOp::kAlignment *
                       ThreadgroupAllocOp::kAlignment;
      if (total + bytes > limit)
        continue; // the shadow would not fit: leave the array out
      total += bytes;
      shadows[alloc.getResult()] = Value(); // made in instrumentArrays
      shadowWords[alloc.getResult()] = int64_t(words);
    }
  }

  Value index(Location loc, int64_t v) {
    return b.create<arith::ConstantIndexOp>(loc, v);
  }
  Value i32(Location loc, int64_t v) {
    return b.create<arith::ConstantIntOp>(loc, v, 32);
  }
  /// This thread's threadgroup's size (partial at the edge of the grid).
  Value threadsInGroup(Location loc) {
    auto ctx = kernel.getContext();
    Value n = nullptr;
    for (unsigned d = 0; d < 3; ++d) {
      Value extent = b.create<ThreadsPerThreadgroupOp>(
          loc, DimAttr::get(ctx, static_cast<Dim>(d)));
      n = n ? b.create<arith::MulIOp>(loc, n, extent).getResult() : extent;
    }
    return n;
  }
  MemoryOrderAttr relaxed() {
    return MemoryOrderAttr::get(kernel.getContext(), MemoryOrder::Relaxed);
  }

  /// The shadows, cleared at the start of the kernel by the group's
  /// threads (word `lid`, `lid + n`, ...), then a barrier.
  void instrumentArrays() {
    Block &body = kernel.getBody().front();
    Location loc = kernel.getLoc();
    b.setInsertionPointToStart(&body);
    for (auto &[array, shadow] : shadows) {
      auto type = MemRefType::get(
          {shadowWords[array]}, b.getI32Type(), MemRefLayoutAttrInterface{},
          AddressSpaceAttr::get(kernel.getContext(),
                                AddressSpace::Threadgroup));
      auto alloc = b.create<ThreadgroupAllocOp>(array.getLoc(), type);
      alloc->setAttr("enigma.dtype", b.getStringAttr("u32"));
      shadow = alloc.getResult();
    }
    Value lid = b.create<arith::IndexCastUIOp>(
        loc, b.getIndexType(), b.create<ThreadIndexInThreadgroupOp>(loc));
    Value step = b.create<arith::IndexCastUIOp>(loc, b.getIndexType(),
                                                threadsInGroup(loc));
    for (auto &[array, shadow] : shadows) {
      auto clear = b.create<scf::ForOp>(loc, lid,
                                        index(loc, shadowWords[array]), step);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(clear.getBody());
      b.create<AtomicStoreOp>(loc, i32(loc, 0), shadow,
                              clear.getInductionVar(), relaxed());
    }
    b.create<BarrierOp>(loc, MemFlagsAttr::get(kernel.getContext(),
                                                MemFlags::Threadgroup));
    for (auto &[array, shadow] : shadows) {
      auto accesses = accessesOf(array); // kept alive over the loop
      for (auto &[op, access] : *accesses)
        instrumentAccess(op, access, shadow);
    }
  }

  /// "threadgroup array (u32[64] allocated at f.py:12)", as the bounds
  /// check names it.
  std::string arrayName(Value array) {
    auto type = llvm::cast<MemRefType>(array.getType());
    Operation *def = array.getDefiningOp();
    std::string name = "threadgroup array (";
    if (auto dtype = def->getAttrOfType<StringAttr>("enigma.dtype"))
      name += dtype.getValue().str();
    name += "[" + std::to_string(type.getDimSize(0)) + "]";
    std::string where = describeLocation(def->getLoc());
    return name + (where.empty() ? ")" : " allocated at " + where + ")");
  }

  void instrumentAccess(Operation *op, const MemoryAccess &access,
                        Value shadow) {
    Location loc = op->getLoc();
    Effect effect = *effectOf(op);
    auto elementIndex = [&](unsigned k) {
      return k == 0 ? access.index
                    : b.create<arith::AddIOp>(loc, access.index, index(loc, k))
                          .getResult();
    };
    auto wordAndBit = [&](Value element) {
      Value word = b.create<arith::DivUIOp>(loc, element, index(loc, 32));
      Value low = b.create<arith::IndexCastUIOp>(
          loc, b.getI32Type(),
          b.create<arith::RemUIOp>(loc, element, index(loc, 32)));
      Value bit = b.create<arith::ShLIOp>(loc, i32(loc, 1), low);
      return std::make_pair(word, bit);
    };
    if (effect.reads) {
      unsigned site = checks.addSite(
          {b.getNamedAttr("kind", b.getStringAttr("uninitialised")),
           b.getNamedAttr("access", b.getStringAttr(access.kind)),
           b.getNamedAttr("buffer", b.getStringAttr(arrayName(access.memref))),
           b.getNamedAttr("location", b.getStringAttr(describeLocation(loc))),
           b.getNamedAttr("extent", b.getI32IntegerAttr(access.extent)),
           b.getNamedAttr("param", b.getI32IntegerAttr(-1)),
           b.getNamedAttr("size",
                          b.getI64IntegerAttr(llvm::cast<MemRefType>(
                                                  access.memref.getType())
                                                  .getDimSize(0)))});
      b.setInsertionPoint(op);
      for (unsigned k = 0; k < access.extent; ++k) {
        Value element = elementIndex(k);
        auto [word, bit] = wordAndBit(element);
        Value bits = b.create<AtomicLoadOp>(loc, b.getI32Type(), shadow, word,
                                            relaxed());
        Value set = b.create<arith::AndIOp>(loc, bits, bit);
        Value unwritten = b.create<arith::CmpIOp>(
            loc, arith::CmpIPredicate::eq, set, i32(loc, 0));
        checks.recordIf(b, loc, unwritten, rec::kCountThreadgroup, site,
                        element, Value(), /*isSigned=*/false);
      }
    }
    if (effect.writes) {
      b.setInsertionPointAfter(op);
      auto ctx = kernel.getContext();
      for (unsigned k = 0; k < access.extent; ++k) {
        auto [word, bit] = wordAndBit(elementIndex(k));
        b.create<AtomicRMWOp>(loc, b.getI32Type(),
                              AtomicKindAttr::get(ctx, AtomicKind::Or), shadow,
                              word, bit, relaxed());
      }
    }
  }

  // --- Simdgroup lanes -----------------------------------------------------

  /// 32 or 4 for a shuffle that can read a missing lane, 0 otherwise
  /// (shuffle_up reads only lanes below the caller, which exist).
  static unsigned shuffleWidth(Operation *op) {
    if (isa<SimdShuffleOp, SimdBroadcastOp, SimdShuffleXorOp,
            SimdShuffleDownOp>(op))
      return 32;
    if (isa<QuadShuffleOp, QuadBroadcastOp, QuadShuffleXorOp,
            QuadShuffleDownOp>(op))
      return 4;
    return 0;
  }

  unsigned laneSite(Operation *op, const char *kind, const char *group) {
    return checks.addSite(
        {b.getNamedAttr("kind", b.getStringAttr(kind)),
         b.getNamedAttr("access",
                        b.getStringAttr(op->getName().stripDialect())),
         b.getNamedAttr("buffer", b.getStringAttr(group)),
         b.getNamedAttr("location",
                        b.getStringAttr(describeLocation(op->getLoc()))),
         b.getNamedAttr("extent", b.getI32IntegerAttr(1)),
         b.getNamedAttr("param", b.getI32IntegerAttr(-1)),
         b.getNamedAttr("size", b.getI64IntegerAttr(0))});
  }

  void checkShuffle(Operation *op) {
    using P = arith::CmpIPredicate;
    unsigned width = shuffleWidth(op);
    Location loc = op->getLoc();
    unsigned site = laneSite(op, "missing_lane",
                             width == 32 ? "simdgroup" : "quad");
    b.setInsertionPoint(op);
    Value lane = op->getOperand(1);
    Value lid = b.create<ThreadIndexInThreadgroupOp>(loc);
    Value mask = i32(loc, width - 1);
    Value me = b.create<arith::AndIOp>(loc, lid, mask);
    Value base = b.create<arith::SubIOp>(loc, lid, me);
    Value src;
    Value applies; // Metal defines the value where this is false
    if (isa<SimdShuffleDownOp, QuadShuffleDownOp>(op)) {
      Value room = b.create<arith::SubIOp>(loc, i32(loc, width), me);
      applies = b.create<arith::CmpIOp>(loc, P::ult, lane, room);
      src = b.create<arith::AddIOp>(loc, me, lane);
    } else if (isa<SimdShuffleXorOp, QuadShuffleXorOp>(op)) {
      src = b.create<arith::XOrIOp>(loc, me,
                                    b.create<arith::AndIOp>(loc, lane, mask));
    } else {
      src = b.create<arith::AndIOp>(loc, lane, mask);
    }
    Value at = b.create<arith::AddIOp>(loc, base, src);
    Value missing = b.create<arith::CmpIOp>(loc, P::uge, at,
                                            threadsInGroup(loc));
    if (applies)
      missing = b.create<arith::AndIOp>(loc, missing, applies);
    checks.recordIf(b, loc, missing, rec::kCountLanes, site, src, me,
                    /*isSigned=*/false);
  }

  /// A simdgroup matrix op in a simdgroup of fewer than 32 lanes, reported
  /// by the simdgroup's first lane.
  void checkMatrix(Operation *op) {
    using P = arith::CmpIPredicate;
    Location loc = op->getLoc();
    unsigned site = laneSite(op, "short_simdgroup", "simdgroup");
    b.setInsertionPoint(op);
    Value lid = b.create<ThreadIndexInThreadgroupOp>(loc);
    Value me = b.create<arith::AndIOp>(loc, lid, i32(loc, 31));
    Value base = b.create<arith::SubIOp>(loc, lid, me);
    Value left = b.create<arith::SubIOp>(loc, threadsInGroup(loc), base);
    Value lanes = b.create<arith::MinUIOp>(loc, left, i32(loc, 32));
    Value isShort = b.create<arith::CmpIOp>(loc, P::ult, lanes, i32(loc, 32));
    Value first = b.create<arith::CmpIOp>(loc, P::eq, me, i32(loc, 0));
    Value report = b.create<arith::AndIOp>(loc, isShort, first);
    checks.recordIf(b, loc, report, rec::kCountLanes, site, lanes, Value(),
                    /*isSigned=*/false);
  }

  KernelOp kernel;
  OpBuilder b;
  CheckRecord checks;
  llvm::MapVector<Value, Value> shadows; // tracked array -> its shadow
  llvm::DenseMap<Value, int64_t> shadowWords;
};

struct ThreadgroupCheckPass
    : public PassWrapper<ThreadgroupCheckPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ThreadgroupCheckPass)

  StringRef getArgument() const override { return "enigma-threadgroup-check"; }
  StringRef getDescription() const override {
    return "Record reads of threadgroup memory no thread wrote, shuffles "
           "from missing lanes and simdgroup matrices in short simdgroups "
           "(bounds-checked mode)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, scf::SCFDialect,
                    memref::MemRefDialect>();
  }
  void runOnOperation() override {
    getOperation().walk([](KernelOp kernel) {
      if (kernel->hasAttr(kCheckedThreadgroupsAttr))
        return;
      kernel->setAttr(kCheckedThreadgroupsAttr,
                      UnitAttr::get(kernel.getContext()));
      ThreadgroupChecker(kernel).run();
    });
  }
};
} // namespace

std::unique_ptr<Pass> createThreadgroupCheckPass() {
  return std::make_unique<ThreadgroupCheckPass>();
}

} // namespace enigma
