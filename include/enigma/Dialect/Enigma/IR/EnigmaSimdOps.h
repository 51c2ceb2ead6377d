//===- EnigmaSimdOps.h - The simd op family -------------*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMASIMDOPS_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMASIMDOPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "enigma/Dialect/Enigma/IR/EnigmaSimdEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaSimdAttributes.h.inc"

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h.inc"

#endif
