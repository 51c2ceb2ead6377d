//===- ProcessLife.h - fork, interrupts and exit for the runtimes -*- C++ -*-===//
//
// What the caches and runtimes need to survive what real programs do to a
// process (docs/design/process-life.md):
//
// - ForkSafeMutex: a mutex for short critical sections that fork() never
//   copies held into the child (its pthread_atfork handlers take every such
//   mutex before the fork and give them back on both sides);
// - forkGeneration(): changes in every child, so state that names work in
//   flight (a compile another thread of the parent was doing) can tell that
//   the worker is gone;
// - interruption: long waits (launches, compiles) call interruptRequested()
//   every few milliseconds; it is true once the process is exiting, or when
//   the host program's check (Python: a pending Ctrl-C) says so. The wait
//   then stops its work and throws Interrupted.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SUPPORT_PROCESSLIFE_H
#define ENIGMA_SUPPORT_PROCESSLIFE_H

#include <chrono>
#include <cstdint>
#include <mutex>
#include <stdexcept>

namespace enigma {

/// A std::mutex that fork() never copies held. Only for short critical
/// sections that take no other ForkSafeMutex and never wait (no compile,
/// launch, process or Python call while it is held). Instances must live
/// for the whole process: make them function-local statics allocated with
/// new, or namespace-scope objects that are never destroyed.
class [[gnu::visibility("default")]] ForkSafeMutex {
public:
  ForkSafeMutex();
  ~ForkSafeMutex();
  ForkSafeMutex(const ForkSafeMutex &) = delete;
  ForkSafeMutex &operator=(const ForkSafeMutex &) = delete;

  void lock() { mutex.lock(); }
  bool try_lock() { return mutex.try_lock(); }
  void unlock() { mutex.unlock(); }

private:
  std::mutex mutex;
};

/// 0 in the first process; a new value in every fork()ed child.
[[gnu::visibility("default")]] uint64_t forkGeneration();

/// Thrown by a wait that stopped because interruptRequested() said so. The
/// work it waited for was abandoned (a launch's outputs are incomplete, a
/// compile produced nothing); everything else stays usable.
struct Interrupted : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The host program's check, called from the waiting thread every few
/// milliseconds of a long wait; true to stop the wait. Python installs one
/// that runs pending signal handlers (Ctrl-C raises KeyboardInterrupt) and
/// stops the waits of other threads once the process exits.
using InterruptCheck = bool (*)();
[[gnu::visibility("default")]] void setInterruptCheck(InterruptCheck check);

/// Whether a long wait of the calling thread should stop now: what the
/// host program's check says, else whether the process is exiting.
[[gnu::visibility("default")]] bool interruptRequested();

/// How often long waits call interruptRequested().
inline constexpr std::chrono::milliseconds kInterruptPollInterval{20};

/// The process is ending (Python's exit handlers run): every wait in
/// flight and every later one is interrupted.
[[gnu::visibility("default")]] void beginProcessExit();
[[gnu::visibility("default")]] bool processExiting();

} // namespace enigma

#endif
