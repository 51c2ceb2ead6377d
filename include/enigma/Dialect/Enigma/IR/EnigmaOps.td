//===- EnigmaOps.td - All enigma ops -----------------------*- tablegen -*-===//
#ifndef ENIGMA_OPS_TD
#define ENIGMA_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "enigma/Dialect/Enigma/IR/EnigmaAttributes.td"
include "enigma/Dialect/Enigma/IR/EnigmaKernelOps.td"
include "enigma/Dialect/Enigma/IR/EnigmaThreadOps.td"
include "enigma/Dialect/Enigma/IR/EnigmaSyncOps.td"
include "enigma/Dialect/Enigma/IR/EnigmaCheckOps.td"

#endif
