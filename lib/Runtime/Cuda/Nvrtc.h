//===- Nvrtc.h - NVRTC, loaded at run time ----------------------*- C++ -*-===//
//
// NVRTC compiles CUDA C++ to a cubin (or PTX) in process. Like the driver it
// is optional: it is found with dlopen in the usual places (CUDA toolkit,
// pip wheels) and a missing NVRTC is a BackendUnavailable, not a link error.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_NVRTC_H
#define ENIGMA_LIB_RUNTIME_CUDA_NVRTC_H

#include <string>
#include <utility>
#include <vector>

namespace enigma::cuda {

/// One NVRTC program: the source, the headers it may #include (name, text),
/// and command-line options.
struct NvrtcProgramInput {
  std::string name = "enigma_kernel.cu";
  std::string source;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> options;
};

/// What a compilation produced: a cubin for --gpu-architecture=sm_XX, PTX
/// text for compute_XX. `log` holds NVRTC's warnings, if any.
struct NvrtcOutput {
  std::string image;
  bool isCubin = false;
  std::string log;
};

class Nvrtc {
public:
  /// The process-wide NVRTC. Throws BackendUnavailable listing the places
  /// searched when no NVRTC library can be opened.
  static const Nvrtc &get();

  /// "13.0".
  std::string version() const;
  /// The library that was opened.
  const std::string &libraryPath() const { return path; }
  /// Real architectures this NVRTC can emit a cubin for (75, 80, 90, ...).
  const std::vector<int> &supportedArchs() const { return archs; }
  /// A folder holding cuda_fp16.h / cuda_bf16.h (NVRTC does not ship them
  /// built in), or "" when none was found.
  const std::string &cudaIncludeDir() const { return includeDir; }

  /// Compiles; throws RuntimeFailure holding NVRTC's log on any error.
  NvrtcOutput compile(const NvrtcProgramInput &input) const;

  struct Api; // function pointers, defined in Nvrtc.cpp

private:
  Nvrtc() = default;
  const Api *api = nullptr;
  std::string path;
  int major = 0, minor = 0;
  std::vector<int> archs;
  std::string includeDir;
};

} // namespace enigma::cuda

#endif
