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
  /// The flags every kernel is compiled with, apart from the target ISA
  /// (see docs/design/cpu-backend.md).
  static const std::vector<std::string> &sharedObjectFlags();
  /// The target ISA flags to try, best first: `-march=native`, then (on
  /// x86-64) without AVX512-FP16, then x86-64-v3, then none
  /// (docs/design/host-compiler-flags.md).
  static const std::vector<std::vector<std::string>> &archCandidates();

  /// The first of archCandidates() with which this compiler builds the C++
  /// file `probeSource` (into `outputPath`). A failure that is not about
  /// the flags (not the assembler, not an unknown option) stops the search
  /// at the candidate that met it.
  std::vector<std::string> chooseArch(const std::string &probeSource,
                                      const std::string &outputPath,
                                      const std::string &includeDir) const;

  /// Compiles `sourcePath` into the shared object `outputPath` with the
  /// target flags `arch`, or, when the assembler rejects what the compiler
  /// made of it, with the later candidates. `defines` are NAME=VALUE macro
  /// definitions. Throws RuntimeFailure with the compiler's output on
  /// failure.
  void compileSharedObject(const std::string &sourcePath,
                           const std::string &outputPath,
                           const std::string &includeDir,
                           const std::vector<std::string> &defines,
                           const std::vector<std::string> &arch) const;

private:
  struct Attempt;
  Attempt compile(const std::vector<std::string> &arch,
                  const std::string &sourcePath, const std::string &outputPath,
                  const std::string &includeDir,
                  const std::vector<std::string> &defines) const;

  std::vector<std::string> command;
  std::string toolchainIdentity;
};

/// A short description of the host CPU (model and feature flags) so that
/// objects built with -march=native are not reused on a different CPU
/// sharing the cache directory.
const std::string &hostCpuIdentity();

} // namespace enigma::cpu

#endif
