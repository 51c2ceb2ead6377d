//===- KernelArtifact.h - What compilation hands to runtimes ----*- C++ -*-===//
//
// The target-independent result of compiling one kernel: its signature and
// the source text for each target. Runtimes depend on this header only, never
// on MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_KERNELARTIFACT_H
#define ENIGMA_RUNTIME_KERNELARTIFACT_H

#include "enigma/Support/DType.h"
#include "enigma/Support/CudaTensorMap.h"
#include "enigma/Support/GridIndexBound.h"
#include "enigma/Support/MatrixExtent.h"

#include <cstdint>
#include <string>
#include <vector>

namespace enigma {

enum class ParamKind : uint8_t { Buffer, Scalar };

/// One kernel parameter, in declaration order (= Metal [[buffer(i)]] slot).
struct KernelParam {
  std::string name;
  ParamKind kind = ParamKind::Buffer;
  DType dtype = DType::F32;
  /// Elements per buffer entry (vec_width); 1 for plain buffers.
  unsigned vecWidth = 1;
  /// A scalar's promised multiple (enigma.Scalar(..., multiple_of=N)): the
  /// dispatcher refuses other values. 1 when nothing is promised.
  uint64_t multipleOf = 1;
  /// Whether the kernel may store into this buffer (a store, an atomic
  /// that writes, a tile or fragment stored there). False for scalars and
  /// where the kernel is not known (hand-written Metal source).
  bool written = false;
};

/// A `function_constant(dtype, index)` the kernel reads.
struct FunctionConstantUse {
  unsigned index = 0;
  DType dtype = DType::I32;
};

/// Bounds-checked mode (CompileOptions::boundsCheck; docs/design/
/// bounds-check.md): one check of the kernel, by site id.
struct BoundsCheckSite {
  /// "" for an access; "arithmetic" (an integer overflow), "uninitialised"
  /// (a threadgroup read of an element not written), "missing_lane" (a
  /// shuffle from a lane that does not exist) or "short_simdgroup" (a
  /// simdgroup matrix op in a simdgroup of fewer than 32 lanes).
  std::string kind;
  /// The access ("load", "store", "atomic_rmw", ...); for arithmetic
  /// "add", "sub", "mul" or "neg"; for lanes, the function's name.
  std::string access;
  /// The parameter's name, or "threadgroup array ..."; for arithmetic the
  /// dtype ("u32"); for a missing lane "simdgroup" or "quad".
  std::string buffer;
  std::string location; // the user's "file:line", or "" when unknown
  unsigned extent = 1;  // elements the access touches from its index
  int param = -1;       // the buffer parameter, or -1 for a threadgroup array
  uint64_t staticSize = 0; // elements of the threadgroup array
  /// The dynamic threadgroup array: its element's bytes (its size is the
  /// launch's threadgroup_memory divided by them); 0 for the others.
  uint64_t elementBytes = 0;
  /// An index check (access "index") of a buffer declared with a shape:
  /// which index, the shape as declared ("(H, W)") and the extent's name.
  int dimension = -1;
  std::string shape;
  std::string extentName;
};

/// The parameters the bounds-check pass appends after `params` and what
/// the Dispatcher binds to them: the element count of a user buffer
/// (`sizeOfParam` >= 0) or the violation record (`sizeOfParam` == -1).
struct BoundsCheckParam {
  KernelParam param;
  int sizeOfParam = -1;
};

struct KernelArtifact {
  std::string kernelName; // "enigma_kernel_<python name>"
  std::vector<KernelParam> params;
  std::vector<FunctionConstantUse> constants;
  std::string mlirSource;
  std::string mslSource;
  std::string cudaSource;
  std::string cppSource; // host C++ for CpuRuntime
  /// CUDA launches this kernel with 1-D blocks of the threadgroup's volume
  /// (enigma_cuda_abi.h): set for kernels with simdgroup functions.
  bool cudaLinearBlocks = false;
  /// Bytes of threadgroup memory the kernel allocates statically.
  uint64_t threadgroupMemoryBytes = 0;
  /// The kernel has a dynamic threadgroup array (dynamic_threadgroup_alloc):
  /// each launch gives its bytes (DispatchArgs::threadgroupMemory), passed
  /// as a hidden u64 argument right after the user's, before those of
  /// bounds-checked mode.
  bool dynamicThreadgroupMemory = false;
  /// Bytes of dynamic shared memory the CUDA kernel is launched with (0:
  /// its arrays are static __shared__ memory); see cudaDynamicSharedBytes.
  uint64_t cudaDynamicSharedBytes = 0;
  /// The kernel holds simdgroup fragments (the mma family): every
  /// threadgroup of a launch must be whole simdgroups.
  bool wholeSimdgroups = false;
  /// It has warpgroup products: threadgroups must be whole groups of four
  /// simdgroups (multiples of 128 threads).
  bool wholeWarpgroups = false;
  /// Non-zero: the kernel runs only in full threadgroups of exactly this
  /// many threads (enigma.threadgroup_size).
  uint64_t threadgroupSize = 0;
  /// Bounds-checked mode: hidden parameters after `params` (empty when the
  /// mode is off or nothing is checked) and the table of checked accesses.
  std::vector<BoundsCheckParam> boundsCheckParams;
  std::vector<BoundsCheckSite> boundsCheckSites;
  /// Pre-dispatch out-of-bounds detection (without bounds-checked mode).
  std::vector<GridIndexBound> gridIndexBounds;
  /// Buffers that kernel parts read or write as matrices with sides from
  /// scalar parameters (enigma.matrix_extents), checked before dispatch in
  /// either mode.
  std::vector<MatrixExtent> matrixExtents;
  /// Why Metal cannot run this kernel (the first op it lacks, with its
  /// file:line), or "": MetalRuntime and MetalHostRuntime refuse to load it.
  std::string metalUnsupported;
  /// Tensor maps of the CUDA kernel's tile copies (may be empty).
  std::vector<CudaTensorMap> cudaTensorMaps;
  /// Threads CUDA adds to each threadgroup for the producer warpgroup of
  /// a kernel with pipelines (docs/design/warp-specialization.md), and the
  /// threadgroups of x positions that form one thread-block cluster.
  unsigned cudaProducerThreads = 0;
  unsigned cudaClusterSize = 1;
  /// The registers per thread of the producer warpgroup and of the
  /// consumers (setmaxnreg), which the runtime checks against the count of
  /// the loaded code (enigma/Support/RoleRegisters.h).
  unsigned cudaProducerRegisters = 0;
  unsigned cudaConsumerRegisters = 0;
};

/// The launch argument that carries the dynamic threadgroup memory's bytes
/// of `launched`, a kernel with dynamicThreadgroupMemory whose hidden
/// parameters are appended (BoundsCheckLaunch::launchedArtifact).
inline size_t dynamicThreadgroupArg(const KernelArtifact &launched) {
  return launched.params.size() - launched.boundsCheckParams.size() - 1;
}

} // namespace enigma

#endif
