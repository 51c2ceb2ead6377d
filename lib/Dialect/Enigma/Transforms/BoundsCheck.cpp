//===- BoundsCheck.cpp - Bounds-checked mode ------------------------------===//
//
// Wraps each access in `scf.if (index in bounds) { access } else { record }`
// using only ops every emitter already prints (arith, scf, enigma atomics and
// thread queries), so MSL, CUDA and host C++ get the checks without emitter
// code of their own (docs/design/bounds-check.md says why).
//
//===----------------------------------------------------------------------===//
#include "enigma/Dialect/Enigma/Transforms/Passes.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"
#include "enigma/Dialect/Enigma/Transforms/MemoryAccess.h"
#include "enigma/Support/BoundsRecord.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/Pass.h"

#include <algorithm>
#include <map>

using namespace mlir;

namespace enigma {
namespace {
namespace rec = bounds_record;

/// Where the size of an accessed memref comes from.
struct SizeSource {
  int param = -1;          // kernel parameter index, or
  int64_t staticSize = -1; // the static size of a threadgroup array
  std::string name;        // for the site table
};

class KernelInstrumenter {
public:
  explicit KernelInstrumenter(KernelOp kernel)
      : kernel(kernel), builder(kernel.getContext()) {}

  void run() {
    SmallVector<std::pair<Operation *, MemoryAccess>> accesses;
    SmallVector<IndexCheckOp> indexChecks;
    kernel.walk([&](Operation *op) {
      if (auto check = dyn_cast<IndexCheckOp>(op))
        indexChecks.push_back(check);
      else if (std::optional<MemoryAccess> access = describeMemoryAccess(op))
        if (sizeSource(access->memref))
          accesses.push_back({op, *access});
    });
    SmallVector<PipelineOp> pipelines;
    kernel.walk([&](PipelineOp op) { pipelines.push_back(op); });
    if (accesses.empty() && pipelines.empty() && indexChecks.empty())
      return;
    for (auto &[op, access] : accesses)
      if (SizeSource source = *sizeSource(access.memref); source.param >= 0)
        sizeParam(source.param); // parameters first, in access order
    record = appendParam(getBufferType(builder.getI32Type(),
                                       AddressSpace::Device),
                         rec::kRecordParamName, "u32",
                         builder.getNamedAttr("enigma.bounds_record",
                                              builder.getUnitAttr()));
    for (auto &[op, access] : accesses)
      instrument(op, access);
    for (PipelineOp pipeline : pipelines)
      addWaitSites(pipeline);
    for (IndexCheckOp check : indexChecks)
      instrumentIndex(check);
    kernel->setAttr("enigma.bounds_sites", builder.getArrayAttr(sites));
  }

private:
  std::optional<SizeSource> sizeSource(Value memref) {
    if (auto arg = llvm::dyn_cast<BlockArgument>(memref))
      if (arg.getOwner()->getParentOp() == kernel.getOperation())
        return SizeSource{int(arg.getArgNumber()), -1,
                          kernel.getParamName(arg.getArgNumber())};
    auto type = llvm::cast<MemRefType>(memref.getType());
    if (!type.hasStaticShape())
      return std::nullopt; // not a parameter, size unknown: not checked
    std::string name = "threadgroup array";
    if (Operation *def = memref.getDefiningOp()) {
      if (auto dtype = def->getAttrOfType<StringAttr>("enigma.dtype"))
        name += " (" + dtype.getValue().str() + "[" +
                std::to_string(type.getDimSize(0)) + "]";
      else
        name += " ([" + std::to_string(type.getDimSize(0)) + "]";
      std::string where = describeLocation(def->getLoc());
      name += where.empty() ? ")" : " allocated at " + where + ")";
    }
    return SizeSource{-1, type.getDimSize(0), name};
  }

  BlockArgument appendParam(Type type, const std::string &name,
                            const char *dtype, NamedAttribute marker) {
    unsigned index = kernel.getNumArguments();
    auto attrs = builder.getDictionaryAttr(
        {builder.getNamedAttr("enigma.name", builder.getStringAttr(name)),
         builder.getNamedAttr("enigma.dtype", builder.getStringAttr(dtype)),
         marker});
    kernel.insertArgument(index, type, attrs, kernel.getLoc());
    return kernel.getArgument(index);
  }

  /// The hidden element-count parameter of buffer parameter `param`.
  BlockArgument sizeParam(int param) {
    auto it = sizeParams.find(param);
    if (it != sizeParams.end())
      return it->second;
    BlockArgument arg = appendParam(
        builder.getI64Type(),
        rec::kSizeParamPrefix + kernel.getParamName(unsigned(param)), "u64",
        builder.getNamedAttr("enigma.bounds_size_of",
                             builder.getI32IntegerAttr(param)));
    sizeParams[param] = arg;
    return arg;
  }

  Value indexConstant(Location loc, int64_t value) {
    return builder.create<arith::ConstantIndexOp>(loc, value);
  }
  Value i32Constant(Location loc, int64_t value) {
    return builder.create<arith::ConstantIntOp>(loc, value, 32);
  }

  /// True when `access` stays inside its memref. Unsigned compares, so a
  /// negative index (a huge unsigned one) fails too.
  Value inBounds(Location loc, const MemoryAccess &access,
                 const SizeSource &source) {
    Value size =
        source.param >= 0
            ? builder
                  .create<arith::IndexCastUIOp>(loc, builder.getIndexType(),
                                                sizeParam(source.param))
                  .getResult()
            : indexConstant(loc, source.staticSize);
    Value ok = builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ult,
                                             access.index, size);
    if (access.extent > 1) { // the last element must fit too
      Value room = builder.create<arith::SubIOp>(loc, size, access.index);
      Value fits = builder.create<arith::CmpIOp>(
          loc, arith::CmpIPredicate::uge, room,
          indexConstant(loc, access.extent));
      ok = builder.create<arith::AndIOp>(loc, ok, fits);
    }
    return ok;
  }

  /// Records a violation at `site` (the builder sits in the failing branch):
  /// the first violating thread claims the record and fills it in (with
  /// the extent the index broke, for an index check).
  void recordViolation(Location loc, unsigned site, Value index,
                       Value extent = nullptr) {
    auto relaxed = MemoryOrderAttr::get(kernel.getContext(),
                                        MemoryOrder::Relaxed);
    auto rmw = [&](AtomicKind kind, unsigned word) {
      return builder.create<AtomicRMWOp>(
          loc, builder.getI32Type(),
          AtomicKindAttr::get(kernel.getContext(), kind), record,
          indexConstant(loc, word), i32Constant(loc, 1), relaxed);
    };
    Value previous = rmw(AtomicKind::Or, rec::kClaim);
    rmw(AtomicKind::Add, rec::kCount);
    Value first = builder.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::eq, previous, i32Constant(loc, 0));
    auto ifFirst = builder.create<scf::IfOp>(loc, first, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(ifFirst.thenBlock());
    auto store = [&](Value value, unsigned word) {
      builder.create<memref::StoreOp>(loc, value, record,
                                      ValueRange{indexConstant(loc, word)});
    };
    store(i32Constant(loc, site + 1), rec::kSite);
    Value wide =
        builder.create<arith::IndexCastOp>(loc, builder.getI64Type(), index);
    Value high = builder.create<arith::ShRUIOp>(
        loc, wide, builder.create<arith::ConstantIntOp>(loc, 32, 64));
    store(builder.create<arith::TruncIOp>(loc, builder.getI32Type(), wide),
          rec::kIndexLow);
    store(builder.create<arith::TruncIOp>(loc, builder.getI32Type(), high),
          rec::kIndexHigh);
    if (extent) {
      Value shifted = builder.create<arith::ShRUIOp>(
          loc, extent, builder.create<arith::ConstantIntOp>(loc, 32, 64));
      store(builder.create<arith::TruncIOp>(loc, builder.getI32Type(), extent),
            rec::kExtentLow);
      store(builder.create<arith::TruncIOp>(loc, builder.getI32Type(),
                                            shifted),
            rec::kExtentHigh);
    }
    const unsigned words[3] = {rec::kThreadX, rec::kThreadY, rec::kThreadZ};
    for (unsigned d = 0; d < 3; ++d) {
      Value position = builder.create<ThreadPositionInGridOp>(
          loc, DimAttr::get(kernel.getContext(), static_cast<Dim>(d)));
      store(position, words[d]);
    }
  }

  /// A zero of `type` for a load that did not happen.
  Value zero(Location loc, Type type) {
    Type element = type;
    if (auto vec = llvm::dyn_cast<VectorType>(type))
      element = vec.getElementType();
    TypedAttr scalar = llvm::isa<FloatType>(element)
                           ? TypedAttr(builder.getFloatAttr(element, 0.0))
                           : TypedAttr(builder.getIntegerAttr(element, 0));
    if (auto vec = llvm::dyn_cast<VectorType>(type))
      return builder.create<arith::ConstantOp>(
          loc, DenseElementsAttr::get(vec, scalar));
    return builder.create<arith::ConstantOp>(loc, scalar);
  }

  /// The waits of a pipeline on CUDA (docs/design/warp-specialization.md)
  /// get a site each: a wait that does not complete in time records it
  /// with the stage and phase (the index words) instead of hanging.
  void addWaitSites(PipelineOp pipeline) {
    auto rings = pipelineRings(kernel);
    int64_t ring = llvm::find(rings, pipeline.getRingOp()) - rings.begin();
    std::string location = describeLocation(pipeline.getLoc());
    for (auto [attr, barrier] :
         {std::pair("enigma.bounds_site_full",
                    "full barrier (consumer warps waiting for a stage's "
                    "copies)"),
          std::pair("enigma.bounds_site_empty",
                    "empty barrier (the producer waiting for the consumers "
                    "to release a stage)")}) {
      pipeline->setAttr(attr, builder.getI64IntegerAttr(sites.size()));
      sites.push_back(builder.getDictionaryAttr(
          {builder.getNamedAttr("access", builder.getStringAttr("ring wait")),
           builder.getNamedAttr(
               "buffer", builder.getStringAttr("the " + std::string(barrier) +
                                               " of ring " +
                                               std::to_string(ring))),
           builder.getNamedAttr("location", builder.getStringAttr(location)),
           builder.getNamedAttr("extent", builder.getI32IntegerAttr(1)),
           builder.getNamedAttr("param", builder.getI32IntegerAttr(-1)),
           builder.getNamedAttr("size", builder.getI64IntegerAttr(0))}));
    }
  }

  void instrument(Operation *op, const MemoryAccess &access) {
    Location loc = op->getLoc();
    SizeSource source = *sizeSource(access.memref);
    unsigned site = unsigned(sites.size());
    sites.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr("access", builder.getStringAttr(access.kind)),
         builder.getNamedAttr("buffer", builder.getStringAttr(source.name)),
         builder.getNamedAttr("location",
                              builder.getStringAttr(describeLocation(loc))),
         builder.getNamedAttr("extent",
                              builder.getI32IntegerAttr(access.extent)),
         builder.getNamedAttr("param", builder.getI32IntegerAttr(source.param)),
         builder.getNamedAttr("size", builder.getI64IntegerAttr(
                                          std::max<int64_t>(source.staticSize,
                                                            0)))}));

    builder.setInsertionPoint(op);
    Value ok = inBounds(loc, access, source);
    auto guarded = builder.create<scf::IfOp>(loc, op->getResultTypes(), ok,
                                             /*withElse=*/true);
    // The access moves into the then-branch; its results leave through the
    // if, and a skipped load gives zeros.
    op->replaceAllUsesWith(guarded.getResults());
    Block *thenBlock = guarded.thenBlock();
    Block *elseBlock = guarded.elseBlock();
    if (op->getNumResults()) {
      builder.setInsertionPointToEnd(thenBlock);
      builder.create<scf::YieldOp>(loc, op->getResults());
      op->moveBefore(thenBlock, thenBlock->begin());
      builder.setInsertionPointToStart(elseBlock);
      SmallVector<Value> zeros;
      for (Type type : op->getResultTypes())
        zeros.push_back(zero(loc, type));
      builder.create<scf::YieldOp>(loc, zeros);
      builder.setInsertionPoint(elseBlock->getTerminator());
    } else {
      op->moveBefore(thenBlock->getTerminator());
      builder.setInsertionPoint(elseBlock->getTerminator());
    }
    recordViolation(loc, site, access.index);
  }

  /// `index < extent` (unsigned, as 64-bit numbers) in place of the
  /// enigma.index_check, recording a violation otherwise.
  void instrumentIndex(IndexCheckOp check) {
    Location loc = check.getLoc();
    unsigned site = unsigned(sites.size());
    sites.push_back(builder.getDictionaryAttr(
        {builder.getNamedAttr("access", builder.getStringAttr("index")),
         builder.getNamedAttr("buffer", check.getBufferAttr()),
         builder.getNamedAttr("location",
                              builder.getStringAttr(describeLocation(loc))),
         builder.getNamedAttr("extent", builder.getI32IntegerAttr(1)),
         builder.getNamedAttr("param", builder.getI32IntegerAttr(-1)),
         builder.getNamedAttr("size", builder.getI64IntegerAttr(0)),
         builder.getNamedAttr("dim", check.getDimAttr()),
         builder.getNamedAttr("shape", check.getShapeAttr()),
         builder.getNamedAttr("extent_name", check.getExtentNameAttr())}));
    builder.setInsertionPoint(check);
    auto wide = [&](Value v) -> Value {
      if (v.getType().getIntOrFloatBitWidth() == 64)
        return v;
      return builder.create<arith::ExtUIOp>(loc, builder.getI64Type(), v);
    };
    Value index = wide(check.getIndex());
    Value extent = wide(check.getExtent());
    Value bad = builder.create<arith::CmpIOp>(loc, arith::CmpIPredicate::uge,
                                              index, extent);
    auto guard = builder.create<scf::IfOp>(loc, bad, /*withElse=*/false);
    builder.setInsertionPoint(guard.thenBlock()->getTerminator());
    recordViolation(loc, site,
                    builder.create<arith::IndexCastUIOp>(
                        loc, builder.getIndexType(), index),
                    extent);
    check->erase();
  }

  KernelOp kernel;
  OpBuilder builder;
  BlockArgument record;
  std::map<int, BlockArgument> sizeParams;
  SmallVector<Attribute> sites;
};

struct BoundsCheckPass
    : public PassWrapper<BoundsCheckPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(BoundsCheckPass)

  StringRef getArgument() const override { return "enigma-bounds-check"; }
  StringRef getDescription() const override {
    return "Check every buffer and threadgroup access against the real size "
           "and record the first violation (bounds-checked mode)";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<arith::ArithDialect, scf::SCFDialect,
                    memref::MemRefDialect>();
  }
  void runOnOperation() override {
    getOperation().walk([](KernelOp kernel) {
      if (!kernel->hasAttr("enigma.bounds_sites")) // instrument only once
        KernelInstrumenter(kernel).run();
    });
  }
};
} // namespace

std::unique_ptr<Pass> createBoundsCheckPass() {
  return std::make_unique<BoundsCheckPass>();
}

bool isBoundsCheckParam(KernelOp kernel, unsigned index) {
  return kernel.getArgAttr(index, "enigma.bounds_size_of") ||
         kernel.getArgAttr(index, "enigma.bounds_record");
}

void registerEnigmaTransformPasses() {
  PassRegistration<BoundsCheckPass>();
  registerPass(createGuardSelectedLoadsPass);
  registerPass(createSerializeThreadsPass);
  registerPass(createLowerPipelinesPass);
  registerPass(createSplitWarpRolesPass);
}

} // namespace enigma
