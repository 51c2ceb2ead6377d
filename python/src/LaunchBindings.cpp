//===- LaunchBindings.cpp - The function-call form's hot path -------------===//
//
// `kernel[n](a, b, c, n)` and `kernel.launch(grid=..., threads=...)(...)` end
// here (python/enigma/_kernel.py makes the objects). The arguments are read in C++: numpy and other
// buffer-protocol arrays, PyTorch tensors and CuPy arrays directly, any other
// array through the Python layer once per call; they are checked against the
// kernel's parameters and launched through a DirectLauncher, on CUDA on the
// current stream of the arrays' framework. Only a call that needs a new
// (kernel, runtime) pair goes to Python, which compiles and loads it.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Runtime/CpuBackend.h"
#include "enigma/Runtime/CudaBackend.h"
#include "enigma/Runtime/Launch.h"
#ifdef __linux__
#include "enigma/Runtime/MetalHostBackend.h"
#endif

#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
namespace {

constexpr int kHost = -1;      // an array in host memory
constexpr int kElsewhere = -2; // neither host nor CUDA (meta, MPS...)

/// How the arrays' framework wants a CUDA launch queued.
enum class Framework : uint8_t { None, Torch, CuPy, Synchronous };

/// How arguments of one Python type are read (decided once per type).
/// CuPyArray: cupy.ndarray itself, whose descriptions are remembered.
enum class Reader : uint8_t {
  Buffer,
  Torch,
  CuPy,
  CuPyArray,
  Python,
  NotArray
};

/// What a launch needs to know about one array argument.
struct ArrayInfo {
  uint64_t address = 0;
  size_t bytes = 0;
  std::optional<DType> dtype; // none: an element type Enigma lacks
  int device = kHost;
  bool contiguous = true;
  bool writable = true;
  Framework framework = Framework::None;
};

/// The descriptions of the CuPy arrays launched on last, by object. What
/// a launch reads of a cupy.ndarray cannot change while the array lives:
/// `data` (pointer and device), `dtype` and `size` are read-only, and an
/// in-place reshape keeps a C-contiguous array C-contiguous (only those
/// are remembered). Each entry holds a weak reference, so an array at a
/// dead one's address is read afresh. Saves six attribute reads per array.
class CupyArrayMemo {
public:
  const ArrayInfo *find(PyObject *obj) const {
    const Entry &e = entries[slot(obj)];
    return e.ref && referent(e.ref) == obj ? &e.info : nullptr;
  }
  void remember(PyObject *obj, const ArrayInfo &info) {
    PyObject *ref = PyWeakref_NewRef(obj, nullptr);
    if (!ref) { // not weakly referenceable: read it every time
      PyErr_Clear();
      return;
    }
    Entry &e = entries[slot(obj)];
    Py_XDECREF(e.ref);
    e.ref = ref;
    e.info = info;
  }
  void clear() {
    for (Entry &e : entries) {
      Py_XDECREF(e.ref);
      e.ref = nullptr;
    }
  }

private:
  struct Entry {
    PyObject *ref = nullptr; // a weak reference to the array
    ArrayInfo info;
  };
  static constexpr size_t kEntries = 64;
  static size_t slot(PyObject *obj) {
    return (uintptr_t(obj) >> 4) % kEntries;
  }
  /// The object a weak reference points to (borrowed), or None when dead.
  static PyObject *referent(PyObject *ref) {
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *obj = nullptr;
    if (PyWeakref_GetRef(ref, &obj) <= 0) {
      PyErr_Clear();
      return Py_None;
    }
    Py_DECREF(obj); // the caller holds the object when it is alive
    return obj;
#else
    return PyWeakref_GET_OBJECT(ref);
#endif
  }
  Entry entries[kEntries];
};

/// The Python helpers of enigma._launch and what is cached per process.
struct Shared {
  nb::object describeArray; // obj -> (address, bytes, dtype, device, ...)
  nb::object arrayText;     // obj -> "a numpy.ndarray of float64, shape (3,)"
  nb::object readerOf;      // type -> "buffer" | "torch" | "cupy" | ...
  nb::object dtypeName;     // dtype object -> Enigma short name or None
  nb::object torchStream;   // device -> current CUstream of PyTorch
  nb::object cupyStream;    // device -> current CUstream of CuPy
  // CuPy's current device (a Python call; None on a machine with one
  // device, where it is always the arrays' device) and, when this CuPy
  // exports it, its C function for the current CUstream of that device (a
  // direct call).
  nb::object cupyCurrentDevice;
  intptr_t (*cupyCurrentStream)() = nullptr;
  nb::object firstCall;     // (owner, where, runtime, constants) -> None
  nb::object globalsChanged; // (owner) -> None: a name the body reads changed
  nb::object logLaunch;     // (name, grid, threads, runtime) or None
  std::unordered_map<PyTypeObject *, Reader> readers;
  std::unordered_map<PyObject *, std::optional<DType>> dtypes;
  CupyArrayMemo cupyArrays;
  // Attribute names, interned once.
  nb::object sDataPtr, sDtype, sIsContiguous, sIsCuda, sIsCpu, sGetDevice,
      sNbytes, sData, sPtr, sDeviceId, sCContiguous, sCore;
  /// The runtime `with enigma.use_runtime(rt)` selects, per thread.
  static thread_local PyObject *scopedRuntime;
};
thread_local PyObject *Shared::scopedRuntime = nullptr;

Shared &shared() {
  static Shared *state = [] {
    auto *s = new Shared(); // lives as long as the process, like the module
    s->sDataPtr = nb::str("data_ptr");
    s->sDtype = nb::str("dtype");
    s->sIsContiguous = nb::str("is_contiguous");
    s->sIsCuda = nb::str("is_cuda");
    s->sIsCpu = nb::str("is_cpu");
    s->sGetDevice = nb::str("get_device");
    s->sNbytes = nb::str("nbytes");
    s->sData = nb::str("data");
    s->sPtr = nb::str("ptr");
    s->sDeviceId = nb::str("device_id");
    s->sCContiguous = nb::str("_c_contiguous");
    s->sCore = nb::str("_core");
    return s;
  }();
  return *state;
}

/// CuPy's current stream through its C function (it may raise).
uint64_t cupyCurrentStream(Shared &s) {
  intptr_t stream = s.cupyCurrentStream();
  if (PyErr_Occurred())
    throw nb::python_error();
  return uint64_t(stream);
}

/// A new reference to obj.name, or a Python error.
nb::object attr(nb::handle obj, const nb::object &name) {
  PyObject *value = PyObject_GetAttr(obj.ptr(), name.ptr());
  if (!value)
    throw nb::python_error();
  return nb::steal(value);
}

nb::object callMethod(nb::handle obj, const nb::object &name) {
  PyObject *value = PyObject_CallMethodNoArgs(obj.ptr(), name.ptr());
  if (!value)
    throw nb::python_error();
  return nb::steal(value);
}

uint64_t asU64(nb::handle value) {
  unsigned long long v = PyLong_AsUnsignedLongLong(value.ptr());
  if (v == (unsigned long long)-1 && PyErr_Occurred())
    throw nb::python_error();
  return v;
}

int64_t asI64(nb::handle value) {
  long long v = PyLong_AsLongLong(value.ptr());
  if (v == -1 && PyErr_Occurred())
    throw nb::python_error();
  return v;
}

bool truth(nb::handle value) {
  int t = PyObject_IsTrue(value.ptr());
  if (t < 0)
    throw nb::python_error();
  return t == 1;
}

std::optional<DType> dtypeOf(nb::handle dtypeObject) {
  Shared &s = shared();
  auto it = s.dtypes.find(dtypeObject.ptr());
  if (it != s.dtypes.end())
    return it->second;
  nb::object name = s.dtypeName(dtypeObject);
  std::optional<DType> dtype;
  if (!name.is_none())
    dtype = parseDType(nb::cast<std::string>(name));
  // dtype objects are long-lived singletons: keep this one alive so its
  // address stays its key.
  s.dtypes.emplace(dtypeObject.inc_ref().ptr(), dtype);
  return dtype;
}

/// numpy's buffer format characters (native order) -> dtype.
std::optional<DType> dtypeOfFormat(const char *format, Py_ssize_t itemsize) {
  if (!format)
    return DType::U8;
  if (*format == '@' || *format == '=' || *format == '<')
    ++format;
  if (format[0] == 0 || format[1] != 0)
    return std::nullopt;
  switch (format[0]) {
  case 'f': return DType::F32;
  case 'e': return DType::F16;
  case '?': return DType::Bool;
  case 'b': return DType::I8;
  case 'B': return DType::U8;
  case 'h': return DType::I16;
  case 'H': return DType::U16;
  case 'i': case 'l': case 'q':
    return itemsize == 4 ? std::optional(DType::I32)
           : itemsize == 8 ? std::optional(DType::I64) : std::nullopt;
  case 'I': case 'L': case 'Q':
    return itemsize == 4 ? std::optional(DType::U32)
           : itemsize == 8 ? std::optional(DType::U64) : std::nullopt;
  default:
    return std::nullopt;
  }
}

/// `n` default-constructed values, in place for the usual kernel (up to 16
/// parameters), so that a launch allocates nothing.
template <typename T, size_t Inline = 16> class Slots {
public:
  explicit Slots(size_t n) : count(n) {
    if (n > Inline) {
      heap.resize(n);
      data = heap.data();
    } else {
      data = local;
    }
  }
  Slots(const Slots &) = delete;
  Slots &operator=(const Slots &) = delete;
  T &operator[](size_t i) { return data[i]; }
  const T &operator[](size_t i) const { return data[i]; }
  size_t size() const { return count; }
  T *begin() { return data; }
  T *end() { return data + count; }

private:
  size_t count;
  T local[Inline] = {};
  std::vector<T> heap;
  T *data;
};

/// Buffer views held for the duration of one call.
struct HeldViews {
  explicit HeldViews(size_t n) : views(n) {}
  Slots<Py_buffer> views;
  size_t used = 0;
  Py_buffer &next() { return views[used++]; }
  ~HeldViews() {
    for (size_t i = 0; i < used; ++i)
      PyBuffer_Release(&views[i]);
  }
};

Reader readerFor(PyTypeObject *type) {
  Shared &s = shared();
  auto it = s.readers.find(type);
  if (it != s.readers.end())
    return it->second;
  std::string kind = nb::cast<std::string>(
      s.readerOf(nb::handle(reinterpret_cast<PyObject *>(type))));
  Reader reader = kind == "torch"          ? Reader::Torch
                  : kind == "cupy"         ? Reader::CuPy
                  : kind == "cupy_ndarray" ? Reader::CuPyArray
                  : kind == "buffer"       ? Reader::Buffer
                  : kind == "python"       ? Reader::Python
                                           : Reader::NotArray;
  Py_INCREF(type); // keeps the key valid
  s.readers.emplace(type, reader);
  return reader;
}

/// Reads one array argument; false when it is not an array at all.
bool readArray(nb::handle obj, ArrayInfo &info, HeldViews &held) {
  Shared &s = shared();
  const Reader reader = readerFor(Py_TYPE(obj.ptr()));
  switch (reader) {
  case Reader::Torch: {
    bool onCuda = truth(attr(obj, s.sIsCuda));
    info.device = onCuda ? int(asI64(callMethod(obj, s.sGetDevice)))
                  : truth(attr(obj, s.sIsCpu)) ? kHost
                                                : kElsewhere;
    info.framework = onCuda ? Framework::Torch : Framework::None;
    info.dtype = dtypeOf(attr(obj, s.sDtype));
    info.contiguous = truth(callMethod(obj, s.sIsContiguous));
    info.bytes = size_t(asU64(attr(obj, s.sNbytes)));
    if (info.device != kElsewhere)
      info.address = asU64(callMethod(obj, s.sDataPtr));
    return true;
  }
  case Reader::CuPyArray:
    if (const ArrayInfo *known = s.cupyArrays.find(obj.ptr())) {
      info = *known;
      return true;
    }
    [[fallthrough]];
  case Reader::CuPy: {
    nb::object memory = attr(obj, s.sData);
    info.address = asU64(attr(memory, s.sPtr));
    info.device = int(asI64(attr(memory, s.sDeviceId)));
    info.framework = Framework::CuPy;
    info.dtype = dtypeOf(attr(obj, s.sDtype));
    info.contiguous = truth(attr(obj, s.sCContiguous));
    info.bytes = size_t(asU64(attr(obj, s.sNbytes)));
    if (reader == Reader::CuPyArray && info.contiguous)
      s.cupyArrays.remember(obj.ptr(), info);
    return true;
  }
  case Reader::Buffer: {
    Py_buffer &view = held.views[held.used];
    if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_STRIDES | PyBUF_FORMAT) !=
        0) {
      // numpy refuses to export some dtypes (bfloat16 of ml_dtypes...):
      // the Python layer describes those.
      PyErr_Clear();
      break;
    }
    held.next(); // released at the end of the call
    info.address = uint64_t(reinterpret_cast<uintptr_t>(view.buf));
    info.bytes = size_t(view.len);
    info.dtype = dtypeOfFormat(view.format, view.itemsize);
    info.contiguous = PyBuffer_IsContiguous(&view, 'C') == 1;
    info.writable = !view.readonly;
    info.device = kHost;
    return true;
  }
  case Reader::Python:
    break;
  case Reader::NotArray:
    return false;
  }
  // (address, bytes, dtype name or None, device, contiguous, writable,
  // synchronous) from the Python layer (JAX, DLPack, the array interface).
  nb::object described = s.describeArray(obj);
  if (described.is_none())
    return false;
  auto t = nb::cast<std::tuple<uint64_t, size_t, nb::object, int, bool, bool,
                               bool>>(described);
  info.address = std::get<0>(t);
  info.bytes = std::get<1>(t);
  nb::object name = std::get<2>(t);
  info.dtype = name.is_none() ? std::nullopt
                              : parseDType(nb::cast<std::string>(name));
  info.device = std::get<3>(t);
  info.contiguous = std::get<4>(t);
  info.writable = std::get<5>(t);
  info.framework = std::get<6>(t) ? Framework::Synchronous : Framework::None;
  return true;
}

/// A Python number (int, float, bool, or a numpy scalar) as a HostNumber;
/// nothing when it is not a number (HostNumbers.cpp, shared with execute).
std::optional<HostNumber> numberOf(nb::handle value) {
  return hostNumberOf(value);
}

std::string describeParam(const KernelParam &param) {
  return param.name + " (" + shortName(param.dtype) +
         (param.kind == ParamKind::Buffer ? " buffer)" : " scalar)");
}

std::string whereText(int device) {
  return device == kHost ? std::string("host memory")
         : device == kElsewhere ? std::string("neither host nor CUDA memory")
                                : "CUDA device " + std::to_string(device);
}

//===----------------------------------------------------------------------===//
// The per-kernel state and its launchers
//===----------------------------------------------------------------------===//

/// One (runtime, function constants, loaded kernel) triple of a kernel.
struct Target {
  nb::object runtime; // the enigma._core.Runtime it belongs to
  int where = kHost;  // host, or the CUDA device ordinal
  bool implicit = true; // chosen from the arrays (not runtime=/use_runtime)
  uint32_t constants = 0; // the Python side's number of its constant values
  std::shared_ptr<DirectLauncher> launcher;
};

/// A name the kernel body read when it was traced: a module global
/// (`scope` the module's dict, `name` the key) or a closure cell (`name`
/// null), with the object it held then.
struct NameRead {
  nb::object scope, name, value;

  /// Whether the name still holds the same object (a cheap test: equal
  /// values in new objects are sorted out by the Python side).
  bool unchanged() const {
    PyObject *now;
    if (name.is_valid()) {
      now = PyDict_GetItemWithError(scope.ptr(), name.ptr()); // borrowed
      if (!now && PyErr_Occurred())
        throw nb::python_error();
    } else {
      now = PyCell_GET(scope.ptr());
    }
    return now == value.ptr();
  }
};

struct CallForm {
  std::string name; // enigma_kernel_<python name>
  std::vector<KernelParam> params;
  nb::object owner; // a weak reference to the Python object that owns this
  std::vector<Target> targets;
  std::vector<NameRead> reads; // what the traced body read (see NameRead)

  size_t find(nb::handle runtime, int where, uint32_t constants) const {
    for (size_t i = 0; i < targets.size(); ++i) {
      const Target &t = targets[i];
      if (t.constants == constants &&
          (runtime ? t.runtime.ptr() == runtime.ptr()
                   : t.implicit && t.where == where))
        return i;
    }
    return size_t(-1);
  }

  /// Asks the Python side to look at the names the body read when one of
  /// them holds another object now: it re-traces the kernel (dropping the
  /// loaded targets) when a value really changed.
  void checkReads() {
    for (const NameRead &read : reads)
      if (!read.unchanged()) {
        // The Python side checks them all and may replace `reads`.
        shared().globalsChanged(owner);
        return;
      }
  }
};

struct Launcher {
  std::shared_ptr<CallForm> form;
  Dim3 grid, threads;
  nb::object key; // (grid, threads) as given, for messages and logs
  uint32_t constants = 0; // which function constant values (0: none)
};

std::string arrayText(nb::handle obj) {
  try {
    return nb::cast<std::string>(shared().arrayText(obj));
  } catch (const std::exception &) {
    return "a " + std::string(Py_TYPE(obj.ptr())->tp_name);
  }
}

[[noreturn]] void argumentError(const CallForm &form, size_t param,
                                nb::handle obj, const std::string &why) {
  throw DispatchError("kernel " + form.name + ": argument " +
                      describeParam(form.params[param]) + " is " +
                      arrayText(obj) + "; " + why);
}

/// Binds positional and keyword arguments to the parameters (the kernel's
/// Python signature); the runtime= keyword is taken out.
void bindArguments(const CallForm &form, nb::args args, nb::kwargs kwargs,
                   nb::handle &runtime, Slots<nb::handle> &bound) {
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
/// bf16 parameter also uint16 (bit patterns, as execute takes them).
bool dtypeFits(const KernelParam &param, std::optional<DType> dtype) {
  return dtype && (*dtype == param.dtype ||
                   (param.dtype == DType::BF16 && *dtype == DType::U16));
}

/// Alignment every runtime gives its own buffers and the compiler relies on
/// for vector accesses (docs/reference/tensor.md).
constexpr uint64_t kBufferAlignment = 16;

void call(Launcher &self, nb::args args, nb::kwargs kwargs) {
  Shared &s = shared();
  if (!s.readerOf.is_valid())
    throw RuntimeFailure("the function-call form is shut down (interpreter "
                         "exit)");
  CallForm &form = *self.form;
  nb::handle runtime;
  const size_t n = form.params.size();
  Slots<nb::handle> bound(n);
  bindArguments(form, args, kwargs, runtime, bound);
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
    if (!readArray(bound[i], info, held))
      argumentError(form, i, bound[i],
                    "a buffer parameter takes an array (numpy, PyTorch, "
                    "CuPy, JAX...), written in place");
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
        number = numberOf(bound[i]);
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
    nb::gil_scoped_release release; // the CPU runs it now
    target.launcher->launch(launchArgs.begin(), self.grid, self.threads,
                            queue);
  } else {
    target.launcher->launch(launchArgs.begin(), self.grid, self.threads,
                            queue);
  }
}

/// Takes CuPy's exported C function for the current stream (Cython's
/// __pyx_capi__ capsule, named by its signature) when it is the function
/// we expect: intptr_t (void), returning `expected` now.
bool installCupyStream(nb::handle capsule, uint64_t expected) {
  Shared &s = shared();
  s.cupyCurrentStream = nullptr;
  if (!PyCapsule_CheckExact(capsule.ptr()))
    return false;
  const char *name = PyCapsule_GetName(capsule.ptr());
  if (!name || std::string(name) != "intptr_t (void)")
    return false;
  auto fn = reinterpret_cast<intptr_t (*)()>(
      PyCapsule_GetPointer(capsule.ptr(), name));
  if (!fn) {
    PyErr_Clear();
    return false;
  }
  intptr_t now = fn();
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  if (uint64_t(now) != expected)
    return false;
  s.cupyCurrentStream = fn;
  return true;
}

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
              std::optional<HostNumber> number = numberOf(value);
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
              nb::gil_scoped_release release; // may compile for seconds
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
