//===- RuntimeBindings.cpp - Runtimes and prepared kernels ----------------===//
#include "Bindings.h"

#include "enigma/Runtime/CpuBackend.h"
#include "enigma/Runtime/CudaBackend.h"
#include "enigma/Runtime/Dispatch.h"
#include "enigma/Support/Error.h"

#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <limits>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
namespace {

using ByteArray = nb::ndarray<const uint8_t, nb::ndim<1>, nb::c_contig,
                              nb::device::cpu>;
using Shape = std::tuple<uint32_t, uint32_t, uint32_t>;

Dim3 toDim3(const Shape &s) {
  return {std::get<0>(s), std::get<1>(s), std::get<2>(s)};
}

HostNumber toNumber(nb::handle value, const std::string &what) {
  if (nb::isinstance<nb::bool_>(value))
    return nb::cast<bool>(value);
  if (nb::isinstance<nb::int_>(value)) {
    try {
      return nb::cast<int64_t>(value);
    } catch (const nb::cast_error &) {
      try {
        return nb::cast<uint64_t>(value);
      } catch (const nb::cast_error &) {
        throw DispatchError(what + ": the integer " +
                            nb::cast<std::string>(nb::str(value)) +
                            " does not fit in 64 bits");
      }
    }
  }
  if (nb::isinstance<nb::float_>(value))
    return nb::cast<double>(value);
  throw DispatchError(what + " must be a number, got " +
                      nb::cast<std::string>(nb::str(value.type())));
}

/// The Python-facing runtime: one Backend behind the shared Dispatcher.
struct Runtime {
  std::shared_ptr<Backend> backend;
  std::unique_ptr<Dispatcher> dispatcher;

  explicit Runtime(std::shared_ptr<Backend> b)
      : backend(std::move(b)), dispatcher(std::make_unique<Dispatcher>(backend)) {}

  static DispatchArgs args(const std::vector<std::pair<ByteArray, std::string>> &inputs,
                           const std::vector<nb::object> &scalars,
                           const std::vector<size_t> &outputSizes,
                           const std::map<unsigned, std::pair<std::string, nb::object>> &constants) {
    DispatchArgs a;
    for (const auto &[array, dtype] : inputs) {
      std::optional<DType> t = parseDType(dtype);
      if (!t)
        throw DispatchError("unknown input dtype '" + dtype + "'");
      HostArray h;
      h.data = array.data();
      h.bytes = array.size();
      h.dtype = *t;
      h.elements = array.size() / byteWidth(*t);
      a.inputs.push_back(h);
    }
    for (size_t i = 0; i < scalars.size(); ++i)
      a.scalars.push_back(toNumber(scalars[i], "scalar " + std::to_string(i)));
    a.outputSizes = outputSizes;
    for (const auto &[index, c] : constants)
      a.constants[index] = ConstantArg(
          c.first, toNumber(c.second, "function constant " + std::to_string(index)));
    return a;
  }
};

nb::bytes toBytes(const std::vector<uint8_t> &data) {
  return nb::bytes(reinterpret_cast<const char *>(data.data()), data.size());
}

} // namespace

nb::object makeRuntime(std::shared_ptr<Backend> backend) {
  return nb::cast(new Runtime(std::move(backend)), nb::rv_policy::take_ownership);
}

void bindRuntime(nb::module_ &m) {
  nb::class_<PreparedKernel>(m, "PreparedKernel",
                             "A kernel bound to device buffers")
      .def(
          "dispatch",
          [](PreparedKernel &p, const Shape &grid, const Shape &threads) {
            nb::gil_scoped_release release;
            p.dispatch(toDim3(grid), toDim3(threads));
          },
          "grid"_a, "threads"_a)
      .def(
          "dispatch_timed",
          [](PreparedKernel &p, const Shape &grid, const Shape &threads) {
            nb::gil_scoped_release release;
            return p.dispatchTimed(toDim3(grid), toDim3(threads));
          },
          "grid"_a, "threads"_a)
      .def(
          "dispatch_async",
          [](PreparedKernel &p, const Shape &grid, const Shape &threads) {
            p.dispatchAsync(toDim3(grid), toDim3(threads));
          },
          "grid"_a, "threads"_a)
      .def("synchronize",
           [](PreparedKernel &p) {
             nb::gil_scoped_release release;
             p.synchronize();
           })
      .def("read_output", [](const PreparedKernel &p) { return toBytes(p.readOutput()); })
      .def("read_outputs",
           [](const PreparedKernel &p) {
             std::vector<nb::bytes> out;
             for (const auto &o : p.readOutputs())
               out.push_back(toBytes(o));
             return out;
           })
      .def("release", &PreparedKernel::release)
      .def_prop_ro("released", &PreparedKernel::released);

  nb::class_<Runtime>(m, "Runtime", "A backend behind the shared dispatcher")
      .def_static("cpu", [] {
        return new Runtime(std::make_shared<CpuBackend>());
      })
      .def_static("cuda", [](int device) {
        return new Runtime(std::make_shared<CudaBackend>(device));
      })
      .def_prop_ro("name", [](const Runtime &r) { return r.backend->name(); })
      .def(
          "execute",
          [](Runtime &r, const KernelArtifact &kernel,
             const std::vector<std::pair<ByteArray, std::string>> &inputs,
             const std::vector<nb::object> &scalars,
             const std::vector<size_t> &outputSizes, const Shape &grid,
             const Shape &threads,
             const std::map<unsigned, std::pair<std::string, nb::object>> &constants) {
            DispatchArgs a = Runtime::args(inputs, scalars, outputSizes, constants);
            std::vector<std::vector<uint8_t>> outputs;
            {
              nb::gil_scoped_release release;
              outputs = r.dispatcher->execute(kernel, a, toDim3(grid), toDim3(threads));
            }
            std::vector<nb::bytes> out;
            for (const auto &o : outputs)
              out.push_back(toBytes(o));
            return out;
          })
      .def_static(
          "nvrtc_check",
          [](const std::string &source, const std::string &arch,
             const std::vector<std::pair<unsigned, std::string>> &constants) {
            // Every function constant set to zero of its type: the check is
            // about whether the source compiles, not about values.
            ConstantValues values;
            for (const auto &[index, dtype] : constants) {
              std::optional<DType> t = parseDType(dtype);
              if (!t)
                throw DispatchError("unknown dtype '" + dtype + "'");
              values[index] = ScalarValue{*t, 0};
            }
            nb::gil_scoped_release release;
            return CudaBackend::compileForCheck(source, arch, values).size();
          },
          "source"_a, "arch"_a = "sm_90", "constants"_a =
              std::vector<std::pair<unsigned, std::string>>{},
          "Compiles CUDA source with NVRTC only (no GPU needed); returns the "
          "size of the binary or raises with the NVRTC log.")
      .def("prepare",
           [](Runtime &r, const KernelArtifact &kernel,
              const std::vector<std::pair<ByteArray, std::string>> &inputs,
              const std::vector<nb::object> &scalars,
              const std::vector<size_t> &outputSizes,
              const std::map<unsigned, std::pair<std::string, nb::object>> &constants) {
             DispatchArgs a = Runtime::args(inputs, scalars, outputSizes, constants);
             return r.dispatcher->prepare(kernel, a);
           });
}

} // namespace enigma::python
