//===- Sha256.h - SHA-256 for cache keys and content checks -----*- C++ -*-===//
//
// Private to the cache. SHA-256 (FIPS 180-4) is used rather than a faster
// non-cryptographic hash so that key collisions are not a concern at all.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_CACHE_SHA256_H
#define ENIGMA_LIB_CACHE_SHA256_H

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace enigma::detail {

class Sha256 {
public:
  Sha256();
  void update(std::string_view data);
  /// Finishes the digest; the object must not be updated afterwards.
  std::array<uint8_t, 32> finish();

private:
  void compressBlock(const uint8_t *block);

  std::array<uint32_t, 8> state;
  std::array<uint8_t, 64> pending{};
  size_t pendingBytes = 0;
  uint64_t totalBytes = 0;
};

/// Lower-case hex digest of `data`.
std::string sha256Hex(std::string_view data);
/// Lower-case hex spelling of a digest.
std::string toHex(const std::array<uint8_t, 32> &digest);

} // namespace enigma::detail

#endif
