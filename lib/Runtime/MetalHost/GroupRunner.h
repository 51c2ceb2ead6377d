//===- GroupRunner.h - One threadgroup at a time, as fibers -----*- C++ -*-===//
//
// Runs the threads of a threadgroup concurrently on the calling OS thread,
// as Metal runs them on a GPU core: each thread is a fiber that runs until it
// returns, reaches a barrier or calls a simdgroup/quad function. When no
// fiber can run, the pending simdgroup functions are computed (per
// simdgroup, the lanes that called the function at the same place take
// part, as the active lanes of a SIMD unit would) and, when none is left,
// the barrier opens for every thread that has not returned.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_METALHOST_GROUPRUNNER_H
#define ENIGMA_LIB_RUNTIME_METALHOST_GROUPRUNNER_H

#include "Fiber.h"

#include "enigma/Target/MetalStdlib/enigma_msl_abi.h"

#include <cstdint>
#include <vector>

namespace enigma::metalhost {

/// The shape of a dispatch (Metal dispatchThreads).
struct DispatchShape {
  uint32_t grid[3];
  uint32_t threads[3];
  uint32_t groups[3]; // ceil(grid / threads)
  /// Bytes of threadgroup memory each group gets for [[threadgroup(0)]].
  uint64_t threadgroupMemory = 0;
};

class GroupRunner {
public:
  /// Most threads in one threadgroup.
  static constexpr unsigned kMaxThreads = 1024;

  explicit GroupRunner(size_t stackBytes);
  GroupRunner(const GroupRunner &) = delete;
  GroupRunner &operator=(const GroupRunner &) = delete;

  /// The calling OS thread's runner (made on first use).
  static GroupRunner &forThisThread();
  /// Bytes of each fiber's stack: ENIGMA_MSL_STACK_KB KiB, else 256 KiB.
  static size_t configuredStackBytes();

  /// Runs threadgroup `groupIndex` (x fastest) of the dispatch to the end.
  void run(const DispatchShape &shape, uint64_t groupIndex,
           EnigmaMslThreadMainFn main, void *const *args);

  /// For fault reports: the thread running now (or null) and its group.
  const EnigmaMslThread *runningThread() const;
  const EnigmaMslGroup &currentGroup() const { return group; }
  bool isGuardPage(const void *address) const {
    return stacks.isGuardPage(address);
  }
  size_t stackBytes() const { return stacks.stackBytes(); }
  /// Forgets the fibers a fault abandoned, so the runner can be used again.
  void reset();

private:
  enum class State : uint8_t {
    NotStarted,
    Ready,
    Running,
    AtBarrier,
    AtCollective,
    Finished
  };
  struct Fiber {
    EnigmaMslThread thread;
    FiberContext context;
    void *stack = nullptr;
    State state = State::Finished;
  };

  static void fiberMain(void *fiber);
  static void barrierCall(EnigmaMslThread *self);
  static void collectiveCall(EnigmaMslThread *self);
  void setUpGroup(const DispatchShape &shape, uint64_t groupIndex);
  void resume(Fiber &fiber);
  bool resolveCollectives();
  bool openBarrier();

  StackPool stacks;
  std::vector<Fiber> fibers; // kMaxThreads, never reallocated
  /// The groups' [[threadgroup(0)]] memory, reused from group to group
  /// (its contents are undefined until written, as in Metal).
  std::vector<unsigned char> threadgroupMemory;
  std::vector<uint32_t> ready;
  EnigmaMslGroup group{};
  FiberContext scheduler;
  Fiber *running = nullptr;
  unsigned live = 0;
  unsigned atCollective = 0;
  EnigmaMslThreadMainFn kernelMain = nullptr;
  void *const *kernelArgs = nullptr;
};

} // namespace enigma::metalhost

#endif
