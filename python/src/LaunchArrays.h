//===- LaunchArrays.h - The arrays of a function-form call ------*- C++ -*-===//
//
// What the function-call form reads of each array argument (numpy and
// other buffer-protocol arrays, PyTorch tensors and CuPy arrays directly,
// any other array through the Python layer), and the in-place storage a
// call keeps its per-parameter values in.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_PYTHON_LAUNCHARRAYS_H
#define ENIGMA_PYTHON_LAUNCHARRAYS_H

#include "Bindings.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace enigma::python::launch {

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

/// Reads one array argument; false when it is not an array at all.
bool readArray(nanobind::handle obj, ArrayInfo &info, HeldViews &held);

} // namespace enigma::python::launch

#endif // ENIGMA_PYTHON_LAUNCHARRAYS_H
