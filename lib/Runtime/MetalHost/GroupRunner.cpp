//===- GroupRunner.cpp ----------------------------------------------------===//
#include "GroupRunner.h"

#include "enigma/Runtime/Backend.h"

#include <cstdlib>
#include <memory>

namespace enigma::metalhost {
namespace {
/// The runner whose group the calling OS thread is running; the Metal
/// functions of the kernel reach it through the group's function pointers.
thread_local GroupRunner *activeRunner = nullptr;
} // namespace

size_t GroupRunner::configuredStackBytes() {
  static const size_t bytes = [] {
    const char *text = std::getenv("ENIGMA_MSL_STACK_KB");
    long kib = text && *text ? std::strtol(text, nullptr, 10) : 0;
    return size_t(kib >= 16 ? kib : 256) * 1024;
  }();
  return bytes;
}

GroupRunner &GroupRunner::forThisThread() {
  thread_local std::unique_ptr<GroupRunner> runner;
  if (!runner)
    runner = std::make_unique<GroupRunner>(configuredStackBytes());
  return *runner;
}

GroupRunner::GroupRunner(size_t stackBytes)
    : stacks(stackBytes, kMaxThreads), fibers(kMaxThreads) {
  ready.reserve(kMaxThreads);
  group.barrier = &barrierCall;
  group.collective = &collectiveCall;
}

const EnigmaMslThread *GroupRunner::runningThread() const {
  return running ? &running->thread : nullptr;
}

void GroupRunner::reset() {
  for (Fiber &fiber : fibers) {
    fiber.stack = nullptr;
    fiber.state = State::Finished;
  }
  stacks.releaseAll();
  ready.clear();
  running = nullptr;
  live = atCollective = 0;
  activeRunner = nullptr;
}

void GroupRunner::setUpGroup(const DispatchShape &shape, uint64_t groupIndex) {
  uint32_t position[3];
  position[0] = uint32_t(groupIndex % shape.groups[0]);
  groupIndex /= shape.groups[0];
  position[1] = uint32_t(groupIndex % shape.groups[1]);
  position[2] = uint32_t(groupIndex / shape.groups[1]);
  uint32_t size[3];
  for (int d = 0; d < 3; ++d) {
    group.threadgroup_position_in_grid[d] = position[d];
    group.dispatch_threads_per_threadgroup[d] = shape.threads[d];
    group.threads_per_grid[d] = shape.grid[d];
    group.threadgroups_per_grid[d] = shape.groups[d];
    // The edge group has only the threads left in the grid.
    uint64_t first = uint64_t(position[d]) * shape.threads[d];
    uint64_t left = shape.grid[d] - first;
    size[d] = uint32_t(left < shape.threads[d] ? left : shape.threads[d]);
    group.threads_per_threadgroup[d] = size[d];
  }
  group.thread_count = size[0] * size[1] * size[2];
  group.simdgroups_per_threadgroup = (group.thread_count + 31) / 32;
  group.threadgroup_memory = nullptr;
  if (shape.threadgroupMemory) {
    if (threadgroupMemory.size() < shape.threadgroupMemory + 16)
      threadgroupMemory.resize(shape.threadgroupMemory + 16);
    auto base = reinterpret_cast<uintptr_t>(threadgroupMemory.data());
    group.threadgroup_memory = reinterpret_cast<void *>((base + 15) & ~uintptr_t(15));
  }

  uint32_t index = 0;
  for (uint32_t z = 0; z < size[2]; ++z)
    for (uint32_t y = 0; y < size[1]; ++y)
      for (uint32_t x = 0; x < size[0]; ++x, ++index) {
        EnigmaMslThread &t = fibers[index].thread;
        const uint32_t local[3] = {x, y, z};
        for (int d = 0; d < 3; ++d) {
          t.position_in_threadgroup[d] = local[d];
          t.position_in_grid[d] = position[d] * shape.threads[d] + local[d];
        }
        t.index_in_threadgroup = index;
        t.index_in_simdgroup = index % 32;
        t.simdgroup_index = index / 32;
        t.group = &group;
        t.site = nullptr;
        t.resolve = nullptr;
        fibers[index].state = State::NotStarted;
      }
}

void GroupRunner::run(const DispatchShape &shape, uint64_t groupIndex,
                      EnigmaMslThreadMainFn main, void *const *args) {
  setUpGroup(shape, groupIndex);
  kernelMain = main;
  kernelArgs = args;
  activeRunner = this;
  const uint32_t n = group.thread_count;
  live = n;
  atCollective = 0;
  ready.clear();
  for (uint32_t i = 0; i < n; ++i)
    ready.push_back(i);
  // Threads run in index order, so a kernel without barriers runs its
  // threads one after another on one reused stack.
  for (;;) {
    for (size_t next = 0; next < ready.size(); ++next)
      resume(fibers[ready[next]]);
    ready.clear();
    if (live == 0)
      break;
    if (!resolveCollectives() && !openBarrier())
      throw RuntimeFailure("internal error: MSL host runtime threads are "
                           "blocked with nothing to wait for");
  }
  activeRunner = nullptr;
}

void GroupRunner::resume(Fiber &fiber) {
  if (fiber.state == State::NotStarted) {
    fiber.stack = stacks.acquire();
    size_t size = size_t(static_cast<uint8_t *>(stacks.top(fiber.stack)) -
                         static_cast<uint8_t *>(fiber.stack));
    makeFiber(fiber.context, fiber.stack, size, &fiberMain, &fiber);
  }
  fiber.state = State::Running;
  running = &fiber;
  switchFiber(scheduler, fiber.context);
  running = nullptr;
  if (fiber.state == State::Finished) {
    stacks.release(fiber.stack);
    fiber.stack = nullptr;
    --live;
  }
}

void GroupRunner::fiberMain(void *argument) {
  Fiber &fiber = *static_cast<Fiber *>(argument);
  GroupRunner &runner = *activeRunner;
  runner.kernelMain(runner.kernelArgs, &fiber.thread);
  fiber.state = State::Finished;
  switchFiber(fiber.context, runner.scheduler);
  __builtin_unreachable();
}

void GroupRunner::barrierCall(EnigmaMslThread *self) {
  GroupRunner &runner = *activeRunner;
  Fiber &fiber = runner.fibers[self->index_in_threadgroup];
  fiber.state = State::AtBarrier;
  switchFiber(fiber.context, runner.scheduler);
}

void GroupRunner::collectiveCall(EnigmaMslThread *self) {
  GroupRunner &runner = *activeRunner;
  Fiber &fiber = runner.fibers[self->index_in_threadgroup];
  fiber.state = State::AtCollective;
  ++runner.atCollective;
  switchFiber(fiber.context, runner.scheduler);
}

bool GroupRunner::resolveCollectives() {
  if (atCollective == 0)
    return false;
  const uint32_t n = group.thread_count;
  EnigmaMslThread *waiting[32], *batch[32];
  for (uint32_t first = 0; first < n; first += 32) {
    uint32_t count = 0;
    for (uint32_t i = first; i < n && i < first + 32; ++i)
      if (fibers[i].state == State::AtCollective)
        waiting[count++] = &fibers[i].thread;
    // Lanes that called the same function at the same place take part
    // together, in lane order.
    while (count > 0) {
      const void *site = waiting[0]->site;
      EnigmaMslResolveFn resolve = waiting[0]->resolve;
      uint32_t taken = 0, kept = 0;
      for (uint32_t k = 0; k < count; ++k) {
        if (waiting[k]->site == site && waiting[k]->resolve == resolve)
          batch[taken++] = waiting[k];
        else
          waiting[kept++] = waiting[k];
      }
      count = kept;
      resolve(batch, taken);
      for (uint32_t k = 0; k < taken; ++k) {
        fibers[batch[k]->index_in_threadgroup].state = State::Ready;
        ready.push_back(batch[k]->index_in_threadgroup);
      }
      atCollective -= taken;
    }
  }
  return true;
}

bool GroupRunner::openBarrier() {
  for (uint32_t i = 0; i < group.thread_count; ++i)
    if (fibers[i].state == State::AtBarrier) {
      fibers[i].state = State::Ready;
      ready.push_back(i);
    }
  return !ready.empty();
}

} // namespace enigma::metalhost
