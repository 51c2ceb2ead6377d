//===- Launch.cpp - Launches on the caller's memory and queue -------------===//
#include "enigma/Runtime/Launch.h"

#include "enigma/Runtime/BoundsCheck.h"
#include "enigma/Runtime/CudaBackend.h"

#include <algorithm>
#include <optional>

namespace enigma {

/// A parameter's size for checkLaunchBounds, which reads only size().
struct DirectLauncher::SizedBuffer final : DeviceBuffer {
  size_t bytes = 0;
  size_t size() const override { return bytes; }
};

DirectLauncher::DirectLauncher(std::shared_ptr<Backend> backend,
                               const KernelArtifact &kernel,
                               const ConstantArgs &constants)
    : device(std::move(backend)),
      artifact(std::make_shared<const KernelArtifact>(kernel)) {
  if (!device)
    throw std::invalid_argument("DirectLauncher needs a backend");
  const ConstantValues constantValues = bindConstants(kernel, constants);
  for (const KernelParam &param : kernel.params)
    if (param.kind == ParamKind::Scalar && param.vecWidth > 1)
      throw DispatchError("kernel " + kernel.kernelName +
                          ": vector scalar parameter " + param.name +
                          " is not supported");
  cuda = dynamic_cast<CudaBackend *>(device.get());
  launched = BoundsCheckLaunch::hasHiddenParams(kernel)
                 ? BoundsCheckLaunch::launchedArtifact(kernel)
                 : artifact;
  checkThreadgroupMemory(kernel, *device);
  loaded = device->load(*launched, constantValues);
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    if (kernel.params[i].kind != ParamKind::Buffer) {
      sizes.push_back(nullptr);
      sizeViews.push_back(nullptr);
      continue;
    }
    auto sized = std::make_shared<SizedBuffer>();
    sizeViews.push_back(sized.get());
    sizes.push_back(std::move(sized));
  }
  slots.resize(kernel.params.size());
}

DirectLauncher::~DirectLauncher() = default;

uint64_t DirectLauncher::scalarBits(size_t param,
                                    const HostNumber &value) const {
  const KernelParam &p = artifact->params.at(param);
  std::string type = shortName(p.dtype);
  ScalarValue converted =
      convertNumber(value, p.dtype, "scalar parameter " + p.name + " (" +
                                        type + ")");
  if (p.multipleOf > 1) {
    // The promise is about the value given (a negative int included).
    bool ok = true;
    std::string shown;
    if (const int64_t *i = std::get_if<int64_t>(&value)) {
      ok = *i % int64_t(p.multipleOf) == 0;
      shown = std::to_string(*i);
    } else if (const uint64_t *u = std::get_if<uint64_t>(&value)) {
      ok = *u % p.multipleOf == 0;
      shown = std::to_string(*u);
    }
    if (!ok)
      throw DispatchError("kernel " + artifact->kernelName +
                          ": scalar parameter " + p.name + " (" + type +
                          ") is declared a multiple of " +
                          std::to_string(p.multipleOf) +
                          " (multiple_of), got " + shown +
                          "; the kernel's vector accesses rely on it");
  }
  return converted.bits;
}

void DirectLauncher::launch(const DirectArg *args, Dim3 grid, Dim3 threads,
                            const LaunchQueue &queue,
                            std::optional<uint64_t> threadgroupMemory) {
  checkLaunchShape(grid, threads,
                   std::min(kMaxThreadsPerThreadgroup,
                            device->maxThreadsPerThreadgroup()));
  checkThreadgroupShape(*artifact, grid, threads);
  uint64_t dynamicBytes =
      checkDynamicThreadgroupMemory(*artifact, threadgroupMemory, *device);
  if (!cuda || launched != artifact) {
    launchWrapped(args, grid, threads, queue, dynamicBytes);
    return;
  }
  // The CUDA fast path: no buffer objects, sizes in reused members.
  const size_t count = artifact->params.size();
  for (size_t i = 0; i < count; ++i)
    if (sizeViews[i])
      sizeViews[i]->bytes = args[i].bytes;
  for (size_t i = 0; i < count; ++i)
    slots[i] = args[i].value;
  checkLaunchBounds(*artifact, sizes, grid,
                       [&](unsigned i) { return slots[i]; });
  cuda->launchOnStream(*loaded, *launched, slots.data(), grid, threads,
                       queue.stream, queue.ownStream);
  if (queue.wait)
    cuda->synchronize();
}

/// The CPU backend, and bounds-checked kernels on CUDA: the caller's memory
/// wrapped as the backend's buffers, launched and waited for. Uses no
/// members that change, so threads may launch concurrently.
void DirectLauncher::launchWrapped(const DirectArg *args, Dim3 grid,
                                   Dim3 threads, const LaunchQueue &queue,
                                   uint64_t threadgroupMemory) {
  const KernelArtifact &kernel = *artifact;
  std::vector<std::shared_ptr<DeviceBuffer>> buffers(kernel.params.size());
  std::vector<LaunchArg> launchArgs(kernel.params.size());
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const KernelParam &param = kernel.params[i];
    if (param.kind == ParamKind::Scalar) {
      launchArgs[i].scalar = ScalarValue{param.dtype, args[i].value};
      continue;
    }
    buffers[i] = device->wrapDeviceMemory(args[i].value, args[i].bytes);
    launchArgs[i].buffer = buffers[i].get();
  }
  checkLaunchBounds(kernel, buffers, grid, launchArgs);
  if (kernel.dynamicThreadgroupMemory)
    launchArgs.push_back(
        LaunchArg{nullptr, ScalarValue{DType::U64, threadgroupMemory}});
  std::optional<BoundsCheckLaunch> boundsCheck;
  if (BoundsCheckLaunch::needed(kernel)) {
    boundsCheck.emplace(*device, launched, buffers);
    boundsCheck->appendArgs(launchArgs);
    boundsCheck->launching(grid, threads, threadgroupMemory);
  }
  // Backend::launch queues on the backend's own stream and waits: after
  // the caller's work, when that is on another stream.
  if (cuda && !queue.ownStream)
    cuda->waitForStream(queue.stream);
  device->launch(*loaded, *launched, launchArgs, grid, threads);
  if (boundsCheck)
    boundsCheck->check(*device);
}

} // namespace enigma
