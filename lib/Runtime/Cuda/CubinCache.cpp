//===- CubinCache.cpp - Compiled CUDA kernels on disk ---------------------===//
#include "CubinCache.h"

#include "enigma/Cache/ArtifactCache.h"

#include <optional>

namespace enigma::cuda {

ArtifactCache &cubinCache() {
  static const std::shared_ptr<ArtifactCache> cache =
      ArtifactCache::fromEnvironment();
  return *cache;
}

std::string cubinKey(const Nvrtc &nvrtc, const NvrtcProgramInput &program) {
  std::vector<std::string> keyParts = {"nvrtc", nvrtc.version(),
                                       program.source};
  keyParts.insert(keyParts.end(), program.options.begin(),
                  program.options.end());
  for (const auto &header : program.headers) {
    keyParts.push_back(header.first);
    keyParts.push_back(header.second);
  }
  return ArtifactCache::makeKey(
      std::vector<std::string_view>(keyParts.begin(), keyParts.end()));
}

NvrtcOutput loadOrCompileCubin(const Nvrtc &nvrtc,
                               const NvrtcProgramInput &program,
                               bool &fromCache) {
  ArtifactCache &cache = cubinCache();
  std::string key = cubinKey(nvrtc, program);
  bool wantsCubin = program.options.front().find("=sm_") != std::string::npos;
  // The bytes are those of the file the cache checked (owner, mode, hash),
  // read through its descriptor.
  if (std::optional<ArtifactCache::Object> cached = cache.lookup(key)) {
    fromCache = true;
    return NvrtcOutput{cached->bytes(), wantsCubin, ""};
  }
  fromCache = false;
  NvrtcOutput output = nvrtc.compile(program);
  cache.store(key, output.image, wantsCubin ? ".cubin" : ".ptx");
  return output;
}

} // namespace enigma::cuda
