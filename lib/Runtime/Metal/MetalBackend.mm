//===- MetalBackend.mm - Backend over Apple's Metal API -------------------===//
//
// Objective-C++ compiled with ARC (-fobjc-arc, set in CMakeLists.txt): the
// Metal objects held in C++ members and containers are retained and released
// automatically. In Objective-C++ ARC is also exception-safe by default
// (-fobjc-arc-exceptions), so strong locals are released when a C++
// exception unwinds through them.
//
// NOT YET COMPILED OR RUN: written on Linux without Apple's SDK. See
// docs/design/metal-backend.md for what a first run on a Mac should check.
//
//===----------------------------------------------------------------------===//
#include "enigma/Runtime/MetalBackend.h"

#include "enigma/Cache/ArtifactCache.h"

#import <Foundation/Foundation.h>
#import <Metal/Metal.h>
#include <TargetConditionals.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <exception>
#include <map>
#include <mutex>
#include <string_view>
#include <type_traits>
#include <vector>

#if !__has_feature(objc_arc)
#error "MetalBackend.mm must be compiled with -fobjc-arc"
#endif

// Scalars and function constants are the low bytes of a uint64_t.
static_assert(std::endian::native == std::endian::little,
              "the Metal backend assumes a little-endian host");

namespace enigma {

struct MetalBackend::State {
  id<MTLDevice> device = nil;
  id<MTLCommandQueue> queue = nil;
  id<MTLLibrary> metallib = nil; // the .metallib given, or nil
  std::string metallibPath;
  std::string deviceName;
  uint64_t maxThreads = 1024;

  std::mutex mutex; // guards both caches
  /// Libraries compiled from MSL, by hash of the source.
  std::map<std::string, id<MTLLibrary>> libraries;
  /// Pipelines by (library, kernel name, function constants).
  std::map<std::string, std::shared_ptr<LoadedKernel>> pipelines;

  std::mutex pendingMutex; // guards pending
  /// Committed by launchAsync and not yet waited for.
  std::vector<id<MTLCommandBuffer>> pending;
};

namespace {

/// Runs `body` inside an autorelease pool (threads started by Python or
/// std::thread have none) and rethrows its exception only after the pool is
/// drained, so no C++ exception unwinds through @autoreleasepool.
template <typename Body> auto inPool(Body &&body) -> decltype(body()) {
  using Result = decltype(body());
  std::exception_ptr failure;
  if constexpr (std::is_void_v<Result>) {
    @autoreleasepool {
      try {
        body();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    if (failure)
      std::rethrow_exception(failure);
  } else {
    Result result{};
    @autoreleasepool {
      try {
        result = body();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    if (failure)
      std::rethrow_exception(failure);
    return result;
  }
}

std::string toString(NSString *text) {
  const char *utf8 = text ? text.UTF8String : nullptr;
  return utf8 ? std::string(utf8) : std::string();
}

/// nil when `text` is not valid UTF-8.
NSString *toNSString(const std::string &text) {
  return [[NSString alloc] initWithBytes:text.data()
                                  length:text.size()
                                encoding:NSUTF8StringEncoding];
}

std::string describe(NSError *error) {
  std::string text = error ? toString(error.localizedDescription) : "";
  return text.empty() ? "unknown error" : text;
}

class MetalBuffer final : public DeviceBuffer {
public:
  MetalBuffer(id<MTLBuffer> buffer, size_t bytes)
      : buffer(buffer), bytes(bytes) {}
  size_t size() const override { return bytes; }

  id<MTLBuffer> buffer;
  size_t bytes; // what was asked for; the MTLBuffer may be larger
};

class MetalKernel final : public LoadedKernel {
public:
  explicit MetalKernel(id<MTLComputePipelineState> pipeline)
      : pipeline(pipeline) {}

  id<MTLComputePipelineState> pipeline;
};

const MetalBuffer &asMetalBuffer(const DeviceBuffer &buffer) {
  auto *metal = dynamic_cast<const MetalBuffer *>(&buffer);
  if (!metal)
    throw DispatchError("buffer was not made by the Metal backend");
  return *metal;
}

MetalKernel &asMetalKernel(LoadedKernel &kernel) {
  auto *metal = dynamic_cast<MetalKernel *>(&kernel);
  if (!metal)
    throw DispatchError("kernel was not loaded by the Metal backend");
  return *metal;
}

MTLDataType metalDataType(DType type) {
  switch (type) {
  case DType::F32:
    return MTLDataTypeFloat;
  case DType::F16:
    return MTLDataTypeHalf;
  case DType::BF16:
#if defined(__MAC_14_0) || defined(__IPHONE_17_0)
    if (@available(macOS 14.0, iOS 17.0, *))
      return MTLDataTypeBFloat;
#endif
    throw RuntimeFailure("bf16 function constants need macOS 14 or iOS 17 "
                         "(MTLDataTypeBFloat) and an SDK that has it");
  case DType::I8:
    return MTLDataTypeChar;
  case DType::U8:
  case DType::F8E4M3: // 8-bit floats are uchar bits in Metal
  case DType::F8E5M2:
    return MTLDataTypeUChar;
  case DType::I16:
    return MTLDataTypeShort;
  case DType::U16:
    return MTLDataTypeUShort;
  case DType::I32:
    return MTLDataTypeInt;
  case DType::U32:
    return MTLDataTypeUInt;
  case DType::I64:
    return MTLDataTypeLong;
  case DType::U64:
    return MTLDataTypeULong;
  case DType::Bool:
    return MTLDataTypeBool;
  }
  throw RuntimeFailure("function constant of an unknown dtype");
}

/// The default device; on macOS, where a command-line process may get nil
/// from MTLCreateSystemDefaultDevice, the first of all devices.
id<MTLDevice> openDevice() {
  id<MTLDevice> device = MTLCreateSystemDefaultDevice();
#if TARGET_OS_OSX
  if (!device)
    device = MTLCopyAllDevices().firstObject;
#endif
  return device;
}

/// dispatchThreads: (a partial edge threadgroup) needs non-uniform
/// threadgroup support: Apple4+ GPUs and every Mac2-family GPU.
bool supportsNonUniformThreadgroups(id<MTLDevice> device) {
  if (@available(macOS 10.15, iOS 13.0, *))
    return [device supportsFamily:MTLGPUFamilyApple4] ||
           [device supportsFamily:MTLGPUFamilyMac2];
  return true; // older systems: let Metal's validation decide
}

/// The library compiled from `kernel.mslSource`, compiled once per source.
/// The caller holds state.mutex.
id<MTLLibrary> compiledLibrary(MetalBackend::State &state,
                               const KernelArtifact &kernel) {
  std::string key = ArtifactCache::contentHash(kernel.mslSource);
  auto found = state.libraries.find(key);
  if (found != state.libraries.end())
    return found->second;

  NSString *source = toNSString(kernel.mslSource);
  if (!source)
    throw RuntimeFailure("the Metal source of " + kernel.kernelName +
                         " is not valid UTF-8");
  MTLCompileOptions *options = [[MTLCompileOptions alloc] init];
  // IEEE NaN/inf and rounding, as on the CPU and CUDA backends (the xcrun
  // pipeline passes -fno-fast-math for the same reason).
  options.fastMathEnabled = NO;
  NSError *error = nil;
  // A library may come back together with an error that only holds
  // warnings; only a nil library is a failure.
  id<MTLLibrary> library = [state.device newLibraryWithSource:source
                                                      options:options
                                                        error:&error];
  if (!library)
    throw RuntimeFailure("compiling the Metal source of " + kernel.kernelName +
                         " failed: " + describe(error));
  state.libraries.emplace(key, library);
  return library;
}

/// The kernel function, specialised with the function constant values.
id<MTLFunction> kernelFunction(id<MTLLibrary> library,
                               const std::string &where,
                               const KernelArtifact &kernel,
                               const ConstantValues &constants) {
  NSString *name = toNSString(kernel.kernelName);
  if (!name)
    throw RuntimeFailure("kernel name is not valid UTF-8");
  id<MTLFunction> function = nil;
  if (constants.empty()) {
    function = [library newFunctionWithName:name];
    if (!function)
      throw RuntimeFailure(where + " does not define kernel " +
                           kernel.kernelName);
  } else {
    // setConstantValue copies, but keep the bytes alive until the call
    // that reads them anyway.
    std::vector<uint64_t> bits;
    bits.reserve(constants.size());
    MTLFunctionConstantValues *values =
        [[MTLFunctionConstantValues alloc] init];
    for (const auto &[index, value] : constants) {
      bits.push_back(value.bits);
      [values setConstantValue:&bits.back()
                          type:metalDataType(value.dtype)
                       atIndex:NSUInteger(index)];
    }
    NSError *error = nil;
    function = [library newFunctionWithName:name
                             constantValues:values
                                      error:&error];
    if (!function)
      throw RuntimeFailure("specialising kernel " + kernel.kernelName +
                           " from " + where +
                           " with its function constants failed: " +
                           describe(error));
  }
  if (function.functionType != MTLFunctionTypeKernel)
    throw RuntimeFailure(kernel.kernelName + " in " + where +
                         " is not a kernel function");
  return function;
}

std::string pipelineKey(const MetalBackend::State &state,
                        const KernelArtifact &kernel,
                        const ConstantValues &constants) {
  std::vector<std::string> constantText;
  for (const auto &[index, value] : constants)
    constantText.push_back(std::to_string(index) + ":" +
                           shortName(value.dtype) + "=" +
                           std::to_string(value.bits));
  std::vector<std::string_view> parts = {
      "metal-pipeline-1", state.metallibPath, kernel.kernelName,
      state.metallib ? std::string_view() : std::string_view(kernel.mslSource)};
  parts.insert(parts.end(), constantText.begin(), constantText.end());
  return ArtifactCache::makeKey(parts);
}

/// Checks a launch and returns the MTLBuffer of each buffer parameter (nil
/// for scalars). Everything that can fail is checked here, before encoding
/// starts: an encoder released without endEncoding is a fatal Metal error.
std::vector<id<MTLBuffer>> checkedLaunch(const MetalBackend::State &state,
                                         const MetalKernel &kernel,
                                         const KernelArtifact &artifact,
                                         const std::vector<LaunchArg> &args,
                                         Dim3 threads) {
  if (args.size() != artifact.params.size())
    throw DispatchError(artifact.kernelName + " takes " +
                        std::to_string(artifact.params.size()) +
                        " arguments, got " + std::to_string(args.size()));
  if (threads.x == 0 || threads.y == 0 || threads.z == 0)
    throw DispatchError("threads per threadgroup must be at least 1 in "
                        "every dimension");
  uint64_t pipelineLimit = kernel.pipeline.maxTotalThreadsPerThreadgroup;
  if (threads.volume() > pipelineLimit)
    throw DispatchError("threadgroup of " + std::to_string(threads.volume()) +
                        " threads exceeds the " +
                        std::to_string(pipelineLimit) +
                        " threads that Metal allows for " +
                        artifact.kernelName + " on " + state.deviceName);
  std::vector<id<MTLBuffer>> buffers(args.size(), nil);
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelParam &param = artifact.params[i];
    if (param.kind != ParamKind::Buffer)
      continue;
    if (!args[i].buffer)
      throw DispatchError("parameter '" + param.name + "' of " +
                          artifact.kernelName + " needs a buffer");
    buffers[i] = asMetalBuffer(*args[i].buffer).buffer;
  }
  return buffers;
}

/// Encodes one dispatch into a new command buffer and commits it. Call
/// inside an autorelease pool, with arguments checked by checkedLaunch.
id<MTLCommandBuffer> commitLaunch(MetalBackend::State &state,
                                  const MetalKernel &kernel,
                                  const KernelArtifact &artifact,
                                  const std::vector<LaunchArg> &args,
                                  const std::vector<id<MTLBuffer>> &buffers,
                                  Dim3 grid, Dim3 threads) {
  id<MTLCommandBuffer> commands = [state.queue commandBuffer];
  if (!commands)
    throw RuntimeFailure("could not create a Metal command buffer on " +
                         state.deviceName);
  commands.label = toNSString(artifact.kernelName); // names it in errors
  id<MTLComputeCommandEncoder> encoder = [commands computeCommandEncoder];
  if (!encoder)
    throw RuntimeFailure("could not create a Metal compute encoder on " +
                         state.deviceName);
  [encoder setComputePipelineState:kernel.pipeline];
  for (size_t i = 0; i < args.size(); ++i) {
    const KernelParam &param = artifact.params[i];
    if (param.kind == ParamKind::Buffer) {
      [encoder setBuffer:buffers[i] offset:0 atIndex:NSUInteger(i)];
    } else {
      // setBytes copies the bytes into the command buffer.
      uint64_t bits = args[i].scalar.bits;
      [encoder setBytes:&bits
                 length:byteWidth(param.dtype)
                atIndex:NSUInteger(i)];
    }
  }
  // The dynamic threadgroup array, [[threadgroup(0)]]: Metal takes
  // lengths in multiples of 16 bytes.
  if (artifact.dynamicThreadgroupMemory) {
    uint64_t bytes = args[dynamicThreadgroupArg(artifact)].scalar.bits;
    [encoder setThreadgroupMemoryLength:NSUInteger((bytes + 15) / 16 * 16)
                                atIndex:0];
  }
  [encoder dispatchThreads:MTLSizeMake(grid.x, grid.y, grid.z)
      threadsPerThreadgroup:MTLSizeMake(threads.x, threads.y, threads.z)];
  [encoder endEncoding];
  [commands commit];
  return commands;
}

/// "" when the finished command buffer completed, else what went wrong.
std::string failureOf(id<MTLCommandBuffer> commands) {
  if (commands.status == MTLCommandBufferStatusCompleted)
    return "";
  return toString(commands.label) + " failed: " + describe(commands.error);
}

} // namespace

//===----------------------------------------------------------------------===//
// MetalBackend
//===----------------------------------------------------------------------===//

MetalBackend::MetalBackend(const std::string &metallibPath) {
  state = inPool([&]() -> std::shared_ptr<State> {
    auto s = std::make_shared<State>();
    s->device = openDevice();
    if (!s->device)
      throw BackendUnavailable(
          "no Metal device: MTLCreateSystemDefaultDevice() returned nil; use "
          "enigma.CpuRuntime()");
    s->deviceName = toString(s->device.name);
    if (!supportsNonUniformThreadgroups(s->device))
      throw BackendUnavailable(
          "the Metal device " + s->deviceName +
          " lacks non-uniform threadgroup sizes, which Enigma's dispatch "
          "(dispatchThreads) needs; use enigma.CpuRuntime()");
    MTLSize limit = s->device.maxThreadsPerThreadgroup;
    uint64_t volume = uint64_t(limit.width) * uint64_t(limit.height) *
                      uint64_t(limit.depth);
    s->maxThreads = std::min<uint64_t>(1024, volume);

    s->queue = [s->device newCommandQueue];
    if (!s->queue)
      throw RuntimeFailure("could not create a Metal command queue on " +
                           s->deviceName);

    if (!metallibPath.empty()) {
      NSString *path = toNSString(metallibPath);
      if (!path)
        throw RuntimeFailure("the .metallib path is not valid UTF-8");
      NSError *error = nil;
      s->metallib = [s->device newLibraryWithURL:[NSURL fileURLWithPath:path]
                                           error:&error];
      if (!s->metallib)
        throw RuntimeFailure("cannot load the Metal library " + metallibPath +
                             ": " + describe(error));
      s->metallibPath = metallibPath;
    }
    return s;
  });
}

MetalBackend::~MetalBackend() = default;

uint64_t MetalBackend::maxThreadsPerThreadgroup() const {
  return state->maxThreads;
}

const std::string &MetalBackend::deviceName() const {
  return state->deviceName;
}

std::shared_ptr<LoadedKernel>
MetalBackend::load(const KernelArtifact &kernel,
                   const ConstantValues &constants) {
  for (const FunctionConstantUse &use : kernel.constants)
    if (!constants.count(use.index))
      throw DispatchError(kernel.kernelName + " reads function constant " +
                          std::to_string(use.index) + " (" +
                          shortName(use.dtype) +
                          ") but no value was given for it");
  if (!state->metallib && kernel.mslSource.empty())
    throw RuntimeFailure(kernel.kernelName + " has no Metal source");

  std::string key = pipelineKey(*state, kernel, constants);
  return inPool([&]() -> std::shared_ptr<LoadedKernel> {
    // Held while compiling, so two threads never compile the same kernel.
    std::lock_guard<std::mutex> lock(state->mutex);
    auto found = state->pipelines.find(key);
    if (found != state->pipelines.end())
      return found->second;

    id<MTLLibrary> library =
        state->metallib ? state->metallib : compiledLibrary(*state, kernel);
    std::string where = state->metallib
                            ? "the Metal library " + state->metallibPath
                            : "the Metal source of " + kernel.kernelName;
    id<MTLFunction> function = kernelFunction(library, where, kernel, constants);

    NSError *error = nil;
    id<MTLComputePipelineState> pipeline =
        [state->device newComputePipelineStateWithFunction:function
                                                     error:&error];
    if (!pipeline)
      throw RuntimeFailure("building the compute pipeline of " +
                           kernel.kernelName + " on " + state->deviceName +
                           " failed: " + describe(error));
    auto loaded = std::make_shared<MetalKernel>(pipeline);
    state->pipelines.emplace(key, loaded);
    return loaded;
  });
}

std::shared_ptr<DeviceBuffer> MetalBackend::allocate(size_t bytes) {
  if (bytes > state->device.maxBufferLength)
    throw RuntimeFailure("a " + std::to_string(bytes) +
                         "-byte buffer exceeds the largest buffer " +
                         state->deviceName + " allows (" +
                         std::to_string(state->device.maxBufferLength) +
                         " bytes)");
  // A zero-length MTLBuffer cannot be made; a small one keeps every buffer
  // bindable.
  size_t allocated = std::max<size_t>(bytes, 16);
  id<MTLBuffer> buffer =
      [state->device newBufferWithLength:allocated
                                 options:MTLResourceStorageModeShared];
  if (!buffer)
    throw RuntimeFailure("allocating " + std::to_string(bytes) +
                         " bytes on " + state->deviceName + " failed");
  std::memset(buffer.contents, 0, allocated);
  return std::make_shared<MetalBuffer>(buffer, bytes);
}

void MetalBackend::upload(DeviceBuffer &dst, const void *src, size_t bytes) {
  const MetalBuffer &buffer = asMetalBuffer(dst);
  if (bytes > buffer.bytes)
    throw DispatchError("upload of " + std::to_string(bytes) +
                        " bytes into a " + std::to_string(buffer.bytes) +
                        "-byte buffer");
  synchronize(); // a queued kernel may still use the buffer
  if (bytes > 0)
    std::memcpy(buffer.buffer.contents, src, bytes);
}

void MetalBackend::download(const DeviceBuffer &src, void *dst, size_t bytes) {
  const MetalBuffer &buffer = asMetalBuffer(src);
  if (bytes > buffer.bytes)
    throw DispatchError("download of " + std::to_string(bytes) +
                        " bytes from a " + std::to_string(buffer.bytes) +
                        "-byte buffer");
  synchronize(); // a queued kernel may still write the buffer
  if (bytes > 0)
    std::memcpy(dst, buffer.buffer.contents, bytes);
}

double MetalBackend::run(LoadedKernel &kernel, const KernelArtifact &artifact,
                         const std::vector<LaunchArg> &args, Dim3 grid,
                         Dim3 threads) {
  MetalKernel &metalKernel = asMetalKernel(kernel);
  std::vector<id<MTLBuffer>> buffers =
      checkedLaunch(*state, metalKernel, artifact, args, threads);
  if (grid.volume() == 0)
    return 0.0; // an empty dispatch runs nothing

  return inPool([&]() -> double {
    auto hostStart = std::chrono::steady_clock::now();
    id<MTLCommandBuffer> commands = commitLaunch(
        *state, metalKernel, artifact, args, buffers, grid, threads);
    [commands waitUntilCompleted];
    auto hostElapsed = std::chrono::steady_clock::now() - hostStart;

    std::string failure = failureOf(commands);
    if (!failure.empty())
      throw RuntimeFailure(failure + " (on " + state->deviceName + ")");
    if (@available(macOS 10.15, iOS 10.3, *)) {
      double seconds = commands.GPUEndTime - commands.GPUStartTime;
      if (seconds > 0)
        return seconds * 1e6;
    }
    // No GPU timestamps: the host's view of encode-to-completion.
    return std::chrono::duration<double, std::micro>(hostElapsed).count();
  });
}

void MetalBackend::launch(LoadedKernel &kernel, const KernelArtifact &artifact,
                          const std::vector<LaunchArg> &args, Dim3 grid,
                          Dim3 threads) {
  run(kernel, artifact, args, grid, threads);
}

double MetalBackend::launchTimed(LoadedKernel &kernel,
                                 const KernelArtifact &artifact,
                                 const std::vector<LaunchArg> &args, Dim3 grid,
                                 Dim3 threads) {
  return run(kernel, artifact, args, grid, threads);
}

void MetalBackend::launchAsync(LoadedKernel &kernel,
                               const KernelArtifact &artifact,
                               const std::vector<LaunchArg> &args, Dim3 grid,
                               Dim3 threads) {
  MetalKernel &metalKernel = asMetalKernel(kernel);
  std::vector<id<MTLBuffer>> buffers =
      checkedLaunch(*state, metalKernel, artifact, args, threads);
  if (grid.volume() == 0)
    return;
  inPool([&] {
    id<MTLCommandBuffer> commands = commitLaunch(
        *state, metalKernel, artifact, args, buffers, grid, threads);
    std::lock_guard<std::mutex> lock(state->pendingMutex);
    // Forget finished launches; failed ones stay to be reported.
    auto &pending = state->pending;
    pending.erase(std::remove_if(pending.begin(), pending.end(),
                                 [](id<MTLCommandBuffer> queued) {
                                   return queued.status ==
                                          MTLCommandBufferStatusCompleted;
                                 }),
                  pending.end());
    pending.push_back(commands);
  });
}

void MetalBackend::synchronize() {
  std::vector<id<MTLCommandBuffer>> waiting;
  {
    std::lock_guard<std::mutex> lock(state->pendingMutex);
    waiting.swap(state->pending);
  }
  if (waiting.empty())
    return;
  std::string failure;
  inPool([&] {
    for (id<MTLCommandBuffer> commands : waiting) {
      [commands waitUntilCompleted];
      if (failure.empty())
        failure = failureOf(commands);
    }
  });
  if (!failure.empty())
    throw RuntimeFailure("a queued Metal launch failed: " + failure);
}

} // namespace enigma
