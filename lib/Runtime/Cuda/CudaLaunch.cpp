//===- CudaLaunch.cpp - Queueing kernels on the device --------------------===//
//
// Argument packing and the launch entry points of CudaBackend: launch,
// launchTimed, launchAsync with synchronize, and launchOnStream (the
// function-call form's path, whose slots come packed already).
//
//===----------------------------------------------------------------------===//
#include "CudaBuffer.h"
#include "CudaKernel.h"
#include "CudaLimits.h"
#include "LaunchTensorMaps.h"

#include <optional>

namespace enigma {
using namespace cuda;

namespace {

/// The launch shape every kernel takes after its parameters; same layout
/// as EnigmaCudaLaunch in enigma_cuda_abi.h.
struct LaunchShape {
  unsigned grid[3];
  unsigned partialYZ;
  unsigned threads[3];

  static LaunchShape of(Dim3 grid, Dim3 threads) {
    bool partialYZ = grid.y % threads.y != 0 || grid.z % threads.z != 0;
    return {{grid.x, grid.y, grid.z},
            partialYZ ? 1u : 0u,
            {threads.x, threads.y, threads.z}};
  }
};

/// Storage for cuLaunchKernel's argument array: one slot per parameter
/// (a device pointer, or a scalar's bytes in its own width at the slot's
/// start, as the host is little-endian), the EnigmaCudaLaunch, then the
/// tensor maps of kernels that have them.
struct LaunchArguments {
  LaunchShape launch;
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
    launch = LaunchShape::of(grid, threads);
    pointers.push_back(&launch);
    if (!artifact.cudaTensorMaps.empty()) {
      maps.emplace(api, artifact, slots.data());
      for (size_t i = 0; i < maps->count(); ++i)
        pointers.push_back(maps->pointer(i));
    }
  }
};

unsigned blocksFor(uint32_t threadsInGrid, uint32_t threadsPerBlock) {
  return unsigned((uint64_t(threadsInGrid) + threadsPerBlock - 1) /
                  threadsPerBlock);
}

/// Queues `kernel` on `stream` with cuLaunchKernel's argument array
/// `pointers`; `launchBytes` is its dynamic threadgroup array's size.
void queueKernel(CudaBackend::State &state, CudaKernel &kernel,
                 const KernelArtifact &artifact, Dim3 grid, Dim3 threads,
                 uint64_t launchBytes, CUstream stream, void **pointers) {
  Dim3 block = blockOf(artifact, grid, threads);
  unsigned shared = kernel.sharedBytesFor(launchBytes);
  CUresult result = state.api.cuLaunchKernel(
      kernel.entry(), blocksFor(grid.x, threads.x),
      blocksFor(grid.y, threads.y), blocksFor(grid.z, threads.z), block.x,
      block.y, block.z, shared, stream, pointers, nullptr);
  if (poisonsContext(result)) // an earlier launch faulted
    state.deviceFault(result, nullptr);
  if (result != kCudaSuccess)
    throw RuntimeFailure("launching " + artifact.kernelName + " failed: " +
                         describeResult(state.api, result));
}

bool boundsChecked(const KernelArtifact &artifact) {
  return !artifact.boundsCheckParams.empty();
}

/// After waiting for `artifact`'s launch (and everything queued before it):
/// a poisoning error is that kernel's fault (or an earlier one's).
void checkLaunch(CudaBackend::State &state, const KernelArtifact &artifact,
                 CUresult result) {
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

} // namespace

void CudaBackend::enqueue(LoadedKernel &kernel, const KernelArtifact &artifact,
                          const std::vector<LaunchArg> &args, Dim3 grid,
                          Dim3 threads) {
  CudaKernel &cudaKernel = asCudaKernel(kernel);
  checkThreadgroup(*state, threads);
  state->makeCurrent();
  LaunchArguments arguments(state->api, artifact, args, grid, threads);
  if (grid.volume() == 0)
    return; // an empty dispatch runs nothing, as on Metal

  uint64_t launchBytes =
      artifact.dynamicThreadgroupMemory
          ? args[dynamicThreadgroupArg(artifact)].scalar.bits
          : 0;
  queueKernel(*state, cudaKernel, artifact, grid, threads, launchBytes,
              state->stream, arguments.pointers.data());
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
  // then the launch shape, then the tensor maps (as LaunchArguments, but
  // on the stack for the usual kernel: this is the call form's hot path).
  LaunchShape shape = LaunchShape::of(grid, threads);
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

  queueKernel(*state, cudaKernel, artifact, grid, threads,
              artifact.dynamicThreadgroupMemory
                  ? slots[dynamicThreadgroupArg(artifact)]
                  : 0,
              ownStream ? state->stream : CUstream(stream), pointers);
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

} // namespace enigma
