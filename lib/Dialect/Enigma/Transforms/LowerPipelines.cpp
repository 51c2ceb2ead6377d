//===- LowerPipelines.cpp - Pipelines as software pipelines (CPU, Metal) ---===//
//
// `enigma-lower-pipelines` runs an enigma.pipeline the way its sequential
// meaning reads, with the whole threadgroup in both roles and the copies
// `stages - 1` iterations ahead (docs/design/warp-specialization.md):
//
//   for s < stages - 1:  if (lb + s < ub) producer(lb + s, slot s); commit
//   for i in [lb, ub):
//     copy_wait(stages - 2); barrier     // stage i complete and seen;
//                                        // consumer(i - 1) done everywhere
//     if (i + stages - 1 < ub) producer(i + stages - 1); commit
//     carried = consumer(i, slot (i - lb) % stages, carried)
//   copy_wait(0); barrier                // the ring may be refilled after
//
// With consumer groups the consumer runs in the iteration's group only
// (ConsumerBody.h).
// Producer copies become enigma.copy_tile_async into the slot, with the
// matrix's edges as the valid rows and columns (zero fill); transposing
// ones element copies shared by the threadgroup. The refilled
// slot is the one consumer(i - 1) read, which the barrier released. The
// rings themselves (their barriers) are not needed and are erased, and so
// are the consumers' turns (enigma.consumer_turn_begin / _end).
//
//===----------------------------------------------------------------------===//
#include "enigma/Dialect/Enigma/Transforms/Passes.h"

#include "ConsumerBody.h"

#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/Pass.h"

#include <algorithm>

using namespace mlir;

namespace enigma {

static Value stageCopyBase(OpBuilder &b, StageCopyOp copy, Value slot) {
  Location loc = copy.getLoc();
  auto ring = copy.getRing().getDefiningOp<PipelineRingOp>();
  int64_t slotElements = ring.getSlotElements(unsigned(copy.getBuffer()));
  Value start = b.create<arith::MulIOp>(
      loc, slot, b.create<arith::ConstantIndexOp>(loc, slotElements));
  return b.create<arith::AddIOp>(
      loc, start, b.create<arith::ConstantIndexOp>(loc, copy.getOffset()));
}

/// `extent - at`, or 0 when `at` is past it.
static Value remaining(OpBuilder &b, Location loc, Value extent, Value at) {
  Value zero = b.create<arith::ConstantIndexOp>(loc, 0);
  Value inside =
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, at, extent);
  Value left = b.create<arith::SubIOp>(loc, extent, at);
  return b.create<arith::SelectOp>(loc, inside, left, zero);
}

static void lowerStageCopyToTileCopy(OpBuilder &b, StageCopyOp copy, Value slot) {
  Location loc = copy.getLoc();
  Value base = stageCopyBase(b, copy, slot);
  // The source offset of box element (0, 0); rows and columns outside the
  // matrix are zero-filled and not read.
  Value offset = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, copy.getRow(), copy.getLd()),
      copy.getCol());
  Value validRows = remaining(b, loc, copy.getRows(), copy.getRow());
  Value validCols = remaining(b, loc, copy.getCols(), copy.getCol());
  int64_t bc = copy.getBlockColumns();
  IntegerAttr blockStride;
  if (bc != copy.getBoxCols())
    blockStride = b.getI64IntegerAttr(copy.getBlockElementStride());
  b.create<CopyTileAsyncOp>(
      loc, copy.getDestination(), base, copy.getSrc(), offset, copy.getLd(),
      validRows, validCols, b.getI64IntegerAttr(copy.getBoxRows()),
      b.getI64IntegerAttr(copy.getBoxCols()), b.getI64IntegerAttr(bc),
      copy.getSwizzleAttr(), blockStride);
}

/// `x` under the swizzle (bits, base, shift) in index arithmetic, as
/// applyMmaSwizzle computes it.
static Value swizzleIndex(OpBuilder &b, Location loc,
                          std::optional<ArrayRef<int32_t>> sw, Value x) {
  if (!sw || sw->size() != 3 || (*sw)[0] == 0)
    return x;
  auto c = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); };
  int64_t mask = ((int64_t(1) << (*sw)[0]) - 1) << (*sw)[1];
  int32_t shift = (*sw)[2];
  Value moved =
      shift >= 0 ? Value(b.create<arith::ShRUIOp>(loc, x, c(shift)))
                 : Value(b.create<arith::ShLIOp>(loc, x, c(-shift)));
  return b.create<arith::XOrIOp>(
      loc, x, b.create<arith::AndIOp>(loc, moved, c(mask)));
}

/// A transposing stage copy as element copies shared by the threadgroup:
/// thread t copies box elements t, t + T, ... (row-major in the box, so
/// neighbouring threads read neighbouring columns), zeros outside the
/// matrix, each to (r / bc) * block_stride + swizzle(c * bc + r % bc) of
/// the stage. The copy is complete at once; the pipeline's barrier makes
/// it visible, as for the tile copies.
static void lowerTransposedStageCopy(OpBuilder &b, StageCopyOp copy,
                                     Value slot) {
  Location loc = copy.getLoc();
  auto c = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); };
  auto index = [&](Value v) {
    return b.create<arith::IndexCastUIOp>(loc, b.getIndexType(), v);
  };
  Value base = stageCopyBase(b, copy, slot);
  Value validRows = remaining(b, loc, copy.getRows(), copy.getRow());
  Value validCols = remaining(b, loc, copy.getCols(), copy.getCol());
  Value threads = index(b.create<ThreadsPerThreadgroupOp>(loc, Dim::X));
  for (Dim d : {Dim::Y, Dim::Z})
    threads = b.create<arith::MulIOp>(
        loc, threads, index(b.create<ThreadsPerThreadgroupOp>(loc, d)));
  Value first = index(b.create<ThreadIndexInThreadgroupOp>(loc));
  int64_t boxCols = copy.getBoxCols(), bc = copy.getBlockColumns();
  auto loop = b.create<scf::ForOp>(loc, first,
                                   c(copy.getBoxRows() * boxCols), threads);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  Value e = loop.getInductionVar();
  Value r = b.create<arith::DivUIOp>(loc, e, c(boxCols));
  Value col = b.create<arith::RemUIOp>(loc, e, c(boxCols));
  Value inside = b.create<arith::AndIOp>(
      loc,
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, r, validRows),
      b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult, col, validCols));
  Type element = copy.getSrc().getType().getElementType();
  auto read = b.create<scf::IfOp>(loc, TypeRange{element}, inside,
                                  /*withElseRegion=*/true);
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(read.thenBlock());
    Value at = b.create<arith::AddIOp>(
        loc,
        b.create<arith::MulIOp>(
            loc, b.create<arith::AddIOp>(loc, copy.getRow(), r), copy.getLd()),
        b.create<arith::AddIOp>(loc, copy.getCol(), col));
    Value v = b.create<memref::LoadOp>(loc, copy.getSrc(), ValueRange{at});
    b.create<scf::YieldOp>(loc, v);
    b.setInsertionPointToStart(read.elseBlock());
    Value zero = b.create<arith::ConstantOp>(
        loc, cast<TypedAttr>(b.getZeroAttr(element)));
    b.create<scf::YieldOp>(loc, zero);
  }
  Value inBlock = b.create<arith::AddIOp>(
      loc, b.create<arith::MulIOp>(loc, col, c(bc)),
      b.create<arith::RemUIOp>(loc, r, c(bc)));
  Value at = b.create<arith::AddIOp>(
      loc, base,
      b.create<arith::AddIOp>(
          loc,
          b.create<arith::MulIOp>(loc, b.create<arith::DivUIOp>(loc, r, c(bc)),
                                  c(copy.getBlockElementStride())),
          swizzleIndex(b, loc, copy.getSwizzle(), inBlock)));
  b.create<memref::StoreOp>(loc, read.getResult(0), copy.getDestination(),
                            ValueRange{at});
}

/// The consumers' turns mean nothing when the whole threadgroup runs both
/// roles (docs/design/consumer-turns.md): they go.
static void eraseConsumerTurns(ModuleOp module) {
  SmallVector<Operation *> turns;
  module.walk([&](Operation *op) {
    if (isa<ConsumerTurnBeginOp, ConsumerTurnEndOp>(op))
      turns.push_back(op);
  });
  for (Operation *op : turns)
    op->erase();
}

namespace {

class SoftwarePipeline {
public:
  SoftwarePipeline(PipelineOp op) : op(op), b(op) {}

  void run() {
    Location loc = op.getLoc();
    int64_t stages = op.getRingOp().getStages();
    Value lb = op.getLower(), ub = op.getUpper();
    b.setInsertionPoint(op);
    for (int64_t s = 0; s + 1 < stages; ++s) {
      Value i = add(lb, s);
      produceIf(i, constant(s));
      b.create<CopyAsyncCommitOp>(loc);
    }
    auto loop = b.create<scf::ForOp>(loc, lb, ub, constant(1), op.getInits());
    // Without carried values the builder adds an empty yield; the body
    // below ends with its own.
    if (op.getInits().empty())
      loop.getBody()->getTerminator()->erase();
    b.setInsertionPointToStart(loop.getBody());
    Value i = loop.getInductionVar();
    // Copy groups past the seventh are waited for too early (cp.async's
    // wait takes at most 7 open groups): the same result, less overlap.
    b.create<CopyAsyncWaitOp>(loc,
                              b.getI64IntegerAttr(std::min<int64_t>(stages - 2,
                                                                    7)));
    barrier();
    Value ahead = add(i, stages - 1);
    produceIf(ahead, slotOf(ahead, stages));
    b.create<CopyAsyncCommitOp>(loc);
    ClonedConsumer consumer = cloneConsumer(b, op, i, slotOf(i, stages),
                                            loop.getRegionIterArgs());
    b.create<scf::YieldOp>(loc, consumer.next);
    b.setInsertionPointAfter(loop);
    b.create<CopyAsyncWaitOp>(loc, b.getI64IntegerAttr(0));
    barrier();
    op.replaceAllUsesWith(loop.getResults());
    op.erase();
  }

private:
  Value constant(int64_t v) {
    return b.create<arith::ConstantIndexOp>(op.getLoc(), v);
  }
  Value add(Value v, int64_t k) {
    return b.create<arith::AddIOp>(op.getLoc(), v, constant(k));
  }
  Value slotOf(Value i, int64_t stages) {
    Value n = b.create<arith::SubIOp>(op.getLoc(), i, op.getLower());
    return b.create<arith::RemUIOp>(op.getLoc(), n, constant(stages));
  }
  void barrier() {
    b.create<BarrierOp>(op.getLoc(),
                        MemFlagsAttr::get(b.getContext(), MemFlags::Threadgroup));
  }
  /// The producer region for iteration `i` into `slot`, when i < ub
  /// (signed, as the loop compares its bounds: a negative lower bound
  /// runs its iterations).
  void produceIf(Value i, Value slot) {
    Location loc = op.getLoc();
    Value inRange = b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::slt, i,
                                            op.getUpper());
    auto branch = b.create<scf::IfOp>(loc, inRange, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(branch.thenBlock()->getTerminator());
    Block &producer = op.getProducer().front();
    IRMapping map;
    map.map(producer.getArgument(0), i);
    map.map(producer.getArgument(1), slot);
    for (Operation &inner : producer.without_terminator()) {
      if (auto copy = dyn_cast<StageCopyOp>(inner)) {
        auto clone = cast<StageCopyOp>(b.clone(inner, map));
        if (clone.getTranspose())
          lowerTransposedStageCopy(b, clone, slot);
        else
          lowerStageCopyToTileCopy(b, clone, slot);
        continue;
      }
      b.clone(inner, map);
    }
    // The clones of the stage copies were only templates for their
    // operands: drop them.
    SmallVector<Operation *> clones;
    for (Operation &inner : *branch.thenBlock())
      if (isa<StageCopyOp>(inner))
        clones.push_back(&inner);
    for (Operation *clone : clones)
      clone->erase();
  }

  PipelineOp op;
  OpBuilder b;
};

struct LowerPipelinesPass
    : public PassWrapper<LowerPipelinesPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(LowerPipelinesPass)

  StringRef getArgument() const override { return "enigma-lower-pipelines"; }
  StringRef getDescription() const override {
    return "Run enigma.pipeline ops as software pipelines of the whole "
           "threadgroup (CPU, Metal)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, memref::MemRefDialect,
                    scf::SCFDialect>();
  }
  void runOnOperation() override {
    eraseConsumerTurns(getOperation());
    SmallVector<PipelineOp> pipelines;
    getOperation().walk([&](PipelineOp op) { pipelines.push_back(op); });
    for (PipelineOp op : pipelines)
      SoftwarePipeline(op).run();
    SmallVector<PipelineRingOp> rings;
    getOperation().walk([&](PipelineRingOp ring) { rings.push_back(ring); });
    for (PipelineRingOp ring : rings) {
      if (!ring->use_empty()) {
        ring.emitOpError("is still used after its pipelines were lowered");
        return signalPassFailure();
      }
      ring.erase();
    }
  }
};

} // namespace

std::unique_ptr<Pass> createLowerPipelinesPass() {
  return std::make_unique<LowerPipelinesPass>();
}

} // namespace enigma
