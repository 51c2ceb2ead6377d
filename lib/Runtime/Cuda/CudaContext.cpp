//===- CudaContext.cpp - A device's context and fault recovery ------------===//
#include "CudaContext.h"

#include <map>
#include <mutex>

namespace enigma {
using namespace cuda;

PrimaryContext::~PrimaryContext() {
  // A reset does not release a retain (cuDevicePrimaryCtxReset), so the
  // one taken after each reset is released here too.
  for (; retains > 0; --retains)
    api.cuDevicePrimaryCtxRelease(device);
}

std::string PrimaryContext::reset() {
  std::string failure;
  auto step = [&](CUresult result, const char *what) {
    if (failure.empty() && result != kCudaSuccess)
      failure = std::string(what) + ": " + describeResult(api, result);
    return failure.empty();
  };
  CUcontext fresh = nullptr;
  if (step(api.cuDevicePrimaryCtxReset(device), "cuDevicePrimaryCtxReset") &&
      step(api.cuDevicePrimaryCtxRetain(&fresh, device),
           "cuDevicePrimaryCtxRetain")) {
    ++retains;
    context = fresh;
    CUdeviceptr probe = 0;
    if (step(api.cuCtxSetCurrent(fresh), "cuCtxSetCurrent") &&
        step(api.cuCtxSynchronize(), "cuCtxSynchronize") &&
        step(api.cuMemAlloc(&probe, 16), "cuMemAlloc"))
      step(api.cuMemFree(probe), "cuMemFree");
  }
  ++generation;
  if (!failure.empty())
    // What the first GPU run showed for an illegal address: CUDA keeps
    // the error for the whole process, a reset included.
    broken = "CUDA keeps this error for the whole process: device " +
             std::to_string(ordinal) +
             " cannot run anything more in it (" + failure +
             "); restart the process to use CUDA again (the CPU runtimes "
             "keep working)";
  return failure;
}

std::shared_ptr<PrimaryContext>
PrimaryContext::get(const DriverApi &api, CUdevice device, int ordinal) {
  static std::mutex mutex;
  static std::map<int, std::weak_ptr<PrimaryContext>> contexts;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto existing = contexts[ordinal].lock()) {
    if (!existing->broken.empty())
      throw BackendUnavailable(existing->broken);
    return existing;
  }
  auto created = std::make_shared<PrimaryContext>(api, device, ordinal);
  checkResult(api, api.cuDevicePrimaryCtxRetain(&created->context, device),
              "cuDevicePrimaryCtxRetain");
  created->retains = 1;
  contexts[ordinal] = created;
  return created;
}

CudaBackend::State::~State() {
  if (!primary || !current())
    return;
  // Best effort: a failing driver at teardown must not throw. The
  // caller's context is current again afterwards.
  CUcontext previous = nullptr;
  bool known = api.cuCtxGetCurrent(&previous) == kCudaSuccess;
  api.cuCtxSetCurrent(primary->context);
  destroyQueues();
  if (known && previous != primary->context)
    api.cuCtxSetCurrent(previous);
}

void CudaBackend::State::createQueues() {
  // A blocking stream (flags 0): the synchronous copies on the default
  // stream wait for launches queued on it.
  check(api.cuStreamCreate(&stream, 0), "cuStreamCreate");
  check(api.cuEventCreate(&start, kEventDefault), "cuEventCreate");
  check(api.cuEventCreate(&end, kEventDefault), "cuEventCreate");
  check(api.cuEventCreate(&handoff, kEventDisableTiming), "cuEventCreate");
}

void CudaBackend::State::destroyQueues() {
  for (CUevent event : {start, end, handoff})
    if (event)
      api.cuEventDestroy(event);
  if (stream)
    api.cuStreamDestroy(stream);
  stream = nullptr;
  start = end = handoff = nullptr;
}

void CudaBackend::State::makeCurrent() {
  if (!primary->broken.empty())
    throw RuntimeFailure(primary->broken);
  checkResult(api, api.cuCtxSetCurrent(primary->context), "cuCtxSetCurrent");
  if (current())
    return;
  std::string lost = queuedNames();
  queued.clear();
  stream = nullptr; // destroyed with the context
  start = end = handoff = nullptr;
  generation = primary->generation;
  createQueues();
  if (!lost.empty())
    throw RuntimeFailure("the launches queued on this CUDA runtime (" + lost +
                         ") were lost: the CUDA context of device " +
                         std::to_string(ordinal) +
                         " was reset after a kernel faulted");
}

std::string CudaBackend::State::queuedNames() const {
  std::string names;
  for (const std::string &name : queued)
    names += (names.empty() ? "" : ", ") + name;
  return names;
}

void CudaBackend::State::check(CUresult result, const char *what) {
  if (result == kCudaSuccess)
    return;
  if (poisonsContext(result))
    deviceFault(result, nullptr);
  checkResult(api, result, what);
}

void CudaBackend::State::deviceFault(CUresult result,
                                     const KernelArtifact *kernel) {
  std::string culprit;
  if (kernel)
    culprit = "kernel " + kernel->kernelName;
  if (!queued.empty())
    culprit += (culprit.empty() ? "" : ", or one queued before it, ") +
               std::string(queued.size() == 1 && !kernel
                               ? "kernel "
                               : "one of the kernels ") +
               queuedNames();
  if (culprit.empty())
    culprit = "an earlier kernel";
  // The advice for bounds-checked kernels only when every candidate is.
  bool allChecked = (kernel || !queued.empty()) && !queuedUnchecked &&
                    (!kernel || !kernel->boundsCheckParams.empty());
  queued.clear();
  queuedUnchecked = false;
  std::string message = culprit + " failed on the device (" + deviceName +
                        "): " + describeResult(api, result);
  std::string failure = primary->reset();
  if (failure.empty())
    message += ". The CUDA context of device " + std::to_string(ordinal) +
               " was reset to recover: device memory allocated in it before "
               "(buffers of prepared kernels, arrays of other libraries "
               "such as PyTorch or CuPy) is gone, and this runtime reloads "
               "its kernels and keeps working; ";
  else
    message += ". " + primary->broken + "; ";
  KernelArtifact advice;
  if (allChecked)
    advice.boundsCheckParams.resize(1);
  throw KernelFault(message + kernelFaultAdvice(advice));
}

} // namespace enigma
