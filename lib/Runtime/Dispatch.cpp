//===- Dispatch.cpp - Binding, validation and launches --------------------===//
//
// Launch shapes, the binding of a call's arguments to a kernel's
// parameters, and the Dispatcher that loads kernels and runs them. Beside
// it: NumberConversion.cpp (scalars) and PreparedKernel.cpp.
//
//===----------------------------------------------------------------------===//
#include "enigma/Runtime/Dispatch.h"
#include "enigma/Support/Error.h"

#include "enigma/Support/ProcessLife.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <optional>
#include <sstream>
#include <thread>

namespace enigma {

//===----------------------------------------------------------------------===//
// Launch shape
//===----------------------------------------------------------------------===//

namespace {
std::string formatDim3(Dim3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " +
         std::to_string(d.z) + ")";
}
} // namespace

void checkLaunchShape(Dim3 grid, Dim3 threads, uint64_t maxThreads) {
  if (grid.volume() == 0)
    throw DispatchError("grid " + formatDim3(grid) +
                        " has a zero dimension; every dimension counts "
                        "threads and must be at least 1");
  if (threads.volume() == 0)
    throw DispatchError("threads " + formatDim3(threads) +
                        " has a zero dimension; every dimension of the "
                        "threadgroup must be at least 1");
  if (threads.volume() > maxThreads)
    throw DispatchError("threads " + formatDim3(threads) + " is " +
                        std::to_string(threads.volume()) +
                        " threads per threadgroup, more than the maximum of " +
                        std::to_string(maxThreads));
  const uint32_t gridDims[3] = {grid.x, grid.y, grid.z};
  const uint32_t groupDims[3] = {threads.x, threads.y, threads.z};
  for (int d = 0; d < 3; ++d) {
    uint64_t groups = (uint64_t(gridDims[d]) + groupDims[d] - 1) / groupDims[d];
    if (groups > kMaxThreadgroupsPerGrid[d])
      throw DispatchError(
          "grid " + formatDim3(grid) + " in threadgroups of " +
          formatDim3(threads) + " is " + std::to_string(groups) +
          " threadgroups along " + "xyz"[d] + ", more than the " +
          std::to_string(kMaxThreadgroupsPerGrid[d]) +
          " every backend accepts (a GPU's limit; x: 2^31 - 1, y and z: "
          "65535 threadgroups); use larger threadgroups or fewer threads");
  }
}

void checkThreadgroupShape(const KernelArtifact &kernel, Dim3 grid,
                           Dim3 threads) {
  bool partialEdge = grid.x % threads.x || grid.y % threads.y ||
                     grid.z % threads.z;
  if (uint64_t size = kernel.threadgroupSize;
      size && (threads.volume() != size || partialEdge))
    throw DispatchError(
        "kernel " + kernel.kernelName + " runs only in threadgroups of " +
        std::to_string(size) + " threads (the size it fixes: "
        "enigma.threadgroup_size, a pipeline_ring's threads=, or a "
        "gemm_block configuration's threads, launched with "
        "config.launch(m, n)): threads " +
        formatDim3(threads) +
        (threads.volume() != size
             ? " is " + std::to_string(threads.volume()) + " threads"
             : " does not divide grid " + formatDim3(grid) +
                   " (the edge threadgroup would be partial)"));
  if (!kernel.wholeSimdgroups)
    return;
  uint64_t unit = kernel.wholeWarpgroups ? 128 : 32;
  if (threads.volume() % unit == 0 && !partialEdge)
    return;
  std::string what =
      kernel.wholeWarpgroups
          ? " has warpgroup products (four simdgroups multiply together), "
            "so its threadgroups must be whole groups of four simdgroups"
          : " holds simdgroup fragments, so its threadgroups must be whole "
            "simdgroups";
  throw DispatchError(
      "kernel " + kernel.kernelName + what + ": threads " +
      formatDim3(threads) +
      (threads.volume() % unit
           ? " is not a multiple of " + std::to_string(unit) + " threads"
           : " does not divide grid " + formatDim3(grid) +
                 " (the edge threadgroup would be partial)"));
}

void checkThreadgroupMemory(const KernelArtifact &kernel,
                            const Backend &backend) {
  uint64_t limit = backend.maxThreadgroupMemory();
  if (kernel.threadgroupMemoryBytes <= limit)
    return;
  throw DispatchError(
      "kernel " + kernel.kernelName + " uses " +
      std::to_string(kernel.threadgroupMemoryBytes) +
      " bytes of threadgroup memory; the " + backend.name() +
      " runtime's device allows " + std::to_string(limit) + " (" +
      std::to_string(limit / 1024) +
      " KiB) per threadgroup. Use smaller tiles or fewer stages for it" +
      (limit < 64 * 1024 ? " (Metal's limit is 32 KiB; CUDA GPUs of sm_90 "
                           "allow 227 KiB)"
                         : ""));
}

uint64_t checkDynamicThreadgroupMemory(const KernelArtifact &kernel,
                                       const std::optional<uint64_t> &bytes,
                                       const Backend &backend) {
  if (!kernel.dynamicThreadgroupMemory) {
    if (bytes)
      throw DispatchError(
          "kernel " + kernel.kernelName + " was given threadgroup_memory=" +
          std::to_string(*bytes) + " but has no dynamic threadgroup array "
          "(enigma.dynamic_threadgroup_alloc); leave it out");
    return 0;
  }
  if (!bytes)
    throw DispatchError(
        "kernel " + kernel.kernelName + " has a dynamic threadgroup array "
        "(enigma.dynamic_threadgroup_alloc): give its size in bytes with "
        "threadgroup_memory=");
  // Metal takes lengths in multiples of 16 bytes; every target gets that.
  const uint64_t padded = (*bytes + 15) / 16 * 16;
  const uint64_t limit = backend.maxThreadgroupMemory();
  if (*bytes > limit || kernel.threadgroupMemoryBytes + padded > limit)
    throw DispatchError(
        "kernel " + kernel.kernelName + ": threadgroup_memory=" +
        std::to_string(*bytes) + " (" + std::to_string(padded) +
        " as a multiple of 16) and its " +
        std::to_string(kernel.threadgroupMemoryBytes) +
        " bytes of threadgroup_alloc arrays need " +
        std::to_string(kernel.threadgroupMemoryBytes + padded) +
        " bytes of threadgroup memory; the " + backend.name() +
        " runtime's device allows " + std::to_string(limit) + " (" +
        std::to_string(limit / 1024) + " KiB) per threadgroup");
  return *bytes;
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

struct Dispatcher::Binding {
  enum class Source { Input, Scalar, Output };
  struct Slot {
    Source source = Source::Input;
    size_t index = 0; // into inputs, or the output's position
    size_t bytes = 0; // buffer size (inputs and outputs)
    ScalarValue scalar;
    /// The caller's device memory bound in place (into DispatchArgs, which
    /// outlives the binding), or null for a buffer the runtime allocates.
    const ArrayArg *device = nullptr;
  };
  std::vector<Slot> slots; // one per parameter
  ConstantValues constants;
};

namespace {
/// "B (f32)", or "B (f32x4)" for a vector buffer.
std::string describeParam(const KernelParam &param) {
  std::string type = shortName(param.dtype);
  if (param.vecWidth > 1)
    type += "x" + std::to_string(param.vecWidth);
  return param.name + " (" + type + ")";
}

/// A scalar's promise (enigma.Scalar(..., multiple_of=N)): the kernel may
/// have chosen aligned vector accesses on the strength of it.
void checkMultiple(const std::string &prefix, const KernelParam &param,
                   const HostNumber &value) {
  uint64_t m = param.multipleOf;
  bool ok = true;
  if (const int64_t *i = std::get_if<int64_t>(&value))
    ok = *i % int64_t(m) == 0;
  else if (const uint64_t *u = std::get_if<uint64_t>(&value))
    ok = *u % m == 0;
  if (!ok)
    throw DispatchError(prefix + ": scalar parameter " + describeParam(param) +
                        " is declared a multiple of " + std::to_string(m) +
                        " (multiple_of), got " +
                        std::visit([](auto v) { return std::to_string(v); },
                                   value) +
                        "; the kernel's vector accesses rely on it");
}

std::string describeParams(const KernelArtifact &kernel,
                           const std::vector<size_t> &indices) {
  if (indices.empty())
    return "none";
  std::string list;
  for (size_t i : indices)
    list += (list.empty() ? "" : ", ") + describeParam(kernel.params[i]);
  return list;
}

std::string plural(size_t count, const char *noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

size_t entryBytes(const KernelParam &param) {
  return byteWidth(param.dtype) * std::max(1u, param.vecWidth);
}

void checkInput(const KernelArtifact &kernel, const KernelParam &param,
                size_t inputIndex, const ArrayArg &input) {
  std::string label = "kernel " + kernel.kernelName + ": input " +
                      std::to_string(inputIndex) + " (" + param.name + ")";
  if (input.dtype != param.dtype)
    throw DispatchError(label + " has dtype " + numpyName(input.dtype) +
                        " but parameter " + param.name + " is " +
                        shortName(param.dtype));
  if (input.bytes != input.elements * byteWidth(input.dtype))
    throw DispatchError(label + " claims " + std::to_string(input.elements) +
                        " elements of " + numpyName(input.dtype) +
                        " but holds " + std::to_string(input.bytes) +
                        " bytes");
  if (input.bytes % entryBytes(param) != 0)
    throw DispatchError(label + " holds " + std::to_string(input.bytes) +
                        " bytes, not a whole number of " +
                        std::to_string(entryBytes(param)) +
                        "-byte entries of parameter " + describeParam(param));
  if (input.bytes > 0 && !input.data && !input.onDevice)
    throw DispatchError(label + " has no data");
}

void checkOutputArray(const KernelArtifact &kernel, const KernelParam &param,
                      size_t outputIndex, const ArrayArg &output) {
  std::string label = "kernel " + kernel.kernelName + ": output " +
                      std::to_string(outputIndex) + " (" + param.name + ")";
  if (!output.onDevice)
    throw DispatchError(label + " must be a device array; outputs in host "
                        "memory are returned by the runtime (give their "
                        "size instead)");
  if (output.dtype != param.dtype)
    throw DispatchError(label + " has dtype " + numpyName(output.dtype) +
                        " but parameter " + param.name + " is " +
                        shortName(param.dtype));
  if (output.bytes == 0 || output.bytes % entryBytes(param) != 0)
    throw DispatchError(label + " holds " + std::to_string(output.bytes) +
                        " bytes, not a non-zero whole number of " +
                        std::to_string(entryBytes(param)) +
                        "-byte entries of parameter " + describeParam(param));
}

void checkOutputSize(const KernelArtifact &kernel, const KernelParam &param,
                     size_t bytes) {
  std::string label =
      "kernel " + kernel.kernelName + ": output " + describeParam(param);
  if (bytes == 0)
    throw DispatchError(label + " has size 0; give its size in bytes");
  if (bytes % entryBytes(param) != 0)
    throw DispatchError(label + " has size " + std::to_string(bytes) +
                        " bytes, not a multiple of its " +
                        std::to_string(entryBytes(param)) + "-byte element");
}

/// Inputs, scalars and outputs (sizes, or device arrays) must cover the
/// kernel's parameters exactly once, as in the original Enigma runtime:
/// scalars bind to the scalar parameters in order, inputs to the leading
/// buffer parameters and outputs to the buffer parameters after them. A
/// shortfall is never filled with extra zeroed outputs.
void checkCoverage(const KernelArtifact &kernel,
                   const std::vector<size_t> &bufferParams,
                   const std::vector<size_t> &scalarParams,
                   const DispatchArgs &args) {
  const std::string prefix = "kernel " + kernel.kernelName;
  const bool arrays = !args.outputArrays.empty();
  if (arrays && !args.outputSizes.empty())
    throw DispatchError(prefix + ": give output arrays or output sizes, "
                                 "not both");
  const size_t inputs = args.inputs.size(), scalars = args.scalars.size();
  const size_t outputs =
      arrays ? args.outputArrays.size() : args.outputSizes.size();
  if (scalars == scalarParams.size() &&
      inputs + outputs == bufferParams.size())
    return;

  // Say where each parameter's value would have come from.
  std::string binding;
  size_t nextBuffer = 0, nextScalar = 0;
  for (const KernelParam &param : kernel.params) {
    std::string source;
    if (param.kind == ParamKind::Scalar) {
      source = nextScalar < scalars ? "scalar " + std::to_string(nextScalar)
                                    : "nothing";
      ++nextScalar;
    } else if (nextBuffer < inputs) {
      source = "input " + std::to_string(nextBuffer++);
    } else {
      size_t output = nextBuffer++ - inputs;
      source = output < outputs ? "output " + std::to_string(output)
                                : "nothing";
    }
    binding += (binding.empty() ? "" : ", ") + param.name + " <- " + source;
  }
  std::vector<std::string> unused;
  for (size_t k = scalarParams.size(); k < scalars; ++k)
    unused.push_back("scalar " + std::to_string(k));
  for (size_t k = bufferParams.size(); k < inputs; ++k)
    unused.push_back("input " + std::to_string(k));
  size_t usedOutputs =
      bufferParams.size() > inputs ? bufferParams.size() - inputs : 0;
  for (size_t k = usedOutputs; k < outputs; ++k)
    unused.push_back("output " + std::to_string(k));
  for (size_t k = 0; k < unused.size(); ++k)
    binding += (k == 0 ? "; left over: " : ", ") + unused[k];

  std::vector<size_t> all(kernel.params.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  throw DispatchError(
      prefix + " has " + plural(all.size(), "parameter") + " (" +
      describeParams(kernel, all) + ") but " + plural(inputs, "input") +
      " + " + plural(scalars, "scalar") + " + " + plural(outputs, "output") +
      " = " + std::to_string(inputs + scalars + outputs) + " were given (" +
      binding + "). Every parameter takes exactly one: scalars bind to the "
      "scalar parameters in order, inputs to the buffer parameters in order, "
      "outputs to the buffer parameters after the inputs. output_size is one "
      "output; give output_sizes=[...] (one size per output) for several");
}

} // namespace

ConstantValues bindConstants(const KernelArtifact &kernel,
                             const ConstantArgs &given) {
  ConstantValues values;
  for (const FunctionConstantUse &use : kernel.constants) {
    std::string label = "function constant " + std::to_string(use.index) +
                        " (" + shortName(use.dtype) + ")";
    auto it = given.find(use.index);
    if (it == given.end())
      throw DispatchError("kernel " + kernel.kernelName + " uses " + label +
                          " but no value was given for it");
    std::optional<DType> type = parseDType(it->second.dtype);
    if (!type)
      throw DispatchError(label + ": unknown dtype '" + it->second.dtype +
                          "'");
    if (*type != use.dtype)
      throw DispatchError("kernel " + kernel.kernelName + " declares " +
                          label + " but it was given as " +
                          shortName(*type));
    values[use.index] = convertNumber(it->second.value, use.dtype, label);
  }
  // Constants the kernel does not use are ignored, as Metal does.
  return values;
}

Dispatcher::Binding Dispatcher::bind(const KernelArtifact &kernel,
                                     const DispatchArgs &args) const {
  const std::vector<KernelParam> &params = kernel.params;
  std::vector<size_t> bufferParams, scalarParams;
  for (size_t i = 0; i < params.size(); ++i)
    (params[i].kind == ParamKind::Buffer ? bufferParams : scalarParams)
        .push_back(i);
  const std::string prefix = "kernel " + kernel.kernelName;

  if (args.scalars.size() != scalarParams.size())
    throw DispatchError(prefix + " takes " +
                        plural(scalarParams.size(), "scalar") + " (" +
                        describeParams(kernel, scalarParams) + ") but " +
                        std::to_string(args.scalars.size()) + " were given");
  checkCoverage(kernel, bufferParams, scalarParams, args);
  const std::vector<size_t> &sizes = args.outputSizes;
  const std::vector<ArrayArg> &outputArrays = args.outputArrays;

  Binding binding;
  binding.slots.resize(params.size());
  size_t nextBuffer = 0, nextScalar = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam &param = params[i];
    Binding::Slot &slot = binding.slots[i];
    if (param.kind == ParamKind::Scalar) {
      if (param.vecWidth > 1)
        throw DispatchError(prefix + ": vector scalar parameter " +
                            describeParam(param) + " is not supported");
      slot.source = Binding::Source::Scalar;
      slot.index = nextScalar;
      const HostNumber &value = args.scalars[nextScalar++];
      slot.scalar = convertNumber(value, param.dtype,
                                  "scalar parameter " + describeParam(param));
      if (param.multipleOf > 1)
        checkMultiple(prefix, param, value);
    } else if (nextBuffer < args.inputs.size()) {
      const ArrayArg &input = args.inputs[nextBuffer];
      checkInput(kernel, param, nextBuffer, input);
      slot.source = Binding::Source::Input;
      slot.index = nextBuffer++;
      slot.bytes = input.bytes;
      slot.device = input.onDevice ? &input : nullptr;
    } else {
      size_t output = nextBuffer++ - args.inputs.size();
      slot.source = Binding::Source::Output;
      slot.index = output;
      if (!outputArrays.empty()) {
        checkOutputArray(kernel, param, output, outputArrays[output]);
        slot.bytes = outputArrays[output].bytes;
        slot.device = &outputArrays[output];
      } else {
        slot.bytes = sizes[output];
        checkOutputSize(kernel, param, slot.bytes);
      }
    }
  }
  binding.constants = bindConstants(kernel, args.constants);
  return binding;
}

//===----------------------------------------------------------------------===//
// Dispatcher
//===----------------------------------------------------------------------===//

Dispatcher::Dispatcher(std::shared_ptr<Backend> backend)
    : device(std::move(backend)) {
  if (!device)
    throw std::invalid_argument("Dispatcher needs a backend");
}

uint64_t Dispatcher::maxThreadsPerThreadgroup() const {
  return std::min(kMaxThreadsPerThreadgroup,
                  device->maxThreadsPerThreadgroup());
}

namespace {
/// One lock for the kernel tables of every dispatcher: held only to look up
/// and update them, never while a kernel compiles (a fork() may copy it).
ForkSafeMutex &tablesMutex() {
  static ForkSafeMutex *mutex = new ForkSafeMutex;
  return *mutex;
}

/// Kernels a dispatcher keeps loaded when nothing else uses them:
/// ENIGMA_LOADED_KERNELS, else 128.
size_t loadedKernelBound() {
  static const size_t bound = [] {
    const char *text = std::getenv("ENIGMA_LOADED_KERNELS");
    long value = text && *text ? std::strtol(text, nullptr, 10) : 0;
    return size_t(value >= 1 ? value : 128);
  }();
  return bound;
}
} // namespace

Dispatcher::~Dispatcher() = default;

std::shared_ptr<LoadedKernel>
Dispatcher::loadKernel(const KernelArtifact &kernel,
                       const ConstantValues &constants) {
  // The sources identify the kernel; a process-local hash is enough since
  // the name and constants are part of the key too.
  std::hash<std::string> hashText;
  std::ostringstream keyText;
  keyText << kernel.kernelName << '|' << std::hex << hashText(kernel.cppSource)
          << '|' << hashText(kernel.mslSource) << '|'
          << hashText(kernel.cudaSource);
  for (const auto &[index, value] : constants)
    keyText << '|' << std::dec << index << ':' << shortName(value.dtype) << '='
            << std::hex << value.bits;
  const std::string key = keyText.str();

  // The runtimes that run Metal source cannot run what Metal lacks.
  std::string backend = device->name();
  if (!kernel.metalUnsupported.empty() &&
      (backend == "metal" || backend == "metal-host"))
    throw EnigmaError("kernel " + kernel.kernelName + " cannot run on the " +
                      backend + " runtime: " + kernel.metalUnsupported +
                      ". Run it on the CPU or CUDA runtime");

  // Loading happens outside the lock, so that launches of loaded kernels
  // never wait for a compile; a second thread that wants the same kernel
  // waits for the first (polling, so that it can be interrupted) instead
  // of compiling it twice.
  for (auto lastPoll = std::chrono::steady_clock::now();;) {
    {
      std::lock_guard<ForkSafeMutex> lock(tablesMutex());
      KernelEntry &entry = kernels[key];
      std::shared_ptr<LoadedKernel> found =
          entry.kernel ? entry.kernel : entry.weak.lock();
      if (found) {
        entry.kernel = found;
        entry.lastUse = ++useClock;
        return found;
      }
      // A load in flight in another thread, unless that thread was in the
      // parent of this fork()ed child (and does not exist here).
      if (!entry.loading || entry.loadingGeneration != forkGeneration()) {
        entry.loading = true;
        entry.loadingGeneration = forkGeneration();
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (auto now = std::chrono::steady_clock::now();
        now - lastPoll >= kInterruptPollInterval) {
      lastPoll = now;
      if (interruptRequested())
        throw Interrupted("waiting for kernel " + kernel.kernelName +
                          " to compile was interrupted");
    }
  }

  std::shared_ptr<LoadedKernel> loadedKernel;
  try {
    checkThreadgroupMemory(kernel, *device);
    loadedKernel = device->load(kernel, constants);
  } catch (...) {
    std::lock_guard<ForkSafeMutex> lock(tablesMutex());
    kernels.erase(key); // the next call tries again
    throw;
  }
  std::lock_guard<ForkSafeMutex> lock(tablesMutex());
  KernelEntry &entry = kernels[key];
  entry.loading = false;
  entry.kernel = loadedKernel;
  entry.weak = loadedKernel;
  entry.lastUse = ++useClock;
  keepRecentlyUsed();
  return loadedKernel;
}

void Dispatcher::keepRecentlyUsed() {
  const size_t bound = loadedKernelBound();
  std::vector<std::pair<uint64_t, KernelEntry *>> held;
  for (auto &[key, entry] : kernels)
    if (entry.kernel)
      held.emplace_back(entry.lastUse, &entry);
  if (held.size() > bound) {
    // The least recently used are let go (unloaded when nothing else holds
    // them; found again through `weak` while something does).
    std::nth_element(held.begin(), held.end() - bound, held.end());
    for (auto it = held.begin(); it != held.end() - bound; ++it)
      it->second->kernel.reset();
  }
  if (kernels.size() > 2 * bound + 16)
    std::erase_if(kernels, [](const auto &item) {
      const KernelEntry &entry = item.second;
      return !entry.kernel && !entry.loading && entry.weak.expired();
    });
}

void Dispatcher::materialize(const KernelArtifact &kernel,
                             const Binding &binding,
                             std::vector<std::shared_ptr<DeviceBuffer>> &buffers,
                             std::vector<LaunchArg> &launchArgs) {
  buffers.assign(kernel.params.size(), nullptr);
  launchArgs.assign(kernel.params.size(), LaunchArg{});
  for (size_t i = 0; i < binding.slots.size(); ++i) {
    const Binding::Slot &slot = binding.slots[i];
    if (slot.source == Binding::Source::Scalar) {
      launchArgs[i].scalar = slot.scalar;
      continue;
    }
    buffers[i] = slot.device
                     ? device->wrapDeviceMemory(slot.device->deviceAddress,
                                                slot.bytes)
                     : device->allocate(slot.bytes); // zero-filled
    launchArgs[i].buffer = buffers[i].get();
  }
}

std::vector<std::vector<uint8_t>>
Dispatcher::execute(const KernelArtifact &kernel, const DispatchArgs &args,
                    Dim3 grid, Dim3 threads) {
  checkLaunchShape(grid, threads, maxThreadsPerThreadgroup());
  checkThreadgroupShape(kernel, grid, threads);
  Binding binding = bind(kernel, args);
  const uint64_t threadgroupMemory =
      checkDynamicThreadgroupMemory(kernel, args.threadgroupMemory, *device);
  // Hidden parameters (dynamic threadgroup memory, bounds-checked mode)
  // come after the user's.
  std::shared_ptr<const KernelArtifact> hidden =
      BoundsCheckLaunch::hasHiddenParams(kernel)
          ? BoundsCheckLaunch::launchedArtifact(kernel)
          : nullptr;
  const KernelArtifact &launched = hidden ? *hidden : kernel;
  std::shared_ptr<LoadedKernel> loadedKernel =
      loadKernel(launched, binding.constants);

  std::vector<std::shared_ptr<DeviceBuffer>> buffers;
  std::vector<LaunchArg> launchArgs;
  materialize(kernel, binding, buffers, launchArgs);
  checkLaunchBounds(kernel, buffers, grid, launchArgs);
  if (kernel.dynamicThreadgroupMemory)
    launchArgs.push_back(
        LaunchArg{nullptr, ScalarValue{DType::U64, threadgroupMemory}});
  std::optional<BoundsCheckLaunch> boundsCheck;
  if (BoundsCheckLaunch::needed(kernel)) {
    boundsCheck.emplace(*device, hidden, buffers);
    boundsCheck->appendArgs(launchArgs);
  }
  for (size_t i = 0; i < binding.slots.size(); ++i) {
    const Binding::Slot &slot = binding.slots[i];
    if (slot.source == Binding::Source::Input && slot.bytes > 0 &&
        !slot.device)
      device->upload(*buffers[i], args.inputs[slot.index].data, slot.bytes);
  }

  if (boundsCheck)
    boundsCheck->launching(grid, threads, threadgroupMemory);
  device->launch(*loadedKernel, launched, launchArgs, grid, threads);
  if (boundsCheck)
    boundsCheck->check(*device);

  std::vector<std::vector<uint8_t>> outputs;
  for (size_t i = 0; i < binding.slots.size(); ++i) {
    const Binding::Slot &slot = binding.slots[i];
    if (slot.source != Binding::Source::Output)
      continue;
    if (slot.device) { // written in place; nothing to return
      outputs.emplace_back();
      continue;
    }
    outputs.emplace_back(slot.bytes);
    device->download(*buffers[i], outputs.back().data(), slot.bytes);
  }
  return outputs;
}

PreparedKernel Dispatcher::prepare(const KernelArtifact &kernel,
                                   const DispatchArgs &args) {
  Binding binding = bind(kernel, args);
  PreparedKernel prepared;
  prepared.threadgroupMemory =
      checkDynamicThreadgroupMemory(kernel, args.threadgroupMemory, *device);
  prepared.artifact = BoundsCheckLaunch::hasHiddenParams(kernel)
                          ? BoundsCheckLaunch::launchedArtifact(kernel)
                          : std::make_shared<const KernelArtifact>(kernel);
  prepared.kernel = loadKernel(*prepared.artifact, binding.constants);
  materialize(kernel, binding, prepared.buffers, prepared.args);
  if (kernel.dynamicThreadgroupMemory)
    prepared.args.push_back(
        LaunchArg{nullptr, ScalarValue{DType::U64, prepared.threadgroupMemory}});
  if (BoundsCheckLaunch::needed(kernel)) {
    prepared.boundsCheck = std::make_shared<BoundsCheckLaunch>(
        *device, prepared.artifact, prepared.buffers);
    prepared.boundsCheck->appendArgs(prepared.args);
  }
  for (size_t i = 0; i < binding.slots.size(); ++i) {
    const Binding::Slot &slot = binding.slots[i];
    if (slot.source == Binding::Source::Input && slot.bytes > 0 &&
        !slot.device)
      device->upload(*prepared.buffers[i], args.inputs[slot.index].data,
                     slot.bytes);
    if (slot.source == Binding::Source::Output)
      prepared.outputParams.push_back(i);
  }
  prepared.backend = device;
  prepared.kernelName = kernel.kernelName;
  prepared.onHost = device->name() != "cuda" && device->name() != "metal";
  return prepared;
}

} // namespace enigma
