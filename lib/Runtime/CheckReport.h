//===- CheckReport.h - The message of a bounds-checked violation -*- C++ -*-===//
//
// Bounds-checked mode records the first violation of a launch in a hidden
// record (enigma/Support/BoundsRecord.h); this turns the record into the
// message of the BoundsViolation: what was checked (an access, an integer
// operation, a threadgroup read, a simdgroup lane), at which `file:line`,
// with which values, by which thread, and how many violations of each
// kind the launch made.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CHECKREPORT_H
#define ENIGMA_LIB_RUNTIME_CHECKREPORT_H

#include "enigma/Runtime/Backend.h"
#include "enigma/Support/BoundsRecord.h"

#include <cstdint>
#include <string>

namespace enigma {

/// The launch a record comes from.
struct CheckedLaunch {
  const KernelArtifact *kernel = nullptr;
  Dim3 grid, threads;
  /// Bytes of dynamic threadgroup memory the launch gave.
  uint64_t threadgroupMemory = 0;
  /// The element count bound to a buffer parameter's hidden size.
  uint64_t (*sizeOf)(const void *context, int param) = nullptr;
  const void *context = nullptr;
};

/// The message for a claimed record of `launch`.
std::string describeViolation(const CheckedLaunch &launch,
                              const uint32_t (&words)[bounds_record::kWords]);

} // namespace enigma

#endif
