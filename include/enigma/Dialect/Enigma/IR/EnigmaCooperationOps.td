//===- EnigmaCooperationOps.td - The cooperation op family ----------*- tablegen -*-===//
//
// A family of ops generated into its own EnigmaCooperationOps.h.inc so that it
// builds independently; it includes only the dialect base, never other
// families' files (TableGen would emit their records again).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_COOPERATION_OPS_TD
#define ENIGMA_COOPERATION_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"

#endif
