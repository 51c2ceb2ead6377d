//===- Fiber.h - User-space threads for the MSL host runtime ----*- C++ -*-===//
//
// The threads of a threadgroup run as fibers on one OS thread: each has its
// own stack (with an inaccessible guard page below it, so an overflow faults
// instead of corrupting a neighbour) and switching between them is a few
// register saves (hand-written on x86-64, ucontext elsewhere).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_METALHOST_FIBER_H
#define ENIGMA_LIB_RUNTIME_METALHOST_FIBER_H

#include <cstddef>
#include <cstdint>
#include <vector>

#if !(defined(__x86_64__) && defined(__ELF__))
#include <ucontext.h>
#endif

namespace enigma::metalhost {

/// Where a suspended fiber (or the scheduler) continues.
struct FiberContext {
#if defined(__x86_64__) && defined(__ELF__)
  void *stackPointer = nullptr;
#else
  ucontext_t context;
#endif
};

/// Saves the running context in `from` and continues `to`.
void switchFiber(FiberContext &from, FiberContext &to);

/// Makes `context` start `entry(argument)` on the stack [base, base + size)
/// when switched to. `entry` must never return (it switches away).
void makeFiber(FiberContext &context, void *stackBase, size_t stackSize,
               void (*entry)(void *), void *argument);

/// Fixed-size stacks carved from one reservation, each with a guard page
/// below it; made usable on first use and reused afterwards.
class StackPool {
public:
  StackPool(size_t stackBytes, unsigned maxStacks);
  ~StackPool();
  StackPool(const StackPool &) = delete;
  StackPool &operator=(const StackPool &) = delete;

  /// Bytes every stack has at least.
  size_t stackBytes() const { return usableBytes - kColours * kLine; }
  /// A free stack's lowest usable address; its top is at base + stackBytes()
  /// + a multiple of a cache line that differs between neighbouring stacks
  /// (tops at equal offsets in their pages would all compete for one cache
  /// set). Throws when all are in use.
  void *acquire();
  void release(void *stack);
  /// Makes every stack free again (after a fault or a stop abandoned the
  /// fibers, which may have been anywhere, even inside acquire()).
  void releaseAll();
  /// Where the stack that begins at `base` starts its frames.
  void *top(void *base) const;
  /// Whether `address` lies in the guard page of one of the stacks.
  bool isGuardPage(const void *address) const;

private:
  static constexpr size_t kLine = 64;
  static constexpr size_t kColours = 61; // prime: spreads 4 KiB strides
  size_t usableBytes;
  size_t slotBytes; // guard page + stack
  unsigned capacity;
  unsigned prepared = 0; // slots made readable and writable so far
  uint8_t *reservation = nullptr;
  std::vector<void *> freeStacks;
};

} // namespace enigma::metalhost

#endif
