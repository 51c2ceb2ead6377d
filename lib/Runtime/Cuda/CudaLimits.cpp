//===- CudaLimits.cpp - What a device and a launch allow ------------------===//
#include "CudaLimits.h"

#include "enigma/Support/RoleRegisters.h"

namespace enigma {
using namespace cuda;

void cuda::checkLoadable(const CudaBackend::State &state,
                         const KernelArtifact &kernel,
                         const ConstantValues &constants) {
  // The CUDA layout may pad arrays to 1 KiB boundaries (CudaSharedMemory.h).
  if (kernel.cudaDynamicSharedBytes > state.maxSharedBytes)
    throw DispatchError(
        "kernel " + kernel.kernelName + " needs " +
        std::to_string(kernel.cudaDynamicSharedBytes) +
        " bytes of shared memory on CUDA (its threadgroup arrays, large ones "
        "starting on 1 KiB boundaries); " + state.deviceName + " allows " +
        std::to_string(state.maxSharedBytes) + " per block");
  // Pipelines run a producer warpgroup with TMA copies, mbarriers with
  // transaction counts and setmaxnreg: Hopper's (docs/design/
  // warp-specialization.md).
  if (kernel.cudaProducerThreads && state.computeCapability < 90)
    throw DispatchError("kernel " + kernel.kernelName +
                        " has pipelines with roles, which need an sm_90 GPU "
                        "or newer; " + state.deviceName + " is sm_" +
                        std::to_string(state.computeCapability));
  for (const FunctionConstantUse &use : kernel.constants)
    if (!constants.count(use.index))
      throw DispatchError(kernel.kernelName + " reads function constant " +
                          std::to_string(use.index) + " (" +
                          shortName(use.dtype) +
                          ") but no value was given for it");
}

void cuda::checkRoleRegisters(const CudaBackend::State &state,
                              const KernelArtifact &kernel,
                              CUfunction function) {
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

void cuda::checkThreadgroup(const CudaBackend::State &state, Dim3 threads) {
  if (threads.x == 0 || threads.y == 0 || threads.z == 0)
    throw DispatchError("threads per threadgroup must be at least 1 in "
                        "every dimension");
  if (threads.volume() > state.maxThreads)
    throw DispatchError("threadgroup of " + std::to_string(threads.volume()) +
                        " threads exceeds the device limit of " +
                        std::to_string(state.maxThreads));
}

Dim3 cuda::blockOf(const KernelArtifact &artifact, Dim3 grid, Dim3 threads) {
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

} // namespace enigma
