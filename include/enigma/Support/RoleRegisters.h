//===- RoleRegisters.h - What setmaxnreg can give each role -----*- C++ -*-===//
//
// A kernel with pipeline rings runs on sm_90 with `__launch_bounds__(T, 1)`
// (T: the consumers plus the producer warpgroup). ptxas then gives every
// thread the most registers T threads may have, and the block holds
// T x that many registers from launch on. `setmaxnreg` only moves
// registers within this pool: `.dec` returns a warpgroup's surplus to it,
// `.inc` blocks until the pool can supply the increase. Roles whose
// registers add up to more than the pool therefore deadlock: the consumers
// wait in `setmaxnreg.inc` forever (no timeout exists, and a waiting warp
// runs no code that could report it).
//
// The verifier judges a kernel with the register count ptxas will choose;
// the CUDA runtime judges it again with the count the driver reports for
// the loaded code. Both use these functions, so this header needs neither
// MLIR nor a runtime.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SUPPORT_ROLEREGISTERS_H
#define ENIGMA_SUPPORT_ROLEREGISTERS_H

#include <algorithm>
#include <cstdint>
#include <string>

namespace enigma {

/// Registers of an sm_90 multiprocessor.
inline constexpr int64_t kMultiprocessorRegisters = 65536;
/// Registers are allocated to a thread in units of 8 (256 per warp).
inline constexpr int64_t kRegisterGranule = 8;
/// The most registers one thread can address.
inline constexpr int64_t kMaxThreadRegisters = 255;
/// What setmaxnreg accepts: a multiple of 8 from 24 to 256.
inline constexpr int64_t kMinRoleRegisters = 24;
inline constexpr int64_t kMaxRoleRegisters = 256;

/// The registers per thread ptxas uses in a kernel of `threads` threads
/// compiled with `__launch_bounds__(threads, 1)` and setmaxnreg: all that
/// the multiprocessor has for each, in whole units, at most 255.
inline int64_t launchRegisterLimit(int64_t threads) {
  if (threads <= 0)
    return 0;
  int64_t each = kMultiprocessorRegisters / threads;
  return std::min(kMaxThreadRegisters, each - each % kRegisterGranule);
}

/// Registers a thread holds when its kernel uses `used` per thread: whole
/// units of 8 (255 holds 256).
inline int64_t allocatedRegisters(int64_t used) {
  return (used + kRegisterGranule - 1) / kRegisterGranule * kRegisterGranule;
}

/// Whether roles of `producerRegisters` (a warpgroup of `producerThreads`)
/// and `consumerRegisters` (`consumerThreads`) can be given out of the
/// pool of a block whose threads each use `usedAtLaunch` registers;
/// returns what is wrong ("" when they fit). `usedAtLaunch` is
/// launchRegisterLimit(threads) before ptxas has run, or the count of the
/// loaded code.
inline std::string roleRegisterProblem(int64_t consumerThreads,
                                       int64_t producerThreads,
                                       int64_t producerRegisters,
                                       int64_t consumerRegisters,
                                       int64_t usedAtLaunch) {
  auto valid = [](int64_t r) {
    return r >= kMinRoleRegisters && r <= kMaxRoleRegisters &&
           r % kRegisterGranule == 0;
  };
  for (auto [what, r] : {std::pair<const char *, int64_t>{
                             "producer_registers", producerRegisters},
                         {"consumer_registers", consumerRegisters}})
    if (!valid(r))
      return std::string(what) + " = " + std::to_string(r) +
             ": setmaxnreg takes a multiple of 8 from 24 to 256";
  const int64_t threads = consumerThreads + producerThreads;
  const int64_t held = allocatedRegisters(usedAtLaunch);
  const int64_t pool = threads * held;
  const int64_t needed = producerThreads * producerRegisters +
                         consumerThreads * consumerRegisters;
  std::string launch = "a threadgroup of " + std::to_string(threads) +
                       " threads (" + std::to_string(consumerThreads) +
                       " consumers and the " +
                       std::to_string(producerThreads) +
                       " of the producer warpgroup) holds " +
                       std::to_string(threads) + " x " +
                       std::to_string(held) + " = " + std::to_string(pool) +
                       " registers from launch on (" +
                       std::to_string(kMultiprocessorRegisters) +
                       " per multiprocessor";
  launch += usedAtLaunch == launchRegisterLimit(threads)
                ? " / " + std::to_string(threads) +
                      " threads, in whole units of 8)"
                : std::string(", ") + std::to_string(usedAtLaunch) +
                      " per thread in the loaded code)";
  if (needed > pool)
    return "the roles need " + std::to_string(producerThreads) + " x " +
           std::to_string(producerRegisters) + " + " +
           std::to_string(consumerThreads) + " x " +
           std::to_string(consumerRegisters) + " = " +
           std::to_string(needed) + " registers, but " + launch +
           ", and setmaxnreg only moves registers within that: the "
           "consumers would wait for the difference forever";
  if (producerRegisters > held)
    return "producer_registers = " + std::to_string(producerRegisters) +
           " is more than the " + std::to_string(held) +
           " each thread has at launch; setmaxnreg.dec only lowers it";
  // The printed kernel lowers the consumers' count (setmaxnreg.dec) when
  // it is below launchRegisterLimit; code compiled to fewer registers
  // than that would be asked to "lower" to more.
  if (consumerRegisters < launchRegisterLimit(threads) &&
      consumerRegisters > held)
    return "consumer_registers = " + std::to_string(consumerRegisters) +
           " is below the " + std::to_string(launchRegisterLimit(threads)) +
           " per thread the kernel was printed for but above the " +
           std::to_string(held) + " of the loaded code";
  return "";
}

/// The consumers' registers for a producer warpgroup of
/// `producerRegisters`: the most the pool leaves each of
/// `consumerThreads` (a multiple of 8, at most 256).
inline int64_t fittingConsumerRegisters(int64_t consumerThreads,
                                        int64_t producerThreads,
                                        int64_t producerRegisters) {
  const int64_t threads = consumerThreads + producerThreads;
  const int64_t pool =
      threads * allocatedRegisters(launchRegisterLimit(threads));
  int64_t each = (pool - producerThreads * producerRegisters) /
                 std::max<int64_t>(1, consumerThreads);
  each -= each % kRegisterGranule;
  return std::min(kMaxRoleRegisters, each);
}

} // namespace enigma

#endif
