//===- CubinCache.h - Compiled CUDA kernels on disk -------------*- C++ -*-===//
//
// NVRTC's output (a cubin, or PTX for the driver to JIT-compile) is kept
// in the project's artifact cache, shared with the other backends and
// processes, under a key made of everything that changes it.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_CUBINCACHE_H
#define ENIGMA_LIB_RUNTIME_CUDA_CUBINCACHE_H

#include "Nvrtc.h"

#include <string>

namespace enigma {
class ArtifactCache;

namespace cuda {

/// The process's artifact cache, shared with the other backends.
ArtifactCache &cubinCache();

/// The cache key of a compilation: everything that changes its output.
std::string cubinKey(const Nvrtc &nvrtc, const NvrtcProgramInput &program);

/// The cubin or PTX for `source`, from the project's artifact cache when an
/// identical compilation was done before (by any process), else from NVRTC
/// (and then stored).
NvrtcOutput loadOrCompileCubin(const Nvrtc &nvrtc,
                               const NvrtcProgramInput &program,
                               bool &fromCache);

} // namespace cuda
} // namespace enigma

#endif // ENIGMA_LIB_RUNTIME_CUDA_CUBINCACHE_H
