//===- Compile.cpp - Verify, optimise, emit -------------------------------===//
#include "enigma/Compiler/Compile.h"
#include "enigma/Target/Emit.h"
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
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
    if (auto loc = llvm::dyn_cast<FileLineColLoc>(diag.getLocation()))
      os << loc.getFilename().getValue() << ":" << loc.getLine() << ": ";
    else if (auto named = llvm::dyn_cast<NameLoc>(diag.getLocation()))
      if (auto inner = llvm::dyn_cast<FileLineColLoc>(named.getChildLoc()))
        os << inner.getFilename().getValue() << ":" << inner.getLine()
           << ": ";
    switch (diag.getSeverity()) {
    case DiagnosticSeverity::Error: os << "error: "; break;
    case DiagnosticSeverity::Warning: os << "warning: "; break;
    case DiagnosticSeverity::Note: os << "note: "; break;
    case DiagnosticSeverity::Remark: os << "remark: "; break;
    }
    os << diag.str() << "\n";
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
  if (withLocations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/true);
  module->print(os, flags);
  return text;
}
} // namespace

std::vector<KernelParam> kernelParams(KernelOp kernel) {
  std::vector<KernelParam> params;
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
    params.push_back(p);
  }
  return params;
}

KernelArtifact compileKernel(ModuleOp module, KernelOp kernel,
                             const CompileOptions &options) {
  DiagnosticCollector diagnostics(module.getContext());
  auto fail = [&](const std::string &what) {
    throw EnigmaError(what + " failed for kernel '" +
                      kernel.getSymName().str() + "':\n" + diagnostics.text());
  };
  if (failed(verify(module)))
    fail("verification");
  if (options.optimize) {
    PassManager pm(module.getContext());
    buildEnigmaPipeline(pm);
    if (failed(pm.run(module)))
      fail("optimisation");
  }
  KernelArtifact artifact;
  artifact.kernelName = "enigma_kernel_" + kernel.getSymName().str();
  artifact.params = kernelParams(kernel);
  artifact.threadgroupMemoryBytes = ThreadgroupAllocOp::totalBytes(kernel);
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
  emitTo(Target::MSL, artifact.mslSource, "Metal Shading Language");
  emitTo(Target::CUDA, artifact.cudaSource, "CUDA");
  emitTo(Target::Cpp, artifact.cppSource, "host C++");
  return artifact;
}

} // namespace enigma
