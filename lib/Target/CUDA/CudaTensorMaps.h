//===- CudaTensorMaps.h - Tile copies the TMA can do ------------*- C++ -*-===//
//
// Which enigma.copy_tile_async ops of a kernel compiled with the option
// (the `enigma.cuda_tma` attribute) the CUDA text issues through the Tensor
// Memory Accelerator, and the tensor maps they need (docs/design/tma.md):
// the source is a buffer parameter, its pitch a
// constant or a scalar parameter, the box at most 256 x 256 with rows of
// whole 16-byte chunks, and the destination dense (no swizzle) or in rows
// of 128 bytes under the 128-byte swizzle. Copies that share buffer,
// pitch, box and swizzle share a map. The TMA addresses a tile by row and
// column: where the source offset is a sum with one term `row * pitch`,
// the plan names the row and the other terms (the column), so that the
// kernel need not divide.
//
// The copies of pipelines (enigma.stage_copy in the explicit form) get a
// map when the source is a buffer parameter, its rows, columns and pitch
// parameters or constants, the box blocks whole 16-byte rows of at most
// 256 x 256 elements, and the stage offsets are where the TMA may write
// (1024 bytes for the 128-byte swizzle, 128 without one). Always, also in
// bounds-checked mode: the map spans exactly the matrix, whose size the
// launch has checked.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_TARGET_CUDA_CUDATENSORMAPS_H
#define ENIGMA_LIB_TARGET_CUDA_CUDATENSORMAPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Support/CudaTensorMap.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace enigma {

/// A copy's source offset as row * pitch + the sum of `columnTerms`.
struct CudaTileOrigin {
  mlir::Value row;
  llvm::SmallVector<mlir::Value, 2> columnTerms;
};

struct CudaTensorMapPlan {
  std::vector<CudaTensorMap> maps;
  /// The map of each copy that has one.
  llvm::DenseMap<mlir::Operation *, unsigned> mapOf;
  /// Where the offset of such a copy splits into row and column.
  llvm::DenseMap<mlir::Operation *, CudaTileOrigin> originOf;
  /// Whether some enigma.copy_tile_async has a map (the kernel then tracks
  /// its commit groups in mbarriers, enigma_cuda_tma.cuh).
  bool tileCopies = false;
};

CudaTensorMapPlan cudaTensorMapPlan(KernelOp kernel);

} // namespace enigma

#endif
