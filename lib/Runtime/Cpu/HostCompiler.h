//===- HostCompiler.h - Runs the host C++ compiler --------------*- C++ -*-===//
//
// Builds generated kernel C++ into a shared object with the compiler named
// by ENIGMA_CXX (which may carry words, e.g. "ccache g++"), else `c++`.
// Runs it directly (no shell), so paths need no quoting.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CPU_HOSTCOMPILER_H
#define ENIGMA_LIB_RUNTIME_CPU_HOSTCOMPILER_H

#include <string>
#include <vector>

namespace enigma::cpu {

class HostCompiler {
public:
  /// The compiler the environment names; identities are computed once per
  /// process per command.
  static const HostCompiler &fromEnvironment();
  explicit HostCompiler(std::vector<std::string> command);

  /// What identifies the toolchain in cache keys: the command and the first
  /// line of its `--version`. Throws BackendUnavailable if it cannot run.
  const std::string &identity() const { return toolchainIdentity; }
  /// The flags every kernel is compiled with (see docs/design/cpu-backend.md).
  static const std::vector<std::string> &sharedObjectFlags();

  /// Compiles `sourcePath` into the shared object `outputPath`. `defines`
  /// are NAME=VALUE macro definitions. Throws RuntimeFailure with the
  /// compiler's output on failure.
  void compileSharedObject(const std::string &sourcePath,
                           const std::string &outputPath,
                           const std::string &includeDir,
                           const std::vector<std::string> &defines) const;

private:
  std::vector<std::string> command;
  std::string toolchainIdentity;
};

/// A short description of the host CPU (model and feature flags) so that
/// objects built with -march=native are not reused on a different CPU
/// sharing the cache directory.
const std::string &hostCpuIdentity();

} // namespace enigma::cpu

#endif
