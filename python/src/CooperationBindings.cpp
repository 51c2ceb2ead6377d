//===- CooperationBindings.cpp -------------------------------------------------===//
//
// Threadgroup memory, atomics and function constants. Each call takes the
// KernelBuilder first (python/enigma/_cooperation.py passes it).
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Cooperation.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace enigma::python {
namespace {

template <typename Mem> void bindAtomics(nb::module_ &m) {
  m.def("coop_atomic_rmw",
        [](KernelBuilder &b, const Mem &mem, Value index, Value value,
           const std::string &op, const std::string &order) {
          return atomicRMW(b, mem, index, value, parseAtomicOp(op),
                           parseMemoryOrder(order));
        });
  m.def("coop_atomic_load", [](KernelBuilder &b, const Mem &mem, Value index,
                               const std::string &order) {
    return atomicLoad(b, mem, index, parseMemoryOrder(order));
  });
  m.def("coop_atomic_store", [](KernelBuilder &b, const Mem &mem, Value index,
                                Value value, const std::string &order) {
    atomicStore(b, mem, index, value, parseMemoryOrder(order));
  });
  m.def("coop_atomic_compare_exchange_weak",
        [](KernelBuilder &b, const Mem &mem, Value index, Value expected,
           Value desired, const std::string &success,
           const std::string &failure) {
          return atomicCompareExchangeWeak(b, mem, index, expected, desired,
                                           parseMemoryOrder(success),
                                           parseMemoryOrder(failure));
        });
}

} // namespace

void bindCooperation(nb::module_ &m) {
  nb::class_<ThreadgroupArray>(m, "ThreadgroupArray",
                               "A threadgroup memory array of a kernel")
      .def_prop_ro("dtype",
                   [](const ThreadgroupArray &a) { return shortName(a.dtype()); })
      .def_prop_ro("size", &ThreadgroupArray::size);

  m.def("coop_threadgroup_alloc",
        [](KernelBuilder &b, const std::string &dtype, unsigned size) {
          return threadgroupAlloc(b, dtypeNamed(dtype), size);
        });
  m.def("coop_dynamic_threadgroup_alloc",
        [](KernelBuilder &b, const std::string &dtype) {
          return dynamicThreadgroupAlloc(b, dtypeNamed(dtype));
        });
  m.def("coop_threadgroup_load",
        [](KernelBuilder &, const ThreadgroupArray &a, Value index) {
          return a.load(index);
        });
  m.def("coop_threadgroup_store", [](KernelBuilder &, const ThreadgroupArray &a,
                                     Value index, Value value) {
    a.store(index, value);
  });
  bindAtomics<Buffer>(m);
  bindAtomics<ThreadgroupArray>(m);
  m.def("coop_function_constant",
        [](KernelBuilder &b, const std::string &dtype, unsigned index) {
          return functionConstant(b, dtypeNamed(dtype), index);
        });
}

} // namespace enigma::python
