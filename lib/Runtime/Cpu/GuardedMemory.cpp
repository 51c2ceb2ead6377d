//===- GuardedMemory.cpp --------------------------------------------------===//
#include "GuardedMemory.h"

#include "enigma/Runtime/Backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace enigma::cpu {
namespace {
/// Inaccessible address space before and after each buffer: a kernel's
/// index usually runs past the end by a row or a tile, so the trailing
/// guard is large; it costs address space only.
constexpr size_t kLeadingGuard = size_t(64) << 10;
constexpr size_t kTrailingGuard = size_t(1) << 20;
/// Every buffer's alignment: a cache line, enough for any vector.
constexpr size_t kAlignment = 64;

size_t roundUp(size_t value, size_t unit) {
  return (value + unit - 1) / unit * unit;
}
} // namespace

GuardedMemory::GuardedMemory(size_t bytes) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  const size_t usable = std::max(page, roundUp(bytes, page));
  const size_t total = kLeadingGuard + usable + kTrailingGuard;
  if (total > usable) { // no overflow
    // Reserved inaccessible, then the middle opened: fresh pages are zero.
    void *reserved = ::mmap(nullptr, total, PROT_NONE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved != MAP_FAILED) {
      auto *middle = static_cast<uint8_t *>(reserved) + kLeadingGuard;
      if (::mprotect(middle, usable, PROT_READ | PROT_WRITE) == 0) {
        mapping = reserved;
        mappedBytes = total;
        // The buffer ends where the trailing guard starts (to the cache
        // line): the first element past it faults.
        memory = middle + (usable - roundUp(std::max(bytes, size_t(1)),
                                            kAlignment));
        return;
      }
      ::munmap(reserved, total);
    }
  }
  const size_t capacity = std::max(kAlignment, roundUp(bytes, kAlignment));
  memory = static_cast<uint8_t *>(std::aligned_alloc(kAlignment, capacity));
  if (!memory)
    throw RuntimeFailure("out of memory allocating a " +
                         std::to_string(bytes) + "-byte buffer");
  std::memset(memory, 0, capacity);
}

GuardedMemory::~GuardedMemory() {
  if (mapping)
    ::munmap(mapping, mappedBytes);
  else
    std::free(memory);
}

} // namespace enigma::cpu
