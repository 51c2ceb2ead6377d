//===- EnigmaSimdOps.td - The simd op family ----------*- tablegen -*-===//
//
// A family of ops generated into its own EnigmaSimdOps.h.inc so that it
// builds independently; it includes only the dialect base, never other
// families' files (TableGen would emit their records again).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_SIMD_OPS_TD
#define ENIGMA_SIMD_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"

#endif
