//===- CudaKernel.cpp - Loading kernels onto the device -------------------===//
#include "CudaKernel.h"
#include "CubinCache.h"
#include "CudaLimits.h"
#include "CudaProgram.h"

#include "enigma/Cache/ArtifactCache.h"

namespace enigma {
using namespace cuda;

CUfunction CudaKernel::entry() {
  if (module && generation == state->primary->generation)
    return function;
  module = nullptr; // an old one went with its context
  CUmodule loaded = loadModule(*state, image, name);
  CUfunction found = nullptr;
  CUresult result =
      state->api.cuModuleGetFunction(&found, loaded, name.c_str());
  if (result != kCudaSuccess) {
    state->api.cuModuleUnload(loaded);
    throw RuntimeFailure("the CUDA source does not define kernel " + name +
                         " (" + describeResult(state->api, result) + ")");
  }
  // Dynamic shared memory beyond 48 KiB must be allowed per function.
  if (dynamicShared > 48 * 1024) {
    result = state->api.cuFuncSetAttribute(
        found, kFuncAttrMaxDynamicSharedSizeBytes, int(dynamicShared));
    if (result != kCudaSuccess) {
      state->api.cuModuleUnload(loaded);
      throw RuntimeFailure(name + " needs " + std::to_string(dynamicShared) +
                           " bytes of shared memory, which " +
                           state->deviceName + " refused (" +
                           describeResult(state->api, result) + ")");
    }
  }
  module = loaded;
  function = found;
  generation = state->primary->generation;
  return function;
}

unsigned CudaKernel::sharedBytesFor(uint64_t launchBytes) {
  CUfunction function = entry();
  if (launchBytes == 0)
    return unsigned(dynamicShared);
  uint64_t total = (dynamicShared + 15) / 16 * 16 + (launchBytes + 15) / 16 * 16;
  // The static arrays come first, and the dynamic area starts at a 1 KiB
  // boundary after them: what they cost is what ptxas reserved.
  int staticBytes = 0;
  if (state->api.cuFuncGetAttribute(&staticBytes, kFuncAttrSharedSizeBytes,
                                    function) == kCudaSuccess &&
      staticBytes > 0 && staticBytes + total > state->maxSharedBytes)
    throw DispatchError(
        name + ": threadgroup_memory=" + std::to_string(launchBytes) +
        " does not fit: the kernel's fixed threadgroup arrays take " +
        std::to_string(staticBytes) +
        " bytes of shared memory (with the padding to the 1 KiB boundary "
        "where the dynamic area starts), so " + std::to_string(total) +
        " dynamic bytes make " + std::to_string(staticBytes + total) +
        ", past the " + std::to_string(state->maxSharedBytes) + " bytes " +
        state->deviceName + " gives a threadgroup");
  if (total > 48 * 1024 &&
      (allowedGeneration != generation || allowed < total)) {
    CUresult result = state->api.cuFuncSetAttribute(
        function, kFuncAttrMaxDynamicSharedSizeBytes, int(total));
    if (result != kCudaSuccess)
      throw RuntimeFailure(name + " needs " + std::to_string(total) +
                           " bytes of shared memory (threadgroup_memory=" +
                           std::to_string(launchBytes) + "), which " +
                           state->deviceName + " refused (" +
                           describeResult(state->api, result) + ")");
    allowed = total;
    allowedGeneration = generation;
  }
  return unsigned(total);
}

void CudaKernel::unload() {
  const PrimaryContext &primary = *state->primary;
  if (module && generation == primary.generation) {
    CallersContext keep(*state);
    if (state->api.cuCtxSetCurrent(primary.context) == kCudaSuccess)
      state->api.cuModuleUnload(module);
  }
  module = nullptr;
}

/// Loads a cubin, or JIT-compiles PTX, reporting the driver's log on
/// failure.
CUmodule CudaKernel::loadModule(const CudaBackend::State &state,
                                const std::string &image,
                                const std::string &kernelName) {
  char errorLog[8192] = {0};
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferSizeBytes};
  void *values[] = {errorLog, reinterpret_cast<void *>(sizeof errorLog)};
  CUmodule module = nullptr;
  CUresult result =
      state.api.cuModuleLoadDataEx(&module, image.data(), 2, options, values);
  if (result != kCudaSuccess)
    throw RuntimeFailure("loading " + kernelName + " onto " +
                         state.deviceName + " failed: " +
                         describeResult(state.api, result) +
                         (errorLog[0] ? std::string("\n") + errorLog : ""));
  return module;
}

CudaKernel &cuda::asCudaKernel(LoadedKernel &kernel) {
  auto *cudaKernel = dynamic_cast<CudaKernel *>(&kernel);
  if (!cudaKernel)
    throw DispatchError("kernel was not loaded by the CUDA backend");
  return *cudaKernel;
}

std::shared_ptr<LoadedKernel>
CudaBackend::load(const KernelArtifact &kernel,
                  const ConstantValues &constants) {
  if (kernel.cudaSource.empty())
    throw RuntimeFailure(kernel.kernelName + " has no CUDA source");
  checkLoadable(*state, kernel, constants);

  const Nvrtc &nvrtc = Nvrtc::get();
  NvrtcProgramInput program = makeCudaProgram(
      nvrtc, kernel.kernelName, kernel.cudaSource, state->arch, constants);
  bool fromCache = false;
  NvrtcOutput code = loadOrCompileCubin(nvrtc, program, fromCache);

  CallersContext keep(*state);
  state->makeCurrent();
  auto loadModule = [&] {
    auto made = std::make_shared<CudaKernel>(
        state, code.image, kernel.kernelName, "",
        kernel.cudaDynamicSharedBytes);
    made->entry(); // loads it now, so that errors show at load time
    return made;
  };
  std::shared_ptr<CudaKernel> loaded;
  try {
    loaded = loadModule();
  } catch (const RuntimeFailure &) {
    if (!fromCache)
      throw;
    // A cached image the driver rejects: dropped and compiled again.
    cubinCache().evict(cubinKey(nvrtc, program));
    code = loadOrCompileCubin(nvrtc, program, fromCache);
    loaded = loadModule();
  }
  if (kernel.cudaProducerThreads)
    checkRoleRegisters(*state, kernel, loaded->entry());

  std::string description =
      (code.isCubin ? "cubin " : "PTX ") + state->arch + " (" +
      (fromCache ? std::string("disk cache") : "NVRTC " + nvrtc.version()) +
      ")";
  if (!state->archNote.empty())
    description += ", " + state->archNote;
  loaded->description = std::move(description);
  return loaded;
}

std::string CudaBackend::describeLoadedCode(const LoadedKernel &kernel) {
  auto *cudaKernel = dynamic_cast<const CudaKernel *>(&kernel);
  return cudaKernel ? cudaKernel->description : "not a CUDA kernel";
}

std::string CudaBackend::compileForCheck(const std::string &cudaSource,
                                         const std::string &arch,
                                         const ConstantValues &constants,
                                         std::string *log) {
  const Nvrtc &nvrtc = Nvrtc::get();
  NvrtcOutput output = nvrtc.compile(
      makeCudaProgram(nvrtc, "enigma_check", cudaSource, arch, constants));
  if (log)
    *log = std::move(output.log);
  return std::move(output.image);
}

} // namespace enigma
