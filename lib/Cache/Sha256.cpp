//===- Sha256.cpp ---------------------------------------------------------===//
#include "Sha256.h"

#include <cstring>

namespace enigma::detail {
namespace {
constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
    0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
    0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
    0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
    0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
    0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
    0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
    0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr uint32_t rotateRight(uint32_t v, unsigned n) {
  return (v >> n) | (v << (32 - n));
}
} // namespace

Sha256::Sha256()
    : state{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f,
            0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::compressBlock(const uint8_t *block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
           uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    uint32_t s0 = rotateRight(w[i - 15], 7) ^ rotateRight(w[i - 15], 18) ^
                  (w[i - 15] >> 3);
    uint32_t s1 = rotateRight(w[i - 2], 17) ^ rotateRight(w[i - 2], 19) ^
                  (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = state[0], b = state[1], c = state[2], d = state[3],
           e = state[4], f = state[5], g = state[6], h = state[7];
  for (int i = 0; i < 64; ++i) {
    uint32_t s1 = rotateRight(e, 6) ^ rotateRight(e, 11) ^ rotateRight(e, 25);
    uint32_t choose = (e & f) ^ (~e & g);
    uint32_t t1 = h + s1 + choose + kRoundConstants[i] + w[i];
    uint32_t s0 = rotateRight(a, 2) ^ rotateRight(a, 13) ^ rotateRight(a, 22);
    uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = s0 + majority;
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

void Sha256::update(std::string_view data) {
  const auto *bytes = reinterpret_cast<const uint8_t *>(data.data());
  size_t size = data.size();
  totalBytes += size;
  if (pendingBytes > 0) {
    size_t take = std::min(size, pending.size() - pendingBytes);
    std::memcpy(pending.data() + pendingBytes, bytes, take);
    pendingBytes += take;
    bytes += take;
    size -= take;
    if (pendingBytes < pending.size())
      return;
    compressBlock(pending.data());
    pendingBytes = 0;
  }
  for (; size >= 64; bytes += 64, size -= 64)
    compressBlock(bytes);
  std::memcpy(pending.data(), bytes, size);
  pendingBytes = size;
}

std::array<uint8_t, 32> Sha256::finish() {
  uint64_t bitLength = totalBytes * 8;
  // Padding: a one bit, zeros up to 56 mod 64, then the length big-endian.
  uint8_t padding[72] = {0x80};
  size_t padBytes = (pendingBytes < 56 ? 56 : 120) - pendingBytes;
  update(std::string_view(reinterpret_cast<const char *>(padding), padBytes));
  uint8_t lengthBytes[8];
  for (int i = 0; i < 8; ++i)
    lengthBytes[i] = uint8_t(bitLength >> (56 - 8 * i));
  update(std::string_view(reinterpret_cast<const char *>(lengthBytes), 8));
  std::array<uint8_t, 32> digest;
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 4; ++j)
      digest[4 * i + j] = uint8_t(state[i] >> (24 - 8 * j));
  return digest;
}

std::string toHex(const std::array<uint8_t, 32> &digest) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(64);
  for (uint8_t byte : digest) {
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 15];
  }
  return hex;
}

std::string sha256Hex(std::string_view data) {
  Sha256 hasher;
  hasher.update(data);
  return toHex(hasher.finish());
}

} // namespace enigma::detail
