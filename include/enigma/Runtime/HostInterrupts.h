//===- HostInterrupts.h - Stopping host kernels from outside ----*- C++ -*-===//
//
// Host kernels (the CPU backend, the MSL host runtime) run on the calling
// thread and the thread pool's workers. A wait for them notices
// interruptRequested() (enigma/Support/ProcessLife.h) only while the
// calling thread is not itself inside kernel code; these stop launches
// whatever their threads are doing (docs/design/process-life.md).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_HOSTINTERRUPTS_H
#define ENIGMA_RUNTIME_HOSTINTERRUPTS_H

#include <pthread.h>

namespace enigma {

/// The thread whose host launches Ctrl-C (SIGINT) stops: the host
/// program's main thread (Python's, where Python's default handler raises
/// KeyboardInterrupt there).
[[gnu::visibility("default")]] void setInterruptibleThread(pthread_t thread);

/// Puts a SIGINT handler in front of the one installed now (which keeps
/// running first, for every SIGINT) that stops the host launches of the
/// interruptible thread. Idempotent; false where there is no handler to
/// put it in front of. A program that installs another handler later
/// replaces it; call again to put it back.
[[gnu::visibility("default")]] bool chainInterruptSignal();
/// Whether that handler is the one installed now.
[[gnu::visibility("default")]] bool interruptSignalChained();

/// Stops every host launch in flight (the process is exiting).
[[gnu::visibility("default")]] void stopAllHostLaunches();

} // namespace enigma

#endif
