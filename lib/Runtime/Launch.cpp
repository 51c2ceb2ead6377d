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

namespace {

/// Host arrays up to this size run on a guarded copy (below), where a
/// store up to 64 MiB past the end faults (GuardedMemory's trailing
/// guard). Up to 64 KiB GuardedMemory reuses its mappings, so the copy
/// costs ~1 us a launch; a larger one paid a fresh mapping and its page
/// faults (0.5 ms for three arrays of 256 KiB, against 7 us in place).
constexpr size_t kStagedArrayBytes = size_t(64) << 10;

/// Whether buffer argument `i` overlaps another buffer argument (aliased
/// arrays stay in place: copies would separate what the kernel shares).
bool overlapsAnother(const KernelArtifact &kernel, const DirectArg *args,
                     size_t i) {
  const uint64_t begin = args[i].value, end = begin + args[i].bytes;
  for (size_t j = 0; j < kernel.params.size(); ++j)
    if (j != i && kernel.params[j].kind != ParamKind::Scalar &&
        args[j].value < end && begin < args[j].value + args[j].bytes)
      return true;
  return false;
}

} // namespace

/// The CPU backend, and bounds-checked kernels on CUDA: the caller's memory
/// wrapped as the backend's buffers, launched and waited for. Uses no
/// members that change, so threads may launch concurrently.
///
/// On the host backends a small array of the caller sits in the malloc
/// heap, where a store a little past its end lands in the next chunk and
/// the process dies later, in free. So arrays up to kStagedArrayBytes
/// that share no memory with another argument run on a copy in the
/// backend's guarded memory (a fault instead, docs/design/cpu-faults.md)
/// and are copied back after the launch, faulted or not.
void DirectLauncher::launchWrapped(const DirectArg *args, Dim3 grid,
                                   Dim3 threads, const LaunchQueue &queue,
                                   uint64_t threadgroupMemory) {
  const KernelArtifact &kernel = *artifact;
  std::vector<std::shared_ptr<DeviceBuffer>> buffers(kernel.params.size());
  std::vector<LaunchArg> launchArgs(kernel.params.size());
  std::vector<size_t> staged;
  for (size_t i = 0; i < kernel.params.size(); ++i) {
    const KernelParam &param = kernel.params[i];
    if (param.kind == ParamKind::Scalar) {
      launchArgs[i].scalar = ScalarValue{param.dtype, args[i].value};
      continue;
    }
    const size_t bytes = args[i].bytes;
    if (!cuda && bytes > 0 && bytes <= kStagedArrayBytes &&
        !overlapsAnother(kernel, args, i)) {
      buffers[i] = device->allocate(bytes);
      device->upload(*buffers[i],
                     reinterpret_cast<const void *>(uintptr_t(args[i].value)),
                     bytes);
      staged.push_back(i);
    } else {
      buffers[i] = device->wrapDeviceMemory(args[i].value, bytes);
    }
    launchArgs[i].buffer = buffers[i].get();
  }
  auto copyBack = [&] {
    for (size_t i : staged)
      device->download(*buffers[i],
                       reinterpret_cast<void *>(uintptr_t(args[i].value)),
                       args[i].bytes);
  };
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
  try {
    device->launch(*loaded, *launched, launchArgs, grid, threads);
  } catch (...) {
    copyBack(); // what the kernel wrote before it faulted, as in place
    throw;
  }
  copyBack();
  if (boundsCheck)
    boundsCheck->check(*device);
}

} // namespace enigma
