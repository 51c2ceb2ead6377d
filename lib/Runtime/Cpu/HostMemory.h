//===- HostMemory.h - Buffers and arguments of the host runtimes -*- C++ -*-===//
//
// The CPU backend and the MSL host backend both run kernels on this
// machine's threads over host memory: their buffers, argument arrays and
// launch shapes are made alike, here.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CPU_HOSTMEMORY_H
#define ENIGMA_LIB_RUNTIME_CPU_HOSTMEMORY_H

#include "GuardedMemory.h"

#include "enigma/Runtime/Backend.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace enigma::cpu {

/// Host memory as the device memory of the backend `Owner`: memory of its
/// own with guard pages (GuardedMemory.h), or the caller's array used in
/// place and never freed here. A type per backend, so that neither takes
/// the other's buffers.
template <typename Owner> class HostBuffer final : public DeviceBuffer {
public:
  explicit HostBuffer(size_t bytes)
      : owned(std::make_unique<GuardedMemory>(bytes)), memory(owned->data()),
        bytes(bytes) {}
  HostBuffer(uint8_t *external, size_t bytes)
      : memory(external), bytes(bytes) {}
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;

  size_t size() const override { return bytes; }
  uint8_t *data() const { return memory; }

  /// The caller's array of `bytes` at `address`, in place: host memory is
  /// these backends' device memory.
  static std::shared_ptr<DeviceBuffer> wrap(uint64_t address, size_t bytes) {
    if (address == 0 && bytes > 0)
      throw DispatchError("an array of " + std::to_string(bytes) +
                          " bytes has a null address");
    return std::make_shared<HostBuffer>(
        reinterpret_cast<uint8_t *>(uintptr_t(address)), bytes);
  }

  void upload(const void *src, size_t count) const {
    if (count > bytes)
      throw RuntimeFailure("upload of " + std::to_string(count) +
                           " bytes into a " + std::to_string(bytes) +
                           "-byte buffer");
    if (count > 0)
      std::memcpy(memory, src, count);
  }

  void download(void *dst, size_t count) const {
    if (count > bytes)
      throw RuntimeFailure("download of " + std::to_string(count) +
                           " bytes from a " + std::to_string(bytes) +
                           "-byte buffer");
    if (count > 0)
      std::memcpy(dst, memory, count);
  }

private:
  std::unique_ptr<GuardedMemory> owned;
  uint8_t *memory = nullptr;
  size_t bytes;
};

/// Throws unless `args` match the kernel's parameters and the dispatch
/// has threads.
void checkHostLaunch(const KernelArtifact &artifact,
                     const std::vector<LaunchArg> &args, Dim3 grid,
                     Dim3 threads);

/// A host kernel's argument array: args[i] is a buffer's base, or a
/// pointer to an 8-byte aligned copy of a scalar's bits.
struct HostArguments {
  std::vector<void *> pointers;
  std::vector<uint64_t> scalarBits;

  /// `asBuffer` gives a buffer argument as the backend's own (and throws
  /// for another backend's).
  template <typename Buffer>
  HostArguments(const KernelArtifact &artifact,
                const std::vector<LaunchArg> &args,
                const Buffer &(*asBuffer)(const DeviceBuffer &))
      : pointers(args.size()), scalarBits(args.size()) {
    for (size_t i = 0; i < args.size(); ++i) {
      if (artifact.params[i].kind == ParamKind::Scalar) {
        scalarBits[i] = args[i].scalar.bits;
        pointers[i] = &scalarBits[i];
      } else if (!args[i].buffer) {
        throw RuntimeFailure("kernel " + artifact.kernelName +
                             ": parameter " + artifact.params[i].name +
                             " has no buffer");
      } else {
        pointers[i] = asBuffer(*args[i].buffer).data();
      }
    }
  }
};

/// Fills the grid, threads and threadgroups per dimension of `shape` (the
/// CPU ABI's EnigmaCpuLaunch or the MSL harness's DispatchShape) and
/// returns the number of threadgroups; throws past 2^64 of them.
template <typename Shape>
uint64_t fillLaunchShape(Shape &shape, Dim3 grid, Dim3 threads,
                         const std::string &kernelName) {
  const uint32_t gridDims[3] = {grid.x, grid.y, grid.z};
  const uint32_t groupDims[3] = {threads.x, threads.y, threads.z};
  unsigned __int128 totalGroups = 1;
  for (int d = 0; d < 3; ++d) {
    shape.grid[d] = gridDims[d];
    shape.threads[d] = groupDims[d];
    shape.groups[d] = uint32_t((uint64_t(gridDims[d]) + groupDims[d] - 1) /
                               groupDims[d]);
    totalGroups *= shape.groups[d];
  }
  if (totalGroups >> 64)
    throw RuntimeFailure("kernel " + kernelName +
                         ": the dispatch has more than 2^64 threadgroups");
  return uint64_t(totalGroups);
}

} // namespace enigma::cpu

#endif // ENIGMA_LIB_RUNTIME_CPU_HOSTMEMORY_H
