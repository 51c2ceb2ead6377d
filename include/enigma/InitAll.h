//===- InitAll.h - The single registration point ----------------*- C++ -*-===//
#ifndef ENIGMA_INITALL_H
#define ENIGMA_INITALL_H

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"

namespace enigma {
/// The enigma dialect and the upstream dialects kernels use.
void registerAllDialects(mlir::DialectRegistry &registry);
/// Those dialects registered and loaded in `context` (the builder's).
void loadAllDialects(mlir::MLIRContext &context);
/// Upstream passes enigma-opt offers plus the enigma pipelines.
void registerAllPasses();
/// --enigma-to-msl, --enigma-to-cuda, --enigma-to-cpp.
void registerAllTranslations();
} // namespace enigma

#endif
