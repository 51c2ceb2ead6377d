//===- msl_host_keywords.h - Metal's keywords as macros ---------*- C++ -*-===//
//
// Included last by metal_stdlib: from here on `device`, `threadgroup`,
// `constant` and `thread` are address spaces and `kernel` marks nothing (the
// runtime's harness calls the kernel by name). Attributes such as
// [[buffer(0)]] are unknown to clang and ignored (-Wno-unknown-attributes);
// the runtime reads them from the source itself.
//
// `is_function_constant_defined(name)` reads the flag the runtime declares
// beside each function constant (`constant T name [[function_constant(i)]]`
// becomes `constant T name = value; constexpr bool
// enigma_function_constant_defined_name = ...;` on the same line).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MSL_HOST_KEYWORDS_H
#define ENIGMA_MSL_HOST_KEYWORDS_H

#define device ENIGMA_MSL_DEVICE
#define threadgroup ENIGMA_MSL_THREADGROUP
#define constant ENIGMA_MSL_CONSTANT
#define thread
#define kernel
#define is_function_constant_defined(name)                                     \
  (enigma_function_constant_defined_##name)

#endif
