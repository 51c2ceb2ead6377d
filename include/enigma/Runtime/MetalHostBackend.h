//===- MetalHostBackend.h - Runs Metal Shading Language on the host -*- C++ -*-===//
//
// The MSL host runtime: compiles the exact Metal source of a kernel (the
// artifact's mslSource, or hand-written MSL) with clang++ against a host
// implementation of metal_stdlib that has real address spaces, and runs it
// with Metal's execution model: the threads of a threadgroup run
// concurrently as fibers (barriers, threadgroup memory, simdgroup and quad
// functions behave as on an Apple GPU), threadgroups in parallel on the
// CPU backend's thread pool. A kernel that faults raises RuntimeFailure.
// See docs/design/msl-host-runtime.md.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_METALHOSTBACKEND_H
#define ENIGMA_RUNTIME_METALHOSTBACKEND_H

#include "enigma/Runtime/Backend.h"

#include <atomic>
#include <memory>
#include <string>

namespace enigma {

class ArtifactCache;

class [[gnu::visibility("default")]] MetalHostBackend : public Backend {
public:
  /// Uses the cache the environment names; throws BackendUnavailable when no
  /// suitable clang++ is found.
  MetalHostBackend();
  explicit MetalHostBackend(std::shared_ptr<ArtifactCache> cache);
  ~MetalHostBackend() override;

  std::string name() const override { return "metal-host"; }
  uint64_t maxThreadsPerThreadgroup() const override { return 1024; }

  std::shared_ptr<LoadedKernel> load(const KernelArtifact &kernel,
                                     const ConstantValues &constants) override;
  std::shared_ptr<DeviceBuffer> allocate(size_t bytes) override;
  /// Host memory the caller holds at `address`, bound in place (the
  /// function-call form's numpy arrays); the caller keeps it alive.
  std::shared_ptr<DeviceBuffer> wrapDeviceMemory(uint64_t address,
                                                 size_t bytes) override;
  void upload(DeviceBuffer &dst, const void *src, size_t bytes) override;
  void download(const DeviceBuffer &src, void *dst, size_t bytes) override;
  void launch(LoadedKernel &kernel, const KernelArtifact &artifact,
              const std::vector<LaunchArg> &args, Dim3 grid,
              Dim3 threads) override;
  double launchTimed(LoadedKernel &kernel, const KernelArtifact &artifact,
                     const std::vector<LaunchArg> &args, Dim3 grid,
                     Dim3 threads) override;

  /// The artifact of a hand-written Metal kernel: `kernelName` in `source`,
  /// its buffer and scalar parameters in [[buffer(n)]] order (element
  /// types read from the declarations: a scalar or vector Metal type gives
  /// its dtype and width, an atomic its value type, anything else is bytes,
  /// dtype u8) and the function constants it declares whose index is in
  /// `defined` (the others stay undefined, as Metal allows). Throws
  /// RuntimeFailure naming the construct and line for what it cannot run.
  /// `bytesParams`, when given, tells which parameters are bytes (u8)
  /// because their type is not a Metal scalar or vector.
  static KernelArtifact
  artifactForSource(const std::string &source, const std::string &kernelName,
                    const std::vector<unsigned> &defined,
                    std::vector<bool> *bytesParams = nullptr);
  /// Checks that every kernel of `source` can be run and that the source
  /// compiles (function constants undefined); throws RuntimeFailure with
  /// the compiler's messages otherwise. `fileName` names it in messages.
  void checkSource(const std::string &source, const std::string &fileName);

  struct LoadCounts {
    uint64_t compiled = 0;
    uint64_t fromCache = 0;
  };
  LoadCounts loadCounts() const { return {compiledCount, fromCacheCount}; }

private:
  std::shared_ptr<ArtifactCache> cache;
  std::atomic<uint64_t> compiledCount{0};
  std::atomic<uint64_t> fromCacheCount{0};
};

} // namespace enigma

#endif
