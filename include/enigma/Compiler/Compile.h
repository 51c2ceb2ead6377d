//===- Compile.h - From an enigma module to a KernelArtifact ----*- C++ -*-===//
#ifndef ENIGMA_COMPILER_COMPILE_H
#define ENIGMA_COMPILER_COMPILE_H

#include "enigma/Builder/KernelBuilder.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Runtime/KernelArtifact.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

namespace enigma {

/// The project's optimisation pipeline on a module of kernels: upstream
/// canonicalize and CSE plus the expansion of arith ops that have no C
/// spelling (ceildiv, floordiv, NaN-propagating min/max).
void buildEnigmaPipeline(mlir::OpPassManager &pm);

/// Registers the pipeline as `enigma-optimize` for enigma-opt.
void registerEnigmaPipelines();

/// Verifies `module`, runs the pipeline (if options.optimize) and prints
/// every target of `kernel`. Throws EnigmaError with the diagnostics, each
/// prefixed by the user's file:line where the op has one.
KernelArtifact compileKernel(mlir::ModuleOp module, KernelOp kernel,
                             const CompileOptions &options);

/// The parameter list of a kernel, from its argument types and attributes.
std::vector<KernelParam> kernelParams(KernelOp kernel);

} // namespace enigma

#endif
