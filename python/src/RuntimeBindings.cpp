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
  std::optional<HostNumber> number;
  try {
    number = hostNumberOf(value);
  } catch (const DispatchError &e) {
    throw DispatchError(what + ": " + e.what());
  }
  if (!number)
    throw DispatchError(what + " must be a number, got " +
                        pythonTypeName(value));
  return *number;
}

/// One input as the Python layer hands it over: a uint8 view of host bytes,
/// or (for a device array) an (address, byte count) tuple; and its dtype.
using InputSpec = std::pair<nb::object, std::string>;
/// An output array on the device: address, byte count, dtype.
using OutputSpec = std::tuple<uint64_t, size_t, std::string>;
using ConstantSpecs = std::map<unsigned, std::pair<std::string, nb::object>>;

DType dtypeNamed(const std::string &name, const char *what) {
  std::optional<DType> t = parseDType(name);
  if (!t)
    throw DispatchError(std::string("unknown ") + what + " dtype '" + name +
                        "'");
  return *t;
}

ArrayArg toArrayArg(const InputSpec &input) {
  ArrayArg a;
  a.dtype = dtypeNamed(input.second, "input");
  if (nb::isinstance<nb::tuple>(input.first)) {
    auto [address, bytes] =
        nb::cast<std::pair<uint64_t, size_t>>(input.first);
    a.onDevice = true;
    a.deviceAddress = address;
    a.bytes = bytes;
  } else {
    auto array = nb::cast<ByteArray>(input.first);
    a.data = array.data();
    a.bytes = array.size();
  }
  a.elements = a.bytes / byteWidth(a.dtype);
  return a;
}

/// The Python-facing runtime: one Backend behind the shared Dispatcher.
struct Runtime {
  std::shared_ptr<Backend> backend;
  std::unique_ptr<Dispatcher> dispatcher;

  explicit Runtime(std::shared_ptr<Backend> b)
      : backend(std::move(b)), dispatcher(std::make_unique<Dispatcher>(backend)) {}

  CudaBackend &cuda() const {
    auto *cuda = dynamic_cast<CudaBackend *>(backend.get());
    if (!cuda)
      throw DispatchError("the " + backend->name() +
                          " runtime has no CUDA stream");
    return *cuda;
  }

  static DispatchArgs args(const std::vector<InputSpec> &inputs,
                           const std::vector<nb::object> &scalars,
                           const std::vector<size_t> &outputSizes,
                           const std::vector<OutputSpec> &outputArrays,
                           const ConstantSpecs &constants) {
    DispatchArgs a;
    for (const InputSpec &input : inputs)
      a.inputs.push_back(toArrayArg(input));
    for (size_t i = 0; i < scalars.size(); ++i)
      a.scalars.push_back(toNumber(scalars[i], "scalar " + std::to_string(i)));
    a.outputSizes = outputSizes;
    for (const auto &[address, bytes, dtype] : outputArrays) {
      ArrayArg out;
      out.dtype = dtypeNamed(dtype, "output");
      out.onDevice = true;
      out.deviceAddress = address;
      out.bytes = bytes;
      out.elements = bytes / byteWidth(out.dtype);
      a.outputArrays.push_back(out);
    }
    for (const auto &[index, c] : constants)
      a.constants[index] = ConstantArg(
          c.first, toNumber(c.second, "function constant " + std::to_string(index)));
    return a;
  }
};

/// grid/threads for the launch paths that must stay cheap: a tuple of one
/// to three Python ints is read directly; anything else goes through the
/// Python layer's checks (enigma._grid.dims3), which also words errors.
Dim3 launchShape(nb::handle value, const char *what) {
  PyObject *object = value.ptr();
  if (PyTuple_CheckExact(object)) {
    Py_ssize_t n = PyTuple_GET_SIZE(object);
    uint32_t dims[3] = {1, 1, 1};
    bool plain = n >= 1 && n <= 3;
    for (Py_ssize_t i = 0; plain && i < n; ++i) {
      PyObject *item = PyTuple_GET_ITEM(object, i);
      if (!PyLong_CheckExact(item)) {
        plain = false;
        break;
      }
      unsigned long long d = PyLong_AsUnsignedLongLong(item);
      if (PyErr_Occurred()) { // negative or huge: let dims3 word it
        PyErr_Clear();
        plain = false;
        break;
      }
      if (d >= (1ull << 32)) {
        plain = false;
        break;
      }
      dims[i] = uint32_t(d);
    }
    if (plain)
      return {dims[0], dims[1], dims[2]};
  }
  nb::object shape =
      nb::module_::import_("enigma._grid").attr("dims3")(value, what);
  return toDim3(nb::cast<Shape>(shape));
}

nb::bytes toBytes(const std::vector<uint8_t> &data) {
  return nb::bytes(reinterpret_cast<const char *>(data.data()), data.size());
}

} // namespace

nb::object makeRuntime(std::shared_ptr<Backend> backend) {
  return nb::cast(new Runtime(std::move(backend)), nb::rv_policy::take_ownership);
}

std::shared_ptr<Backend> backendOf(nb::handle runtime) {
  return nb::cast<Runtime &>(runtime).backend;
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
          // The launch-overhead path: no GIL release (the call only queues)
          // and shapes parsed here rather than in Python.
          [](PreparedKernel &p, nb::handle grid, nb::handle threads) {
            p.dispatchAsync(launchShape(grid, "grid"),
                            launchShape(threads, "threads"));
          },
          "grid"_a, "threads"_a,
          "Queues a launch and returns at once (CUDA); other backends run "
          "it before returning. Reads and synchronize() wait for queued "
          "launches.")
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
      .def_prop_ro(
          "max_threads_per_threadgroup",
          [](const Runtime &r) { return r.backend->maxThreadsPerThreadgroup(); })
      .def_prop_ro(
          "max_threadgroup_memory",
          [](const Runtime &r) { return r.backend->maxThreadgroupMemory(); })
      .def_prop_ro(
          "device_name",
          [](Runtime &r) {
            return r.backend->name() == "cuda" ? r.cuda().deviceName()
                                               : std::string();
          },
          "The GPU's name (CUDA); empty for the CPU backends.")
      .def_prop_ro(
          "multiprocessors",
          [](Runtime &r) {
            return r.backend->name() == "cuda" ? r.cuda().multiprocessors()
                                               : 0;
          },
          "Streaming multiprocessors of the GPU (CUDA), 0 elsewhere: the "
          "threadgroups of a persistent launch.")
      .def(
          "execute",
          [](Runtime &r, const KernelArtifact &kernel,
             const std::vector<InputSpec> &inputs,
             const std::vector<nb::object> &scalars,
             const std::vector<size_t> &outputSizes,
             const std::vector<OutputSpec> &outputArrays, const Shape &grid,
             const Shape &threads, const ConstantSpecs &constants) {
            DispatchArgs a = Runtime::args(inputs, scalars, outputSizes,
                                           outputArrays, constants);
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
             const std::vector<std::pair<unsigned, std::string>> &constants,
             bool withLog) {
            // Every function constant set to zero of its type: the check is
            // about whether the source compiles, not about values.
            ConstantValues values;
            for (const auto &[index, dtype] : constants) {
              std::optional<DType> t = parseDType(dtype);
              if (!t)
                throw DispatchError("unknown dtype '" + dtype + "'");
              values[index] = ScalarValue{*t, 0};
            }
            std::string log;
            size_t size;
            {
              nb::gil_scoped_release release;
              size = CudaBackend::compileForCheck(source, arch, values, &log)
                         .size();
            }
            if (withLog)
              return nb::object(nb::make_tuple(size, log));
            return nb::object(nb::int_(size));
          },
          "source"_a, "arch"_a = "sm_90", "constants"_a =
              std::vector<std::pair<unsigned, std::string>>{},
          "log"_a = false,
          "Compiles CUDA source with NVRTC only (no GPU needed); returns the "
          "size of the binary (log=True: (size, NVRTC's log)) or raises "
          "with the NVRTC log.")
      .def_static(
          "nvrtc_binary",
          [](const std::string &source, const std::string &arch) {
            std::string log, image;
            {
              nb::gil_scoped_release release;
              image = CudaBackend::compileForCheck(source, arch, {}, &log);
            }
            return nb::make_tuple(nb::bytes(image.data(), image.size()), log);
          },
          "source"_a, "arch"_a = "sm_90a",
          "Compiles CUDA source with NVRTC only, as the runtime would for "
          "`arch`: (the cubin's bytes, NVRTC's log), for reading its SASS "
          "with cuobjdump.")
      .def("prepare",
           [](Runtime &r, const KernelArtifact &kernel,
              const std::vector<InputSpec> &inputs,
              const std::vector<nb::object> &scalars,
              const std::vector<size_t> &outputSizes,
              const std::vector<OutputSpec> &outputArrays,
              const ConstantSpecs &constants) {
             DispatchArgs a = Runtime::args(inputs, scalars, outputSizes,
                                            outputArrays, constants);
             return r.dispatcher->prepare(kernel, a);
           })
      .def_prop_ro(
          "stream",
          [](const Runtime &r) { return r.cuda().streamHandle(); },
          "The CUstream handle launches are queued on (CUDA only).")
      .def(
          "wait_for_stream",
          [](Runtime &r, uint64_t stream) { r.cuda().waitForStream(stream); },
          "stream"_a,
          "Orders later launches after the work queued so far on a caller's "
          "CUDA stream (CUDA only).")
      .def_static(
          "dlpack_info",
          [](nb::ndarray<nb::ro> array) {
            // (address, bytes, dtype code, bits, lanes, device type, device
            // id, C-contiguous): what binding a DLPack array needs.
            size_t itemBits = size_t(array.dtype().bits) * array.dtype().lanes;
            bool contiguous = true;
            int64_t expected = 1;
            for (size_t i = array.ndim(); i-- > 0;) {
              if (array.shape(i) != 1 && array.stride(i) != expected)
                contiguous = false;
              expected *= int64_t(array.shape(i));
            }
            return nb::make_tuple(
                uint64_t(reinterpret_cast<uintptr_t>(array.data())),
                array.size() * itemBits / 8, int(array.dtype().code),
                int(array.dtype().bits), int(array.dtype().lanes),
                array.device_type(), array.device_id(), contiguous);
          },
          "array"_a, "Describes a DLPack array or capsule (any device).");
}

} // namespace enigma::python
