//===- ThreadPool.h - Persistent workers for CPU kernel launches -*- C++ -*-===//
//
// parallelFor over a range of threadgroups with little per-call overhead:
// workers stay alive between launches, spin briefly after a job (so that
// back-to-back launches do not pay a futex wake-up) and then sleep; the
// calling thread runs chunks too. One job runs at a time.
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
  /// returns when all are done. `body` must not throw.
  template <typename Body> void parallelFor(uint64_t count, Body &&body) {
    run(count, [](void *context, uint64_t begin, uint64_t end) {
      (*static_cast<Body *>(context))(begin, end);
    }, &body);
  }

  /// The process's pool: ENIGMA_NUM_THREADS threads, else one per hardware
  /// thread. Rebuilt in a child after fork(), which has no workers.
  static ThreadPool &shared();

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
    void runChunks();
  };

  void run(uint64_t count, ChunkFn fn, void *context);
  void workerLoop();
  /// Waits until the generation differs from `seen`; false when stopping.
  bool waitForJob(uint64_t &seen);

  std::vector<std::thread> workers;
  std::mutex jobMutex; // one job at a time
  // What idle workers poll, apart from what they write.
  alignas(64) std::atomic<Job *> currentJob{nullptr};
  std::atomic<uint64_t> generation{0};
  alignas(64) std::atomic<unsigned> busyWorkers{0};
  std::atomic<unsigned> sleepingWorkers{0};
  std::atomic<bool> stopping{false};
  std::mutex sleepMutex;
  std::condition_variable wakeUp;
};

} // namespace enigma::cpu

#endif
