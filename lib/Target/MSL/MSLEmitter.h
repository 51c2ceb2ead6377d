//===- MSLEmitter.h ---------------------------------------------*- C++ -*-===//
#ifndef ENIGMA_LIB_TARGET_MSL_MSLEMITTER_H
#define ENIGMA_LIB_TARGET_MSL_MSLEMITTER_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

namespace enigma {
mlir::LogicalResult emitMSL(KernelOp kernel, llvm::raw_ostream &os);
}

#endif
