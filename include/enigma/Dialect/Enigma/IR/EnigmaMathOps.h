//===- EnigmaMathOps.h - The math op family -------------*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMAMATHOPS_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMAMATHOPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "enigma/Dialect/Enigma/IR/EnigmaMathEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaMathAttributes.h.inc"

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.h.inc"

#endif
