//===- BoundsRecord.h - Layout of the bounds-check violation record -*- C++ -*-===//
//
// In bounds-checked mode a kernel gets a hidden buffer of 32-bit words in
// which the first out-of-bounds access is recorded. The bounds-check pass
// writes it and the Dispatcher reads it; this header is their contract.
//
// A violating thread sets bit 0 of kClaim with an atomic fetch_or; the one
// thread that saw it clear (the first) writes the other words. Every
// violating thread also adds one to the count of its kind of check.
//
// The same record carries every check of the mode (the site's kind says
// which): an access's index is the first value; an integer operation's
// operands are the first and second values; a threadgroup read's element
// index, a shuffle's source lane and a short simdgroup's lane count are the
// first value.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SUPPORT_BOUNDSRECORD_H
#define ENIGMA_SUPPORT_BOUNDSRECORD_H

namespace enigma::bounds_record {

enum Word : unsigned {
  kClaim = 0,     // non-zero once a violation was recorded
  kSite = 1,      // site id + 1 of the first violation
  kIndexLow = 2,  // its first value (an index) as a 64-bit two's
  kIndexHigh = 3, // complement number
  kThreadX = 4,   // thread_position_in_grid of the violating thread
  kThreadY = 5,
  kThreadZ = 6,
  kCount = 7,     // out-of-bounds accesses (wraps at 2^32)
  kSecondLow = 8, // its second value, as the first (for an index check
                  // of a shaped buffer: the extent the index broke)
  kSecondHigh = 9,
  kCountArithmetic = 10,  // integer overflows
  kCountThreadgroup = 11, // reads of uninitialised threadgroup memory
  kCountLanes = 12,       // reads of missing lanes, short simdgroups
  kWords = 13,
};

/// Parameter name of the record buffer (a u32 buffer of kWords words).
inline constexpr const char *kRecordParamName = "enigma_bounds_record";
/// Prefix of the hidden element-count parameter of each checked buffer.
inline constexpr const char *kSizeParamPrefix = "enigma_bounds_size_";

} // namespace enigma::bounds_record

#endif
