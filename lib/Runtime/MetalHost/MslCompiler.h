//===- MslCompiler.h - clang++ for Metal source on the host -----*- C++ -*-===//
//
// Compiles a kernel's (adapted) Metal source plus its harness into a shared
// object with clang++ in SYCL device mode against the embedded metal_stdlib
// (include/enigma/Target/MetalStdlib, plus metal_host*.h), using a
// precompiled header of metal_stdlib that is built once and kept in the
// artifact cache. The compiler is ENIGMA_MSL_CXX (words, e.g. "ccache
// clang++-19"), else the first of clang++-19 ... clang++-14, clang++ that
// accepts the mode.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_METALHOST_MSLCOMPILER_H
#define ENIGMA_LIB_RUNTIME_METALHOST_MSLCOMPILER_H

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace enigma {
class ArtifactCache;
}

namespace enigma::metalhost {

class MslCompiler {
public:
  /// The process's compiler; throws BackendUnavailable when none works.
  static MslCompiler &instance();

  /// Identifies compiler, flags and library text in cache keys.
  const std::string &identity() const { return toolchainIdentity; }

  /// Compiles `sourcePath` (C++ text: Metal source and harness) into the
  /// shared object `outputPath`. Throws MslCompileError (the compiler's
  /// messages, with Metal's address-space names) on failure.
  void compileSharedObject(ArtifactCache &cache, const std::string &sourcePath,
                           const std::string &outputPath);
  /// Only checks that `sourcePath` compiles (no code generated).
  void checkSyntax(ArtifactCache &cache, const std::string &sourcePath);

  /// The flags every kernel is compiled with.
  static const std::vector<std::string> &flags();

  /// Removes this process's copies of the headers and precompiled header
  /// (made only when the cache is off).
  ~MslCompiler();

private:
  explicit MslCompiler(std::vector<std::string> command);
  /// The headers' directory and the precompiled header, made once.
  void prepare(ArtifactCache &cache);
  void run(std::vector<std::string> argv, const std::string &sourcePath);

  std::vector<std::string> command;
  std::vector<std::string> linkFlags; // -fuse-ld=lld where it exists
  std::string toolchainIdentity;
  std::mutex prepareMutex;
  std::string includeDir;
  std::string pchPath;
  std::string privateDir; // when the cache is off: this process's copies
};

} // namespace enigma::metalhost

#endif
