//===- BoundsRecord.h - Layout of the bounds-check violation record -*- C++ -*-===//
//
// In bounds-checked mode a kernel gets a hidden buffer of 32-bit words in
// which the first out-of-bounds access is recorded. The bounds-check pass
// writes it and the Dispatcher reads it; this header is their contract.
//
// A violating thread sets bit 0 of kClaim with an atomic fetch_or; the one
// thread that saw it clear (the first) writes the other words. Every
// violating thread also adds one to kCount.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SUPPORT_BOUNDSRECORD_H
#define ENIGMA_SUPPORT_BOUNDSRECORD_H

namespace enigma::bounds_record {

enum Word : unsigned {
  kClaim = 0,     // non-zero once a violation was recorded
  kSite = 1,      // site id + 1 of the first violation
  kIndexLow = 2,  // its index as a 64-bit two's complement number
  kIndexHigh = 3,
  kThreadX = 4,   // thread_position_in_grid of the violating thread
  kThreadY = 5,
  kThreadZ = 6,
  kCount = 7,     // violations in all (wraps at 2^32)
  kExtentLow = 8, // for an index check: the extent the index broke
  kExtentHigh = 9,
  kWords = 10,
};

/// Parameter name of the record buffer (a u32 buffer of kWords words).
inline constexpr const char *kRecordParamName = "enigma_bounds_record";
/// Prefix of the hidden element-count parameter of each checked buffer.
inline constexpr const char *kSizeParamPrefix = "enigma_bounds_size_";

} // namespace enigma::bounds_record

#endif
