//===- ThreadPool.cpp -----------------------------------------------------===//
//
// A job lives on the caller's stack. Workers announce themselves in
// busyWorkers before reading currentJob, and the caller clears currentJob
// and then waits for busyWorkers to drain, so no worker can touch a job
// after run() returns (both sides use sequentially consistent atomics).
//
//===----------------------------------------------------------------------===//
#include "ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <unistd.h>

namespace enigma::cpu {
namespace {
/// How long an idle worker polls for the next job before sleeping: long
/// enough to cover the gap between back-to-back launches, short enough not to
/// burn a core when the program has moved on.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(200);
/// Chunks per thread: a few, so that uneven groups balance out while each
/// chunk stays a long contiguous run of groups.
constexpr uint64_t kChunksPerThread = 4;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Spins on `done` a little, then yields the core while waiting.
template <typename Predicate> void waitUntil(Predicate done) {
  for (unsigned spins = 0; !done(); ++spins) {
    if (spins < 4096)
      cpuRelax();
    else
      std::this_thread::yield();
  }
}

unsigned threadCountFromEnvironment() {
  unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
  const char *text = std::getenv("ENIGMA_NUM_THREADS");
  if (!text || !*text)
    return hardware;
  char *end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 1 || value > 1024) {
    std::fprintf(stderr,
                 "enigma: warning: ignoring ENIGMA_NUM_THREADS='%s' (expected "
                 "an integer from 1 to 1024); using %u threads\n",
                 text, hardware);
    return hardware;
  }
  return unsigned(value);
}
} // namespace

void ThreadPool::Job::runChunks() {
  // Finished chunks are reported once at the end, not one by one, to keep
  // the shared counter's cache line from bouncing between cores.
  uint64_t finished = 0;
  for (;;) {
    uint64_t chunk = nextChunk.fetch_add(1);
    if (chunk >= chunks)
      break;
    // 128-bit products: count * chunk may exceed 64 bits for huge grids.
    auto begin = uint64_t((unsigned __int128)count * chunk / chunks);
    auto end = uint64_t((unsigned __int128)count * (chunk + 1) / chunks);
    fn(context, begin, end);
    ++finished;
  }
  if (finished > 0)
    doneChunks.fetch_add(finished);
}

ThreadPool::ThreadPool(unsigned concurrency) {
  for (unsigned i = 1; i < concurrency; ++i)
    workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  stopping = true;
  {
    // Taking the lock orders the notification after any worker's check.
    std::lock_guard<std::mutex> lock(sleepMutex);
  }
  wakeUp.notify_all();
  for (std::thread &worker : workers)
    worker.join();
}

void ThreadPool::run(uint64_t count, ChunkFn fn, void *context) {
  if (count == 0)
    return;
  if (workers.empty() || count == 1) { // nothing to share: no hand-off cost
    fn(context, 0, count);
    return;
  }
  std::lock_guard<std::mutex> jobLock(jobMutex);
  Job job;
  job.fn = fn;
  job.context = context;
  job.count = count;
  job.chunks = std::min<uint64_t>(count, uint64_t(concurrency()) * kChunksPerThread);
  currentJob = &job;
  generation.fetch_add(1);
  if (sleepingWorkers > 0) {
    std::lock_guard<std::mutex> lock(sleepMutex);
    wakeUp.notify_all();
  }
  job.runChunks();
  waitUntil([&] { return job.doneChunks == job.chunks; });
  currentJob = nullptr;
  waitUntil([&] { return busyWorkers == 0; });
}

bool ThreadPool::waitForJob(uint64_t &seen) {
  auto deadline = std::chrono::steady_clock::now() + kSpinBeforeSleep;
  for (unsigned spins = 1;; ++spins) {
    if (stopping)
      return false;
    if (uint64_t now = generation; now != seen) {
      seen = now;
      return true;
    }
    cpuRelax();
    if (spins % 256 == 0 && std::chrono::steady_clock::now() > deadline)
      break;
  }
  std::unique_lock<std::mutex> lock(sleepMutex);
  ++sleepingWorkers;
  wakeUp.wait(lock, [&] { return stopping || generation != seen; });
  --sleepingWorkers;
  seen = generation;
  return !stopping;
}

void ThreadPool::workerLoop() {
  uint64_t seen = generation;
  while (waitForJob(seen)) {
    ++busyWorkers;
    if (Job *job = currentJob)
      job->runChunks();
    --busyWorkers;
  }
}

ThreadPool &ThreadPool::shared() {
  static std::mutex mutex;
  static std::unique_ptr<ThreadPool> pool;
  static pid_t owner = 0;
  std::lock_guard<std::mutex> lock(mutex);
  if (pool && owner != ::getpid()) {
    // A fork()ed child inherits the pool object but not its threads, which
    // can be neither used nor joined: abandon it and start a new one.
    (void)pool.release();
  }
  if (!pool) {
    pool = std::make_unique<ThreadPool>(threadCountFromEnvironment());
    owner = ::getpid();
  }
  return *pool;
}

} // namespace enigma::cpu
