//===- InitAll.cpp --------------------------------------------------------===//
#include "enigma/InitAll.h"

#include "enigma/Compiler/Compile.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Dialect/Enigma/Transforms/Passes.h"
#include "enigma/Target/Emit.h"

#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

namespace enigma {

void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<EnigmaDialect, mlir::arith::ArithDialect,
                  mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::vector::VectorDialect>();
}

void registerAllPasses() {
  mlir::registerTransformsPasses();
  mlir::arith::registerArithPasses();
  registerEnigmaPipelines();
  registerEnigmaTransformPasses();
}

void registerAllTranslations() { registerEnigmaTranslations(); }

} // namespace enigma
