//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// libenigma must build and import on machines without CUDA, so it never links
// libcuda and never includes cuda.h. This header declares the handful of
// driver types and entry points the CUDA backend uses, and driverApi() fills
// them from libcuda.so.1 with dlopen the first time it is asked.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_CUDADRIVER_H
#define ENIGMA_LIB_RUNTIME_CUDA_CUDADRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace enigma::cuda {

// Opaque handles and scalar types, with the layouts cuda.h gives them.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUevent = struct CUevent_st *;

inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorNoDevice = 100;
// Errors of a kernel that poison its context: every later call in the
// context fails with them until it is destroyed (cuda.h: "the context
// cannot be used").
inline constexpr CUresult kCudaErrorIllegalAddress = 700;
inline constexpr CUresult kCudaErrorLaunchTimeout = 702;
inline constexpr CUresult kCudaErrorAssert = 710;
inline constexpr CUresult kCudaErrorHardwareStackError = 714;
inline constexpr CUresult kCudaErrorIllegalInstruction = 715;
inline constexpr CUresult kCudaErrorMisalignedAddress = 716;
inline constexpr CUresult kCudaErrorInvalidAddressSpace = 717;
inline constexpr CUresult kCudaErrorInvalidPc = 718;
inline constexpr CUresult kCudaErrorLaunchFailed = 719;
inline constexpr int kAttrMaxThreadsPerBlock = 1;
inline constexpr int kAttrMultiprocessorCount = 16;
inline constexpr int kAttrComputeCapabilityMajor = 75;
inline constexpr int kAttrComputeCapabilityMinor = 76;
inline constexpr int kAttrMaxSharedMemoryPerBlockOptin = 97;
inline constexpr int kFuncAttrMaxDynamicSharedSizeBytes = 8;
inline constexpr int kFuncAttrNumRegs = 4; // CU_FUNC_ATTRIBUTE_NUM_REGS
/// CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: the function's static shared memory.
inline constexpr int kFuncAttrSharedSizeBytes = 1;
inline constexpr unsigned kStreamNonBlocking = 0x1;
inline constexpr unsigned kEventDefault = 0x0;
inline constexpr unsigned kEventDisableTiming = 0x2;
inline constexpr int kPointerAttributeDeviceOrdinal = 9;
inline constexpr int kJitErrorLogBuffer = 5;
inline constexpr int kJitErrorLogBufferSizeBytes = 6;

/// Entry points of libcuda, named after the versioned symbols that cuda.h's
/// macros select (cuMemAlloc -> cuMemAlloc_v2, ...).
struct DriverApi {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuDriverGetVersion)(int *version);
  CUresult (*cuGetErrorName)(CUresult error, const char **name);
  CUresult (*cuGetErrorString)(CUresult error, const char **text);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int length, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int *value, int attribute,
                                   CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *context, CUdevice device);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice device);
  CUresult (*cuDevicePrimaryCtxReset)(CUdevice device);
  CUresult (*cuCtxSetCurrent)(CUcontext context);
  CUresult (*cuCtxGetCurrent)(CUcontext *context);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image,
                                 unsigned numOptions, int *options,
                                 void **optionValues);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module,
                                  const char *name);
  CUresult (*cuFuncSetAttribute)(CUfunction function, int attribute,
                                 int value);
  CUresult (*cuFuncGetAttribute)(int *value, int attribute,
                                 CUfunction function);
  CUresult (*cuMemAlloc)(CUdeviceptr *pointer, size_t bytes);
  CUresult (*cuMemFree)(CUdeviceptr pointer);
  CUresult (*cuMemsetD8)(CUdeviceptr pointer, unsigned char value,
                         size_t count);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX,
                             unsigned gridY, unsigned gridZ, unsigned blockX,
                             unsigned blockY, unsigned blockZ,
                             unsigned sharedMemBytes, CUstream stream,
                             void **kernelParams, void **extra);
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuEventCreate)(CUevent *event, unsigned flags);
  CUresult (*cuEventDestroy)(CUevent event);
  CUresult (*cuEventRecord)(CUevent event, CUstream stream);
  CUresult (*cuEventSynchronize)(CUevent event);
  CUresult (*cuEventElapsedTime)(float *milliseconds, CUevent start,
                                 CUevent end);
  CUresult (*cuStreamWaitEvent)(CUstream stream, CUevent event,
                                unsigned flags);
  /// Tensor maps for the Tensor Memory Accelerator (CUDA 12 drivers on);
  /// null when the driver has none: kernels then copy with cp.async.
  CUresult (*cuTensorMapEncodeTiled)(
      void *map, int dataType, unsigned rank, void *globalAddress,
      const uint64_t *globalDim, const uint64_t *globalStrides,
      const unsigned *boxDim, const unsigned *elementStrides, int interleave,
      int swizzle, int l2Promotion, int oobFill) = nullptr;
  CUresult (*cuPointerGetAttribute)(void *data, int attribute,
                                    CUdeviceptr pointer);
};

/// The driver, loaded once per process. Throws BackendUnavailable naming
/// what is missing (the library or one of its symbols).
const DriverApi &driverApi();

/// "CUDA_ERROR_X: <driver's description>" for a result code.
std::string describeResult(const DriverApi &api, CUresult result);

/// True for the errors after which the context must be destroyed (see
/// kCudaErrorIllegalAddress).
bool poisonsContext(CUresult result);

/// Throws RuntimeFailure "<what> failed: <description>" unless `result` is
/// success.
void checkResult(const DriverApi &api, CUresult result, const char *what);

} // namespace enigma::cuda

#endif
