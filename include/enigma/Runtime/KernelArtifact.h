//===- KernelArtifact.h - What compilation hands to runtimes ----*- C++ -*-===//
//
// The target-independent result of compiling one kernel: its signature and
// the source text for each target. Runtimes depend on this header only, never
// on MLIR.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_RUNTIME_KERNELARTIFACT_H
#define ENIGMA_RUNTIME_KERNELARTIFACT_H

#include "enigma/Support/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace enigma {

enum class ParamKind : uint8_t { Buffer, Scalar };

/// One kernel parameter, in declaration order (= Metal [[buffer(i)]] slot).
struct KernelParam {
  std::string name;
  ParamKind kind = ParamKind::Buffer;
  DType dtype = DType::F32;
  /// Elements per buffer entry (vec_width); 1 for plain buffers.
  unsigned vecWidth = 1;
};

/// A `function_constant(dtype, index)` the kernel reads.
struct FunctionConstantUse {
  unsigned index = 0;
  DType dtype = DType::I32;
};

struct KernelArtifact {
  std::string kernelName; // "enigma_kernel_<python name>"
  std::vector<KernelParam> params;
  std::vector<FunctionConstantUse> constants;
  std::string mlirSource;
  std::string mslSource;
  std::string cudaSource;
  std::string cppSource; // host C++ for CpuRuntime
  /// Bytes of threadgroup memory the kernel allocates statically.
  uint64_t threadgroupMemoryBytes = 0;
};

} // namespace enigma

#endif
