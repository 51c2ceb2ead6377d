//===- Emit.h - Printing kernels as target source ---------------*- C++ -*-===//
//
// One C-family walker prints an enigma.kernel as Metal Shading Language, CUDA
// C++ or host C++; the targets differ only in a small set of hooks (kernel
// signature, thread queries, barriers, the per-thread loop on the CPU).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_TARGET_EMIT_H
#define ENIGMA_TARGET_EMIT_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/Support/raw_ostream.h"

#include "enigma/Support/CudaTensorMap.h"

#include <string>
#include <vector>

namespace enigma {

class KernelOp;

enum class Target { MSL, CUDA, Cpp };

/// Prints one kernel. Fails (with a diagnostic on the op) on constructs the
/// target cannot express.
mlir::LogicalResult emitKernel(KernelOp kernel, Target target,
                               llvm::raw_ostream &os);

/// Prints every kernel of the module, in order.
mlir::LogicalResult emitModule(mlir::ModuleOp module, Target target,
                               llvm::raw_ostream &os);

/// What of `kernel` Metal cannot run, with its file:line and why, or ""
/// (lib/Target/MSL/MetalSupport.cpp); the runtimes that run Metal source
/// refuse to load such a kernel.
std::string metalUnsupported(KernelOp kernel);

/// Whether the CUDA text of `kernel` expects 1-D blocks of the threadgroup's
/// volume (enigma_cuda_abi.h): kernels with simdgroup functions, so that
/// warps are Metal's simdgroups in partial multi-dimensional threadgroups.
bool cudaUsesLinearBlocks(KernelOp kernel);

/// Bytes of dynamic shared memory the CUDA text of `kernel` is launched
/// with: 0 when its threadgroup arrays are static __shared__ arrays (at most
/// 48 KiB), else the size of the array they are carved from
/// (lib/Target/CUDA/CudaSharedMemory.h).
uint64_t cudaDynamicSharedBytes(KernelOp kernel);

/// The tensor maps the CUDA text of `kernel` takes after the launch shape:
/// for kernels marked `enigma.cuda_tma`, one per buffer, pitch, box and
/// swizzle of the tile copies that the Tensor Memory Accelerator can do
/// (lib/Target/CUDA/CudaTensorMaps.h).
std::vector<CudaTensorMap> cudaTensorMaps(KernelOp kernel);

} // namespace enigma

#endif
