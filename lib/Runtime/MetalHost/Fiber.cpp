//===- Fiber.cpp ----------------------------------------------------------===//
#include "Fiber.h"

#include "enigma/Runtime/Backend.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <sys/mman.h>
#include <unistd.h>

namespace enigma::metalhost {

#if defined(__x86_64__) && defined(__ELF__)
// System V callee-saved state: rbx rbp r12-r15 (not the SSE and x87
// control words, which kernel code never changes and which cost more to
// save than everything else). A new fiber's stack is laid out as if it had
// been suspended here, returning into enigma_fiber_start with rbx = argument
// and r12 = entry.
extern "C" void enigma_fiber_switch(void **saveStackPointer,
                                    void *stackPointer);
extern "C" void enigma_fiber_start();
asm(R"(
  .text
  .p2align 4
  .globl enigma_fiber_switch
  .hidden enigma_fiber_switch
  .type enigma_fiber_switch,@function
enigma_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size enigma_fiber_switch, .-enigma_fiber_switch

  .p2align 4
  .globl enigma_fiber_start
  .hidden enigma_fiber_start
  .type enigma_fiber_start,@function
enigma_fiber_start:
  movq %rbx, %rdi
  callq *%r12
  ud2
  .size enigma_fiber_start, .-enigma_fiber_start
)");

void switchFiber(FiberContext &from, FiberContext &to) {
  enigma_fiber_switch(&from.stackPointer, to.stackPointer);
}

void makeFiber(FiberContext &context, void *stackBase, size_t stackSize,
               void (*entry)(void *), void *argument) {
  // From the 16-byte aligned top: the address `ret` jumps to (so that
  // enigma_fiber_start runs with rsp % 16 == 0 and its call enters `entry`
  // aligned as the ABI wants), then rbp rbx r12 r13 r14 r15.
  auto top = reinterpret_cast<uintptr_t>(stackBase) + stackSize;
  top &= ~uintptr_t(15);
  auto *slot = reinterpret_cast<uint64_t *>(top);
  *--slot = reinterpret_cast<uint64_t>(&enigma_fiber_start);
  *--slot = 0;                                   // rbp
  *--slot = reinterpret_cast<uint64_t>(argument); // rbx
  *--slot = reinterpret_cast<uint64_t>(entry);    // r12
  *--slot = 0;                                   // r13
  *--slot = 0;                                   // r14
  *--slot = 0;                                   // r15
  context.stackPointer = slot;
}
#else
void switchFiber(FiberContext &from, FiberContext &to) {
  ::swapcontext(&from.context, &to.context);
}

namespace {
void ucontextEntry(unsigned low, unsigned high, unsigned entryLow,
                   unsigned entryHigh) {
  auto argument = reinterpret_cast<void *>(uintptr_t(high) << 32 | low);
  auto entry = reinterpret_cast<void (*)(void *)>(uintptr_t(entryHigh) << 32 |
                                                  entryLow);
  entry(argument);
}
} // namespace

void makeFiber(FiberContext &context, void *stackBase, size_t stackSize,
               void (*entry)(void *), void *argument) {
  ::getcontext(&context.context);
  context.context.uc_stack.ss_sp = stackBase;
  context.context.uc_stack.ss_size = stackSize;
  context.context.uc_link = nullptr;
  auto a = reinterpret_cast<uintptr_t>(argument);
  auto e = reinterpret_cast<uintptr_t>(entry);
  ::makecontext(&context.context, reinterpret_cast<void (*)()>(&ucontextEntry),
                4, unsigned(a), unsigned(a >> 32), unsigned(e),
                unsigned(e >> 32));
}
#endif

//===----------------------------------------------------------------------===//
// StackPool
//===----------------------------------------------------------------------===//

namespace {
size_t pageSize() {
  static const size_t size = size_t(::sysconf(_SC_PAGESIZE));
  return size;
}
} // namespace

StackPool::StackPool(size_t stackBytes, unsigned maxStacks)
    : capacity(maxStacks) {
  size_t page = pageSize();
  usableBytes = (stackBytes + page - 1) / page * page;
  slotBytes = usableBytes + page;
  // Reserve address space only; slots become accessible when first used.
  void *memory = ::mmap(nullptr, slotBytes * capacity, PROT_NONE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (memory == MAP_FAILED)
    throw RuntimeFailure("cannot reserve " +
                         std::to_string(slotBytes * capacity) +
                         " bytes for fiber stacks: " + std::strerror(errno));
  reservation = static_cast<uint8_t *>(memory);
  freeStacks.reserve(capacity); // release() never allocates
}

StackPool::~StackPool() {
  if (reservation)
    ::munmap(reservation, slotBytes * capacity);
}

void *StackPool::acquire() {
  if (!freeStacks.empty()) {
    void *stack = freeStacks.back();
    freeStacks.pop_back();
    return stack;
  }
  if (prepared == capacity)
    throw RuntimeFailure("all " + std::to_string(capacity) +
                         " fiber stacks are in use");
  // The slot's first page stays PROT_NONE: the guard below the stack.
  uint8_t *stack = reservation + size_t(prepared) * slotBytes + pageSize();
  if (::mprotect(stack, usableBytes, PROT_READ | PROT_WRITE) != 0)
    throw RuntimeFailure(std::string("cannot map a fiber stack: ") +
                         std::strerror(errno));
  ++prepared;
  return stack;
}

void StackPool::release(void *stack) { freeStacks.push_back(stack); }

void StackPool::releaseAll() {
  freeStacks.clear();
  for (unsigned slot = 0; slot < prepared; ++slot)
    freeStacks.push_back(reservation + size_t(slot) * slotBytes + pageSize());
}

void *StackPool::top(void *base) const {
  auto *b = static_cast<uint8_t *>(base);
  size_t slot = size_t(b - reservation) / slotBytes;
  return b + usableBytes - (slot % kColours) * kLine;
}

bool StackPool::isGuardPage(const void *address) const {
  auto a = reinterpret_cast<const uint8_t *>(address);
  if (a < reservation || a >= reservation + slotBytes * capacity)
    return false;
  return size_t(a - reservation) % slotBytes < pageSize();
}

} // namespace enigma::metalhost
