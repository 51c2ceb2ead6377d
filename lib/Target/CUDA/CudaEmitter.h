//===- CudaEmitter.h --------------------------------------------*- C++ -*-===//
#ifndef ENIGMA_LIB_TARGET_CUDA_CUDAEMITTER_H
#define ENIGMA_LIB_TARGET_CUDA_CUDAEMITTER_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

namespace enigma {
mlir::LogicalResult emitCuda(KernelOp kernel, llvm::raw_ostream &os);
}

#endif
