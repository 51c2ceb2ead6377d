//===- CheckReport.cpp - The message of a bounds-checked violation --------===//
#include "CheckReport.h"

#include <algorithm>

namespace enigma {
namespace {
namespace rec = bounds_record;

std::string where(const std::string &location) {
  return location.empty() ? "" : " at " + location;
}

std::string formatInt128(__int128 value) {
  if (value == 0)
    return "0";
  bool negative = value < 0;
  unsigned __int128 magnitude =
      negative ? (unsigned __int128)(-(value + 1)) + 1
               : (unsigned __int128)value;
  std::string digits;
  for (; magnitude; magnitude /= 10)
    digits.insert(digits.begin(), char('0' + int(magnitude % 10)));
  return negative ? "-" + digits : digits;
}

std::string dims(uint64_t x, uint64_t y, uint64_t z) {
  return "(" + std::to_string(x) + ", " + std::to_string(y) + ", " +
         std::to_string(z) + ")";
}

uint64_t wide(const uint32_t (&words)[rec::kWords], unsigned low) {
  return uint64_t(words[low]) | uint64_t(words[low + 1]) << 32;
}

/// How many violations of each kind, the first's kind named first:
/// " (the first of 4 integer overflows; also 2 out-of-bounds accesses)".
std::string counts(const uint32_t (&words)[rec::kWords], unsigned firstWord) {
  static const std::pair<unsigned, const char *> kinds[] = {
      {rec::kCount, "out-of-bounds accesses"},
      {rec::kCountArithmetic, "integer overflows"},
      {rec::kCountThreadgroup, "reads of uninitialised threadgroup memory"},
      {rec::kCountLanes, "simdgroup operations with missing lanes"},
  };
  std::string text;
  uint32_t first = words[firstWord];
  if (first > 1)
    for (auto &[word, name] : kinds)
      if (word == firstWord)
        text = "the first of " + std::to_string(first) + " " + name;
  std::string also;
  for (auto &[word, name] : kinds)
    if (word != firstWord && words[word] != 0)
      also += (also.empty() ? "" : ", ") + std::to_string(words[word]) + " " +
              name;
  if (!also.empty())
    text += (text.empty() ? "also " : "; also ") + also;
  return text.empty() ? "" : " (" + text + ")";
}

/// The threadgroup of thread `t`, and " ; the threadgroup is partial: ..."
/// when the launch's grid cuts it short.
struct Group {
  uint64_t position[3];
  std::string partial;
};
Group groupOf(const CheckedLaunch &launch, const uint64_t (&t)[3]) {
  const uint64_t grid[3] = {launch.grid.x, launch.grid.y, launch.grid.z};
  const uint64_t size[3] = {std::max(1u, launch.threads.x),
                            std::max(1u, launch.threads.y),
                            std::max(1u, launch.threads.z)};
  Group g{};
  uint64_t have = 1, full = 1;
  for (int d = 0; d < 3; ++d) {
    g.position[d] = t[d] / size[d];
    uint64_t start = g.position[d] * size[d];
    have *= grid[d] > start ? std::min(size[d], grid[d] - start) : 0;
    full *= size[d];
  }
  if (have < full)
    g.partial = "; the threadgroup is partial: " + std::to_string(have) +
                " of its " + std::to_string(full) +
                " threads exist (the grid " +
                dims(launch.grid.x, launch.grid.y, launch.grid.z) +
                " is not a multiple of the threadgroup " +
                dims(launch.threads.x, launch.threads.y, launch.threads.z) +
                ", so the last threadgroup runs short, as in Metal)";
  return g;
}

std::string arithmetic(const BoundsCheckSite &s,
                       const uint32_t (&words)[rec::kWords]) {
  const std::string &dtype = s.buffer; // "u32", "i64", ...
  const bool isSigned = !dtype.empty() && dtype[0] == 'i';
  const unsigned bits = dtype.size() > 1 ? unsigned(std::stoi(dtype.substr(1)))
                                         : 32;
  auto value = [&](unsigned low) -> __int128 {
    uint64_t raw = wide(words, low);
    return isSigned ? __int128(int64_t(raw)) : __int128(raw);
  };
  const __int128 a = value(rec::kIndexLow), b = value(rec::kSecondLow);
  const bool wideProduct = !isSigned && bits == 64 && s.access == "mul";
  __int128 exact = 0; // of the operands as read, unless wideProduct
  std::string expr;
  if (s.access == "neg") {
    exact = -a;
    expr = "-(" + formatInt128(a) + ")";
  } else {
    const char *op = s.access == "add" ? " + " : s.access == "sub" ? " - "
                                                                  : " * ";
    if (!wideProduct)
      exact = s.access == "add" ? a + b : s.access == "sub" ? a - b : a * b;
    expr = formatInt128(a) + op + formatInt128(b);
  }
  const __int128 span = __int128(1) << bits;
  const __int128 low = isSigned ? -(span / 2) : 0;
  const __int128 high = isSigned ? span / 2 - 1 : span - 1;
  __int128 wrapped;
  bool above;
  if (wideProduct) {
    // The only product past __int128: take it unsigned.
    unsigned __int128 product =
        (unsigned __int128)uint64_t(a) * (unsigned __int128)uint64_t(b);
    wrapped = __int128(uint64_t(product));
    above = true;
  } else {
    wrapped = exact % span;
    if (wrapped < 0)
      wrapped += span;
    if (isSigned && wrapped > high)
      wrapped -= span;
    above = exact > high;
  }
  std::string how = above ? "exceeds " + formatInt128(high)
                    : low == 0   ? std::string("is below zero")
                                 : "is below " + formatInt128(low);
  return "integer overflow" + where(s.location) + ": " + expr + " in " +
         dtype + " " + how + " (Metal wraps the result to " +
         formatInt128(wrapped) + ")";
}
} // namespace

std::string describeViolation(const CheckedLaunch &launch,
                              const uint32_t (&words)[rec::kWords]) {
  const KernelArtifact &kernel = *launch.kernel;
  const std::vector<BoundsCheckSite> &sites = kernel.boundsCheckSites;
  const uint32_t site = words[rec::kSite] - 1;
  if (words[rec::kSite] == 0 || site >= sites.size())
    return "kernel " + kernel.kernelName +
           " failed a check of bounds-checked mode (the record of the first "
           "violation is incomplete)";
  const BoundsCheckSite &s = sites[site];
  if (s.access == "ring wait") // a pipeline's wait (CUDA) that timed out
    return "kernel " + kernel.kernelName + ": a pipeline wait" +
           where(s.location) + " did not complete in 2 seconds: " + s.buffer +
           ", stage " + std::to_string(words[rec::kIndexLow]) + ", phase " +
           std::to_string(words[rec::kIndexHigh]) + " (parity " +
           std::to_string(words[rec::kIndexHigh] & 1u) + "), thread " +
           std::to_string(words[rec::kThreadX]) + " of threadgroup " +
           std::to_string(words[rec::kThreadY]) +
           "; the kernel was stopped and its results are not returned";
  const uint64_t t[3] = {words[rec::kThreadX], words[rec::kThreadY],
                         words[rec::kThreadZ]};
  const std::string thread = ", by thread " + dims(t[0], t[1], t[2]) +
                             " of the grid";
  const auto first = int64_t(wide(words, rec::kIndexLow));
  const std::string head = "kernel " + kernel.kernelName + ": ";

  if (s.kind == "arithmetic")
    return head + arithmetic(s, words) + thread +
           counts(words, rec::kCountArithmetic) +
           "; the wrapped result was kept";
  if (s.kind == "uninitialised") {
    Group g = groupOf(launch, t);
    return head + "read of uninitialised threadgroup memory" +
           where(s.location) + ": element " + std::to_string(first) + " of " +
           s.buffer + " was not written in threadgroup " +
           dims(g.position[0], g.position[1], g.position[2]) +
           " before this " + s.access + thread +
           counts(words, rec::kCountThreadgroup) + g.partial;
  }
  if (s.kind == "missing_lane") {
    Group g = groupOf(launch, t);
    const auto reader = int64_t(wide(words, rec::kSecondLow));
    return head + s.access + where(s.location) + " reads lane " +
           std::to_string(first) + " of its " + s.buffer +
           ", which does not exist, by thread " + dims(t[0], t[1], t[2]) +
           " of the grid, as lane " + std::to_string(reader) +
           counts(words, rec::kCountLanes) + g.partial +
           ". Metal leaves the value undefined; Enigma's backends give the "
           "lane its own value";
  }
  if (s.kind == "short_simdgroup") {
    Group g = groupOf(launch, t);
    return head + s.access + where(s.location) + " runs in a simdgroup of " +
           std::to_string(first) + " lanes" + thread +
           counts(words, rec::kCountLanes) + g.partial +
           ". Simdgroup matrices need all 32 lanes: make the threadgroup "
           "size a multiple of 32 and the grid a multiple of it";
  }
  if (s.dimension >= 0) { // an index of a buffer declared with a shape
    const uint64_t extent = wide(words, rec::kSecondLow);
    const std::string named =
        s.extentName == std::to_string(extent)
            ? s.extentName
            : s.extentName + " = " + std::to_string(extent);
    return head + "out-of-bounds index" + where(s.location) + ": index " +
           std::to_string(s.dimension) + " of " + s.buffer + s.shape +
           " is " + std::to_string(first) + ", outside [0, " + named + ")" +
           thread + counts(words, rec::kCount) +
           "; only accesses outside the buffer itself were skipped";
  }
  uint64_t size = s.staticSize;
  if (s.param >= 0 && launch.sizeOf)
    size = launch.sizeOf(launch.context, s.param);
  if (s.elementBytes) // the dynamic threadgroup array
    size = launch.threadgroupMemory / s.elementBytes;
  std::string what = s.extent > 1 ? "elements [" + std::to_string(first) +
                                        ", " +
                                        std::to_string(first + s.extent) + ")"
                                  : "index " + std::to_string(first);
  return head + "out-of-bounds " + s.access + where(s.location) + ": " + what +
         " of " + s.buffer + ", which has " + std::to_string(size) +
         " elements" + thread + counts(words, rec::kCount) +
         "; the access was skipped";
}

} // namespace enigma
