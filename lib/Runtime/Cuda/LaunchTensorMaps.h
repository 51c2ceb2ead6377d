//===- LaunchTensorMaps.h - Tensor-map parameters of a launch ---*- C++ -*-===//
//
// A kernel with tile copies for the Tensor Memory Accelerator takes, after
// its EnigmaCudaLaunch, one CUtensorMap per KernelArtifact::cudaTensorMaps
// entry and a mask of the maps that are valid (enigma_cuda_tma.cuh;
// docs/design/tma.md). They are encoded from the launch's own arguments:
// the buffer's address and the pitch's value. A map the driver cannot
// encode (no encoder, an unaligned buffer or pitch) is left out of the
// mask and its copies run as cp.async.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_LAUNCHTENSORMAPS_H
#define ENIGMA_LIB_RUNTIME_CUDA_LAUNCHTENSORMAPS_H

#include "CudaDriver.h"

#include "enigma/Runtime/KernelArtifact.h"

#include <cstdint>

namespace enigma {

class LaunchTensorMaps {
public:
  /// `slots`: each parameter's device address or scalar bits, in order.
  LaunchTensorMaps(const cuda::DriverApi &api, const KernelArtifact &artifact,
                   const uint64_t *slots);

  /// cuLaunchKernel's pointers to the maps and the mask: `count()` of them
  /// (0 for kernels without maps).
  size_t count() const { return used ? used + 1 : 0; }
  void *pointer(size_t i) { return i < used ? (void *)&maps[i] : &valid; }

private:
  struct alignas(64) Map {
    uint64_t bits[16];
  };
  Map maps[kMaxCudaTensorMaps];
  size_t used = 0;
  unsigned valid = 0;
};

} // namespace enigma

#endif
