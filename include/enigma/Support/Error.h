//===- Error.h - The error users see for DSL mistakes -----------*- C++ -*-===//
#ifndef ENIGMA_SUPPORT_ERROR_H
#define ENIGMA_SUPPORT_ERROR_H

#include <stdexcept>
#include <string>

namespace enigma {

/// A mistake in a kernel: tracing, verification or emission failed. The
/// message says what and, where known, at which file:line of the user's code.
/// Python sees it as enigma.EnigmaError.
struct EnigmaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

} // namespace enigma

#endif
