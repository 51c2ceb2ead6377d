//===- ThreadPool.cpp -----------------------------------------------------===//
//
// A job lives on the caller's stack. Workers announce themselves in
// busyWorkers before reading currentJob, and the caller clears currentJob
// and then waits for busyWorkers to drain, so no worker can touch a job
// after run() returns (both sides use sequentially consistent atomics).
// For long jobs the caller sleeps on `done`; the worker that finishes the
// last chunk wakes it (callerSleeping and doneChunks are both sequentially
// consistent, so one of them sees the other).
//
// Stopping: every launch is in `inFlight` while it runs. A request (an id,
// a thread, or everything) wakes the stopper thread through a pipe, which
// a signal handler may write to; the stopper, holding the registry's lock
// (so no launch leaves, and no caller thread ends, meanwhile), sets the
// marked launches' stop flags and sends the stop signal to their callers
// and, for shared jobs, to the workers, every few milliseconds until they
// are gone.
//
//===----------------------------------------------------------------------===//
#include "ThreadPool.h"

#include "FaultGuard.h"

#include "enigma/Support/ProcessLife.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <cerrno>

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

namespace enigma::cpu {
namespace {
/// How long an idle worker polls for the next job before sleeping: long
/// enough to cover the gap between back-to-back launches, short enough not to
/// burn a core when the program has moved on.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(200);
/// A gap this long between two looks of a spinning thread means it was
/// not on a core meanwhile.
constexpr auto kPreempted = std::chrono::microseconds(100);
/// How long a caller that has run its own chunks spins for the workers'
/// (about what a futex wake-up costs), then yields between looks, before
/// it sleeps until they are done.
constexpr auto kCallerSpin = std::chrono::microseconds(50);
constexpr auto kCallerYield = std::chrono::milliseconds(2);
/// How often the stop signal is sent again to threads that have not left
/// an interrupted kernel (a signal that finds a thread outside kernel code,
/// e.g. in a libm call, is ignored).
constexpr auto kResignalInterval = std::chrono::milliseconds(5);
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

void ThreadPool::runChunks(Job &job) {
  // Finished chunks are reported once at the end, not one by one, to keep
  // the shared counter's cache line from bouncing between cores.
  uint64_t finished = 0;
  for (;;) {
    uint64_t chunk = job.nextChunk.fetch_add(1);
    if (chunk >= job.chunks)
      break;
    // 128-bit products: count * chunk may exceed 64 bits for huge grids.
    auto begin = uint64_t((unsigned __int128)job.count * chunk / job.chunks);
    auto end = uint64_t((unsigned __int128)job.count * (chunk + 1) / job.chunks);
    job.fn(job.context, begin, end);
    ++finished;
  }
  if (finished == 0 ||
      job.doneChunks.fetch_add(finished) + finished != job.chunks)
    return;
  if (callerSleeping) { // the last chunk: wake a caller that sleeps
    std::lock_guard<std::mutex> lock(doneMutex);
    done.notify_one();
  }
}

namespace {
/// The shared pool, for signal handlers (null before it exists).
std::atomic<ThreadPool *> sharedInstance{nullptr};
} // namespace

ThreadPool::ThreadPool(unsigned concurrency) {
  installStopHandler();
  // The write end never blocks: a signal handler writes to it.
  if (::pipe2(stopperPipe, O_CLOEXEC) == 0)
    ::fcntl(stopperPipe[1], F_SETFL, O_NONBLOCK);
  // A worker that starts after the first job was published must still see
  // it: it starts from the generation before any job.
  for (unsigned i = 1; i < concurrency; ++i)
    workers.emplace_back([this] { workerLoop(0); });
  stopper = std::thread([this] { stopperLoop(); });
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
  wakeStopper();
  stopper.join();
  ::close(stopperPipe[0]);
  ::close(stopperPipe[1]);
}

bool ThreadPool::run(uint64_t count, ChunkFn fn, void *context,
                     std::atomic<bool> &stop) {
  if (count == 0)
    return true;
  // While the process exits, threads other than the main one start nothing.
  if (processExiting() && interruptRequested())
    return false;
  if (workers.empty() || count == 1) { // nothing to share: no hand-off cost
    uint64_t id = enter(stop, false);
    fn(context, 0, count);
    return !leave(id);
  }
  std::lock_guard<std::mutex> jobLock(jobMutex);
  uint64_t id = enter(stop, true);
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
  runChunks(job);
  waitForChunks(job, id);
  currentJob = nullptr;
  waitUntil([&] { return busyWorkers == 0; });
  return !leave(id);
}

void ThreadPool::waitForChunks(Job &job, uint64_t id) {
  auto isDone = [&] { return job.doneChunks.load() == job.chunks; };
  // The workers are finishing their last chunks: spin a little, then give
  // the core away between looks, and for long jobs sleep until the worker
  // that finishes the last chunk wakes us, looking for interrupts.
  const auto start = std::chrono::steady_clock::now();
  for (unsigned spins = 1; !isDone(); ++spins) {
    if (spins % 64 == 0) {
      auto waited = std::chrono::steady_clock::now() - start;
      if (waited > kCallerYield)
        break;
      if (waited > kCallerSpin) {
        std::this_thread::yield();
        continue;
      }
    }
    cpuRelax();
  }
  bool asked = false;
  auto nextPoll = start + kInterruptPollInterval;
  while (!isDone()) {
    {
      std::unique_lock<std::mutex> lock(doneMutex);
      callerSleeping = true;
      done.wait_for(lock, kInterruptPollInterval, isDone);
      callerSleeping = false;
    }
    auto now = std::chrono::steady_clock::now();
    if (asked || isDone() || now < nextPoll)
      continue;
    nextPoll = now + kInterruptPollInterval;
    if (interruptRequested()) {
      asked = true;
      requestStop(id); // the stopper stops the workers
    }
  }
}

uint64_t ThreadPool::enter(std::atomic<bool> &stop, bool sharedWithWorkers) {
  std::lock_guard<std::mutex> lock(inFlightMutex);
  uint64_t id = nextId++;
  inFlight.push_back({id, ::pthread_self(), &stop, sharedWithWorkers, false});
  return id;
}

bool ThreadPool::leave(uint64_t id) {
  std::lock_guard<std::mutex> lock(inFlightMutex);
  for (auto it = inFlight.begin(); it != inFlight.end(); ++it)
    if (it->id == id) {
      bool stopped = it->stopping;
      inFlight.erase(it);
      return stopped;
    }
  return false;
}

void ThreadPool::wakeStopper() {
  char byte = 1;
  ssize_t ignored = ::write(stopperPipe[1], &byte, 1); // async-signal-safe
  (void)ignored;
}

void ThreadPool::requestStop(uint64_t id) {
  stopId.store(id);
  wakeStopper();
}

void ThreadPool::stopLaunchesOfThreadFromSignal(pthread_t thread) {
  ThreadPool *pool = sharedInstance.load();
  if (!pool)
    return;
  pool->stopThread.store(thread);
  pool->stopThreadRequested.store(true);
  pool->wakeStopper();
}

void ThreadPool::stopAllLaunches() {
  ThreadPool *pool = sharedInstance.load();
  if (!pool)
    return;
  pool->stopEverything.store(true);
  pool->wakeStopper();
}

void ThreadPool::stopperLoop() {
  char buffer[64];
  for (;;) {
    ssize_t got = ::read(stopperPipe[0], buffer, sizeof buffer);
    if (got < 0 && errno == EINTR)
      continue;
    if (stopping || got <= 0)
      return;
    // Mark what the requests name, then signal the threads of every marked
    // launch until all have left (a signal that finds a thread outside
    // kernel code is ignored there, so it is sent again).
    for (;;) {
      bool any = false;
      {
        std::lock_guard<std::mutex> lock(inFlightMutex);
        uint64_t one = stopId.exchange(0);
        bool byThread = stopThreadRequested.exchange(false);
        pthread_t thread = stopThread.load();
        bool all = stopEverything.exchange(false);
        bool workersToo = false;
        for (InFlight &launch : inFlight) {
          if (all || launch.id == one ||
              (byThread && ::pthread_equal(launch.caller, thread)))
            launch.stopping = true;
          if (!launch.stopping)
            continue;
          any = true;
          launch.stop->store(true);
          workersToo |= launch.sharedWithWorkers;
          // Under the lock: the caller cannot leave (and end) meanwhile.
          ::pthread_kill(launch.caller, stopSignal());
        }
        if (workersToo)
          for (std::thread &worker : workers)
            ::pthread_kill(worker.native_handle(), stopSignal());
      }
      if (!any)
        break;
      std::this_thread::sleep_for(kResignalInterval);
    }
  }
}

bool ThreadPool::waitForJob(uint64_t &seen) {
  auto last = std::chrono::steady_clock::now();
  const auto deadline = last + kSpinBeforeSleep;
  for (unsigned spins = 1;; ++spins) {
    if (stopping)
      return false;
    if (uint64_t now = generation; now != seen) {
      seen = now;
      return true;
    }
    cpuRelax();
    if (spins % 256 == 0) {
      // Past the deadline, or taken off the core meanwhile (a busy
      // machine): sleep. The scheduler wakes a sleeper promptly, while a
      // thread that spun gets the core back only after others.
      auto now = std::chrono::steady_clock::now();
      if (now > deadline || now - last > kPreempted)
        break;
      last = now;
    }
  }
  std::unique_lock<std::mutex> lock(sleepMutex);
  ++sleepingWorkers;
  wakeUp.wait(lock, [&] { return stopping || generation != seen; });
  --sleepingWorkers;
  seen = generation;
  return !stopping;
}

void ThreadPool::workerLoop(uint64_t seen) {
  while (waitForJob(seen)) {
    ++busyWorkers;
    if (Job *job = currentJob)
      runChunks(*job);
    --busyWorkers;
  }
}

ThreadPool &ThreadPool::shared() {
  static ForkSafeMutex &mutex = *new ForkSafeMutex;
  static ThreadPool *pool = nullptr;
  static uint64_t owner = 0;
  std::lock_guard<ForkSafeMutex> lock(mutex);
  if (pool && owner != forkGeneration()) {
    // A fork()ed child inherits the pool object but not its threads, which
    // can be neither used nor joined: abandon it and start a new one.
    pool = nullptr;
  }
  if (!pool) {
    pool = new ThreadPool(threadCountFromEnvironment());
    owner = forkGeneration();
    sharedInstance.store(pool);
  }
  return *pool;
}

} // namespace enigma::cpu
