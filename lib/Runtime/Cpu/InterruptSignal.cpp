//===- InterruptSignal.cpp - Ctrl-C for kernels on the calling thread -----===//
//
// A launch's calling thread runs kernel code itself, and then cannot look
// for interrupts. So SIGINT gets a handler of ours in front of the
// program's: it runs the program's handler first (Python's only records
// the signal), then asks the thread pool's stopper to stop the launches of
// the interruptible thread. Only async-signal-safe calls happen here.
//
//===----------------------------------------------------------------------===//
#include "enigma/Runtime/HostInterrupts.h"

#include "ThreadPool.h"

#include <atomic>
#include <csignal>
#include <mutex>

namespace enigma {
namespace {
struct sigaction programHandler; // the one ours runs first
std::atomic<pthread_t> interruptible{0};
std::atomic<bool> haveThread{false};

void onInterrupt(int signal, siginfo_t *info, void *context) {
  const struct sigaction &before = programHandler;
  if (before.sa_flags & SA_SIGINFO) {
    if (before.sa_sigaction)
      before.sa_sigaction(signal, info, context);
  } else if (before.sa_handler != SIG_DFL && before.sa_handler != SIG_IGN) {
    before.sa_handler(signal);
  }
  if (haveThread.load())
    cpu::ThreadPool::stopLaunchesOfThreadFromSignal(interruptible.load());
}

bool isOurs(const struct sigaction &action) {
  return (action.sa_flags & SA_SIGINFO) && action.sa_sigaction == onInterrupt;
}

std::mutex &chainMutex() {
  static std::mutex *mutex = new std::mutex;
  return *mutex;
}
} // namespace

void setInterruptibleThread(pthread_t thread) {
  interruptible.store(thread);
  haveThread.store(true);
}

bool chainInterruptSignal() {
  std::lock_guard<std::mutex> lock(chainMutex());
  struct sigaction current {};
  if (::sigaction(SIGINT, nullptr, &current) != 0)
    return false;
  if (isOurs(current))
    return true;
  if (!(current.sa_flags & SA_SIGINFO) &&
      (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN))
    return false; // nothing to run first: Ctrl-C ends the process anyway
  // Block SIGINT while the saved handler changes, so that ours never runs
  // with half of it.
  sigset_t interrupt, previous;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  ::pthread_sigmask(SIG_BLOCK, &interrupt, &previous);
  programHandler = current;
  struct sigaction ours = current; // the program's mask and flags
  ours.sa_flags |= SA_SIGINFO;
  ours.sa_sigaction = onInterrupt;
  bool done = ::sigaction(SIGINT, &ours, nullptr) == 0;
  ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  return done;
}

bool interruptSignalChained() {
  struct sigaction current {};
  return ::sigaction(SIGINT, nullptr, &current) == 0 && isOurs(current);
}

void stopAllHostLaunches() { cpu::ThreadPool::stopAllLaunches(); }

} // namespace enigma
