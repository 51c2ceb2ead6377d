//===- Emit.cpp - Target dispatch and translation registration ------------===//
#include "enigma/Target/Emit.h"

#include "CUDA/CudaEmitter.h"
#include "Cpp/CppEmitter.h"
#include "MSL/MSLEmitter.h"

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

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

} // namespace enigma
