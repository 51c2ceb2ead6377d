//===- CppEmitter.h ---------------------------------------------*- C++ -*-===//
#ifndef ENIGMA_LIB_TARGET_CPP_CPPEMITTER_H
#define ENIGMA_LIB_TARGET_CPP_CPPEMITTER_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

namespace enigma {
mlir::LogicalResult emitCpp(KernelOp kernel, llvm::raw_ostream &os);
}

#endif
