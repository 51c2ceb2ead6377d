//===- CubinDiskCache.h - Compiled CUDA images on disk ----------*- C++ -*-===//
//
// A small content-addressed store for NVRTC output, so a kernel is compiled
// once per machine rather than once per process. It is a stand-in for the
// project-wide artifact cache (include/enigma/Cache) and follows the same
// rules: ENIGMA_CACHE_DIR (default ~/.cache/enigma), ENIGMA_DISABLE_CACHE=1
// turns it off, writes are atomic (temporary file + rename), and any I/O
// problem just means a miss: the cache never makes a load fail.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_CUBINDISKCACHE_H
#define ENIGMA_LIB_RUNTIME_CUDA_CUBINDISKCACHE_H

#include <optional>
#include <string>
#include <vector>

namespace enigma::cuda {

class CubinDiskCache {
public:
  /// The cache in effect now (reads the environment on each call).
  static CubinDiskCache fromEnvironment();

  bool enabled() const { return !directory.empty(); }
  /// A hex key naming every input that affects the compiled image.
  static std::string keyFor(const std::vector<std::string> &inputs);
  std::optional<std::string> find(const std::string &key) const;
  void store(const std::string &key, const std::string &image) const;

private:
  std::string directory; // "" when disabled
};

} // namespace enigma::cuda

#endif
