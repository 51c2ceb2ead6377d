//===- Backend.h - The per-device half of a runtime -------------*- C++ -*-===//
//
// A runtime is the shared Dispatcher (argument binding, validation, output
// handling; lib/Runtime/Dispatch.cpp) over one Backend that knows a device:
// how to load a kernel, move bytes and launch. Backends implement only this.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_BACKEND_H
#define ENIGMA_RUNTIME_BACKEND_H

#include "enigma/Runtime/KernelArtifact.h"

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace enigma {

/// Toolchain and dispatch failures (maps to Python RuntimeError).
struct RuntimeFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};
/// The requested backend cannot work on this machine (no device, no driver,
/// wrong OS). Maps to a Python RuntimeError subclass.
struct BackendUnavailable : RuntimeFailure {
  using RuntimeFailure::RuntimeFailure;
};
/// A kernel faulted while it ran: an invalid memory access or a trapping
/// instruction on the CPU, an illegal address (or another error that
/// poisons the context) on a GPU. The message names the kernel; the backend
/// has recovered and keeps working. Maps to Python's KernelFaultError.
struct KernelFault : RuntimeFailure {
  using RuntimeFailure::RuntimeFailure;
};
/// How a KernelFault's message ends: how to find the faulting access.
inline std::string kernelFaultAdvice(const KernelArtifact &kernel) {
  if (!kernel.boundsCheckParams.empty())
    return "the kernel was compiled in bounds-checked mode, so this is not "
           "an out-of-bounds access of a buffer, threadgroup array or atomic "
           "(simdgroup matrix loads and stores are not checked)";
  return "to find the access and its file:line, run it again compiled in "
         "bounds-checked mode (bounds_check=True, or ENIGMA_BOUNDS_CHECK=1)";
}
/// The user's arguments do not fit the kernel (maps to ValueError/TypeError
/// in Python, with a message naming the parameter).
struct DispatchError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t volume() const { return uint64_t(x) * y * z; }
};

/// A scalar argument already converted to the parameter's dtype: its bytes,
/// little-endian, in the low `byteWidth(dtype)` bytes of `bits`.
struct ScalarValue {
  DType dtype = DType::I32;
  uint64_t bits = 0;
};

/// Function constant values by index, baked in when a kernel is loaded.
using ConstantValues = std::map<unsigned, ScalarValue>;

class DeviceBuffer {
public:
  virtual ~DeviceBuffer() = default;
  virtual size_t size() const = 0;
};

class LoadedKernel {
public:
  virtual ~LoadedKernel() = default;
};

/// One launch argument per kernel parameter, in declaration order.
struct LaunchArg {
  DeviceBuffer *buffer = nullptr; // for ParamKind::Buffer
  ScalarValue scalar;             // for ParamKind::Scalar
};

class Backend {
public:
  virtual ~Backend() = default;
  /// "cpu", "cuda", "metal".
  virtual std::string name() const = 0;
  /// Largest threadgroup (threads.x*y*z) the device accepts.
  virtual uint64_t maxThreadsPerThreadgroup() const = 0;
  /// Bytes of threadgroup memory one threadgroup may use: Metal's 32 KiB
  /// unless the backend's device allows more.
  virtual uint64_t maxThreadgroupMemory() const { return 32 * 1024; }
  /// Compiles (or fetches from the cache) and loads the kernel.
  virtual std::shared_ptr<LoadedKernel>
  load(const KernelArtifact &kernel, const ConstantValues &constants) = 0;
  /// A zero-filled buffer of `bytes` bytes (bytes may be 0).
  virtual std::shared_ptr<DeviceBuffer> allocate(size_t bytes) = 0;
  /// A buffer over `bytes` bytes of memory the caller already holds on this
  /// backend's device at `address` (zero-copy interop); the caller keeps it
  /// alive. Backends without device memory of their own refuse.
  virtual std::shared_ptr<DeviceBuffer> wrapDeviceMemory(uint64_t address,
                                                         size_t bytes) {
    (void)address;
    (void)bytes;
    throw DispatchError("the " + name() +
                        " runtime cannot bind device memory; pass host "
                        "arrays (numpy) instead");
  }
  virtual void upload(DeviceBuffer &dst, const void *src, size_t bytes) = 0;
  virtual void download(const DeviceBuffer &src, void *dst, size_t bytes) = 0;
  /// Runs the kernel over `grid` threads in groups of `threads` (Metal
  /// dispatchThreads semantics) and waits for it to finish.
  virtual void launch(LoadedKernel &kernel, const KernelArtifact &artifact,
                      const std::vector<LaunchArg> &args, Dim3 grid,
                      Dim3 threads) = 0;
  /// As launch, returning the device time of the kernel in microseconds.
  virtual double launchTimed(LoadedKernel &kernel,
                             const KernelArtifact &artifact,
                             const std::vector<LaunchArg> &args, Dim3 grid,
                             Dim3 threads) = 0;
  /// Queues the launch and returns without waiting; later launches and
  /// copies are ordered after it. Backends without queues run it at once.
  virtual void launchAsync(LoadedKernel &kernel, const KernelArtifact &artifact,
                           const std::vector<LaunchArg> &args, Dim3 grid,
                           Dim3 threads) {
    launch(kernel, artifact, args, grid, threads);
  }
  /// Waits until every queued launch has finished.
  virtual void synchronize() {}
};

} // namespace enigma

#endif
