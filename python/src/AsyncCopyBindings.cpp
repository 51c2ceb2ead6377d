//===- AsyncCopyBindings.cpp ----------------------------------------------===//
//
// enigma._core.async_copy_1d / async_copy_2d / async_copy_wait: the
// simdgroup async copies (python/enigma/_async_copy.py wraps them). The
// direction is "d2t" or "t2d"; dst and src are Buffers or ThreadgroupArrays
// in any combination (the builder says which one is wrong).
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/AsyncCopy.h"

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
namespace {

AsyncCopyDirection directionNamed(const std::string &name) {
  if (name == "d2t")
    return AsyncCopyDirection::DeviceToThreadgroup;
  if (name == "t2d")
    return AsyncCopyDirection::ThreadgroupToDevice;
  throw EnigmaError("unknown async copy direction '" + name +
                    "' (d2t or t2d)");
}

template <typename Dst, typename Src> void bindCopies(nb::module_ &m) {
  m.def(
      "async_copy_1d",
      [](KernelBuilder &b, const std::string &direction, const Dst &dst,
         Value dstOffset, const Src &src, Value srcOffset, Value count) {
        return asyncCopy1d(b, directionNamed(direction), dst, dstOffset, src,
                           srcOffset, count);
      },
      "builder"_a, "direction"_a, "dst"_a, "dst_offset"_a, "src"_a,
      "src_offset"_a, "count"_a);
  m.def(
      "async_copy_2d",
      [](KernelBuilder &b, const std::string &direction, const Dst &dst,
         Value dstOffset, Value dstPerRow, const Src &src, Value srcOffset,
         Value srcPerRow, Value cols, Value rows) {
        return asyncCopy2d(b, directionNamed(direction), dst, dstOffset,
                           dstPerRow, src, srcOffset, srcPerRow, cols, rows);
      },
      "builder"_a, "direction"_a, "dst"_a, "dst_offset"_a,
      "dst_elements_per_row"_a, "src"_a, "src_offset"_a,
      "src_elements_per_row"_a, "tile_cols"_a, "tile_rows"_a);
}

} // namespace

void bindAsyncCopy(nb::module_ &m) {
  nb::class_<AsyncCopyEvent>(m, "AsyncCopyEvent",
                             "The completion handle of an async copy");
  bindCopies<ThreadgroupArray, Buffer>(m);
  bindCopies<Buffer, ThreadgroupArray>(m);
  bindCopies<Buffer, Buffer>(m);
  bindCopies<ThreadgroupArray, ThreadgroupArray>(m);
  m.def(
      "async_copy_wait",
      [](KernelBuilder &b, const std::vector<AsyncCopyEvent> &events) {
        asyncCopyWait(b, events);
      },
      "builder"_a, "events"_a);
}

} // namespace enigma::python
