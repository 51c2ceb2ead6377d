//===- CudaBackend.cpp - Backend over the CUDA driver API -----------------===//
//
// The device a CudaBackend runs on: opening it, what it reports (name,
// compute capability, limits) and the NVRTC target chosen for it. The rest
// of the backend lives beside this file: CudaContext (the primary context
// and fault recovery), CudaBuffer (device memory), CudaKernel and
// CubinCache (compiling and loading), CudaLimits (the checks before a
// launch) and CudaLaunch (argument packing and the launch entry points).
//
//===----------------------------------------------------------------------===//
#include "enigma/Runtime/CudaBackend.h"

#include "CudaContext.h"
#include "Nvrtc.h"

#include <algorithm>

namespace enigma {
using namespace cuda;

namespace {

/// The NVRTC target for a device of compute capability `cc`: its own cubin
/// when NVRTC knows the architecture, a same-major older cubin (binary
/// compatible), else PTX for the newest older architecture, which the driver
/// JIT-compiles.
void chooseArchitecture(CudaBackend::State &state, const Nvrtc &nvrtc) {
  int cc = state.computeCapability;
  const std::vector<int> &archs = nvrtc.supportedArchs();
  int best = 0;
  for (int arch : archs)
    if (arch <= cc)
      best = std::max(best, arch);
  if (best == 0)
    throw BackendUnavailable(
        "NVRTC " + nvrtc.version() + " cannot compile for sm_" +
        std::to_string(cc) + " (" + state.deviceName +
        "): the device is older than every architecture it supports; use "
        "enigma.CpuRuntime or an older CUDA toolkit");
  if (best / 10 == cc / 10) {
    state.arch = "sm_" + std::to_string(best);
    // Hopper's warpgroup instructions (wgmma) exist only in the
    // architecture-specific target sm_90a, which runs on sm_90 alone.
    if (best == 90 && cc == 90)
      state.arch += "a";
    if (best != cc)
      state.archNote = "binary-compatible cubin for sm_" + std::to_string(cc);
    return;
  }
  state.arch = "compute_" + std::to_string(best);
  state.archNote = "PTX JIT-compiled by the driver: NVRTC " + nvrtc.version() +
                   " predates sm_" + std::to_string(cc);
}

} // namespace

CudaBackend::CudaBackend(int deviceOrdinal) {
  const DriverApi &api = driverApi();
  auto created = std::make_shared<State>(api);
  State &s = *created;

  CUresult result = api.cuInit(0);
  if (result != kCudaSuccess)
    throw BackendUnavailable(
        "the CUDA driver is installed but did not start (cuInit: " +
        describeResult(api, result) +
        "); no usable NVIDIA GPU here? use enigma.CpuRuntime");
  int count = 0;
  if (api.cuDeviceGetCount(&count) != kCudaSuccess || count == 0)
    throw BackendUnavailable("no CUDA device found; use enigma.CpuRuntime");
  if (deviceOrdinal < 0 || deviceOrdinal >= count)
    throw BackendUnavailable("CUDA device " + std::to_string(deviceOrdinal) +
                             " does not exist (this machine has " +
                             std::to_string(count) + ")");
  s.check(api.cuDeviceGet(&s.device, deviceOrdinal), "cuDeviceGet");
  s.ordinal = deviceOrdinal;

  char name[256] = {0};
  api.cuDeviceGetName(name, sizeof name - 1, s.device);
  s.deviceName = name;
  int major = 0, minor = 0, maxThreads = 0;
  s.check(api.cuDeviceGetAttribute(&major, kAttrComputeCapabilityMajor,
                                   s.device),
          "cuDeviceGetAttribute(compute capability)");
  s.check(api.cuDeviceGetAttribute(&minor, kAttrComputeCapabilityMinor,
                                   s.device),
          "cuDeviceGetAttribute(compute capability)");
  s.check(api.cuDeviceGetAttribute(&maxThreads, kAttrMaxThreadsPerBlock,
                                   s.device),
          "cuDeviceGetAttribute(max threads per block)");
  s.computeCapability = major * 10 + minor;
  s.maxThreads = uint64_t(std::min(maxThreads, 1024));
  api.cuDeviceGetAttribute(&s.multiprocessors, kAttrMultiprocessorCount,
                           s.device);
  int maxShared = 0;
  if (api.cuDeviceGetAttribute(&maxShared, kAttrMaxSharedMemoryPerBlockOptin,
                               s.device) == kCudaSuccess &&
      maxShared > 0)
    s.maxSharedBytes = uint64_t(maxShared);

  // Without NVRTC nothing can be loaded, so say so now rather than at the
  // first dispatch.
  chooseArchitecture(s, Nvrtc::get());

  s.primary = PrimaryContext::get(api, s.device, deviceOrdinal);
  s.generation = s.primary->generation;
  CallersContext keep(s);
  checkResult(api, api.cuCtxSetCurrent(s.primary->context), "cuCtxSetCurrent");
  s.createQueues();
  state = std::move(created);
}

CudaBackend::~CudaBackend() = default;

uint64_t CudaBackend::maxThreadsPerThreadgroup() const {
  return state->maxThreads;
}

uint64_t CudaBackend::maxThreadgroupMemory() const {
  return state->maxSharedBytes;
}

const std::string &CudaBackend::architecture() const { return state->arch; }
const std::string &CudaBackend::deviceName() const { return state->deviceName; }

int CudaBackend::multiprocessors() const { return state->multiprocessors; }

int CudaBackend::deviceOrdinal() const { return state->ordinal; }

} // namespace enigma
