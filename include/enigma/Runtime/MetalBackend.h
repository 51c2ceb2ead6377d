//===- MetalBackend.h - Apple GPUs through Metal ----------------*- C++ -*-===//
//
// Runs kernels on the system's default Metal device. The kernel's MSL text is
// compiled at run time (newLibraryWithSource:options:error:), or functions are
// taken from a prebuilt .metallib when one is given. Buffers use shared
// storage, so uploads and downloads are memcpy. See
// docs/design/metal-backend.md.
//
// Plain C++: the Metal objects live in an Objective-C++ State defined in
// lib/Runtime/Metal/MetalBackend.mm, built only on Apple platforms.
//
// NOT YET COMPILED OR RUN: no Apple machine was available when this was
// written.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_METALBACKEND_H
#define ENIGMA_RUNTIME_METALBACKEND_H

#include "enigma/Runtime/Backend.h"

#include <memory>
#include <string>
#include <vector>

namespace enigma {

class [[gnu::visibility("default")]] MetalBackend : public Backend {
public:
  /// Opens the default Metal device and a command queue. `metallibPath`, when
  /// not empty, names a compiled .metallib that load() takes functions from
  /// instead of compiling each kernel's MSL source. Throws BackendUnavailable
  /// when there is no Metal device, RuntimeFailure when the .metallib cannot
  /// be loaded.
  explicit MetalBackend(const std::string &metallibPath = "");
  ~MetalBackend() override;
  MetalBackend(const MetalBackend &) = delete;
  MetalBackend &operator=(const MetalBackend &) = delete;

  std::string name() const override { return "metal"; }
  uint64_t maxThreadsPerThreadgroup() const override;
  /// Compiles (once per source) and builds a compute pipeline (once per
  /// source and function constant values).
  std::shared_ptr<LoadedKernel> load(const KernelArtifact &kernel,
                                     const ConstantValues &constants) override;
  std::shared_ptr<DeviceBuffer> allocate(size_t bytes) override;
  void upload(DeviceBuffer &dst, const void *src, size_t bytes) override;
  void download(const DeviceBuffer &src, void *dst, size_t bytes) override;
  void launch(LoadedKernel &kernel, const KernelArtifact &artifact,
              const std::vector<LaunchArg> &args, Dim3 grid,
              Dim3 threads) override;
  /// GPU time of the command buffer (GPUEndTime - GPUStartTime).
  double launchTimed(LoadedKernel &kernel, const KernelArtifact &artifact,
                     const std::vector<LaunchArg> &args, Dim3 grid,
                     Dim3 threads) override;

  /// Commits the launch and returns at once. Launches on the backend's one
  /// command queue run in order; upload, download and synchronize wait for
  /// every queued launch first (buffers are shared memory).
  void launchAsync(LoadedKernel &kernel, const KernelArtifact &artifact,
                   const std::vector<LaunchArg> &args, Dim3 grid,
                   Dim3 threads) override;
  /// Waits for the launches queued by launchAsync; the first that failed is
  /// reported as a RuntimeFailure.
  void synchronize() override;

  /// The device's name as Metal reports it ("Apple M2", ...).
  const std::string &deviceName() const;

  /// Device, queue, caches and queued launches; defined in MetalBackend.mm.
  /// Buffers and kernels hold their own Metal objects, so they outlive it.
  struct State;

private:
  /// Encodes, commits and waits; returns the GPU time in microseconds.
  double run(LoadedKernel &kernel, const KernelArtifact &artifact,
             const std::vector<LaunchArg> &args, Dim3 grid, Dim3 threads);
  std::shared_ptr<State> state;
};

} // namespace enigma

#endif
