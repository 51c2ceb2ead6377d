//===- AsyncCopy.h - KernelBuilder calls of the async copy family -*- C++ -*-===//
//
// Simdgroup asynchronous copies between a buffer parameter and threadgroup
// memory (docs/reference/async-copy.md). A copy is issued by the whole
// simdgroup: every lane reaches the call with the same operands and the
// copy happens once. It returns an event; asyncCopyWait blocks until the
// given events have completed, after which every lane of the simdgroup sees
// the elements (other simdgroups after a threadgroup barrier).
//
//   auto tile = enigma::threadgroupAlloc(k, enigma::DType::F32, 256);
//   auto zero = k.constantInt(0, enigma::DType::U32);
//   auto ev = enigma::asyncCopy1d(k, enigma::AsyncCopyDirection::DeviceToThreadgroup,
//                                 tile, zero, A, base, k.constantInt(256, enigma::DType::U32));
//   enigma::asyncCopyWait(k, {ev});
//   k.barrier();
//
// Offsets, row lengths and extents are integer Values (counted in
// elements). Mistakes (memory in the wrong address space, different element
// types, an event waited for outside the loop or branch that created it)
// throw EnigmaError.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_ASYNCCOPY_H
#define ENIGMA_BUILDER_ASYNCCOPY_H

#include "enigma/Builder/Cooperation.h"
#include "enigma/Builder/KernelBuilder.h"

#include <vector>

namespace enigma {

/// Which way a copy goes.
enum class AsyncCopyDirection : uint8_t {
  DeviceToThreadgroup, // d2t: buffer parameter -> threadgroup array
  ThreadgroupToDevice, // t2d: threadgroup array -> buffer parameter
};

/// The completion handle an async copy returns.
class AsyncCopyEvent {
public:
  AsyncCopyEvent() = default;
  KernelBuilder *builder() const { return owner; }
  bool valid() const { return owner != nullptr; }
  /// Opaque handle of the underlying mlir::Value.
  void *handle() const { return impl; }

private:
  friend struct AsyncCopyEventAccess;
  AsyncCopyEvent(KernelBuilder *owner, void *impl) : owner(owner), impl(impl) {}
  KernelBuilder *owner = nullptr;
  void *impl = nullptr;
};

/// A copy's source or destination: a (scalar) buffer parameter or a
/// threadgroup array.
class AsyncCopyMemory {
public:
  AsyncCopyMemory(const Buffer &b) : buffer(&b) {}
  AsyncCopyMemory(const ThreadgroupArray &a) : array(&a) {}
  const Buffer *buffer = nullptr;
  const ThreadgroupArray *array = nullptr;
};

/// `dst[dstOffset + i] = src[srcOffset + i]` for i < count.
AsyncCopyEvent asyncCopy1d(KernelBuilder &k, AsyncCopyDirection direction,
                           AsyncCopyMemory dst, Value dstOffset,
                           AsyncCopyMemory src, Value srcOffset, Value count);

/// A tile of tileRows rows of tileCols elements:
/// `dst[dstOffset + r * dstElementsPerRow + c] =
///  src[srcOffset + r * srcElementsPerRow + c]`.
AsyncCopyEvent asyncCopy2d(KernelBuilder &k, AsyncCopyDirection direction,
                           AsyncCopyMemory dst, Value dstOffset,
                           Value dstElementsPerRow, AsyncCopyMemory src,
                           Value srcOffset, Value srcElementsPerRow,
                           Value tileCols, Value tileRows);

/// Waits for every event (none: nothing to wait for, no op is created).
void asyncCopyWait(KernelBuilder &k, const std::vector<AsyncCopyEvent> &events);

} // namespace enigma

#endif
