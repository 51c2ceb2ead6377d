//===- Compile.cpp - Verify, optimise, emit -------------------------------===//
#include "enigma/Compiler/Compile.h"
#include "enigma/Target/Emit.h"
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"
#include "enigma/Dialect/Enigma/Transforms/GridIndexBounds.h"
#include "enigma/Dialect/Enigma/Transforms/Passes.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace enigma {

void buildEnigmaPipeline(OpPassManager &pm) {
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createGuardSelectedLoadsPass());
  pm.addPass(createCSEPass());
  pm.addPass(arith::createArithExpandOpsPass());
  pm.addPass(createCanonicalizerPass());
}

void registerEnigmaPipelines() {
  PassPipelineRegistration<>(
      "enigma-optimize",
      "Canonicalize, CSE and expand arith ops the emitters do not print",
      [](OpPassManager &pm) { buildEnigmaPipeline(pm); });
}

namespace {
/// The first file:line inside `loc`: passes fuse the locations of the ops
/// they merge and fold, and the user's line is somewhere inside.
FileLineColLoc userLine(Location loc) {
  FileLineColLoc found;
  loc->walk([&](Location inner) {
    if (auto file = llvm::dyn_cast<FileLineColLoc>(inner)) {
      found = file;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

/// How a user of the Python or C++ front end knows the op named `name`.
std::string describeOp(llvm::StringRef name) {
  if (name == "scf.while")
    return "the while loop (enigma.while_, a `while` statement, or an "
           "enigma.range loop with break or return)";
  if (name == "scf.for")
    return "the loop (enigma.range / enigma.for_range)";
  if (name == "scf.if")
    return "the enigma.if_ block";
  if (name == "enigma.kernel")
    return "the kernel";
  if (name == "memref.load")
    return "a load (memref.load)";
  if (name == "memref.store")
    return "a store (memref.store)";
  if (name == "enigma.mma_reg")
    return "enigma.mma() with A a fragment";
  if (name.starts_with("enigma."))
    return name.str() + "()";
  return "the operation " + name.str();
}

/// "'scf.while' op contains a barrier" -> "the while loop (...) contains a
/// barrier": MLIR names ops by dialect, the user wrote Python.
std::string inPlainWords(const std::string &message) {
  if (message.empty() || message.front() != '\'')
    return message;
  size_t close = message.find("' op", 1);
  if (close == std::string::npos)
    return message;
  return describeOp(llvm::StringRef(message).slice(1, close)) +
         message.substr(close + 4);
}

/// Collects diagnostics as "file:line: error: message" lines.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(MLIRContext *ctx)
      : handler(ctx, [this](Diagnostic &diag) {
          record(diag);
          return success();
        }) {
    // The user wrote Python, not MLIR: do not append the op's generic form.
    ctx->printOpOnDiagnostic(false);
  }

  std::string text() const { return out; }

private:
  void record(Diagnostic &diag) {
    llvm::raw_string_ostream os(out);
    if (FileLineColLoc loc = userLine(diag.getLocation()))
      os << loc.getFilename().getValue() << ":" << loc.getLine() << ": ";
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Error: os << "error: "; break;
    case DiagnosticSeverity::Warning: os << "warning: "; break;
    case DiagnosticSeverity::Note: os << "note: "; break;
    case DiagnosticSeverity::Remark: os << "remark: "; break;
    }
    os << inPlainWords(diag.str()) << "\n";
    for (Diagnostic &note : diag.getNotes())
      record(note);
  }

  std::string out;
  ScopedDiagnosticHandler handler;
};

std::string printModule(ModuleOp module, bool withLocations) {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  // Each op's loc("file.py":line:0) printed on its own line (no #loc
  // aliases at the end), still parseable by enigma-opt.
  if (withLocations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false)
        .useLocalScope();
  module->print(os, flags);
  return text;
}
} // namespace

/// The arguments the kernel may store into: one walk, each view followed
/// back to its argument; a write effect on an argument or a view of it,
/// or an atomic that writes it, marks the argument. Ops whose effects are
/// unknown do not count, so that a warning built on this never names a
/// buffer the kernel only reads.
static llvm::DenseSet<unsigned> writtenArguments(KernelOp kernel) {
  llvm::DenseMap<mlir::Value, unsigned> argumentOf;
  for (BlockArgument arg : kernel.getArguments())
    argumentOf[arg] = arg.getArgNumber();
  llvm::DenseSet<unsigned> written;
  auto mark = [&](mlir::Value v) {
    if (auto it = argumentOf.find(v); it != argumentOf.end())
      written.insert(it->second);
  };
  kernel.walk([&](Operation *op) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(op)) {
      if (auto it = argumentOf.find(view.getViewSource());
          it != argumentOf.end())
        for (mlir::Value r : op->getResults())
          argumentOf[r] = it->second;
      return;
    }
    if (isa<AtomicRMWOp, AtomicStoreOp, AtomicCompareExchangeOp>(op)) {
      llvm::for_each(op->getOperands(), mark);
      return;
    }
    auto effects = dyn_cast<MemoryEffectOpInterface>(op);
    if (!effects)
      return;
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &e : instances) {
      if (!isa<MemoryEffects::Write>(e.getEffect()))
        continue;
      if (e.getValue())
        mark(e.getValue());
      else
        llvm::for_each(op->getOperands(), mark);
    }
  });
  return written;
}

std::vector<KernelParam> kernelParams(KernelOp kernel) {
  std::vector<KernelParam> params;
  const llvm::DenseSet<unsigned> written = writtenArguments(kernel);
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
    KernelParam p;
    p.name = kernel.getParamName(i);
    Type type = kernel.getArgumentTypes()[i];
    p.kind = kernel.isBufferParam(i) ? ParamKind::Buffer : ParamKind::Scalar;
    if (auto mem = llvm::dyn_cast<MemRefType>(type))
      type = mem.getElementType();
    if (auto vec = llvm::dyn_cast<VectorType>(type))
      p.vecWidth = vec.getNumElements();
    if (auto dtype = kernel.getArgAttrOfType<StringAttr>(i, "enigma.dtype"))
      if (auto parsed = parseDType(dtype.getValue()))
        p.dtype = *parsed;
    p.multipleOf = kernel.getParamMultipleOf(i);
    p.written = p.kind == ParamKind::Buffer && written.contains(i);
    params.push_back(p);
  }
  return params;
}

namespace {
/// Whether parameter `i` is hidden from the user: the dynamic threadgroup
/// memory's bytes or one the bounds-check passes appended.
bool isHiddenParam(KernelOp kernel, unsigned i) {
  return kernel.getArgAttr(i, "enigma.threadgroup_memory_bytes") ||
         isBoundsCheckParam(kernel, i);
}

/// `artifact.params`: the user's parameters. The hidden ones after them go
/// to `dynamicThreadgroupMemory` and `boundsCheckParams`; the site table of
/// bounds-checked mode is copied.
void splitHiddenParams(KernelOp kernel, KernelArtifact &artifact) {
  std::vector<KernelParam> all = kernelParams(kernel);
  size_t userParams = 0;
  while (userParams < all.size() &&
         !isHiddenParam(kernel, unsigned(userParams)))
    ++userParams;
  artifact.params.assign(all.begin(), all.begin() + userParams);
  for (size_t i = userParams; i < all.size(); ++i) {
    if (kernel.getArgAttr(unsigned(i), "enigma.threadgroup_memory_bytes")) {
      artifact.dynamicThreadgroupMemory = true;
      continue;
    }
    BoundsCheckParam hidden;
    hidden.param = all[i];
    if (auto of = kernel.getArgAttrOfType<IntegerAttr>(unsigned(i),
                                                       "enigma.bounds_size_of"))
      hidden.sizeOfParam = int(of.getInt());
    artifact.boundsCheckParams.push_back(hidden);
  }
  auto sites = kernel->getAttrOfType<ArrayAttr>("enigma.bounds_sites");
  if (!sites)
    return;
  for (Attribute entry : sites) {
    auto dict = llvm::cast<DictionaryAttr>(entry);
    BoundsCheckSite site;
    if (auto kind = dict.getAs<StringAttr>("kind"))
      site.kind = kind.str();
    site.access = dict.getAs<StringAttr>("access").str();
    site.buffer = dict.getAs<StringAttr>("buffer").str();
    site.location = dict.getAs<StringAttr>("location").str();
    site.extent = unsigned(dict.getAs<IntegerAttr>("extent").getInt());
    site.param = int(dict.getAs<IntegerAttr>("param").getInt());
    site.staticSize = uint64_t(dict.getAs<IntegerAttr>("size").getInt());
    if (auto bytes = dict.getAs<IntegerAttr>("element_bytes"))
      site.elementBytes = uint64_t(bytes.getInt());
    if (auto dim = dict.getAs<IntegerAttr>("dim")) {
      site.dimension = int(dim.getInt());
      site.shape = dict.getAs<StringAttr>("shape").str();
      site.extentName = dict.getAs<StringAttr>("extent_name").str();
    }
    artifact.boundsCheckSites.push_back(std::move(site));
  }
}
} // namespace

KernelArtifact compileKernel(ModuleOp module, KernelOp kernel,
                             const CompileOptions &options) {
  DiagnosticCollector diagnostics(module.getContext());
  auto fail = [&](const std::string &what) {
    throw EnigmaError(what + " failed for kernel '" +
                      kernel.getSymName().str() + "':\n" + diagnostics.text());
  };
  if (failed(verify(module)))
    fail("verification");
  if (options.boundsCheck) {
    // Integer overflow is checked on the ops as traced, before folding.
    PassManager pm(module.getContext());
    pm.addPass(createIntegerCheckPass());
    if (failed(pm.run(module)))
      fail("integer-check insertion");
  } else {
    dropOverflowMarks(module);
    // Index checks of shaped buffers become checks in bounds-checked mode
    // (the bounds-check pass); otherwise they go before they could hold up
    // the optimiser.
    kernel.walk([](IndexCheckOp check) { check->erase(); });
  }
  if (options.optimize) {
    PassManager pm(module.getContext());
    buildEnigmaPipeline(pm);
    if (failed(pm.run(module)))
      fail("optimisation");
  }
  KernelArtifact artifact;
  artifact.kernelName = "enigma_kernel_" + kernel.getSymName().str();
  artifact.params = kernelParams(kernel);
  if (options.boundsCheck) {
    PassManager pm(module.getContext());
    pm.addPass(createBoundsCheckPass());
    pm.addPass(createThreadgroupCheckPass());
    if (failed(pm.run(module)))
      fail("bounds-check insertion");
  } else {
    // Bounds-checked mode reports violations itself, with the thread.
    artifact.gridIndexBounds = findGridAffineAccesses(kernel);
  }
  splitHiddenParams(kernel, artifact);
  artifact.threadgroupMemoryBytes = ThreadgroupAllocOp::totalBytes(kernel);
  artifact.metalUnsupported = metalUnsupported(kernel);
  artifact.wholeSimdgroups = usesFragments(kernel);
  artifact.wholeWarpgroups = usesWarpgroupProducts(kernel);
  artifact.threadgroupSize = kernel.getRequiredThreadgroupSize().value_or(0);
  artifact.matrixExtents = kernel.getMatrixExtents();
  kernel.walk([&](FunctionConstantOp op) { // each index once, in first-use order
    if (llvm::none_of(artifact.constants, [&](const FunctionConstantUse &u) {
          return u.index == unsigned(op.getIndex());
        }))
      artifact.constants.push_back(
          {unsigned(op.getIndex()), *parseDType(op.getDtype().str())});
  });
  artifact.mlirSource = printModule(module, options.mlirLocations);
  auto emitTo = [&](Target target, std::string &out, const char *what) {
    llvm::raw_string_ostream os(out);
    if (failed(emitKernel(kernel, target, os)))
      fail(std::string("emitting ") + what);
  };
  auto emitCudaFrom = [&](KernelOp cudaKernel) {
    artifact.cudaDynamicSharedBytes =
        enigma::cudaDynamicSharedBytes(cudaKernel);
    artifact.cudaLinearBlocks = cudaUsesLinearBlocks(cudaKernel);
    artifact.cudaTensorMaps = cudaTensorMaps(cudaKernel);
    for (PipelineRingOp ring : pipelineRings(cudaKernel)) {
      artifact.cudaProducerThreads = kProducerThreads;
      artifact.cudaClusterSize = unsigned(ring.getCluster());
      artifact.cudaProducerRegisters = unsigned(ring.getProducerRegisters());
      artifact.cudaConsumerRegisters = unsigned(ring.getConsumerRegisters());
    }
    llvm::raw_string_ostream os(artifact.cudaSource);
    if (failed(emitKernel(cudaKernel, Target::CUDA, os)))
      fail("emitting CUDA");
  };
  if (usesPipelines(kernel)) {
    // Pipelines: CUDA gets a producer warpgroup (from a copy of the
    // module), the other targets software pipelines of the whole group.
    OwningOpRef<ModuleOp> cuda = module.clone();
    PassManager split(module.getContext());
    split.addPass(createSplitWarpRolesPass());
    split.addPass(createCanonicalizerPass());
    split.addPass(createCSEPass());
    if (failed(split.run(*cuda)))
      fail("splitting the warp roles for CUDA");
    KernelOp cudaKernel;
    cuda->walk([&](KernelOp k) {
      if (k.getSymName() == kernel.getSymName())
        cudaKernel = k;
    });
    emitCudaFrom(cudaKernel);
    PassManager lower(module.getContext());
    lower.addPass(createLowerPipelinesPass());
    lower.addPass(createCanonicalizerPass());
    if (failed(lower.run(module)))
      fail("lowering the pipelines");
  } else {
    emitCudaFrom(kernel);
  }
  emitTo(Target::MSL, artifact.mslSource, "Metal Shading Language");
  // The CPU runs a group's threads one after another: the kernel is
  // rewritten into thread loops (last, the other targets print it as is).
  PassManager cpu(module.getContext());
  cpu.addPass(createSerializeThreadsPass());
  if (failed(cpu.run(module)))
    fail("emitting host C++");
  emitTo(Target::Cpp, artifact.cppSource, "host C++");
  return artifact;
}

} // namespace enigma
