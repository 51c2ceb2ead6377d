//===- CudaProgram.h - From an Enigma CUDA source to NVRTC input -*- C++ -*-===//
//
// Everything that decides how a generated kernel is compiled: the prelude
// headers, the architecture option, the language options, the
// function-constant defines and the user's extra options. Shared by
// CudaBackend::load and by the device-free compile check, so both compile
// exactly the same program.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_CUDAPROGRAM_H
#define ENIGMA_LIB_RUNTIME_CUDA_CUDAPROGRAM_H

#include "Nvrtc.h"

#include "enigma/Runtime/Backend.h"

#include <string>
#include <vector>

namespace enigma::cuda {

/// "-DENIGMA_FC_<index>=<literal>" for each value, the literal written in
/// the value's own type so that the kernel reads it back bit for bit.
std::vector<std::string> functionConstantDefines(const ConstantValues &values);

/// The words of ENIGMA_NVRTC_OPTIONS (split at white space), appended to
/// every program's options: e.g. -lineinfo for source-level profiles.
std::vector<std::string> userNvrtcOptions();

/// The NVRTC program for `source`. `arch` is "sm_90" (cubin) or
/// "compute_90" (PTX). `name` labels NVRTC's messages.
NvrtcProgramInput makeCudaProgram(const Nvrtc &nvrtc, const std::string &name,
                                  const std::string &source,
                                  const std::string &arch,
                                  const ConstantValues &constants);

} // namespace enigma::cuda

#endif
