//===- CudaKernel.h - A kernel loaded by the CUDA backend -------*- C++ -*-===//
//
// The loaded module of one compiled kernel. It keeps its image, so that
// after a context reset it loads itself again at the next launch (the
// Dispatcher caches these objects), and it allows its function the dynamic
// shared memory each launch needs.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_CUDAKERNEL_H
#define ENIGMA_LIB_RUNTIME_CUDA_CUDAKERNEL_H

#include "CudaContext.h"

#include <memory>
#include <string>

namespace enigma::cuda {

class CudaKernel final : public LoadedKernel {
public:
  CudaKernel(std::shared_ptr<CudaBackend::State> state, std::string image,
             std::string name, std::string description,
             uint64_t dynamicShared)
      : state(std::move(state)), image(std::move(image)),
        name(std::move(name)), description(std::move(description)),
        dynamicShared(dynamicShared) {}
  ~CudaKernel() override { unload(); }

  /// The entry point in the current context (which must be current).
  CUfunction entry();

  /// Dynamic shared memory of a launch whose dynamic threadgroup array
  /// takes `launchBytes` (0: the kernel has none): after the threadgroup
  /// arrays carved out of it, on a 16-byte boundary (CudaEmitter). Beyond
  /// 48 KiB the function is allowed that much first.
  unsigned sharedBytesFor(uint64_t launchBytes);

  std::shared_ptr<CudaBackend::State> state;
  std::string image;
  std::string name;
  std::string description;
  /// Bytes of dynamic shared memory each launch passes (the threadgroup
  /// arrays beyond 48 KiB); a dynamic threadgroup array adds its own.
  uint64_t dynamicShared = 0;
  /// What sharedBytesFor last allowed, for the module of `generation`.
  uint64_t allowed = 0;
  uint64_t allowedGeneration = ~uint64_t(0);

private:
  static CUmodule loadModule(const CudaBackend::State &state,
                             const std::string &image,
                             const std::string &kernelName);
  void unload();

  CUmodule module = nullptr;
  CUfunction function = nullptr;
  uint64_t generation = 0;
};

/// `kernel` as the CUDA backend's; throws DispatchError for another
/// backend's.
CudaKernel &asCudaKernel(LoadedKernel &kernel);

} // namespace enigma::cuda

#endif // ENIGMA_LIB_RUNTIME_CUDA_CUDAKERNEL_H
