//===- FaultGuard.cpp -----------------------------------------------------===//
//
// The recovery point is a sigjmp_buf on the guarded call's stack, published
// in a thread-local slot the handler reads. The slot uses the initial-exec
// TLS model: the default model for a shared library may allocate on a
// thread's first access, which must not happen inside a signal handler (a
// fault inside malloc would then deadlock instead of crashing).
//
// sigsetjmp does not save the signal mask (that would be a system call per
// guarded call); the signal the handler was entered with stays blocked after
// the jump, so the recovery path unblocks it.
//
//===----------------------------------------------------------------------===//
#include "FaultGuard.h"

#include <algorithm>
#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include <pthread.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__linux__)
#define ENIGMA_INITIAL_EXEC_TLS __attribute__((tls_model("initial-exec")))
#else
#define ENIGMA_INITIAL_EXEC_TLS
#endif

namespace enigma::cpu {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
/// How far below the guarded call's frame a fault still counts as running
/// out of stack: a thread's stack (8 MiB by default) and its guard page.
constexpr uintptr_t kStackReach = uintptr_t(16) << 20;
/// How far below the stack pointer code touches the stack (x86-64's red
/// zone is 128 bytes; pushes and calls a word or two).
constexpr uintptr_t kBelowStackPointer = uintptr_t(64) << 10;
constexpr int kSignalCount = int(sizeof kSignals / sizeof kSignals[0]);
/// The handlers installed before ours, by position in kSignals.
struct sigaction previousHandlers[kSignalCount];

/// What the handler reads and writes; trivial, so that reading it needs no
/// initialisation call.
struct GuardSlot {
  sigjmp_buf *recovery;
  Fault fault;
  // Stoppable kernel code (setStoppableCode).
  uintptr_t codeBegin, codeEnd;
  const std::atomic<bool> *stop;
};
thread_local GuardSlot guardSlot ENIGMA_INITIAL_EXEC_TLS;

/// Gives a thread that has no alternate signal stack one (so that a kernel
/// that overflowed its stack can still be recovered), and takes it back
/// when the thread ends. A thread that has one already (Python's
/// faulthandler sets one up) keeps it.
class AlternateStack {
public:
  AlternateStack() {
    stack_t current{};
    if (::sigaltstack(nullptr, &current) == 0 &&
        !(current.ss_flags & SS_DISABLE))
      return;
    const size_t size = 64 * 1024 + size_t(SIGSTKSZ);
    memory = std::malloc(size);
    if (!memory)
      return;
    stack_t ours{};
    ours.ss_sp = memory;
    ours.ss_size = size;
    if (::sigaltstack(&ours, nullptr) != 0) {
      std::free(memory);
      memory = nullptr;
    }
  }
  ~AlternateStack() {
    if (!memory)
      return;
    stack_t current{};
    if (::sigaltstack(nullptr, &current) == 0 && current.ss_sp == memory) {
      stack_t off{};
      off.ss_flags = SS_DISABLE;
      ::sigaltstack(&off, nullptr);
    }
    std::free(memory);
  }
  AlternateStack(const AlternateStack &) = delete;
  AlternateStack &operator=(const AlternateStack &) = delete;

private:
  void *memory = nullptr;
};

void ensureAlternateStack() {
  thread_local AlternateStack stack;
  (void)stack;
}

/// Passes a signal that no guarded call raised to whoever handled it before
/// us; with nobody, restores the default action (a fault then re-executes
/// its instruction on return and ends the process as it would have).
void forward(int signal, siginfo_t *info, void *context) {
  int slot = 0;
  while (slot < kSignalCount && kSignals[slot] != signal)
    ++slot;
  const struct sigaction &before = previousHandlers[slot];
  const bool sent = !info || info->si_code <= 0; // kill(), raise(), ...
  if (before.sa_flags & SA_SIGINFO) {
    before.sa_sigaction(signal, info, context);
    return;
  }
  if (before.sa_handler == SIG_IGN && sent)
    return;
  if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
    before.sa_handler(signal);
    return;
  }
  struct sigaction fallback {};
  fallback.sa_handler = SIG_DFL;
  sigemptyset(&fallback.sa_mask);
  ::sigaction(signal, &fallback, nullptr);
  if (sent)
    ::raise(signal); // pending until this handler returns
}

/// The interrupted code's stack pointer, or 0 where it is not known.
uintptr_t stackPointerOf(void *context) {
  if (!context)
    return 0;
  const auto *uc = static_cast<const ucontext_t *>(context);
#if defined(__linux__) && defined(__x86_64__)
  return uintptr_t(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__linux__) && defined(__aarch64__)
  return uintptr_t(uc->uc_mcontext.sp);
#else
  (void)uc;
  return 0;
#endif
}

void onFaultSignal(int signal, siginfo_t *info, void *context) {
  GuardSlot &slot = guardSlot;
  sigjmp_buf *recovery = slot.recovery;
  if (!recovery) {
    forward(signal, info, context);
    return;
  }
  slot.recovery = nullptr;
  slot.fault.signal = signal;
  slot.fault.code = info ? info->si_code : 0;
  slot.fault.address = info ? reinterpret_cast<uintptr_t>(info->si_addr) : 0;
  // The recovery buffer lives in the guarded call's frame on the thread's
  // stack, which grows down: a fault a little below it, at or above the
  // faulting code's stack pointer, is the stack's end. (Only below the
  // frame is not enough: a buffer's guard pages can be mapped there.)
  const uintptr_t frame = reinterpret_cast<uintptr_t>(recovery);
  const uintptr_t sp = stackPointerOf(context);
  slot.fault.stackOverflow =
      signal == SIGSEGV && slot.fault.address < frame &&
      frame - slot.fault.address < kStackReach &&
      (sp == 0 || slot.fault.address + kBelowStackPointer >= sp);
  siglongjmp(*recovery, 1);
}

/// The interrupted instruction, or 0 where it is not known.
uintptr_t programCounterOf(void *context) {
  if (!context)
    return 0;
  const auto *uc = static_cast<const ucontext_t *>(context);
#if defined(__linux__) && defined(__x86_64__)
  return uintptr_t(uc->uc_mcontext.gregs[REG_RIP]);
#elif defined(__linux__) && defined(__aarch64__)
  return uintptr_t(uc->uc_mcontext.pc);
#else
  (void)uc;
  return 0;
#endif
}

struct sigaction previousStopHandler;

void onStopSignal(int signal, siginfo_t *info, void *context) {
  GuardSlot &slot = guardSlot;
  const std::atomic<bool> *stop = slot.stop;
  const uintptr_t pc = programCounterOf(context);
  if (slot.recovery && stop && stop->load(std::memory_order_relaxed) &&
      pc >= slot.codeBegin && pc < slot.codeEnd) {
    sigjmp_buf *recovery = slot.recovery;
    slot.recovery = nullptr;
    slot.fault = Fault{};
    slot.fault.signal = signal;
    slot.fault.address = pc;
    siglongjmp(*recovery, 1);
  }
  // Not for a kernel of ours: whoever handled the signal before us.
  const struct sigaction &before = previousStopHandler;
  if (before.sa_flags & SA_SIGINFO) {
    if (before.sa_sigaction)
      before.sa_sigaction(signal, info, context);
  } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
    before.sa_handler(signal);
  }
}

std::string hex(uintptr_t value) {
  char text[32];
  std::snprintf(text, sizeof text, "0x%llx", (unsigned long long)value);
  return text;
}

} // namespace

std::string Fault::describe() const {
  const std::string at = hex(address);
  switch (signal) {
  case SIGSEGV:
    if (stackOverflow)
      return "SIGSEGV (stack overflow at " + at +
             ": the kernel needs more stack than the CPU thread has; values "
             "live across a barrier or simdgroup function take one slot per "
             "thread of the group, 1024 of them, on the stack)";
#ifdef SI_KERNEL
    // x86-64 reports an address outside the canonical range (far beyond
    // any buffer) without the address.
    if (code == SI_KERNEL)
      return "SIGSEGV (invalid memory access far outside any buffer)";
#endif
    return "SIGSEGV (invalid memory access at " + at +
           (code == SEGV_MAPERR   ? ": address not mapped"
            : code == SEGV_ACCERR ? ": no permission for the access"
                                  : "") +
           ")";
  case SIGBUS:
    return "SIGBUS (" +
           std::string(code == BUS_ADRALN ? "misaligned access"
                                          : "invalid access to mapped memory") +
           " at " + at + ")";
  case SIGFPE:
    return "SIGFPE (" +
           std::string(code == FPE_INTDIV   ? "integer division by zero"
                       : code == FPE_INTOVF ? "integer overflow"
                                            : "arithmetic exception") +
           " at instruction " + at + ")";
  case SIGILL:
    return "SIGILL (illegal instruction at " + at + ")";
  case SIGURG:
    return "stopped at " + at;
  default:
    return "signal " + std::to_string(signal);
  }
}

void installFaultHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction ours {};
    ours.sa_sigaction = onFaultSignal;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&ours.sa_mask);
    for (int i = 0; i < kSignalCount; ++i)
      ::sigaction(kSignals[i], &ours, &previousHandlers[i]);
  });
}

int stopSignal() { return SIGURG; }

void installStopHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction ours {};
    ours.sa_sigaction = onStopSignal;
    // SA_RESTART: a worker asleep in a wait goes back to sleep.
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&ours.sa_mask);
    ::sigaction(SIGURG, &ours, &previousStopHandler);
  });
}

void reinstallStopHandlerIfReplaced() {
  installStopHandler();
  static std::mutex mutex; // only taken by a thread that stops a launch
  std::lock_guard<std::mutex> lock(mutex);
  struct sigaction current {};
  if (::sigaction(SIGURG, nullptr, &current) != 0 ||
      ((current.sa_flags & SA_SIGINFO) && current.sa_sigaction == onStopSignal))
    return;
  // The program installed a handler of its own since: keep it for signals
  // that are not ours, and put ours in front again.
  struct sigaction ours {};
  ours.sa_sigaction = onStopSignal;
  ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  sigemptyset(&ours.sa_mask);
  ::sigaction(SIGURG, &ours, &previousStopHandler);
}

void setStoppableCode(uintptr_t codeBegin, uintptr_t codeEnd,
                      const std::atomic<bool> *stop) {
  GuardSlot &slot = guardSlot;
  slot.codeBegin = codeBegin;
  slot.codeEnd = codeEnd;
  std::atomic_signal_fence(std::memory_order_seq_cst);
  slot.stop = stop;
}

void clearStoppableCode() {
  GuardSlot &slot = guardSlot;
  slot.stop = nullptr;
  std::atomic_signal_fence(std::memory_order_seq_cst);
}

bool runGuarded(void (*fn)(void *), void *context, Fault &fault) {
  ensureAlternateStack();
  GuardSlot &slot = guardSlot;
  sigjmp_buf *const outer = slot.recovery;
  sigjmp_buf recovery;
  if (sigsetjmp(recovery, 0) != 0) {
    slot.recovery = outer;
    fault = slot.fault;
    sigset_t caught;
    sigemptyset(&caught);
    sigaddset(&caught, fault.signal);
    ::pthread_sigmask(SIG_UNBLOCK, &caught, nullptr);
    return false;
  }
  slot.recovery = &recovery;
  // The handler (on this thread) must see the recovery point before the
  // kernel runs and no longer see it after.
  std::atomic_signal_fence(std::memory_order_seq_cst);
  fn(context);
  std::atomic_signal_fence(std::memory_order_seq_cst);
  slot.recovery = outer;
  return true;
}

} // namespace enigma::cpu
