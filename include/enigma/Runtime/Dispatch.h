//===- Dispatch.h - Argument binding and launches for every backend -*- C++ -*-===//
//
// The half of a runtime that does not depend on the device: binds the
// user's inputs, scalars and output sizes to the kernel's
// parameters, validates them with messages that name the parameters, converts
// numbers to the parameters' dtypes with range checks, loads kernels once
// per (source, function constants), and moves bytes in and out of a Backend.
//
// Binding: parameters are walked in declaration order. A scalar parameter
// takes the next scalar. A buffer parameter takes the next input while inputs
// remain; every buffer parameter after that is an output. Inputs, scalars and
// outputs must cover the parameters exactly once (the original Enigma
// runtime's rule): a missing input is an error, never an extra output.
// Outputs the runtime allocates start zero-filled; outputs given as device
// arrays are used as they are. `outputSizes` (bytes) has one entry per
// output.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_DISPATCH_H
#define ENIGMA_RUNTIME_DISPATCH_H

#include "enigma/Runtime/Backend.h"
#include "enigma/Runtime/BoundsCheck.h"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace enigma {

/// Threads per threadgroup accepted on every backend (Metal's and CUDA's
/// limit), so that a dispatch valid on one backend is valid on all.
inline constexpr uint64_t kMaxThreadsPerThreadgroup = 1024;
/// Threadgroups per grid along x, y and z accepted on every backend (CUDA's
/// grid limits), for the same reason.
inline constexpr uint64_t kMaxThreadgroupsPerGrid[3] = {2147483647, 65535,
                                                        65535};

/// A number as the user wrote it (Python float, int, or bool), before it is
/// converted to a parameter's dtype. Non-negative ints may come as either
/// integer alternative.
using HostNumber = std::variant<double, int64_t, uint64_t, bool>;

/// A contiguous array handed to a kernel for a buffer parameter: host memory
/// at `data` (copied to the device), or, with `onDevice`, memory that already
/// lives on the backend's device at `deviceAddress` (a CUDA allocation of
/// PyTorch, CuPy, JAX...), bound as is: no copies, and the kernel's writes
/// land in the caller's memory.
struct ArrayArg {
  const void *data = nullptr;
  size_t bytes = 0;
  DType dtype = DType::F32;
  size_t elements = 0; // scalar elements; bytes == elements * byteWidth
  bool onDevice = false;
  uint64_t deviceAddress = 0;
};

/// A function constant value: a dtype in any spelling parseDType accepts
/// ("f32", "float", "Float32", ...) and the number.
struct ConstantArg {
  std::string dtype;
  HostNumber value;

  ConstantArg() = default;
  ConstantArg(std::string dtypeName, HostNumber number)
      : dtype(std::move(dtypeName)), value(number) {}
  ConstantArg(DType type, HostNumber number)
      : dtype(shortName(type)), value(number) {}
};
using ConstantArgs = std::map<unsigned, ConstantArg>;

/// Everything a dispatch binds besides the launch shape.
struct DispatchArgs {
  std::vector<ArrayArg> inputs;
  std::vector<HostNumber> scalars; // one per Scalar parameter, in order
  std::vector<size_t> outputSizes; // bytes; exactly one per output
  /// Instead of outputSizes: device memory for every output, written in
  /// place and not cleared first (as a bound existing Metal buffer is not).
  std::vector<ArrayArg> outputArrays;
  ConstantArgs constants;
  /// Bytes of dynamic threadgroup memory (Metal's setThreadgroupMemoryLength,
  /// CUDA's dynamic shared memory): required by a kernel with a dynamic
  /// threadgroup array, refused by the others.
  std::optional<uint64_t> threadgroupMemory;
};

/// Throws DispatchError unless `bytes` fits `kernel`: given exactly when the
/// kernel has a dynamic threadgroup array, and with the kernel's static
/// threadgroup memory within `backend`'s limit. Returns the bytes (0 for a
/// kernel without one).
[[gnu::visibility("default")]] uint64_t
checkDynamicThreadgroupMemory(const KernelArtifact &kernel,
                              const std::optional<uint64_t> &bytes,
                              const Backend &backend);

/// Converts `value` to `dtype`, rejecting what the dtype cannot represent:
/// negative or too large integers, a float for an integer or bool, a float
/// that overflows the float format, a bool other than 0/1. `what` names the
/// destination in the error ("scalar parameter n (u32)").
[[gnu::visibility("default")]] ScalarValue
convertNumber(const HostNumber &value, DType dtype, std::string_view what);

/// Throws DispatchError unless grid and threads are all non-zero, the
/// threadgroup is within `maxThreads` and the grid within
/// kMaxThreadgroupsPerGrid.
[[gnu::visibility("default")]] void
checkLaunchShape(Dim3 grid, Dim3 threads, uint64_t maxThreads);

/// Throws DispatchError when a threadgroup of the launch has a shape
/// `kernel` cannot run in: not exactly its required threadgroup size, or
/// not whole simdgroups (warpgroups) where it holds fragments (warpgroup
/// products); a partial edge group counts as such a threadgroup.
[[gnu::visibility("default")]] void
checkThreadgroupShape(const KernelArtifact &kernel, Dim3 grid, Dim3 threads);

/// Throws DispatchError when `kernel` uses more threadgroup memory than
/// `backend`'s device gives a threadgroup (Metal: 32 KiB).
[[gnu::visibility("default")]] void
checkThreadgroupMemory(const KernelArtifact &kernel, const Backend &backend);

/// The values of the function constants `kernel` reads, from `given`
/// (Metal's rule: constants it does not read are ignored). Throws
/// DispatchError for a constant without a value, of another dtype or out of
/// its dtype's range.
[[gnu::visibility("default")]] ConstantValues
bindConstants(const KernelArtifact &kernel, const ConstantArgs &given);

/// A kernel bound to device buffers, ready to be dispatched repeatedly.
/// Move-only; release() frees the buffers, after which every call fails.
class [[gnu::visibility("default")]] PreparedKernel {
public:
  PreparedKernel(PreparedKernel &&) = default;
  PreparedKernel &operator=(PreparedKernel &&) = default;
  PreparedKernel(const PreparedKernel &) = delete;
  PreparedKernel &operator=(const PreparedKernel &) = delete;

  void dispatch(Dim3 grid, Dim3 threads);
  /// Device time of the launch in microseconds.
  double dispatchTimed(Dim3 grid, Dim3 threads);
  /// Queues a launch without waiting for it (see Backend::launchAsync);
  /// synchronize() or any read waits for it.
  void dispatchAsync(Dim3 grid, Dim3 threads);
  void synchronize();
  /// Bytes of the first output buffer.
  std::vector<uint8_t> readOutput() const;
  /// Bytes of every output buffer, in parameter order.
  std::vector<std::vector<uint8_t>> readOutputs() const;
  void release();
  bool released() const { return !backend; }
  /// Whether a launch runs on the calling thread's time (the host
  /// backends), so that callers know to let other threads run meanwhile.
  bool launchesOnTheHost() const { return onHost; }

private:
  friend class Dispatcher;
  PreparedKernel() = default;
  void checkUsable() const;
  /// The checks before each launch (usable, shape, bounds), then the
  /// bounds-check record made ready for it.
  void beforeLaunch(Dim3 grid, Dim3 threads);

  std::shared_ptr<Backend> backend;
  std::shared_ptr<const KernelArtifact> artifact;
  std::shared_ptr<LoadedKernel> kernel;
  std::vector<std::shared_ptr<DeviceBuffer>> buffers; // per parameter
  std::vector<LaunchArg> args;
  std::vector<size_t> outputParams; // parameter indices of the outputs
  std::string kernelName;           // kept for messages after release()
  bool onHost = false;              // a host backend (no device queue)
  /// Bounds-checked mode: the hidden arguments and the violation record.
  std::shared_ptr<BoundsCheckLaunch> boundsCheck;
  /// Bytes of dynamic threadgroup memory each dispatch gives (0: none).
  uint64_t threadgroupMemory = 0;
};

class [[gnu::visibility("default")]] Dispatcher {
public:
  explicit Dispatcher(std::shared_ptr<Backend> backend);
  ~Dispatcher();

  Backend &backend() const { return *device; }
  /// The threadgroup limit enforced: the smaller of the backend's and 1024.
  uint64_t maxThreadsPerThreadgroup() const;

  /// Binds, launches once and returns the bytes of every output buffer.
  std::vector<std::vector<uint8_t>> execute(const KernelArtifact &kernel,
                                            const DispatchArgs &args,
                                            Dim3 grid, Dim3 threads);
  /// Binds and uploads once for repeated dispatches.
  PreparedKernel prepare(const KernelArtifact &kernel,
                         const DispatchArgs &args);

private:
  struct Binding;
  Binding bind(const KernelArtifact &kernel, const DispatchArgs &args) const;
  std::shared_ptr<LoadedKernel> loadKernel(const KernelArtifact &kernel,
                                           const ConstantValues &constants);
  /// Device buffers and launch arguments for a binding.
  void materialize(const KernelArtifact &kernel, const Binding &binding,
                   std::vector<std::shared_ptr<DeviceBuffer>> &buffers,
                   std::vector<LaunchArg> &launchArgs);

  /// Lets go of the least recently used kernels beyond the bound
  /// (ENIGMA_LOADED_KERNELS, default 128). Called with the lock held.
  void keepRecentlyUsed();

  std::shared_ptr<Backend> device;
  /// Loaded kernels by source and constants; kernels are loaded outside
  /// the lock that guards this (docs/design/process-life.md).
  struct KernelEntry {
    std::shared_ptr<LoadedKernel> kernel; // kept while recently used
    std::weak_ptr<LoadedKernel> weak;     // found again while held elsewhere
    uint64_t lastUse = 0;
    bool loading = false;             // a thread is compiling it
    uint64_t loadingGeneration = 0;   // forkGeneration() of that thread
  };
  std::map<std::string, KernelEntry> kernels;
  uint64_t useClock = 0;
};

} // namespace enigma

#endif
