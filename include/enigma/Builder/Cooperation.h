//===- Cooperation.h - KernelBuilder calls of the cooperation family -----*- C++ -*-===//
//
// Threadgroup memory, atomics and function constants for C++ kernels
// (docs/reference/cooperation.md):
//
//   enigma::KernelBuilder k("hist");
//   auto data = k.addBuffer("data", enigma::DType::U32);
//   auto bins = k.addBuffer("bins", enigma::DType::U32);
//   enigma::Value tid = k.threadPositionInGrid();
//   enigma::atomicRMW(k, bins, data[tid], k.constantInt(1, DType::U32),
//                     enigma::AtomicOp::Add);
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_COOPERATION_H
#define ENIGMA_BUILDER_COOPERATION_H

#include "enigma/Builder/KernelBuilder.h"

#include <utility>

namespace enigma {

/// A `threadgroup T name[size]` array: one per threadgroup, shared by its
/// threads.
class ThreadgroupArray {
public:
  ThreadgroupArray() = default;
  DType dtype() const { return type; }
  unsigned size() const { return count; }
  void *handle() const { return impl; }
  KernelBuilder *builder() const { return owner; }
  Value load(Value index) const;
  void store(Value index, Value value) const;

private:
  friend struct ThreadgroupArrayAccess;
  ThreadgroupArray(KernelBuilder *owner, void *impl, DType type, unsigned n)
      : owner(owner), impl(impl), type(type), count(n) {}
  KernelBuilder *owner = nullptr;
  void *impl = nullptr;
  DType type = DType::F32;
  unsigned count = 0;
};

/// Memory orders of the atomics (Metal/C++ names).
enum class AtomicOrder : uint8_t { Relaxed, Acquire, Release, AcqRel };
/// Parses "relaxed", "acquire", "release", "acq_rel"; throws EnigmaError.
AtomicOrder parseMemoryOrder(const std::string &name);

/// Read-modify-write atomics; min/max compare by the memory's dtype.
enum class AtomicOp : uint8_t { Exchange, Add, Sub, Min, Max, And, Or, Xor };
/// Parses "exchange", "add", ... "xor"; throws EnigmaError.
AtomicOp parseAtomicOp(const std::string &name);

/// Allocates threadgroup memory. Throws EnigmaError for size 0 or for
/// more than 227 KiB in total (the most any target allows; each runtime
/// checks its device's own limit when it loads the kernel, Metal's being
/// 32 KiB).
ThreadgroupArray threadgroupAlloc(KernelBuilder &k, DType dtype,
                                  unsigned size);

/// The kernel's dynamic threadgroup array (its size() is 0: the length is
/// given in bytes at each launch, `threadgroup_memory=`); at most one per
/// kernel. Adds the hidden u64 parameter that carries the bytes.
ThreadgroupArray dynamicThreadgroupAlloc(KernelBuilder &k, DType dtype);

/// The memory an atomic works on: a buffer parameter or a threadgroup array.
class AtomicTarget {
public:
  AtomicTarget(const Buffer &b) : buffer(&b) {}
  AtomicTarget(const ThreadgroupArray &a) : array(&a) {}
  const Buffer *buffer = nullptr;
  const ThreadgroupArray *array = nullptr;
};

/// atomic_fetch_<op>_explicit: returns the old value. The value is
/// converted to the memory's dtype.
Value atomicRMW(KernelBuilder &k, AtomicTarget mem, Value index, Value value,
                AtomicOp op, AtomicOrder order = AtomicOrder::Relaxed);
Value atomicLoad(KernelBuilder &k, AtomicTarget mem, Value index,
                 AtomicOrder order = AtomicOrder::Relaxed);
void atomicStore(KernelBuilder &k, AtomicTarget mem, Value index, Value value,
                 AtomicOrder order = AtomicOrder::Relaxed);
/// atomic_compare_exchange_weak_explicit: returns (success, observed value).
std::pair<Value, Value>
atomicCompareExchangeWeak(KernelBuilder &k, AtomicTarget mem, Value index,
                          Value expected, Value desired,
                          AtomicOrder success = AtomicOrder::Relaxed,
                          AtomicOrder failure = AtomicOrder::Relaxed);

/// `function_constant(dtype, index)`: a value given at dispatch.
Value functionConstant(KernelBuilder &k, DType dtype, unsigned index);

} // namespace enigma

#endif
