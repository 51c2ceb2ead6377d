//===- CudaBuffer.h - Device memory of the CUDA backend ---------*- C++ -*-===//
//
// A buffer the backend allocated, or a device array of another library
// bound to it. Its memory belongs to one generation of the device's
// context: after a reset it is gone, and using it says so.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_CUDABUFFER_H
#define ENIGMA_LIB_RUNTIME_CUDA_CUDABUFFER_H

#include "CudaContext.h"

#include <memory>

namespace enigma::cuda {

class CudaBuffer final : public DeviceBuffer {
public:
  CudaBuffer(std::shared_ptr<CudaBackend::State> state, CUdeviceptr pointer,
             size_t bytes, bool owned)
      : state(std::move(state)), pointer(pointer), bytes(bytes), owned(owned),
        generation(this->state->primary->generation) {}
  ~CudaBuffer() override;
  size_t size() const override { return bytes; }

  /// The device address; throws when the memory went with a context reset.
  CUdeviceptr address() const;

  std::shared_ptr<CudaBackend::State> state;
  CUdeviceptr pointer;
  size_t bytes;
  bool owned;
  uint64_t generation; // of the context the memory belongs to
};

/// `buffer` as the CUDA backend's; throws DispatchError for another
/// backend's.
const CudaBuffer &asCudaBuffer(const DeviceBuffer &buffer);

} // namespace enigma::cuda

#endif // ENIGMA_LIB_RUNTIME_CUDA_CUDABUFFER_H
