//===- CpuBackend.h - Runs kernels as host C++ on a thread pool -*- C++ -*-===//
//
// Compiles the artifact's host C++ (cppSource) with the system C++ compiler
// into a shared object, cached on disk, loads it with dlopen and runs the
// threadgroups of a dispatch across a persistent thread pool. Buffers are
// plain host memory. See docs/design/cpu-backend.md.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_CPUBACKEND_H
#define ENIGMA_RUNTIME_CPUBACKEND_H

#include "enigma/Runtime/Backend.h"

#include <atomic>
#include <memory>

namespace enigma {

class ArtifactCache;

class [[gnu::visibility("default")]] CpuBackend : public Backend {
public:
  /// Uses the cache the environment names (ArtifactCache::fromEnvironment).
  CpuBackend();
  explicit CpuBackend(std::shared_ptr<ArtifactCache> cache);
  ~CpuBackend() override;

  std::string name() const override { return "cpu"; }
  uint64_t maxThreadsPerThreadgroup() const override { return 1024; }
  /// As much as any target allows (an sm_90 GPU's 227 KiB), so kernels
  /// tiled for a large GPU can be checked on the CPU.
  uint64_t maxThreadgroupMemory() const override { return 227 * 1024; }

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
  /// Wall-clock time of the launch (the CPU is the device).
  double launchTimed(LoadedKernel &kernel, const KernelArtifact &artifact,
                     const std::vector<LaunchArg> &args, Dim3 grid,
                     Dim3 threads) override;

  /// How load() found its kernels: compiled here or taken from the disk
  /// cache. For tests and diagnostics.
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
