//===- ThreadPool.h - Persistent workers for CPU kernel launches -*- C++ -*-===//
//
// parallelFor over a range of threadgroups with little per-call overhead:
// workers stay alive between launches, spin briefly after a job (so that
// back-to-back launches do not pay a futex wake-up) and then sleep; the
// calling thread runs chunks too, and a single chunk runs on it alone. One
// shared job runs at a time.
//
// Every launch in flight is registered, so that it can be stopped: its stop
// flag is set and the threads running it (the caller, and the workers) are
// sent the stop signal (FaultGuard.h) until they have left the kernel.
// A "stopper" thread does that work, so that a signal handler (Ctrl-C) can
// ask for it (docs/design/process-life.md).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CPU_THREADPOOL_H
#define ENIGMA_LIB_RUNTIME_CPU_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include <pthread.h>

namespace enigma::cpu {

class ThreadPool {
public:
  /// `concurrency` threads in all, the caller included (so concurrency - 1
  /// background workers); at least 1.
  explicit ThreadPool(unsigned concurrency);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned concurrency() const { return unsigned(workers.size()) + 1; }

  /// Calls body(begin, end) on contiguous chunks covering [0, count) and
  /// returns when all are done: true, or false when the launch was stopped
  /// (Ctrl-C, exit): then `stop` was set, and the threads running `body`
  /// were sent the stop signal. `body` must check `stop` between its units
  /// of work, must not throw, and may be abandoned inside kernel code.
  template <typename Body>
  bool parallelFor(uint64_t count, Body &&body, std::atomic<bool> &stop) {
    return run(count, [](void *context, uint64_t begin, uint64_t end) {
      (*static_cast<Body *>(context))(begin, end);
    }, &body, stop);
  }

  /// The process's pool: ENIGMA_NUM_THREADS threads, else one per hardware
  /// thread. Made again in a child after fork(), which has no workers.
  /// Never destroyed: at exit a worker may still be inside a kernel.
  static ThreadPool &shared();

  /// Stops the launches in flight of `thread` (Ctrl-C: the program's main
  /// thread). Async-signal-safe.
  static void stopLaunchesOfThreadFromSignal(pthread_t thread);
  /// Stops every launch in flight (the process is exiting).
  static void stopAllLaunches();

private:
  using ChunkFn = void (*)(void *context, uint64_t begin, uint64_t end);
  struct Job {
    ChunkFn fn;
    void *context;
    uint64_t count;
    uint64_t chunks;
    // Separate cache lines: every thread hits nextChunk, the caller polls
    // doneChunks.
    alignas(64) std::atomic<uint64_t> nextChunk{0};
    alignas(64) std::atomic<uint64_t> doneChunks{0};
  };
  /// A launch in flight, as the stopper sees it.
  struct InFlight {
    uint64_t id;
    pthread_t caller;
    std::atomic<bool> *stop;
    bool sharedWithWorkers;
    bool stopping; // the stopper is stopping it
  };

  bool run(uint64_t count, ChunkFn fn, void *context,
           std::atomic<bool> &stop);
  /// Runs chunks of `job` until none is left (the caller and workers).
  void runChunks(Job &job);
  /// Waits for the shared job's chunks, looking for interrupts meanwhile.
  void waitForChunks(Job &job, uint64_t id);
  uint64_t enter(std::atomic<bool> &stop, bool sharedWithWorkers);
  /// Leaves the registry; true if the launch was stopped.
  bool leave(uint64_t id);
  /// Asks the stopper to stop launch `id` (0: see the other requests).
  void requestStop(uint64_t id);
  void wakeStopper();
  void stopperLoop();
  void workerLoop(uint64_t seen);
  /// Waits until the generation differs from `seen`; false when stopping.
  bool waitForJob(uint64_t &seen);

  std::vector<std::thread> workers;
  std::mutex jobMutex; // one shared job at a time
  // What idle workers poll, apart from what they write.
  alignas(64) std::atomic<Job *> currentJob{nullptr};
  std::atomic<uint64_t> generation{0};
  alignas(64) std::atomic<unsigned> busyWorkers{0};
  std::atomic<unsigned> sleepingWorkers{0};
  std::atomic<bool> stopping{false};
  std::mutex sleepMutex;
  std::condition_variable wakeUp;
  // The caller sleeps here during long shared jobs; the worker that
  // finishes the last chunk wakes it.
  std::mutex doneMutex;
  std::condition_variable done;
  std::atomic<bool> callerSleeping{false};

  // The registry of launches in flight and the stop requests.
  std::mutex inFlightMutex;
  std::vector<InFlight> inFlight;
  uint64_t nextId = 1;
  std::atomic<uint64_t> stopId{0};           // stop this launch
  std::atomic<pthread_t> stopThread{0};      // stop this thread's launches
  std::atomic<bool> stopThreadRequested{false};
  std::atomic<bool> stopEverything{false};
  int stopperPipe[2] = {-1, -1};
  std::thread stopper;
};

} // namespace enigma::cpu

#endif
