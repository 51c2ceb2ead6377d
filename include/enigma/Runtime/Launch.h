//===- Launch.h - Launches on the caller's memory and queue -----*- C++ -*-===//
//
// The launch behind the function-call form (`kernel[n](a, b, c)`,
// docs/reference/launch.md): every buffer parameter is bound in place to
// memory the caller already holds (host memory on the CPU backend, device
// memory on CUDA), nothing is copied or cleared, scalars are converted as a
// dispatch converts them, and on CUDA the launch is queued on the caller's
// stream without waiting. What does not depend on the arguments (the loaded
// kernel, the launched artifact) is made once, so a launch costs a few
// checks and the backend's own launch call.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_LAUNCH_H
#define ENIGMA_RUNTIME_LAUNCH_H

#include "enigma/Runtime/Backend.h"
#include "enigma/Runtime/Dispatch.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace enigma {

class CudaBackend;

/// One argument of a direct launch, per kernel parameter: a buffer's address
/// and size in bytes, or a scalar's bits (from DirectLauncher::scalarBits).
struct DirectArg {
  uint64_t value = 0;
  size_t bytes = 0;
};

/// Where a CUDA launch is queued. The CPU backend runs every launch before
/// returning and ignores this.
struct LaunchQueue {
  uint64_t stream = 0;    // a CUstream of the backend's device (0: legacy)
  bool ownStream = false; // the backend's own stream instead of `stream`
  bool wait = false;      // with ownStream: return when the kernel is done
};

/// A kernel loaded on one backend for direct launches. Launches on the CPU
/// backend may run concurrently; CUDA launches of one launcher must be
/// serialised by the caller (Python's GIL does).
class [[gnu::visibility("default")]] DirectLauncher {
public:
  /// Loads `kernel` on `backend` (compiling it, or from the disk cache)
  /// with the function constants it reads taken from `constants`. Throws
  /// DispatchError for kernels the form cannot launch (a constant without
  /// a value, vector scalar parameters).
  DirectLauncher(std::shared_ptr<Backend> backend, const KernelArtifact &kernel,
                 const ConstantArgs &constants = {});
  ~DirectLauncher();

  const KernelArtifact &kernel() const { return *artifact; }
  Backend &backend() const { return *device; }
  const LoadedKernel &loadedKernel() const { return *loaded; }

  /// The bits of `value` for scalar parameter `param`: range-checked and
  /// converted to its dtype, and checked against its multiple_of promise,
  /// with a dispatch's messages.
  uint64_t scalarBits(size_t param, const HostNumber &value) const;

  /// Checks the launch shape (whole simdgroups or groups of four where
  /// the kernel needs them) and, for accesses every thread makes at a
  /// grid-affine index, the buffers' sizes; then launches. `args` holds one
  /// entry per parameter. A kernel compiled in bounds-checked mode runs on
  /// the backend's own stream (after `queue.stream`) and is waited for, so
  /// that a violation is raised here. `threadgroupMemory`: the bytes of a
  /// kernel's dynamic threadgroup array (required by such a kernel).
  void launch(const DirectArg *args, Dim3 grid, Dim3 threads,
              const LaunchQueue &queue,
              std::optional<uint64_t> threadgroupMemory = std::nullopt);

private:
  void launchWrapped(const DirectArg *args, Dim3 grid, Dim3 threads,
                     const LaunchQueue &queue, uint64_t threadgroupMemory);

  std::shared_ptr<Backend> device;
  CudaBackend *cuda = nullptr; // `device` when it is a CudaBackend
  std::shared_ptr<const KernelArtifact> artifact; // the user's parameters
  std::shared_ptr<const KernelArtifact> launched; // with hidden ones, if any
  std::shared_ptr<LoadedKernel> loaded;
  /// Buffer sizes for checkLaunchBounds, updated per launch.
  struct SizedBuffer;
  std::vector<std::shared_ptr<DeviceBuffer>> sizes;
  std::vector<SizedBuffer *> sizeViews;
  std::vector<uint64_t> slots;
};

} // namespace enigma

#endif
