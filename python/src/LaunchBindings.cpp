//===- LaunchBindings.cpp - The function-call form's hot path -------------===//
//
// `kernel[n](a, b, c, n)` and `kernel.launch(grid=..., threads=...)(...)` end
// in C++ (python/enigma/_kernel.py makes the objects). The arguments are
// read in C++: numpy and other buffer-protocol arrays, PyTorch tensors and
// CuPy arrays directly, any other array through the Python layer once per
// call; they are checked against the kernel's parameters and launched
// through a DirectLauncher, on CUDA on the current stream of the arrays'
// framework. Only a call that needs a new (kernel, runtime) pair goes to
// Python, which compiles and loads it.
//
// This file binds the objects; beside it: LaunchForm.h (the per-kernel
// state), LaunchCall.cpp (one call), LaunchArrays.cpp (reading arrays),
// LaunchShared.cpp (the process's helpers and caches) and LaunchErrors.cpp
// (the messages).
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"
#include "LaunchForm.h"

#include "enigma/Runtime/CpuBackend.h"
#include "enigma/Runtime/CudaBackend.h"
#ifdef __linux__
#include "enigma/Runtime/MetalHostBackend.h"
#endif

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
using namespace launch;

namespace {
Dim3 toDim3(const std::tuple<uint32_t, uint32_t, uint32_t> &s) {
  return {std::get<0>(s), std::get<1>(s), std::get<2>(s)};
}
} // namespace

void bindLaunch(nb::module_ &m) {
  // Kernels registered as torch.library ops stay reachable from PyTorch's
  // registry until the process ends, and with them this module's objects:
  // nanobind would report those as leaks at every exit.
  nb::set_leak_warnings(false);
  nb::class_<CallForm>(m, "CallForm",
                       "A kernel's state for the function-call form: its "
                       "parameters and one loaded kernel per runtime")
      .def(
          "__init__",
          [](CallForm *self, const std::string &name,
             const std::vector<std::tuple<std::string, std::string,
                                          std::string, uint64_t, uint32_t>>
                 &params,
             nb::object owner) {
            new (self) CallForm{name, {}, std::move(owner), {}, {}};
            for (const auto &[paramName, kind, dtype, multipleOf, vecWidth] :
                 params) {
              KernelParam p;
              p.name = paramName;
              p.kind = kind == "scalar" ? ParamKind::Scalar : ParamKind::Buffer;
              std::optional<DType> t = parseDType(dtype);
              if (!t)
                throw DispatchError("unknown dtype '" + dtype + "'");
              p.dtype = *t;
              p.multipleOf = multipleOf;
              p.vecWidth = vecWidth;
              self->params.push_back(p);
            }
          },
          "name"_a, "params"_a, "owner"_a,
          "params: (name, 'buffer' | 'scalar', dtype, multiple_of, "
          "vec_width) in declaration order; owner: a weak reference handed "
          "back to the first-call helper.")
      .def(
          "set_reads",
          [](CallForm &form,
             const std::vector<std::tuple<nb::object, nb::object, nb::object>>
                 &reads) {
            form.reads.clear();
            for (const auto &[scope, name, value] : reads) {
              if (name.is_none() ? !PyCell_Check(scope.ptr())
                                 : !PyDict_Check(scope.ptr()))
                throw nb::type_error("a read is (dict, name, value) or "
                                     "(cell, None, value)");
              form.reads.push_back(
                  NameRead{scope, name.is_none() ? nb::object() : name, value});
            }
          },
          "reads"_a,
          "The names the traced body read: (module dict, name, value) or "
          "(closure cell, None, value). A launch that finds one holding "
          "another object calls the globals_changed helper first.")
      .def(
          "clear_targets", [](CallForm &form) { form.targets.clear(); },
          "Drops every loaded kernel (the kernel was traced again).")
      .def(
          "add_target",
          [](CallForm &form, nb::object runtime, const KernelArtifact &kernel,
             int where, bool implicit, uint32_t constantsNumber,
             const std::vector<std::tuple<unsigned, std::string, nb::object>>
                 &constantValues) {
            ConstantArgs constants;
            for (const auto &[index, dtype, value] : constantValues) {
              std::optional<HostNumber> number = hostNumberOf(value);
              if (!number)
                throw DispatchError(
                    "function constant " + std::to_string(index) +
                    " takes a number, got " +
                    std::string(Py_TYPE(value.ptr())->tp_name));
              constants[index] = ConstantArg(dtype, *number);
            }
            std::shared_ptr<Backend> backend = backendOf(runtime);
            if (kernel.params.size() != form.params.size())
              throw RuntimeFailure("kernel " + kernel.kernelName +
                                   " was compiled with other parameters");
            auto *cpu = dynamic_cast<CpuBackend *>(backend.get());
            uint64_t fromCacheBefore = cpu ? cpu->loadCounts().fromCache : 0;
#ifdef __linux__
            auto *msl = dynamic_cast<MetalHostBackend *>(backend.get());
            if (msl)
              fromCacheBefore = msl->loadCounts().fromCache;
#endif
            std::shared_ptr<DirectLauncher> launcher;
            {
              ReleasedGil release; // may compile for seconds
              launcher =
                  std::make_shared<DirectLauncher>(backend, kernel, constants);
            }
            std::string how;
            if (dynamic_cast<CudaBackend *>(backend.get()))
              how = CudaBackend::describeLoadedCode(launcher->loadedKernel());
            else if (cpu)
              how = cpu->loadCounts().fromCache > fromCacheBefore
                        ? "shared object (disk cache)"
                        : "shared object (compiled with the host C++ "
                          "compiler)";
#ifdef __linux__
            else if (msl)
              how = msl->loadCounts().fromCache > fromCacheBefore
                        ? "its MSL as a shared object (disk cache)"
                        : "its MSL compiled with clang++ against the host "
                          "metal_stdlib";
#endif
            form.targets.push_back(Target{runtime, where, implicit,
                                          constantsNumber, std::move(launcher)});
            return how;
          },
          "runtime"_a, "kernel"_a, "where"_a, "implicit"_a, "constants"_a,
          "constant_values"_a,
          "Loads the kernel on a runtime (host: where=-1, else the CUDA "
          "device) with function constant values [(index, dtype, value)] "
          "(numbered `constants` by the caller; 0: none); returns how the "
          "code was obtained (compiled, or from the disk cache).")
      .def_prop_ro("targets",
                   [](const CallForm &form) {
                     std::vector<std::tuple<int, bool>> out;
                     for (const Target &t : form.targets)
                       out.emplace_back(t.where, t.implicit);
                     return out;
                   })
      .def(
          "launcher",
          [](nb::object formObject,
             const std::tuple<uint32_t, uint32_t, uint32_t> &grid,
             const std::tuple<uint32_t, uint32_t, uint32_t> &threads,
             nb::object key, uint32_t constants) {
            return Launcher{nb::cast<std::shared_ptr<CallForm>>(formObject),
                            toDim3(grid), toDim3(threads), std::move(key),
                            constants};
          },
          "grid"_a, "threads"_a, "key"_a, "constants"_a = 0);

  nb::class_<Launcher>(m, "Launcher",
                       "kernel[n] or kernel.launch(...): call it with the "
                       "kernel's arguments to launch")
      .def("__call__", &call)
      .def_prop_ro("grid",
                   [](const Launcher &l) {
                     return std::make_tuple(l.grid.x, l.grid.y, l.grid.z);
                   })
      .def_prop_ro("threads", [](const Launcher &l) {
        return std::make_tuple(l.threads.x, l.threads.y, l.threads.z);
      });

  m.def(
      "launch_setup",
      [](nb::dict helpers) {
        Shared &s = shared();
        std::pair<const char *, nb::object *> slots[] = {
            {"describe_array", &s.describeArray}, {"array_text", &s.arrayText},
            {"reader_of", &s.readerOf},           {"dtype_name", &s.dtypeName},
            {"torch_stream", &s.torchStream},     {"cupy_stream", &s.cupyStream},
            {"first_call", &s.firstCall},         {"log_launch", &s.logLaunch},
            {"globals_changed", &s.globalsChanged},
            {"cupy_current_device", &s.cupyCurrentDevice}};
        for (auto &[name, slot] : slots)
          if (helpers.contains(name))
            *slot = helpers[name];
        if (helpers.contains("cupy_current_stream"))
          return installCupyStream(helpers["cupy_current_stream"],
                                   helpers.contains("cupy_expected_stream")
                                       ? asU64(helpers["cupy_expected_stream"])
                                       : 0);
        return true;
      },
      "helpers"_a,
      "Hands the function-call form its Python helpers (those named in the "
      "dict replace the ones set before): describe_array, array_text, "
      "reader_of, dtype_name, torch_stream, cupy_stream, first_call, "
      "globals_changed, log_launch (None: no launch log), cupy_current_device (CuPy's "
      "current device; None where there is only one) and cupy_current_stream (the capsule of CuPy's C "
      "function for its current stream, used when the arrays are on the "
      "current device; taken only when its signature is intptr_t (void) "
      "and it returns cupy_expected_stream now). False when that capsule "
      "was not taken.");
  m.def(
      "launch_teardown",
      [] {
        // At interpreter exit: drop every Python object held here, so that
        // the runtimes they reach are freed with the module.
        Shared &s = shared();
        for (nb::object *slot :
             {&s.describeArray, &s.arrayText, &s.readerOf, &s.dtypeName,
              &s.torchStream, &s.cupyStream, &s.firstCall, &s.logLaunch,
              &s.cupyCurrentDevice, &s.globalsChanged})
          *slot = nb::object();
        s.cupyCurrentStream = nullptr;
        s.cupyArrays.clear();
        for (auto &[type, reader] : s.readers)
          Py_DECREF(reinterpret_cast<PyObject *>(type));
        s.readers.clear();
        for (auto &[dtype, value] : s.dtypes)
          Py_DECREF(dtype);
        s.dtypes.clear();
      },
      "Releases the helpers and caches of the function-call form.");
  m.def(
      "set_scoped_runtime",
      [](nb::object runtime) {
        PyObject *previous = Shared::scopedRuntime;
        Shared::scopedRuntime = runtime.is_none() ? nullptr : runtime.ptr();
        return previous ? nb::borrow(previous) : nb::none();
      },
      "runtime"_a.none(),
      "Sets this thread's runtime for the function-call form (the caller "
      "keeps it alive); returns the previous one.");
}

} // namespace enigma::python
