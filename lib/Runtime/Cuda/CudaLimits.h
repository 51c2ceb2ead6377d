//===- CudaLimits.h - What a device and a launch allow ----------*- C++ -*-===//
//
// The checks that turn a kernel the device cannot run, or a launch it
// cannot take, into a clear DispatchError before anything is queued:
// shared memory, architecture, function constants, threadgroup size,
// cluster shape and the register budget of pipeline roles.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_CUDALIMITS_H
#define ENIGMA_LIB_RUNTIME_CUDA_CUDALIMITS_H

#include "CudaContext.h"

namespace enigma::cuda {

/// Throws unless the device can run `kernel` with `constants`: its
/// threadgroup arrays fit the device's shared memory, its pipeline roles
/// have Hopper, and every function constant it reads has a value.
void checkLoadable(const CudaBackend::State &state,
                   const KernelArtifact &kernel,
                   const ConstantValues &constants);

/// A kernel with pipeline roles hangs in setmaxnreg.inc when the roles
/// need more registers than its block holds from launch on, and no
/// bounds-checked wait can report that (the warps wait inside the
/// instruction). The verifier judged the count ptxas was expected to use;
/// here the count of the loaded code decides, before anything runs.
void checkRoleRegisters(const CudaBackend::State &state,
                        const KernelArtifact &kernel, CUfunction function);

/// Throws unless `threads` is a threadgroup the device takes.
void checkThreadgroup(const CudaBackend::State &state, Dim3 threads);

/// The CUDA block of a launch: kernels with simdgroup functions place
/// their threads themselves (1-D blocks); kernels with pipelines add the
/// producer warpgroup, and with a cluster need whole clusters of
/// threadgroups along x.
Dim3 blockOf(const KernelArtifact &artifact, Dim3 grid, Dim3 threads);

} // namespace enigma::cuda

#endif // ENIGMA_LIB_RUNTIME_CUDA_CUDALIMITS_H
