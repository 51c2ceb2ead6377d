//===- EnigmaCooperationOps.h - The cooperation op family -------------*- C++ -*-===//
#ifndef ENIGMA_DIALECT_ENIGMA_IR_ENIGMACOOPERATIONOPS_H
#define ENIGMA_DIALECT_ENIGMA_IR_ENIGMACOOPERATIONOPS_H

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationAttributes.h.inc"

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h.inc"

#endif
