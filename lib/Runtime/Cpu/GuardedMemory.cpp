//===- GuardedMemory.cpp --------------------------------------------------===//
#include "GuardedMemory.h"

#include "enigma/Support/ProcessLife.h"

#include "enigma/Runtime/Backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

namespace enigma::cpu {
namespace {
/// Inaccessible address space before and after each buffer: a kernel's
/// index usually runs past the end by a row, a tile or a shifted offset,
/// so the trailing guard is large (past it lie other mappings, whose
/// pages a store would corrupt); it costs address space only.
constexpr size_t kLeadingGuard = size_t(64) << 10;
constexpr size_t kTrailingGuard = size_t(64) << 20;
/// Every buffer's alignment: a cache line, enough for any vector.
constexpr size_t kAlignment = 64;

/// Mappings of small buffers are kept for the next buffer of their size:
/// mapping, protecting and unmapping cost about 5 us a buffer, which an
/// `execute` of a small kernel would pay for every input copy and output;
/// zeroing a kept one again costs far less at these sizes.
constexpr size_t kKeptUpTo = size_t(64) << 10; // usable bytes
constexpr size_t kKeptCount = 32;

struct KeptMappings {
  ForkSafeMutex mutex; // a fork() never copies it held
  std::vector<std::pair<void *, size_t>> spare; // (mapping, usable bytes)
};
/// Never destroyed: buffers may be freed during the process's exit.
KeptMappings &keptMappings() {
  static auto *kept = new KeptMappings;
  return *kept;
}

/// A kept mapping with `usable` bytes between its guards, or null.
void *takeKept(size_t usable) {
  if (usable > kKeptUpTo)
    return nullptr;
  KeptMappings &kept = keptMappings();
  std::lock_guard<ForkSafeMutex> lock(kept.mutex);
  for (auto it = kept.spare.begin(); it != kept.spare.end(); ++it)
    if (it->second == usable) {
      void *mapping = it->first;
      kept.spare.erase(it);
      return mapping;
    }
  return nullptr;
}

/// Keeps the mapping for reuse if there is room; false: unmap it.
bool keep(void *mapping, size_t usable) {
  if (usable > kKeptUpTo)
    return false;
  KeptMappings &kept = keptMappings();
  std::lock_guard<ForkSafeMutex> lock(kept.mutex);
  if (kept.spare.size() >= kKeptCount)
    return false;
  kept.spare.emplace_back(mapping, usable);
  return true;
}

size_t roundUp(size_t value, size_t unit) {
  return (value + unit - 1) / unit * unit;
}
} // namespace

GuardedMemory::GuardedMemory(size_t bytes) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE));
  // A size near 2^64 would wrap in the rounding below (to one page, and the
  // kernel would write past it); no machine has that much memory anyway.
  if (bytes > std::numeric_limits<size_t>::max() / 2)
    throw RuntimeFailure("out of memory allocating a " +
                         std::to_string(bytes) + "-byte buffer");
  const size_t usable = std::max(page, roundUp(bytes, page));
  const size_t total = kLeadingGuard + usable + kTrailingGuard;
  // The buffer ends where the trailing guard starts (to the cache line):
  // the first element past it faults.
  const size_t start = usable - roundUp(std::max(bytes, size_t(1)), kAlignment);
  if (void *reused = takeKept(usable)) {
    auto *middle = static_cast<uint8_t *>(reused) + kLeadingGuard;
    std::memset(middle, 0, usable);
    mapping = reused;
    mappedBytes = total;
    memory = middle + start;
    return;
  }
  if (total > usable) { // no overflow
    // Reserved inaccessible, then the middle opened: fresh pages are zero.
    void *reserved = ::mmap(nullptr, total, PROT_NONE,
                            MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (reserved != MAP_FAILED) {
      auto *middle = static_cast<uint8_t *>(reserved) + kLeadingGuard;
      if (::mprotect(middle, usable, PROT_READ | PROT_WRITE) == 0) {
        mapping = reserved;
        mappedBytes = total;
        memory = middle + start;
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
  if (!mapping)
    std::free(memory);
  else if (!keep(mapping, mappedBytes - kLeadingGuard - kTrailingGuard))
    ::munmap(mapping, mappedBytes);
}

} // namespace enigma::cpu
