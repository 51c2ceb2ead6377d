//===- CudaBackend.h - NVIDIA GPUs through the CUDA driver API --*- C++ -*-===//
//
// Compiles a kernel's CUDA source with NVRTC and runs it with the driver API.
// Both libraries are opened with dlopen, so this header and libenigma work on
// machines without CUDA: constructing a CudaBackend there throws
// BackendUnavailable.
//
// A kernel that faults (an illegal address...) poisons the device's primary
// context: the backend resets it and throws KernelFault naming the kernel.
// Kernels reload themselves; buffers made before the reset are gone and say
// so when used (docs/design/cpu-faults.md, "CUDA").
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_CUDABACKEND_H
#define ENIGMA_RUNTIME_CUDABACKEND_H

#include "enigma/Runtime/Backend.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace enigma {

class CudaBackend : public Backend {
public:
  /// Opens device `deviceOrdinal` (its primary context). Throws
  /// BackendUnavailable when there is no driver, no such device, or the
  /// driver fails to start.
  explicit CudaBackend(int deviceOrdinal = 0);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend &) = delete;
  CudaBackend &operator=(const CudaBackend &) = delete;

  std::string name() const override { return "cuda"; }
  uint64_t maxThreadsPerThreadgroup() const override;
  /// The device's opt-in limit per block (227 KiB on sm_90).
  uint64_t maxThreadgroupMemory() const override;
  std::shared_ptr<LoadedKernel>
  load(const KernelArtifact &kernel, const ConstantValues &constants) override;
  std::shared_ptr<DeviceBuffer> allocate(size_t bytes) override;
  void upload(DeviceBuffer &dst, const void *src, size_t bytes) override;
  void download(const DeviceBuffer &src, void *dst, size_t bytes) override;
  void launch(LoadedKernel &kernel, const KernelArtifact &artifact,
              const std::vector<LaunchArg> &args, Dim3 grid,
              Dim3 threads) override;
  double launchTimed(LoadedKernel &kernel, const KernelArtifact &artifact,
                     const std::vector<LaunchArg> &args, Dim3 grid,
                     Dim3 threads) override;

  /// Queues the kernel on the backend's stream and returns at once; the
  /// argument buffers must stay alive until synchronize(). Copies and
  /// launches issued later are ordered after it.
  void launchAsync(LoadedKernel &kernel, const KernelArtifact &artifact,
                   const std::vector<LaunchArg> &args, Dim3 grid,
                   Dim3 threads) override;
  /// Waits for everything queued by launchAsync.
  void synchronize() override;

  /// The function-call form's launch (lib/Runtime/Launch.cpp): queues
  /// `kernel` on the caller's `stream` (a CUstream of this device; 0 is the
  /// legacy default stream), or on the backend's own stream when
  /// `ownStream`, with one 8-byte slot per parameter (a device address or a
  /// scalar's bits), and returns without waiting. The context that was
  /// current on the calling thread is current again afterwards, so other
  /// libraries keep their current device.
  void launchOnStream(LoadedKernel &kernel, const KernelArtifact &artifact,
                      const uint64_t *slots, Dim3 grid, Dim3 threads,
                      uint64_t stream, bool ownStream);
  /// The device's ordinal.
  int deviceOrdinal() const;

  /// A DeviceBuffer over memory someone else owns (a DLPack tensor, an
  /// object with __cuda_array_interface__), used without copying and never
  /// freed by Enigma. Throws DispatchError unless the address is memory of
  /// this backend's device.
  std::shared_ptr<DeviceBuffer> wrapDeviceMemory(uint64_t address,
                                                 size_t bytes) override;
  /// Orders work queued on this backend after everything queued so far on
  /// the caller's `stream` (a CUstream handle of the same device), without
  /// blocking the host.
  void waitForStream(uint64_t stream);
  /// The CUstream this backend queues on, for interop (DLPack's stream
  /// argument). A context reset after a kernel fault replaces it.
  uint64_t streamHandle() const;
  /// The raw device address of a buffer made by this backend.
  static uint64_t devicePointer(const DeviceBuffer &buffer);

  /// "sm_90", the architecture kernels are compiled for.
  const std::string &architecture() const;
  /// The device's name as the driver reports it.
  const std::string &deviceName() const;
  /// Its streaming multiprocessors (a persistent kernel's threadgroups).
  int multiprocessors() const;
  /// How `kernel` (loaded by this backend) reached the device: "cubin sm_90
  /// (NVRTC 13.0)", "cubin sm_90 (disk cache)", or "PTX compute_90 JIT-compiled
  /// by the driver (NVRTC 12.4 predates sm_100)".
  static std::string describeLoadedCode(const LoadedKernel &kernel);

  /// Compiles `cudaSource` with NVRTC alone, no driver or GPU needed, exactly
  /// as load() would (same prelude, options and function constants). `arch`
  /// is "sm_XX" for a cubin or "compute_XX" for PTX. Returns the image; throws
  /// RuntimeFailure with the NVRTC log when the source does not compile and
  /// BackendUnavailable when NVRTC is missing. `log`, when given, receives
  /// NVRTC's log of a successful compile (ptxas's remarks with
  /// ENIGMA_NVRTC_OPTIONS=--ptxas-options=-v).
  static std::string compileForCheck(const std::string &cudaSource,
                                     const std::string &arch,
                                     const ConstantValues &constants = {},
                                     std::string *log = nullptr);

  /// Device, context, stream; defined in CudaContext.h beside the
  /// backend's sources. Shared with the buffers and kernels it makes, so
  /// the context outlives them.
  struct State;

private:
  void enqueue(LoadedKernel &kernel, const KernelArtifact &artifact,
               const std::vector<LaunchArg> &args, Dim3 grid, Dim3 threads);
  std::shared_ptr<State> state;
};

} // namespace enigma

#endif
