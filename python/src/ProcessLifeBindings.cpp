//===- ProcessLifeBindings.cpp - Ctrl-C, exit and the GIL -----------------===//
//
// Long C++ calls (compiles, launches) run with the GIL released. Two things
// make that safe for a process that is interrupted or exits
// (docs/design/process-life.md):
//
// - The interrupt check: while such a call waits, the waiting thread, if it
//   is Python's main thread, takes the GIL every few tens of milliseconds
//   and runs the pending signal handlers (PyErr_CheckSignals). A handler
//   that raises (Ctrl-C's KeyboardInterrupt) stops the wait: the work is
//   abandoned, enigma::Interrupted is thrown, and the handler's exception,
//   kept aside meanwhile, is what Python sees. While the main thread runs
//   kernel code itself it cannot look; then Ctrl-C reaches the kernel
//   through a SIGINT handler put in front of Python's default one
//   (enigma/Runtime/HostInterrupts.h), and Python's handler, run when the
//   call returns, raises KeyboardInterrupt.
// - ReleasedGil: once the interpreter is exiting (process_exiting, run by
//   an atexit handler), every wait of another thread is interrupted, and a
//   thread coming back from one does not take the GIL again (the
//   interpreter would end the thread inside C++ code, which aborts the
//   process) but waits for the process to end.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Runtime/HostInterrupts.h"
#include "enigma/Support/ProcessLife.h"

#include <atomic>
#include <chrono>
#include <climits>
#include <csignal>
#include <thread>

#include <pthread.h>
#include <unistd.h>

namespace nb = nanobind;

namespace enigma::python {
namespace {
std::atomic<unsigned> released{0}; // threads inside a ReleasedGil
std::atomic<unsigned> parked{0};   // of them, those that wait for the end
unsigned long mainThread = 0;

/// An exception a signal handler raised, kept while the interrupted call
/// unwinds (on the main thread, which is the only one that runs handlers).
struct Pending {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
} pending;

bool isMainThread() { return PyThread_get_thread_ident() == mainThread; }

bool interpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing();
#else
  return _Py_IsFinalizing();
#endif
}

bool pythonInterruptCheck() {
  if (!isMainThread())
    return enigma::processExiting();
  if (interpreterFinalizing())
    return false;
  PyGILState_STATE state = PyGILState_Ensure();
  bool raised = PyErr_CheckSignals() != 0;
  if (raised) {
    Py_XDECREF(pending.type);
    Py_XDECREF(pending.value);
    Py_XDECREF(pending.traceback);
    PyErr_Fetch(&pending.type, &pending.value, &pending.traceback);
  }
  PyGILState_Release(state);
  return raised;
}

void translateInterrupted(const std::exception_ptr &error, void *) {
  try {
    std::rethrow_exception(error);
  } catch (const enigma::Interrupted &interrupted) {
    if (pending.type) { // raised by a handler the wait ran
      PyErr_Restore(pending.type, pending.value, pending.traceback);
      pending = Pending{};
    } else if (PyErr_CheckSignals() == 0) { // else: raised just now
      PyErr_SetString(PyExc_KeyboardInterrupt, interrupted.what());
    }
  }
}

/// Whether Python's SIGINT handler is its default one, which raises
/// KeyboardInterrupt: only then may Ctrl-C stop a kernel the main thread
/// runs itself (another handler may mean to let it finish).
bool defaultInterruptHandler() {
  PyObject *signal = PyImport_ImportModule("signal");
  if (!signal) {
    PyErr_Clear();
    return false;
  }
  PyObject *current = PyObject_CallMethod(signal, "getsignal", "i", SIGINT);
  PyObject *fallback = PyObject_GetAttrString(signal, "default_int_handler");
  bool isDefault = current && fallback && current == fallback;
  Py_XDECREF(current);
  Py_XDECREF(fallback);
  Py_DECREF(signal);
  PyErr_Clear();
  return isDefault;
}

/// Puts the SIGINT handler that stops the main thread's kernels in front
/// of Python's, again if Python installed its own since (signal.signal),
/// while Python's is the default. Called with the GIL held, at most every
/// 100 ms.
void keepInterruptSignalChained() {
  static std::atomic<int64_t> lastCheck{INT64_MIN / 2};
  int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now().time_since_epoch())
                    .count();
  if (now - lastCheck.load(std::memory_order_relaxed) < 100)
    return;
  lastCheck.store(now, std::memory_order_relaxed);
  if (!interruptSignalChained() && defaultInterruptHandler())
    chainInterruptSignal();
}

/// At exit: stops every wait in flight and lets the threads that made them
/// settle (come back to Python, or wait for the end) before Python
/// finalises; a few seconds at most.
void onInterpreterExit() {
  beginProcessExit();
  nb::gil_scoped_release release;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (released.load() > parked.load() &&
         std::chrono::steady_clock::now() < deadline) {
    // Kernels other threads run themselves cannot look for the exit.
    stopAllHostLaunches();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}
} // namespace

ReleasedGil::ReleasedGil() {
  keepInterruptSignalChained();
  released.fetch_add(1);
  state = PyEval_SaveThread();
}

ReleasedGil::~ReleasedGil() {
  if (enigma::processExiting() && !isMainThread()) {
    // Taking the GIL now would let the exiting interpreter end this thread
    // in the middle of C++ frames: wait for the process to end instead.
    parked.fetch_add(1);
    for (;;)
      ::pause();
  }
  PyEval_RestoreThread(state);
  released.fetch_sub(1);
}

void bindProcessLife(nb::module_ &m) {
  mainThread = nb::cast<unsigned long>(
      nb::module_::import_("threading").attr("main_thread")().attr("ident"));
  setInterruptibleThread(pthread_t(mainThread));
  setInterruptCheck(&pythonInterruptCheck);
  keepInterruptSignalChained();
  nb::register_exception_translator(&translateInterrupted);
  m.def("process_exiting", &onInterpreterExit,
        "Called once by an exit handler when the interpreter exits: stops "
        "the compiles and launches other threads are waiting for.");
}

} // namespace enigma::python
