//===- Harness.h - The C++ that runs one kernel's threads -------*- C++ -*-===//
//
// Generated after the kernel's (adapted) Metal source in the same
// translation unit: enigma_msl_thread_main(args, self) calls the kernel with
// its buffers (args in [[buffer(n)]] order), scalars and thread-position
// values read from the runtime's thread record (enigma_msl_abi.h).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_METALHOST_HARNESS_H
#define ENIGMA_LIB_RUNTIME_METALHOST_HARNESS_H

#include "MslSource.h"

#include <string>

namespace enigma::metalhost {

/// `entry` names the exported function; the default one also comes with
/// enigma_msl_abi_version().
std::string generateHarness(const MslKernel &kernel,
                            const std::string &entry = "enigma_msl_thread_main");

} // namespace enigma::metalhost

#endif
