//===- BoundsCheck.h - Out-of-bounds detection at dispatch -------*- C++ -*-===//
//
// The runtime half of out-of-bounds detection (docs/design/bounds-check.md),
// used by the Dispatcher on every backend:
//  - before a launch, checkLaunchBounds refuses a grid for which an
//    unconditional (or position-guarded), grid-affine access
//    (KernelArtifact::gridIndexBounds) would leave its buffer, and a buffer
//    too small for the matrix a kernel part reads or writes in it
//    (KernelArtifact::matrixExtents);
//  - in bounds-checked mode, BoundsCheckLaunch binds the hidden parameters
//    the checking passes added (element counts, the violation record) and
//    turns a recorded violation (an access, an integer overflow, a read of
//    uninitialised threadgroup memory, a missing simdgroup lane) into a
//    BoundsViolation after the launch.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_BOUNDSCHECK_H
#define ENIGMA_RUNTIME_BOUNDSCHECK_H

#include "enigma/Runtime/Backend.h"

#include <functional>
#include <memory>
#include <vector>

namespace enigma {

/// A kernel compiled in bounds-checked mode failed one of its checks. The
/// message names the check, the source line, the values and the thread.
struct BoundsViolation : RuntimeFailure {
  using RuntimeFailure::RuntimeFailure;
};

/// The bits of scalar parameter `i` of a launch: what a guard such as
/// `if gid < n` compares with.
using ScalarBits = std::function<uint64_t(unsigned)>;

/// Throws DispatchError when, on `grid`, an access the compiler proved every
/// thread makes (or every thread that passes a `position < n` guard, with
/// n's value from `scalars`) would reach past the end of its buffer, or
/// when a buffer holds fewer elements than the matrix the kernel reads or
/// writes in it (sides from `scalars`).
/// `buffers` holds the bound buffer of each parameter (null for scalars).
[[gnu::visibility("default")]] void
checkLaunchBounds(const KernelArtifact &kernel,
                     const std::vector<std::shared_ptr<DeviceBuffer>> &buffers,
                     Dim3 grid, const ScalarBits &scalars);

/// checkLaunchBounds with the scalars of a binding's launch arguments.
[[gnu::visibility("default")]] void
checkLaunchBounds(const KernelArtifact &kernel,
                     const std::vector<std::shared_ptr<DeviceBuffer>> &buffers,
                     Dim3 grid, const std::vector<LaunchArg> &args);

/// The hidden arguments of one bounds-checked binding.
class [[gnu::visibility("default")]] BoundsCheckLaunch {
public:
  /// True when `kernel` was compiled in bounds-checked mode.
  static bool needed(const KernelArtifact &kernel) {
    return !kernel.boundsCheckParams.empty();
  }
  /// True when `kernel`'s launches pass hidden arguments after the user's:
  /// its dynamic threadgroup memory's bytes, bounds-checked mode's.
  static bool hasHiddenParams(const KernelArtifact &kernel) {
    return kernel.dynamicThreadgroupMemory || needed(kernel);
  }
  /// `kernel` as the backends load and launch it: every parameter,
  /// the hidden ones included (the dynamic threadgroup memory's bytes,
  /// then bounds-checked mode's).
  static std::shared_ptr<const KernelArtifact>
  launchedArtifact(const KernelArtifact &kernel);

  /// Allocates the record. `launched` is launchedArtifact()'s result;
  /// `buffers` as for checkLaunchBounds.
  BoundsCheckLaunch(Backend &backend,
                    std::shared_ptr<const KernelArtifact> launched,
                    const std::vector<std::shared_ptr<DeviceBuffer>> &buffers);

  /// Appends the hidden arguments to the user's launch arguments.
  void appendArgs(std::vector<LaunchArg> &args) const;

  /// Notes the shape of the launch about to run and its dynamic
  /// threadgroup memory (the message of a violation names them).
  void launching(Dim3 grid, Dim3 threads, uint64_t threadgroupMemory = 0);

  /// After a (finished) launch: throws BoundsViolation if one was recorded,
  /// clearing the record first so that the next launch starts clean.
  void check(Backend &backend) const;

private:
  std::shared_ptr<const KernelArtifact> kernel;
  std::vector<LaunchArg> hidden;
  std::shared_ptr<DeviceBuffer> record;
  Dim3 lastGrid, lastThreads;
  uint64_t lastThreadgroupMemory = 0;
};

} // namespace enigma

#endif
