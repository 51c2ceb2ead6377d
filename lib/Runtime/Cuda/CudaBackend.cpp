//===- CudaBackend.cpp - Backend over the CUDA driver API -----------------===//
#include "enigma/Runtime/CudaBackend.h"
#include "enigma/Cache/ArtifactCache.h"
#include "enigma/Support/RoleRegisters.h"

#include "CudaDriver.h"
#include "CudaProgram.h"
#include "LaunchTensorMaps.h"
#include "Nvrtc.h"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <mutex>
#include <iterator>
#include <optional>

namespace enigma {
using namespace cuda;

namespace {
/// A device's primary context as this process's backends hold it: retained
/// once, shared by every CudaBackend of the device (and, in the driver, by
/// other libraries: the CUDA runtime API, PyTorch, CuPy use it too).
/// `generation` counts resets: whatever was made in the context before one
/// (modules, streams, events, allocations) is gone.
struct PrimaryContext {
  const DriverApi &api;
  CUdevice device = 0;
  int ordinal = 0;
  CUcontext context = nullptr;
  unsigned retains = 0;
  std::atomic<uint64_t> generation{0};
  /// Why CUDA cannot be used here any more ("" while it can).
  std::string broken;

  PrimaryContext(const DriverApi &api, CUdevice device, int ordinal)
      : api(api), device(device), ordinal(ordinal) {}
  ~PrimaryContext() {
    // A reset does not release a retain (cuDevicePrimaryCtxReset), so the
    // one taken after each reset is released here too.
    for (; retains > 0; --retains)
      api.cuDevicePrimaryCtxRelease(device);
  }

  /// After an error that poisoned the context: destroys everything in it,
  /// activates it again and checks that it works. Returns "" or what
  /// failed.
  std::string reset() {
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

  /// The process's context of `ordinal`, retained on first use.
  static std::shared_ptr<PrimaryContext> get(const DriverApi &api,
                                             CUdevice device, int ordinal) {
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
};
} // namespace

struct CudaBackend::State {
  const DriverApi &api;
  std::shared_ptr<PrimaryContext> primary;
  CUdevice device = 0;
  // Made in the context's generation `generation`; gone after a reset.
  uint64_t generation = 0;
  CUstream stream = nullptr;
  CUevent start = nullptr, end = nullptr;
  CUevent handoff = nullptr; // orders our stream after a caller's stream
  int ordinal = 0;
  std::string deviceName;
  int computeCapability = 0; // 90 for sm_90
  int multiprocessors = 0;
  uint64_t maxThreads = 1024;
  uint64_t maxSharedBytes = 48 * 1024; // per block, opted in
  std::string arch;          // what NVRTC is asked for: "sm_90" / "compute_90"
  std::string archNote;      // why, when it is not the device's own cubin
  /// Kernels queued by launchAsync since the last wait, for messages.
  std::vector<std::string> queued;
  bool queuedUnchecked = false; // one of them is not bounds-checked

  explicit State(const DriverApi &api) : api(api) {}
  ~State() {
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
  bool current() const { return generation == primary->generation; }

  void createQueues() {
    // A blocking stream (flags 0): the synchronous copies on the default
    // stream wait for launches queued on it.
    check(api.cuStreamCreate(&stream, 0), "cuStreamCreate");
    check(api.cuEventCreate(&start, kEventDefault), "cuEventCreate");
    check(api.cuEventCreate(&end, kEventDefault), "cuEventCreate");
    check(api.cuEventCreate(&handoff, kEventDisableTiming), "cuEventCreate");
  }
  void destroyQueues() {
    for (CUevent event : {start, end, handoff})
      if (event)
        api.cuEventDestroy(event);
    if (stream)
      api.cuStreamDestroy(stream);
    stream = nullptr;
    start = end = handoff = nullptr;
  }

  /// The context must be current on whichever thread calls in. After a
  /// reset (by a fault here or in another backend of the device) the
  /// stream and events are made again; launches that were queued on the
  /// old ones are reported lost.
  void makeCurrent() {
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

  std::string queuedNames() const {
    std::string names;
    for (const std::string &name : queued)
      names += (names.empty() ? "" : ", ") + name;
    return names;
  }

  /// Throws unless `result` is success; an error that poisoned the context
  /// is a fault of a kernel queued earlier.
  void check(CUresult result, const char *what) {
    if (result == kCudaSuccess)
      return;
    if (poisonsContext(result))
      deviceFault(result, nullptr);
    checkResult(api, result, what);
  }

  /// Recovers from an error that poisoned the context, then throws the
  /// KernelFault naming `kernel` (and the kernels queued since the last
  /// wait; null when it is not known which one faulted).
  [[noreturn]] void deviceFault(CUresult result, const KernelArtifact *kernel) {
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
};

namespace {

/// Puts back the context the calling thread had current: the backend makes
/// its device's context current for its work, and other libraries must not
/// see that (PyTorch and CuPy read their current device from it). Not when
/// it was already ours, which a reset after a fault may have replaced.
class CallersContext {
public:
  explicit CallersContext(const CudaBackend::State &state)
      : api(state.api), ours(state.primary->context) {
    if (api.cuCtxGetCurrent(&previous) != kCudaSuccess)
      previous = ours;
  }
  ~CallersContext() {
    if (previous != ours)
      api.cuCtxSetCurrent(previous);
  }
  CallersContext(const CallersContext &) = delete;
  CallersContext &operator=(const CallersContext &) = delete;

private:
  const DriverApi &api;
  CUcontext ours;
  CUcontext previous = nullptr;
};

class CudaBuffer final : public DeviceBuffer {
public:
  CudaBuffer(std::shared_ptr<CudaBackend::State> state, CUdeviceptr pointer,
             size_t bytes, bool owned)
      : state(std::move(state)), pointer(pointer), bytes(bytes), owned(owned),
        generation(this->state->primary->generation) {}
  ~CudaBuffer() override {
    // After a reset the memory is gone, and its address may belong to a
    // newer allocation: never free it then.
    const PrimaryContext &primary = *state->primary;
    if (owned && generation == primary.generation) {
      CallersContext keep(*state);
      if (state->api.cuCtxSetCurrent(primary.context) == kCudaSuccess)
        state->api.cuMemFree(pointer);
    }
  }
  size_t size() const override { return bytes; }

  /// The device address; throws when the memory went with a context reset.
  CUdeviceptr address() const {
    if (generation != state->primary->generation)
      throw RuntimeFailure(
          std::string(owned ? "a buffer of this CUDA runtime"
                            : "a device array bound to this CUDA runtime") +
          " was made before the CUDA context of device " +
          std::to_string(state->ordinal) +
          " was reset after a kernel faulted, and is gone; " +
          (owned ? "prepare the kernel again" : "bind a new array"));
    return pointer;
  }

  std::shared_ptr<CudaBackend::State> state;
  CUdeviceptr pointer;
  size_t bytes;
  bool owned;
  uint64_t generation; // of the context the memory belongs to
};

/// A loaded kernel keeps its image, so that after a context reset it loads
/// itself again at the next launch (the Dispatcher caches these objects).
class CudaKernel final : public LoadedKernel {
public:
  CudaKernel(std::shared_ptr<CudaBackend::State> state, std::string image,
             std::string name, std::string description,
             uint64_t dynamicShared)
      : state(std::move(state)), image(std::move(image)),
        name(std::move(name)), description(std::move(description)),
        dynamicShared(dynamicShared) {}
  ~CudaKernel() override { unload(); }

  /// The entry point in the current context (which must be current).
  CUfunction entry() {
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

  /// Dynamic shared memory of a launch whose dynamic threadgroup array
  /// takes `launchBytes` (0: the kernel has none): after the threadgroup
  /// arrays carved out of it, on a 16-byte boundary (CudaEmitter). Beyond
  /// 48 KiB the function is allowed that much first.
  unsigned sharedBytesFor(uint64_t launchBytes) {
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

  std::shared_ptr<CudaBackend::State> state;
  std::string image;
  std::string name;
  std::string description;
  /// Bytes of dynamic shared memory each launch passes (the threadgroup
  /// arrays beyond 48 KiB); a dynamic threadgroup array adds its own.
  uint64_t dynamicShared = 0;
  /// What sharedBytesFor last allowed, for the module of `generation`.
  uint64_t allowed = 0;
  uint64_t allowedGeneration = ~uint64_t(0);

private:
  static CUmodule loadModule(const CudaBackend::State &state,
                             const std::string &image,
                             const std::string &kernelName);
  void unload() {
    const PrimaryContext &primary = *state->primary;
    if (module && generation == primary.generation) {
      CallersContext keep(*state);
      if (state->api.cuCtxSetCurrent(primary.context) == kCudaSuccess)
        state->api.cuModuleUnload(module);
    }
    module = nullptr;
  }

  CUmodule module = nullptr;
  CUfunction function = nullptr;
  uint64_t generation = 0;
};

const CudaBuffer &asCudaBuffer(const DeviceBuffer &buffer) {
  auto *cudaBuffer = dynamic_cast<const CudaBuffer *>(&buffer);
  if (!cudaBuffer)
    throw DispatchError("buffer was not made by the CUDA backend");
  return *cudaBuffer;
}

CudaKernel &asCudaKernel(LoadedKernel &kernel) {
  auto *cudaKernel = dynamic_cast<CudaKernel *>(&kernel);
  if (!cudaKernel)
    throw DispatchError("kernel was not loaded by the CUDA backend");
  return *cudaKernel;
}

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

/// A kernel with pipeline roles hangs in setmaxnreg.inc when the roles
/// need more registers than its block holds from launch on, and no
/// bounds-checked wait can report that (the warps wait inside the
/// instruction). The verifier judged the count ptxas was expected to use;
/// here the count of the loaded code decides, before anything runs.
void checkRoleRegisters(const CudaBackend::State &state,
                        const KernelArtifact &kernel, CUfunction function) {
  if (!kernel.cudaProducerRegisters || !kernel.cudaConsumerRegisters)
    return; // no roles recorded: nothing to judge
  int used = 0;
  if (state.api.cuFuncGetAttribute(&used, kFuncAttrNumRegs, function) !=
          kCudaSuccess ||
      used <= 0)
    return; // not reported: the verifier's judgement stands
  uint64_t consumers = kernel.threadgroupSize;
  std::string problem = roleRegisterProblem(
      int64_t(consumers), kernel.cudaProducerThreads,
      kernel.cudaProducerRegisters, kernel.cudaConsumerRegisters, used);
  if (!problem.empty())
    throw DispatchError("kernel " + kernel.kernelName + ": " + problem);
}

/// The process's artifact cache, shared with the other backends.
ArtifactCache &cubinCache() {
  static const std::shared_ptr<ArtifactCache> cache =
      ArtifactCache::fromEnvironment();
  return *cache;
}

/// The cache key of a compilation: everything that changes its output.
std::string cubinKey(const Nvrtc &nvrtc, const NvrtcProgramInput &program) {
  std::vector<std::string> keyParts = {"nvrtc", nvrtc.version(),
                                       program.source};
  keyParts.insert(keyParts.end(), program.options.begin(),
                  program.options.end());
  for (const auto &header : program.headers) {
    keyParts.push_back(header.first);
    keyParts.push_back(header.second);
  }
  return ArtifactCache::makeKey(
      std::vector<std::string_view>(keyParts.begin(), keyParts.end()));
}

/// The cubin or PTX for `source`, from the project's artifact cache when an
/// identical compilation was done before (by any process), else from NVRTC
/// (and then stored).
NvrtcOutput loadOrCompileCubin(const Nvrtc &nvrtc,
                               const NvrtcProgramInput &program,
                               bool &fromCache) {
  ArtifactCache &cache = cubinCache();
  std::string key = cubinKey(nvrtc, program);
  bool wantsCubin = program.options.front().find("=sm_") != std::string::npos;
  // The bytes are those of the file the cache checked (owner, mode, hash),
  // read through its descriptor.
  if (std::optional<ArtifactCache::Object> cached = cache.lookup(key)) {
    fromCache = true;
    return NvrtcOutput{cached->bytes(), wantsCubin, ""};
  }
  fromCache = false;
  NvrtcOutput output = nvrtc.compile(program);
  cache.store(key, output.image, wantsCubin ? ".cubin" : ".ptx");
  return output;
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

/// The CUDA block of a launch: kernels with simdgroup functions place
/// their threads themselves (1-D blocks); kernels with pipelines add the
/// producer warpgroup, and with a cluster need whole clusters of
/// threadgroups along x.
Dim3 blockOf(const KernelArtifact &artifact, Dim3 grid, Dim3 threads) {
  if (unsigned cluster = artifact.cudaClusterSize; cluster > 1) {
    uint64_t groups = (uint64_t(grid.x) + threads.x - 1) / threads.x;
    if (groups % cluster || grid.y > threads.y || grid.z > threads.z)
      throw DispatchError(
          "kernel " + artifact.kernelName + " runs in clusters of " +
          std::to_string(cluster) +
          " threadgroups along x: the grid must have a multiple of " +
          std::to_string(cluster) + " threadgroups in x and one in y and z, "
          "got " + std::to_string(groups) + " x " +
          std::to_string((uint64_t(grid.y) + threads.y - 1) / threads.y) +
          " x " +
          std::to_string((uint64_t(grid.z) + threads.z - 1) / threads.z));
  }
  if (!artifact.cudaLinearBlocks)
    return threads;
  return Dim3{uint32_t(threads.volume() + artifact.cudaProducerThreads), 1,
              1};
}

/// Storage for cuLaunchKernel's argument array: one slot per parameter
/// (a device pointer, or a scalar's bytes in its own width at the slot's
/// start, as the host is little-endian), the EnigmaCudaLaunch, then the
/// tensor maps of kernels that have them.
struct LaunchArguments {
  struct Launch {
    unsigned grid[3];
    unsigned partialYZ;
    unsigned threads[3];
  } launch; // same layout as EnigmaCudaLaunch in enigma_cuda_abi.h
  std::vector<uint64_t> slots;
  std::vector<void *> pointers;
  std::optional<LaunchTensorMaps> maps;

  LaunchArguments(const DriverApi &api, const KernelArtifact &artifact,
                  const std::vector<LaunchArg> &args, Dim3 grid,
                  Dim3 threads) {
    if (args.size() != artifact.params.size())
      throw DispatchError(artifact.kernelName + " takes " +
                          std::to_string(artifact.params.size()) +
                          " arguments, got " + std::to_string(args.size()));
    slots.resize(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const KernelParam &param = artifact.params[i];
      if (param.kind == ParamKind::Buffer) {
        if (!args[i].buffer)
          throw DispatchError("parameter '" + param.name + "' of " +
                              artifact.kernelName + " needs a buffer");
        slots[i] = asCudaBuffer(*args[i].buffer).address();
      } else {
        slots[i] = args[i].scalar.bits;
      }
      pointers.push_back(&slots[i]);
    }
    bool partialYZ = grid.y % threads.y != 0 || grid.z % threads.z != 0;
    launch = {{grid.x, grid.y, grid.z},
              partialYZ ? 1u : 0u,
              {threads.x, threads.y, threads.z}};
    pointers.push_back(&launch);
    if (!artifact.cudaTensorMaps.empty()) {
      maps.emplace(api, artifact, slots.data());
      for (size_t i = 0; i < maps->count(); ++i)
        pointers.push_back(maps->pointer(i));
    }
  }
};

std::string toHex(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  do {
    text.insert(text.begin(), digits[value & 15]);
    value >>= 4;
  } while (value);
  return text;
}

unsigned blocksFor(uint32_t threadsInGrid, uint32_t threadsPerBlock) {
  return unsigned((uint64_t(threadsInGrid) + threadsPerBlock - 1) /
                  threadsPerBlock);
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

std::shared_ptr<LoadedKernel>
CudaBackend::load(const KernelArtifact &kernel,
                  const ConstantValues &constants) {
  if (kernel.cudaSource.empty())
    throw RuntimeFailure(kernel.kernelName + " has no CUDA source");
  // The CUDA layout may pad arrays to 1 KiB boundaries (CudaSharedMemory.h).
  if (kernel.cudaDynamicSharedBytes > state->maxSharedBytes)
    throw DispatchError(
        "kernel " + kernel.kernelName + " needs " +
        std::to_string(kernel.cudaDynamicSharedBytes) +
        " bytes of shared memory on CUDA (its threadgroup arrays, large ones "
        "starting on 1 KiB boundaries); " + state->deviceName + " allows " +
        std::to_string(state->maxSharedBytes) + " per block");
  // Pipelines run a producer warpgroup with TMA copies, mbarriers with
  // transaction counts and setmaxnreg: Hopper's (docs/design/
  // warp-specialization.md).
  if (kernel.cudaProducerThreads && state->computeCapability < 90)
    throw DispatchError("kernel " + kernel.kernelName +
                        " has pipelines with roles, which need an sm_90 GPU "
                        "or newer; " + state->deviceName + " is sm_" +
                        std::to_string(state->computeCapability));
  for (const FunctionConstantUse &use : kernel.constants)
    if (!constants.count(use.index))
      throw DispatchError(kernel.kernelName + " reads function constant " +
                          std::to_string(use.index) + " (" +
                          shortName(use.dtype) +
                          ") but no value was given for it");

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

std::shared_ptr<DeviceBuffer> CudaBackend::allocate(size_t bytes) {
  CallersContext keep(*state);
  state->makeCurrent();
  // cuMemAlloc rejects 0 bytes; a tiny allocation keeps every buffer a
  // valid pointer to pass to a kernel.
  size_t allocated = std::max<size_t>(bytes, 16);
  CUdeviceptr pointer = 0;
  CUresult result = state->api.cuMemAlloc(&pointer, allocated);
  if (poisonsContext(result))
    state->check(result, "cuMemAlloc");
  if (result != kCudaSuccess)
    throw RuntimeFailure("allocating " + std::to_string(bytes) +
                         " bytes on " + state->deviceName + " failed: " +
                         describeResult(state->api, result));
  auto buffer = std::make_shared<CudaBuffer>(state, pointer, bytes, true);
  state->check(state->api.cuMemsetD8(pointer, 0, allocated), "cuMemsetD8");
  return buffer;
}

std::shared_ptr<DeviceBuffer>
CudaBackend::wrapDeviceMemory(uint64_t address, size_t bytes) {
  if (bytes == 0) // an empty array may have no address at all
    return allocate(0);
  if (address == 0)
    throw DispatchError("a device array of " + std::to_string(bytes) +
                        " bytes has a null address");
  // A pointer of another device (or host memory) would only fail later, as
  // an illegal address inside the kernel; say it now.
  CallersContext keep(*state);
  state->makeCurrent();
  int ordinal = -1;
  CUresult result = state->api.cuPointerGetAttribute(
      &ordinal, kPointerAttributeDeviceOrdinal, CUdeviceptr(address));
  if (result != kCudaSuccess)
    throw DispatchError("address 0x" + toHex(address) +
                        " is not CUDA memory (" +
                        describeResult(state->api, result) + ")");
  if (ordinal != state->ordinal)
    throw DispatchError("the array lives on CUDA device " +
                        std::to_string(ordinal) + " but this runtime uses "
                        "device " + std::to_string(state->ordinal));
  return std::make_shared<CudaBuffer>(state, CUdeviceptr(address), bytes,
                                      false);
}

void CudaBackend::waitForStream(uint64_t stream) {
  CallersContext keep(*state);
  state->makeCurrent();
  state->check(state->api.cuEventRecord(state->handoff, CUstream(stream)),
               "cuEventRecord on the caller's stream");
  state->check(state->api.cuStreamWaitEvent(state->stream, state->handoff, 0),
               "cuStreamWaitEvent");
}

uint64_t CudaBackend::streamHandle() const {
  return uint64_t(reinterpret_cast<uintptr_t>(state->stream));
}

uint64_t CudaBackend::devicePointer(const DeviceBuffer &buffer) {
  return asCudaBuffer(buffer).address();
}

void CudaBackend::upload(DeviceBuffer &dst, const void *src, size_t bytes) {
  const CudaBuffer &buffer = asCudaBuffer(dst);
  if (bytes > buffer.bytes)
    throw DispatchError("upload of " + std::to_string(bytes) +
                        " bytes into a " + std::to_string(buffer.bytes) +
                        "-byte buffer");
  if (bytes == 0)
    return;
  CallersContext keep(*state);
  state->makeCurrent();
  state->check(state->api.cuMemcpyHtoD(buffer.address(), src, bytes),
               "cuMemcpyHtoD");
}

void CudaBackend::download(const DeviceBuffer &src, void *dst, size_t bytes) {
  const CudaBuffer &buffer = asCudaBuffer(src);
  if (bytes > buffer.bytes)
    throw DispatchError("download of " + std::to_string(bytes) +
                        " bytes from a " + std::to_string(buffer.bytes) +
                        "-byte buffer");
  if (bytes == 0)
    return;
  CallersContext keep(*state);
  state->makeCurrent();
  state->check(state->api.cuMemcpyDtoH(dst, buffer.address(), bytes),
               "cuMemcpyDtoH");
}

void CudaBackend::enqueue(LoadedKernel &kernel, const KernelArtifact &artifact,
                          const std::vector<LaunchArg> &args, Dim3 grid,
                          Dim3 threads) {
  CudaKernel &cudaKernel = asCudaKernel(kernel);
  if (threads.x == 0 || threads.y == 0 || threads.z == 0)
    throw DispatchError("threads per threadgroup must be at least 1 in "
                        "every dimension");
  if (threads.volume() > state->maxThreads)
    throw DispatchError("threadgroup of " + std::to_string(threads.volume()) +
                        " threads exceeds the device limit of " +
                        std::to_string(state->maxThreads));
  state->makeCurrent();
  LaunchArguments arguments(state->api, artifact, args, grid, threads);
  if (grid.volume() == 0)
    return; // an empty dispatch runs nothing, as on Metal

  Dim3 block = blockOf(artifact, grid, threads);
  uint64_t launchBytes =
      artifact.dynamicThreadgroupMemory
          ? args[dynamicThreadgroupArg(artifact)].scalar.bits
          : 0;
  unsigned shared = cudaKernel.sharedBytesFor(launchBytes);
  CUresult result = state->api.cuLaunchKernel(
      cudaKernel.entry(), blocksFor(grid.x, threads.x),
      blocksFor(grid.y, threads.y), blocksFor(grid.z, threads.z), block.x,
      block.y, block.z, shared, state->stream, arguments.pointers.data(),
      nullptr);
  if (poisonsContext(result)) // an earlier launch faulted
    state->deviceFault(result, nullptr);
  if (result != kCudaSuccess)
    throw RuntimeFailure("launching " + artifact.kernelName + " failed: " +
                         describeResult(state->api, result));
}

namespace {
bool boundsChecked(const KernelArtifact &artifact) {
  return !artifact.boundsCheckParams.empty();
}
} // namespace

/// After waiting for `artifact`'s launch (and everything queued before it):
/// a poisoning error is that kernel's fault (or an earlier one's).
static void checkLaunch(CudaBackend::State &state,
                        const KernelArtifact &artifact, CUresult result) {
  if (result == kCudaSuccess) {
    state.queued.clear();
    state.queuedUnchecked = false;
    return;
  }
  if (poisonsContext(result))
    state.deviceFault(result, &artifact);
  throw RuntimeFailure(artifact.kernelName + " failed on the device: " +
                       describeResult(state.api, result));
}

void CudaBackend::launch(LoadedKernel &kernel, const KernelArtifact &artifact,
                         const std::vector<LaunchArg> &args, Dim3 grid,
                         Dim3 threads) {
  CallersContext keep(*state);
  enqueue(kernel, artifact, args, grid, threads);
  checkLaunch(*state, artifact, state->api.cuCtxSynchronize());
}

double CudaBackend::launchTimed(LoadedKernel &kernel,
                                const KernelArtifact &artifact,
                                const std::vector<LaunchArg> &args, Dim3 grid,
                                Dim3 threads) {
  CallersContext keep(*state);
  state->makeCurrent();
  state->check(state->api.cuEventRecord(state->start, state->stream),
               "cuEventRecord");
  enqueue(kernel, artifact, args, grid, threads);
  state->check(state->api.cuEventRecord(state->end, state->stream),
               "cuEventRecord");
  checkLaunch(*state, artifact, state->api.cuEventSynchronize(state->end));
  float milliseconds = 0;
  state->check(state->api.cuEventElapsedTime(&milliseconds, state->start,
                                             state->end),
               "cuEventElapsedTime");
  return double(milliseconds) * 1000.0;
}

void CudaBackend::launchAsync(LoadedKernel &kernel,
                              const KernelArtifact &artifact,
                              const std::vector<LaunchArg> &args, Dim3 grid,
                              Dim3 threads) {
  CallersContext keep(*state);
  enqueue(kernel, artifact, args, grid, threads);
  // Named in the message if it faults; a kernel queued again is named once.
  if (state->queued.empty() || state->queued.back() != artifact.kernelName) {
    if (state->queued.size() < 8)
      state->queued.push_back(artifact.kernelName);
  }
  state->queuedUnchecked |= !boundsChecked(artifact);
}

void CudaBackend::synchronize() {
  CallersContext keep(*state);
  state->makeCurrent();
  CUresult result = state->api.cuStreamSynchronize(state->stream);
  if (poisonsContext(result))
    state->deviceFault(result, nullptr);
  if (result != kCudaSuccess)
    throw RuntimeFailure("a queued CUDA kernel failed: " +
                         describeResult(state->api, result));
  state->queued.clear();
  state->queuedUnchecked = false;
}

void CudaBackend::launchOnStream(LoadedKernel &kernel,
                                 const KernelArtifact &artifact,
                                 const uint64_t *slots, Dim3 grid,
                                 Dim3 threads, uint64_t stream,
                                 bool ownStream) {
  CudaKernel &cudaKernel = asCudaKernel(kernel);
  const DriverApi &api = state->api;
  CallersContext keep(*state);
  state->makeCurrent();
  if (grid.volume() == 0)
    return;

  // cuLaunchKernel's argument array: a pointer to each parameter's slot,
  // then the launch shape (EnigmaCudaLaunch in enigma_cuda_abi.h).
  struct {
    unsigned grid[3];
    unsigned partialYZ;
    unsigned threads[3];
  } shape = {{grid.x, grid.y, grid.z},
             grid.y % threads.y != 0 || grid.z % threads.z != 0 ? 1u : 0u,
             {threads.x, threads.y, threads.z}};
  constexpr size_t kInline = 32;
  const size_t count = artifact.params.size();
  std::optional<LaunchTensorMaps> maps;
  if (!artifact.cudaTensorMaps.empty())
    maps.emplace(api, artifact, slots);
  const size_t total = count + 1 + (maps ? maps->count() : 0);
  void *inlinePointers[kInline + 1];
  std::vector<void *> heapPointers;
  void **pointers = inlinePointers;
  if (total > kInline + 1) {
    heapPointers.resize(total);
    pointers = heapPointers.data();
  }
  for (size_t i = 0; i < count; ++i)
    pointers[i] = const_cast<uint64_t *>(&slots[i]);
  pointers[count] = &shape;
  for (size_t i = 0; maps && i < maps->count(); ++i)
    pointers[count + 1 + i] = maps->pointer(i);

  Dim3 block = blockOf(artifact, grid, threads);
  unsigned shared = cudaKernel.sharedBytesFor(
      artifact.dynamicThreadgroupMemory ? slots[dynamicThreadgroupArg(artifact)]
                                        : 0);
  CUresult result = api.cuLaunchKernel(
      cudaKernel.entry(), blocksFor(grid.x, threads.x),
      blocksFor(grid.y, threads.y), blocksFor(grid.z, threads.z), block.x,
      block.y, block.z, shared, ownStream ? state->stream : CUstream(stream),
      pointers, nullptr);
  if (poisonsContext(result)) // an earlier launch faulted
    state->deviceFault(result, nullptr);
  if (result != kCudaSuccess)
    throw RuntimeFailure("launching " + artifact.kernelName + " failed: " +
                         describeResult(api, result));
}

int CudaBackend::deviceOrdinal() const { return state->ordinal; }

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
