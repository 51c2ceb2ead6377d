//===- Emit.cpp - Target dispatch and translation registration ------------===//
#include "enigma/Target/Emit.h"

#include "CUDA/CudaEmitter.h"
#include "Cpp/CppEmitter.h"
#include "MSL/MSLEmitter.h"

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "mlir/Tools/mlir-translate/Translation.h"

using namespace mlir;

namespace enigma {

LogicalResult emitKernel(KernelOp kernel, Target target, raw_ostream &os) {
  switch (target) {
  case Target::MSL: return emitMSL(kernel, os);
  case Target::CUDA: return emitCuda(kernel, os);
  case Target::Cpp: return emitCpp(kernel, os);
  }
  return failure();
}

LogicalResult emitModule(ModuleOp module, Target target, raw_ostream &os) {
  bool first = true;
  for (auto kernel : module.getOps<KernelOp>()) {
    if (!first)
      os << "\n";
    first = false;
    if (failed(emitKernel(kernel, target, os)))
      return failure();
  }
  return success();
}

void registerEnigmaTranslations() {
  auto registerOne = [](StringRef flag, StringRef description, Target target) {
    TranslateFromMLIRRegistration reg(
        flag, description,
        [target](Operation *op, raw_ostream &os) -> LogicalResult {
          auto module = dyn_cast<ModuleOp>(op);
          if (!module)
            return op->emitError("expected a module");
          return emitModule(module, target, os);
        },
        [](DialectRegistry &registry) {
          registry.insert<EnigmaDialect, arith::ArithDialect,
                          math::MathDialect, memref::MemRefDialect,
                          scf::SCFDialect, vector::VectorDialect>();
        });
  };
  registerOne("enigma-to-msl", "Print enigma kernels as Metal Shading Language",
              Target::MSL);
  registerOne("enigma-to-cuda", "Print enigma kernels as CUDA C++",
              Target::CUDA);
  registerOne("enigma-to-cpp", "Print enigma kernels as host C++",
              Target::Cpp);
}

} // namespace enigma
