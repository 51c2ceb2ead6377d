//===- FaultGuard.h - Surviving faults raised by kernel code ----*- C++ -*-===//
//
// A kernel that reads or writes outside its memory, or executes a trapping
// instruction, raises SIGSEGV, SIGBUS, SIGFPE or SIGILL in the thread that
// runs it. runGuarded() calls kernel code with a recovery point; the
// process's handler for those signals (installed once, running on an
// alternate signal stack) jumps back to the recovery point when the signal
// comes from a guarded call on the same thread, and hands every other one
// to the handler that was installed before it, or to the default action.
// See docs/design/cpu-faults.md.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CPU_FAULTGUARD_H
#define ENIGMA_LIB_RUNTIME_CPU_FAULTGUARD_H

#include <atomic>
#include <cstdint>
#include <string>

namespace enigma::cpu {

/// One caught signal, as the kernel delivered it.
struct Fault {
  int signal = 0;
  int code = 0;          // siginfo's si_code
  uintptr_t address = 0; // si_addr: the data address (SIGSEGV, SIGBUS) or
                         // the faulting instruction (SIGFPE, SIGILL)
  /// A SIGSEGV just below the guarded call's frame: the thread ran out of
  /// stack (the CPU keeps a kernel's per-thread arrays there).
  bool stackOverflow = false;

  /// "SIGSEGV (invalid memory access at 0x1000: address not mapped)".
  std::string describe() const;
};

/// Installs the handlers for SIGSEGV, SIGBUS, SIGFPE and SIGILL, keeping the
/// ones installed before for signals that do not come from guarded calls.
/// Thread-safe; only the first call does anything.
void installFaultHandlers();

/// The signal that stops kernel code that does not end by itself (Ctrl-C,
/// process exit): SIGURG, which is ignored by default and which neither
/// Python nor the C library uses.
int stopSignal();

/// Installs the stop signal's handler (once). A stop signal that does not
/// find its thread inside stoppable kernel code goes to the handler
/// installed before, if any, and is otherwise ignored.
void installStopHandler();
/// Puts the stop signal's handler back in front if the program replaced it
/// since (keeping the program's for signals that are not ours).
void reinstallStopHandlerIfReplaced();

/// While `*stop` is set, a stop signal that finds this thread executing an
/// instruction in [codeBegin, codeEnd) inside runGuarded() abandons the
/// guarded call there, as a fault would (Fault::signal == stopSignal()).
/// Only kernel code is abandoned: it holds no lock and owns nothing. Code
/// elsewhere (the C library, the runtime) may, so a signal that finds the
/// thread there is ignored and the sender tries again a little later.
void setStoppableCode(uintptr_t codeBegin, uintptr_t codeEnd,
                      const std::atomic<bool> *stop);
void clearStoppableCode();

/// Calls fn(context) on this thread. Returns true when it returns, false
/// (with `fault` filled) when it raised one of the signals above; the call
/// is then abandoned where it faulted, so `fn` must not own anything that
/// needs a destructor (generated kernels own nothing). Needs
/// installFaultHandlers() first.
bool runGuarded(void (*fn)(void *), void *context, Fault &fault);

} // namespace enigma::cpu

#endif
