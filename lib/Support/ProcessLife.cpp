//===- ProcessLife.cpp ----------------------------------------------------===//
//
// The fork handlers take every ForkSafeMutex in the order they were made,
// under the registry's own lock, so no thread can hold one while the
// address space is copied; the parent and the child give them back.
// Registration and removal take the registry's lock, which the handlers
// hold from prepare to parent/child.
//
//===----------------------------------------------------------------------===//
#include "enigma/Support/ProcessLife.h"

#include <algorithm>
#include <atomic>
#include <vector>

#include <pthread.h>

namespace enigma {
namespace {
std::atomic<uint64_t> generation{0};
std::atomic<InterruptCheck> hostCheck{nullptr};
std::atomic<bool> exiting{false};

struct Registry {
  std::mutex guard;
  std::vector<ForkSafeMutex *> mutexes;
};

Registry &registry() {
  // Never destroyed: fork() may run while static destructors do.
  static Registry *instance = new Registry;
  return *instance;
}

void beforeFork() {
  Registry &r = registry();
  r.guard.lock();
  for (ForkSafeMutex *m : r.mutexes)
    m->lock();
}

void afterForkInParent() {
  Registry &r = registry();
  for (auto it = r.mutexes.rbegin(); it != r.mutexes.rend(); ++it)
    (*it)->unlock();
  r.guard.unlock();
}

void afterForkInChild() {
  generation.fetch_add(1);
  afterForkInParent(); // the child's copies are held by this thread
}

void installForkHandlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    ::pthread_atfork(&beforeFork, &afterForkInParent, &afterForkInChild);
  });
}
} // namespace

ForkSafeMutex::ForkSafeMutex() {
  installForkHandlers();
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.guard);
  r.mutexes.push_back(this);
}

ForkSafeMutex::~ForkSafeMutex() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.guard);
  r.mutexes.erase(std::remove(r.mutexes.begin(), r.mutexes.end(), this),
                  r.mutexes.end());
}

uint64_t forkGeneration() {
  installForkHandlers();
  return generation.load(std::memory_order_relaxed);
}

void setInterruptCheck(InterruptCheck check) { hostCheck.store(check); }

bool interruptRequested() {
  // The host program's check decides for each thread (Python: the main
  // thread keeps working while the process exits, its exit handlers may
  // launch kernels); without one, exiting stops every wait.
  if (InterruptCheck check = hostCheck.load(std::memory_order_relaxed))
    return check();
  return exiting.load(std::memory_order_relaxed);
}

void beginProcessExit() { exiting.store(true); }

bool processExiting() { return exiting.load(std::memory_order_relaxed); }

} // namespace enigma
