//===- LaunchCall.cpp - One call of the function-call form ----------------===//
//
// `kernel[n](a, b, c, n)`: binds the arguments to the parameters, reads and
// checks the arrays, picks the loaded kernel for where they live and
// launches it, on CUDA on the current stream of the arrays' framework.
//
//===----------------------------------------------------------------------===//
#include "LaunchErrors.h"
#include "LaunchForm.h"

#include <nanobind/stl/string.h>

#include <algorithm>

namespace nb = nanobind;

namespace enigma::python::launch {
namespace {

/// Binds positional and keyword arguments to the parameters (the kernel's
/// Python signature); the runtime= and threadgroup_memory= keywords are
/// taken out.
void bindArguments(const CallForm &form, nb::args args, nb::kwargs kwargs,
                   nb::handle &runtime, nb::handle &threadgroupMemory,
                   Slots<nb::handle> &bound) {
  const size_t n = form.params.size();
  size_t given = args.size();
  if (given > n)
    throw DispatchError(
        "kernel " + form.name + " takes " + std::to_string(n) +
        " arguments (" +
        [&] {
          std::string list;
          for (const KernelParam &p : form.params)
            list += (list.empty() ? "" : ", ") + describeParam(p);
          return list;
        }() +
        ") but " + std::to_string(given) + " were given");
  for (size_t i = 0; i < given; ++i)
    bound[i] = args[i];
  for (auto [key, value] : kwargs) {
    std::string name = nb::cast<std::string>(key);
    if (name == "runtime") {
      runtime = value;
      continue;
    }
    if (name == "threadgroup_memory") {
      threadgroupMemory = value;
      continue;
    }
    size_t i = 0;
    while (i < n && form.params[i].name != name)
      ++i;
    if (i == n)
      throw DispatchError("kernel " + form.name +
                          " has no parameter named '" + name + "'");
    if (bound[i])
      throw DispatchError("kernel " + form.name + ": parameter " + name +
                          " was given twice (by position and by keyword)");
    bound[i] = value;
  }
  std::string missing;
  for (size_t i = 0; i < n; ++i)
    if (!bound[i])
      missing += (missing.empty() ? "" : ", ") + describeParam(form.params[i]);
  if (!missing.empty())
    throw DispatchError("kernel " + form.name + " takes " +
                        std::to_string(n) + " arguments; no value was given "
                        "for " + missing +
                        " (every buffer parameter takes an array, written in "
                        "place; scalars take numbers)");
}

size_t entryBytes(const KernelParam &param) {
  return byteWidth(param.dtype) * std::max(1u, param.vecWidth);
}

/// The dtype an array must have for a buffer parameter: its own, or for a
/// bf16 parameter also uint16 and for an 8-bit float one uint8 (bit
/// patterns, as execute takes them).
bool dtypeFits(const KernelParam &param, std::optional<DType> dtype) {
  return dtype && (*dtype == param.dtype ||
                   (param.dtype == DType::BF16 && *dtype == DType::U16) ||
                   (isFloat8(param.dtype) && *dtype == DType::U8));
}

/// Alignment every runtime gives its own buffers and the compiler relies on
/// for vector accesses (docs/reference/tensor.md).
constexpr uint64_t kBufferAlignment = 16;

} // namespace

void call(Launcher &self, nb::args args, nb::kwargs kwargs) {
  Shared &s = shared();
  if (!s.readerOf.is_valid())
    throw RuntimeFailure("the function-call form is shut down (interpreter "
                         "exit)");
  CallForm &form = *self.form;
  nb::handle runtime;
  const size_t n = form.params.size();
  Slots<nb::handle> bound(n);
  nb::handle threadgroupMemoryArg;
  bindArguments(form, args, kwargs, runtime, threadgroupMemoryArg, bound);
  // The dynamic threadgroup array's bytes (dynamic_threadgroup_alloc).
  std::optional<uint64_t> threadgroupMemory;
  if (threadgroupMemoryArg && !threadgroupMemoryArg.is_none()) {
    if (!PyLong_Check(threadgroupMemoryArg.ptr()) ||
        PyBool_Check(threadgroupMemoryArg.ptr()) ||
        nb::cast<int64_t>(threadgroupMemoryArg) < 0)
      throw DispatchError("kernel " + form.name +
                          ": threadgroup_memory= takes a number of bytes (an "
                          "int >= 0)");
    threadgroupMemory = nb::cast<uint64_t>(threadgroupMemoryArg);
  }
  if (!runtime && Shared::scopedRuntime)
    runtime = Shared::scopedRuntime;
  nb::object runtimeCore;
  if (runtime) {
    runtimeCore = nb::getattr(runtime, s.sCore.ptr(), nb::none());
    if (runtimeCore.is_none())
      throw DispatchError("runtime= takes an Enigma runtime "
                          "(enigma.CpuRuntime(), enigma.CudaRuntime(...)), "
                          "got " +
                          std::string(Py_TYPE(runtime.ptr())->tp_name));
  }

  HeldViews held(n);
  Slots<ArrayInfo> arrays(n);
  Slots<DirectArg> launchArgs(n);
  int where = kHost;
  size_t firstArray = size_t(-1);
  Framework framework = Framework::None;
  for (size_t i = 0; i < n; ++i) {
    const KernelParam &param = form.params[i];
    if (param.kind == ParamKind::Scalar)
      continue;
    ArrayInfo &info = arrays[i];
    if (!readArray(bound[i], info, held)) {
      // A number here usually means a size meant to be passed by value.
      std::string hint;
      if (PyNumber_Check(bound[i].ptr()))
        hint = std::string("; to pass a number, annotate the parameter "
                           "enigma.Scalar(enigma.") +
               shortName(param.dtype) + ")";
      argumentError(form, i, bound[i],
                    "a buffer parameter takes an array (numpy, PyTorch, "
                    "CuPy, JAX...), written in place" +
                        hint);
    }
    if (firstArray == size_t(-1)) {
      firstArray = i;
      where = info.device;
    } else if (info.device != where) {
      throw DispatchError(
          "kernel " + form.name + ": the arrays live in different places: " +
          describeParam(form.params[firstArray]) + " is " +
          arrayText(bound[firstArray]) + " in " + whereText(where) + ", " +
          describeParam(param) + " is " + arrayText(bound[i]) + " in " +
          whereText(info.device) +
          "; every array of one launch must be on the same device");
    }
    // The first framework that has a current stream decides the queue.
    if (framework == Framework::None || framework == Framework::Synchronous)
      if (info.framework != Framework::None)
        framework = framework == Framework::Synchronous
                        ? Framework::Synchronous
                        : info.framework;
  }
  if (where == kElsewhere)
    argumentError(form, firstArray, bound[firstArray],
                  "its memory is neither host nor CUDA memory");

  if (!form.reads.empty())
    form.checkReads();
  size_t index = form.find(runtimeCore, where, self.constants);
  if (index == size_t(-1)) {
    s.firstCall(form.owner, where,
                runtime ? nb::borrow(runtime) : nb::none(), self.constants);
    index = form.find(runtimeCore, where, self.constants);
    if (index == size_t(-1))
      throw RuntimeFailure("the function-call form found no runtime for "
                           "kernel " + form.name);
  }
  // A copy: another thread may replace the targets while this one runs
  // the kernel without the GIL.
  const Target target = form.targets[index];
  if (!target.implicit && firstArray != size_t(-1) && target.where != where)
    argumentError(form, firstArray, bound[firstArray],
                  "in " + whereText(where) + ", but the runtime given runs "
                  "on " + whereText(target.where));

  for (size_t i = 0; i < n; ++i) {
    const KernelParam &param = form.params[i];
    if (param.kind == ParamKind::Scalar) {
      std::optional<HostNumber> number;
      try {
        number = hostNumberOf(bound[i]);
      } catch (const DispatchError &e) {
        throw DispatchError("kernel " + form.name + ": scalar parameter " +
                            describeParam(param) + ": " + e.what());
      }
      if (!number)
        throw DispatchError("kernel " + form.name + ": scalar parameter " +
                            describeParam(param) + " takes a number, got " +
                            std::string(Py_TYPE(bound[i].ptr())->tp_name));
      try {
        launchArgs[i].value = target.launcher->scalarBits(i, *number);
      } catch (const DispatchError &e) {
        std::string message = e.what();
        if (message.rfind("kernel ", 0) != 0)
          message = "kernel " + form.name + ": " + message;
        throw DispatchError(message);
      }
      continue;
    }
    const ArrayInfo &info = arrays[i];
    if (!dtypeFits(param, info.dtype))
      argumentError(form, i, bound[i],
                    std::string("the parameter takes ") +
                        numpyName(param.dtype) + " arrays" +
                        (param.dtype == DType::BF16
                             ? " (or uint16 arrays of bfloat16 bits)"
                         : isFloat8(param.dtype)
                             ? " (or uint8 arrays of its bits, "
                               "enigma.fp8_encode)"
                             : "") +
                        "; convert it first (e.g. .astype / .to)");
    if (!info.contiguous)
      argumentError(form, i, bound[i],
                    "it is not contiguous (C order); arrays are written in "
                    "place, so pass a contiguous one (np.ascontiguousarray, "
                    ".contiguous())");
    if (!info.writable)
      argumentError(form, i, bound[i],
                    "it is read-only, and every buffer parameter is bound in "
                    "place for the kernel to write; pass a writeable copy");
    if (info.bytes % entryBytes(param) != 0)
      argumentError(form, i, bound[i],
                    "its " + std::to_string(info.bytes) +
                        " bytes are not a whole number of " +
                        std::to_string(entryBytes(param)) + "-byte entries");
    if (info.bytes > 0 && info.address % kBufferAlignment != 0)
      argumentError(form, i, bound[i],
                    "its memory does not start on a 16-byte boundary (a "
                    "view at an offset?), which Enigma's vector accesses "
                    "assume of every buffer; pass a copy (.copy(), "
                    ".clone())");
    launchArgs[i] = DirectArg{info.address, info.bytes};
  }

  LaunchQueue queue;
  if (target.where != kHost) {
    if (framework == Framework::Torch)
      queue.stream = asU64(s.torchStream(target.where));
    else if (framework == Framework::CuPy)
      queue.stream =
          s.cupyCurrentStream &&
                  (s.cupyCurrentDevice.is_none() ||
                   asI64(s.cupyCurrentDevice()) == target.where)
              ? cupyCurrentStream(s)
              : asU64(s.cupyStream(target.where));
    else // other frameworks' arrays: synchronous on the runtime's stream
      queue.ownStream = queue.wait = true;
  }
  if (s.logLaunch.is_valid() && !s.logLaunch.is_none())
    s.logLaunch(form.name, self.key, target.runtime, queue.stream,
                queue.ownStream);
  if (target.where == kHost) {
    ReleasedGil release; // the CPU runs it now
    target.launcher->launch(launchArgs.begin(), self.grid, self.threads,
                            queue, threadgroupMemory);
  } else {
    target.launcher->launch(launchArgs.begin(), self.grid, self.threads,
                            queue, threadgroupMemory);
  }
}

} // namespace enigma::python::launch
