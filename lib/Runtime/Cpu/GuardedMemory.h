//===- GuardedMemory.h - Buffer memory with guard pages ---------*- C++ -*-===//
//
// The memory of a buffer the CPU runtime allocates (inputs copied by
// `execute`, outputs, `allocate`): zero-filled, 64-byte aligned, mapped on
// its own between inaccessible guard regions and ending where the trailing
// one starts (rounded up to 64 bytes). A kernel that runs past
// either end of the buffer then faults in the guard (a KernelFault, see
// FaultGuard.h) instead of overwriting the process's heap, which killed
// Python later, far from the kernel. Arrays the caller lends in place are
// the caller's and are not guarded. Mappings of small buffers are reused
// (zeroed again) instead of unmapped, which would cost more than a small
// kernel's launch.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CPU_GUARDEDMEMORY_H
#define ENIGMA_LIB_RUNTIME_CPU_GUARDEDMEMORY_H

#include <cstddef>
#include <cstdint>

namespace enigma::cpu {

class GuardedMemory {
public:
  /// At least `bytes` (64 for 0) of zeroed memory; when the mapping
  /// fails (the process's map count is exhausted), heap memory aligned to
  /// 64 bytes, without guards. Throws RuntimeFailure when neither exists.
  explicit GuardedMemory(size_t bytes);
  ~GuardedMemory();
  GuardedMemory(const GuardedMemory &) = delete;
  GuardedMemory &operator=(const GuardedMemory &) = delete;

  uint8_t *data() const { return memory; }

private:
  uint8_t *memory = nullptr;
  void *mapping = nullptr; // null: `memory` is from the heap
  size_t mappedBytes = 0;
};

} // namespace enigma::cpu

#endif
