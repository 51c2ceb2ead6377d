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

#include "CheckRecord.h"

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

constexpr const char *kCheckedAccessesAttr = "enigma.checked_accesses";

/// Where the size of an accessed memref comes from.
struct SizeSource {
  int param = -1;          // kernel parameter index, or
  int64_t staticSize = -1; // the static size of a threadgroup array, or
  DynamicThreadgroupAllocOp dynamic; // the launch's dynamic array
  std::string name;        // for the site table
};

class KernelInstrumenter {
public:
  explicit KernelInstrumenter(KernelOp kernel)
      : kernel(kernel), builder(kernel.getContext()), checks(kernel) {}

  void run() {
    SmallVector<std::pair<Operation *, MemoryAccess>> accesses;
    SmallVector<IndexCheckOp> indexChecks;
    kernel.walk([&](Operation *op) {
      if (auto check = dyn_cast<IndexCheckOp>(op))
        indexChecks.push_back(check);
      else if (std::optional<MemoryAccess> access = describeMemoryAccess(op))
        if (!isRecord(access->memref) && sizeSource(access->memref))
          accesses.push_back({op, *access});
    });
    SmallVector<PipelineOp> pipelines;
    kernel.walk([&](PipelineOp op) { pipelines.push_back(op); });
    if (accesses.empty() && pipelines.empty() && indexChecks.empty())
      return;
    for (auto &[op, access] : accesses)
      if (SizeSource source = *sizeSource(access.memref); source.param >= 0)
        sizeParam(source.param); // parameters first, in access order
    checks.record();
    for (auto &[op, access] : accesses)
      instrument(op, access);
    for (PipelineOp pipeline : pipelines)
      addWaitSites(pipeline);
    for (IndexCheckOp check : indexChecks)
      instrumentIndex(check);
  }

private:
  /// The record of the other checks is not the user's memory.
  bool isRecord(Value memref) {
    auto arg = llvm::dyn_cast<BlockArgument>(memref);
    return arg && arg.getOwner()->getParentOp() == kernel.getOperation() &&
           kernel.getArgAttr(arg.getArgNumber(), "enigma.bounds_record");
  }

  std::optional<SizeSource> sizeSource(Value memref) {
    if (auto arg = llvm::dyn_cast<BlockArgument>(memref))
      if (arg.getOwner()->getParentOp() == kernel.getOperation())
        return SizeSource{int(arg.getArgNumber()), -1, {},
                          kernel.getParamName(arg.getArgNumber())};
    auto type = llvm::cast<MemRefType>(memref.getType());
    if (auto dynamic = memref.getDefiningOp<DynamicThreadgroupAllocOp>()) {
      std::string name = "dynamic threadgroup array (";
      if (auto dtype = dynamic->getAttrOfType<StringAttr>("enigma.dtype"))
        name += dtype.getValue().str() + ", ";
      std::string where = describeLocation(dynamic.getLoc());
      name += where.empty() ? "sized at launch)"
                            : "allocated at " + where + ")";
      return SizeSource{-1, -1, dynamic, name};
    }
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
    return SizeSource{-1, type.getDimSize(0), {}, name};
  }

  /// The hidden element-count parameter of buffer parameter `param`.
  BlockArgument sizeParam(int param) {
    auto it = sizeParams.find(param);
    if (it != sizeParams.end())
      return it->second;
    BlockArgument arg = checks.appendParam(
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

  /// True when `access` stays inside its memref. Unsigned compares, so a
  /// negative index (a huge unsigned one) fails too.
  Value inBounds(Location loc, const MemoryAccess &access,
                 const SizeSource &source) {
    Value size;
    if (source.param >= 0) {
      size = builder.create<arith::IndexCastUIOp>(
          loc, builder.getIndexType(), sizeParam(source.param));
    } else if (source.dynamic) { // the launch's bytes in elements
      DynamicThreadgroupAllocOp dynamic = source.dynamic;
      Value bytes = builder.create<arith::IndexCastUIOp>(
          loc, builder.getIndexType(), dynamic.getBytes());
      size = builder.create<arith::DivUIOp>(
          loc, bytes, indexConstant(loc, elementBytes(access.memref)));
    } else {
      size = indexConstant(loc, source.staticSize);
    }
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

  /// Bytes of one element of `memref` (bool takes one).
  static int64_t elementBytes(Value memref) {
    Type element = llvm::cast<MemRefType>(memref.getType()).getElementType();
    return std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
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
      unsigned site = checks.addSite(
          {builder.getNamedAttr("access", builder.getStringAttr("ring wait")),
           builder.getNamedAttr(
               "buffer", builder.getStringAttr("the " + std::string(barrier) +
                                               " of ring " +
                                               std::to_string(ring))),
           builder.getNamedAttr("location", builder.getStringAttr(location)),
           builder.getNamedAttr("extent", builder.getI32IntegerAttr(1)),
           builder.getNamedAttr("param", builder.getI32IntegerAttr(-1)),
           builder.getNamedAttr("size", builder.getI64IntegerAttr(0))});
      pipeline->setAttr(attr, builder.getI64IntegerAttr(site));
    }
  }

  void instrument(Operation *op, const MemoryAccess &access) {
    Location loc = op->getLoc();
    SizeSource source = *sizeSource(access.memref);
    SmallVector<NamedAttribute> fields = {
        builder.getNamedAttr("access", builder.getStringAttr(access.kind)),
        builder.getNamedAttr("buffer", builder.getStringAttr(source.name)),
        builder.getNamedAttr("location",
                             builder.getStringAttr(describeLocation(loc))),
        builder.getNamedAttr("extent",
                             builder.getI32IntegerAttr(access.extent)),
        builder.getNamedAttr("param", builder.getI32IntegerAttr(source.param)),
        builder.getNamedAttr("size",
                             builder.getI64IntegerAttr(
                                 std::max<int64_t>(source.staticSize, 0)))};
    if (source.dynamic) // its size: the launch's bytes over these
      fields.push_back(builder.getNamedAttr(
          "element_bytes",
          builder.getI64IntegerAttr(elementBytes(access.memref))));
    unsigned site = checks.addSite(fields);

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
    checks.record(builder, loc, rec::kCount, site, access.index, Value(),
                  /*isSigned=*/true);
  }

  /// `index < extent` (unsigned, as 64-bit numbers) in place of the
  /// enigma.index_check, recording a violation otherwise.
  void instrumentIndex(IndexCheckOp check) {
    Location loc = check.getLoc();
    unsigned site = checks.addSite(
        {builder.getNamedAttr("access", builder.getStringAttr("index")),
         builder.getNamedAttr("buffer", check.getBufferAttr()),
         builder.getNamedAttr("location",
                              builder.getStringAttr(describeLocation(loc))),
         builder.getNamedAttr("extent", builder.getI32IntegerAttr(1)),
         builder.getNamedAttr("param", builder.getI32IntegerAttr(-1)),
         builder.getNamedAttr("size", builder.getI64IntegerAttr(0)),
         builder.getNamedAttr("dim", check.getDimAttr()),
         builder.getNamedAttr("shape", check.getShapeAttr()),
         builder.getNamedAttr("extent_name", check.getExtentNameAttr())});
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
    checks.record(builder, loc, rec::kCount, site, index, extent,
                  /*isSigned=*/false);
    check->erase();
  }

  KernelOp kernel;
  OpBuilder builder;
  CheckRecord checks;
  std::map<int, BlockArgument> sizeParams;
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
      if (kernel->hasAttr(kCheckedAccessesAttr)) // instrument only once
        return;
      kernel->setAttr(kCheckedAccessesAttr, UnitAttr::get(kernel.getContext()));
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
  registerPass(createIntegerCheckPass);
  registerPass(createThreadgroupCheckPass);
  registerPass(createGuardSelectedLoadsPass);
  registerPass(createSerializeThreadsPass);
  registerPass(createLowerPipelinesPass);
  registerPass(createSplitWarpRolesPass);
}

} // namespace enigma
