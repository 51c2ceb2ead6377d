//===- CudaContext.h - A device's context and fault recovery -*- C++ -*-===//
//
// What every part of the CUDA backend shares: the device's primary context
// (retained once per process and reset after a kernel faults), the
// backend's State (its stream, events and device limits, and the recovery
// that turns a poisoned context into a KernelFault), and the guard that
// gives the calling thread its own context back.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_CUDACONTEXT_H
#define ENIGMA_LIB_RUNTIME_CUDA_CUDACONTEXT_H

#include "CudaDriver.h"

#include "enigma/Runtime/CudaBackend.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace enigma {
namespace cuda {

/// A device's primary context as this process's backends hold it: retained
/// once, shared by every CudaBackend of the device (and, in the driver, by
/// other libraries: the CUDA runtime API, PyTorch, CuPy use it too).
/// `generation` counts resets: whatever was made in the context before one
/// (modules, streams, events, allocations) is gone.
struct PrimaryContext {
  const DriverApi &api;
  CUdevice device = 0;
  int ordinal = 0;
  CUcontext context = nullptr;
  unsigned retains = 0;
  std::atomic<uint64_t> generation{0};
  /// Why CUDA cannot be used here any more ("" while it can).
  std::string broken;

  PrimaryContext(const DriverApi &api, CUdevice device, int ordinal)
      : api(api), device(device), ordinal(ordinal) {}
  ~PrimaryContext();

  /// After an error that poisoned the context: destroys everything in it,
  /// activates it again and checks that it works. Returns "" or what
  /// failed.
  std::string reset();

  /// The process's context of `ordinal`, retained on first use.
  static std::shared_ptr<PrimaryContext> get(const DriverApi &api,
                                             CUdevice device, int ordinal);
};

} // namespace cuda

struct CudaBackend::State {
  const cuda::DriverApi &api;
  std::shared_ptr<cuda::PrimaryContext> primary;
  cuda::CUdevice device = 0;
  // Made in the context's generation `generation`; gone after a reset.
  uint64_t generation = 0;
  cuda::CUstream stream = nullptr;
  cuda::CUevent start = nullptr, end = nullptr;
  cuda::CUevent handoff = nullptr; // orders our stream after a caller's stream
  int ordinal = 0;
  std::string deviceName;
  int computeCapability = 0; // 90 for sm_90
  int multiprocessors = 0;
  uint64_t maxThreads = 1024;
  uint64_t maxSharedBytes = 48 * 1024; // per block, opted in
  std::string arch;          // what NVRTC is asked for: "sm_90" / "compute_90"
  std::string archNote;      // why, when it is not the device's own cubin
  /// Kernels queued by launchAsync since the last wait, for messages.
  std::vector<std::string> queued;
  bool queuedUnchecked = false; // one of them is not bounds-checked

  explicit State(const cuda::DriverApi &api) : api(api) {}
  ~State();
  bool current() const { return generation == primary->generation; }

  void createQueues();
  void destroyQueues();

  /// The context must be current on whichever thread calls in. After a
  /// reset (by a fault here or in another backend of the device) the
  /// stream and events are made again; launches that were queued on the
  /// old ones are reported lost.
  void makeCurrent();

  std::string queuedNames() const;

  /// Throws unless `result` is success; an error that poisoned the context
  /// is a fault of a kernel queued earlier.
  void check(cuda::CUresult result, const char *what);

  /// Recovers from an error that poisoned the context, then throws the
  /// KernelFault naming `kernel` (and the kernels queued since the last
  /// wait; null when it is not known which one faulted).
  [[noreturn]] void deviceFault(cuda::CUresult result,
                                const KernelArtifact *kernel);
};

namespace cuda {

/// Puts back the context the calling thread had current: the backend makes
/// its device's context current for its work, and other libraries must not
/// see that (PyTorch and CuPy read their current device from it). Not when
/// it was already ours, which a reset after a fault may have replaced.
class CallersContext {
public:
  explicit CallersContext(const CudaBackend::State &state)
      : api(state.api), ours(state.primary->context) {
    if (api.cuCtxGetCurrent(&previous) != kCudaSuccess)
      previous = ours;
  }
  ~CallersContext() {
    if (previous != ours)
      api.cuCtxSetCurrent(previous);
  }
  CallersContext(const CallersContext &) = delete;
  CallersContext &operator=(const CallersContext &) = delete;

private:
  const DriverApi &api;
  CUcontext ours;
  CUcontext previous = nullptr;
};

} // namespace cuda
} // namespace enigma

#endif // ENIGMA_LIB_RUNTIME_CUDA_CUDACONTEXT_H
