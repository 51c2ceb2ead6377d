//===- InitAll.cpp - The single registration point ------------------------===//
//
// The dialects, passes and translations every entry point registers: the
// tools (enigma-opt, enigma-translate, the parser fuzzer), the builder's
// context (so the Python module and C++ kernels) and the tests, which run
// through the tools.
//
//===----------------------------------------------------------------------===//
#include "enigma/InitAll.h"

#include "enigma/Compiler/Compile.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Dialect/Enigma/Transforms/Passes.h"
#include "enigma/Target/Emit.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "mlir/Transforms/Passes.h"

namespace enigma {

void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<EnigmaDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
}

void loadAllDialects(mlir::MLIRContext &context) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  context.appendDialectRegistry(registry);
  context.loadAllAvailableDialects();
}

void registerAllPasses() {
  mlir::registerTransformsPasses();
  mlir::arith::registerArithPasses();
  registerEnigmaPipelines();
  registerEnigmaTransformPasses();
}

void registerAllTranslations() {
  auto registerOne = [](llvm::StringRef flag, llvm::StringRef description,
                        Target target) {
    mlir::TranslateFromMLIRRegistration reg(
        flag, description,
        [target](mlir::Operation *op, llvm::raw_ostream &os) {
          auto module = llvm::dyn_cast<mlir::ModuleOp>(op);
          if (!module)
            return mlir::LogicalResult(op->emitError("expected a module"));
          // Pipelines: CUDA gets its producer warpgroup, the others
          // software pipelines (both no-ops on kernels without pipelines).
          // Host C++ is printed from thread loops (a no-op on kernels that
          // enigma-opt --enigma-serialize-threads has serialised already).
          mlir::PassManager pm(module.getContext());
          if (target == Target::CUDA)
            pm.addPass(createSplitWarpRolesPass());
          else
            pm.addPass(createLowerPipelinesPass());
          if (target == Target::Cpp)
            pm.addPass(createSerializeThreadsPass());
          if (mlir::failed(pm.run(module)))
            return mlir::failure();
          return emitModule(module, target, os);
        },
        registerAllDialects);
  };
  registerOne("enigma-to-msl", "Print enigma kernels as Metal Shading Language",
              Target::MSL);
  registerOne("enigma-to-cuda", "Print enigma kernels as CUDA C++",
              Target::CUDA);
  registerOne("enigma-to-cpp", "Print enigma kernels as host C++",
              Target::Cpp);
}

} // namespace enigma
