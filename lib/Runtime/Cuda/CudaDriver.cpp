//===- CudaDriver.cpp - Loading libcuda.so.1 ------------------------------===//
#include "CudaDriver.h"
#include "SharedLibrary.h"

#include "enigma/Runtime/Backend.h"

#include <mutex>

namespace enigma::cuda {
namespace {

/// Fills every entry point, or returns the list of missing symbols.
std::string bindDriver(const SharedLibrary &lib, DriverApi &api) {
  std::string missing;
  bindSymbol(lib, api.cuInit, "cuInit", missing);
  bindSymbol(lib, api.cuDriverGetVersion, "cuDriverGetVersion", missing);
  bindSymbol(lib, api.cuGetErrorName, "cuGetErrorName", missing);
  bindSymbol(lib, api.cuGetErrorString, "cuGetErrorString", missing);
  bindSymbol(lib, api.cuDeviceGetCount, "cuDeviceGetCount", missing);
  bindSymbol(lib, api.cuDeviceGet, "cuDeviceGet", missing);
  bindSymbol(lib, api.cuDeviceGetName, "cuDeviceGetName", missing);
  bindSymbol(lib, api.cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
  bindSymbol(lib, api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain",
             missing);
  bindSymbol(lib, api.cuDevicePrimaryCtxRelease,
             "cuDevicePrimaryCtxRelease_v2", missing);
  bindSymbol(lib, api.cuDevicePrimaryCtxReset, "cuDevicePrimaryCtxReset_v2",
             missing);
  bindSymbol(lib, api.cuCtxSetCurrent, "cuCtxSetCurrent", missing);
  bindSymbol(lib, api.cuCtxGetCurrent, "cuCtxGetCurrent", missing);
  bindSymbol(lib, api.cuCtxSynchronize, "cuCtxSynchronize", missing);
  bindSymbol(lib, api.cuModuleLoadDataEx, "cuModuleLoadDataEx", missing);
  bindSymbol(lib, api.cuModuleUnload, "cuModuleUnload", missing);
  bindSymbol(lib, api.cuModuleGetFunction, "cuModuleGetFunction", missing);
  bindSymbol(lib, api.cuFuncSetAttribute, "cuFuncSetAttribute", missing);
  bindSymbol(lib, api.cuFuncGetAttribute, "cuFuncGetAttribute", missing);
  bindSymbol(lib, api.cuMemAlloc, "cuMemAlloc_v2", missing);
  bindSymbol(lib, api.cuMemFree, "cuMemFree_v2", missing);
  bindSymbol(lib, api.cuMemsetD8, "cuMemsetD8_v2", missing);
  bindSymbol(lib, api.cuMemcpyHtoD, "cuMemcpyHtoD_v2", missing);
  bindSymbol(lib, api.cuMemcpyDtoH, "cuMemcpyDtoH_v2", missing);
  bindSymbol(lib, api.cuLaunchKernel, "cuLaunchKernel", missing);
  bindSymbol(lib, api.cuStreamCreate, "cuStreamCreate", missing);
  bindSymbol(lib, api.cuStreamDestroy, "cuStreamDestroy_v2", missing);
  bindSymbol(lib, api.cuStreamSynchronize, "cuStreamSynchronize", missing);
  bindSymbol(lib, api.cuStreamWaitEvent, "cuStreamWaitEvent", missing);
  bindSymbol(lib, api.cuPointerGetAttribute, "cuPointerGetAttribute", missing);
  bindSymbol(lib, api.cuEventCreate, "cuEventCreate", missing);
  bindSymbol(lib, api.cuEventDestroy, "cuEventDestroy_v2", missing);
  bindSymbol(lib, api.cuEventRecord, "cuEventRecord", missing);
  bindSymbol(lib, api.cuEventSynchronize, "cuEventSynchronize", missing);
  // Drivers from CUDA 12.8 on export a _v2 (same signature); older ones only
  // the plain name.
  std::string ignored;
  bindSymbol(lib, api.cuEventElapsedTime, "cuEventElapsedTime_v2", ignored);
  if (!api.cuEventElapsedTime)
    bindSymbol(lib, api.cuEventElapsedTime, "cuEventElapsedTime", missing);
  bindSymbol(lib, api.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled",
             ignored);
  return missing;
}

const DriverApi &loadDriver() {
  std::string errors;
  SharedLibrary lib = SharedLibrary::openFirst({"libcuda.so.1"}, errors);
  if (!lib.isOpen())
    throw BackendUnavailable(
        "CUDA driver libcuda.so.1 not found: no NVIDIA driver on this "
        "machine; use enigma.CpuRuntime instead (dlopen said:\n" +
        errors + ")");
  static DriverApi api;
  std::string missing = bindDriver(lib, api);
  if (!missing.empty())
    throw BackendUnavailable("the CUDA driver " + lib.path() +
                             " is too old: it lacks " + missing +
                             "; update the NVIDIA driver or use "
                             "enigma.CpuRuntime");
  return api;
}

} // namespace

const DriverApi &driverApi() {
  // Retried on every call until it succeeds, so a failed load is reported
  // each time with the same message rather than once.
  static std::mutex mutex;
  static const DriverApi *loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!loaded)
    loaded = &loadDriver();
  return *loaded;
}

std::string describeResult(const DriverApi &api, CUresult result) {
  const char *name = nullptr;
  const char *text = nullptr;
  if (api.cuGetErrorName)
    api.cuGetErrorName(result, &name);
  if (api.cuGetErrorString)
    api.cuGetErrorString(result, &text);
  std::string out = name ? name : "CUDA error " + std::to_string(result);
  if (text)
    out += std::string(": ") + text;
  return out;
}

bool poisonsContext(CUresult result) {
  switch (result) {
  case kCudaErrorIllegalAddress:
  case kCudaErrorLaunchTimeout:
  case kCudaErrorAssert:
  case kCudaErrorHardwareStackError:
  case kCudaErrorIllegalInstruction:
  case kCudaErrorMisalignedAddress:
  case kCudaErrorInvalidAddressSpace:
  case kCudaErrorInvalidPc:
  case kCudaErrorLaunchFailed:
    return true;
  default:
    return false;
  }
}

void checkResult(const DriverApi &api, CUresult result, const char *what) {
  if (result != kCudaSuccess)
    throw RuntimeFailure(std::string(what) + " failed: " +
                         describeResult(api, result));
}

} // namespace enigma::cuda
