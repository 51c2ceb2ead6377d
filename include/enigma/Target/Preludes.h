//===- Preludes.h - Device preludes embedded in libenigma -------*- C++ -*-===//
//
// The headers that generated CPU and CUDA sources include, embedded as text at
// build time (from include/enigma/Target/Prelude/) so that runtimes can hand
// them to the host compiler (written to the cache directory) or to NVRTC (as
// in-memory headers) without any install path.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_TARGET_PRELUDES_H
#define ENIGMA_TARGET_PRELUDES_H

#include <string_view>
#include <vector>

namespace enigma {

struct PreludeFile {
  std::string_view name; // as written in #include "..."
  std::string_view text;
};

/// Headers for host C++ kernels; the entry point is "enigma_cpu_prelude.h".
const std::vector<PreludeFile> &cpuPreludeFiles();
/// Headers for CUDA kernels; the entry point is "enigma_cuda_prelude.cuh".
const std::vector<PreludeFile> &cudaPreludeFiles();

} // namespace enigma

#endif
