//===- CubinDiskCache.cpp -------------------------------------------------===//
#include "CubinDiskCache.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace enigma::cuda {
namespace fs = std::filesystem;

namespace {

/// FNV-1a; two different offsets give a 128-bit key, enough to make an
/// accidental collision between kernels implausible.
uint64_t fnv1a(const std::vector<std::string> &parts, uint64_t hash) {
  for (const std::string &part : parts) {
    for (unsigned char c : part)
      hash = (hash ^ c) * 0x100000001b3ull;
    // Mixing in each part's end and length keeps ("ab", "c") and
    // ("a", "bc") apart.
    hash = (hash ^ 0xffu) * 0x100000001b3ull;
    hash = (hash ^ part.size()) * 0x100000001b3ull;
  }
  return hash;
}

} // namespace

CubinDiskCache CubinDiskCache::fromEnvironment() {
  CubinDiskCache cache;
  const char *disabled = std::getenv("ENIGMA_DISABLE_CACHE");
  if (disabled && *disabled && std::string(disabled) != "0")
    return cache;
  fs::path root;
  if (const char *dir = std::getenv("ENIGMA_CACHE_DIR"); dir && *dir)
    root = dir;
  else if (const char *home = std::getenv("HOME"); home && *home)
    root = fs::path(home) / ".cache" / "enigma";
  else
    return cache; // nowhere sensible to write
  cache.directory = (root / "cuda").string();
  return cache;
}

std::string CubinDiskCache::keyFor(const std::vector<std::string> &inputs) {
  char text[33];
  std::snprintf(text, sizeof text, "%016llx%016llx",
                (unsigned long long)fnv1a(inputs, 0xcbf29ce484222325ull),
                (unsigned long long)fnv1a(inputs, 0x84222325cbf29ce4ull));
  return text;
}

std::optional<std::string> CubinDiskCache::find(const std::string &key) const {
  if (!enabled())
    return std::nullopt;
  std::ifstream in(fs::path(directory) / (key + ".bin"), std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (!in.good() && !in.eof())
    return std::nullopt;
  std::string image = bytes.str();
  if (image.empty())
    return std::nullopt;
  return image;
}

void CubinDiskCache::store(const std::string &key,
                           const std::string &image) const {
  if (!enabled())
    return;
  std::error_code ec;
  fs::create_directories(directory, ec);
  if (ec)
    return;
  // Unique per process and call, so concurrent writers never share a
  // temporary; rename() then publishes the whole file at once.
  static std::atomic<unsigned> counter{0};
  fs::path final = fs::path(directory) / (key + ".bin");
  fs::path temporary =
      fs::path(directory) / (key + ".tmp." + std::to_string(::getpid()) +
                             "." + std::to_string(counter++));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(image.data(), std::streamsize(image.size()));
    if (!out.good()) {
      out.close();
      fs::remove(temporary, ec);
      return;
    }
  }
  fs::rename(temporary, final, ec);
  if (ec)
    fs::remove(temporary, ec);
}

} // namespace enigma::cuda
