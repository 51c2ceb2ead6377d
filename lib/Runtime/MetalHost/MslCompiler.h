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

#include "enigma/Cache/ScratchDirectory.h"
#include "enigma/Support/ProcessLife.h"

#include <memory>
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

  ~MslCompiler();

private:
  /// The headers' folder and the precompiled header of metal_stdlib: in the
  /// cache, or (cache off) this process's own copies in a scratch folder,
  /// removed when the process exits.
  struct Prepared {
    std::string includeDir;
    std::string pch;
    bool shared = false; // in the cache
    std::string cacheRoot;   // that cache's folder ("" for none)
    uint64_t generation = 0; // forkGeneration() when made
    std::shared_ptr<ScratchDirectory> privateDir;
  };

  explicit MslCompiler(std::vector<std::string> command);
  static std::unique_ptr<MslCompiler>
  probeCandidates(const std::vector<std::vector<std::string>> &candidates);
  /// The headers and precompiled header, made once (no lock is held while
  /// they are built).
  Prepared prepare(ArtifactCache &cache);
  void run(std::vector<std::string> argv, const std::string &sourcePath);

  std::vector<std::string> command;
  std::vector<std::string> linkFlags; // -fuse-ld=lld where it exists
  std::string toolchainIdentity;
  ForkSafeMutex prepareMutex;
  std::shared_ptr<Prepared> current;
};

} // namespace enigma::metalhost

#endif
