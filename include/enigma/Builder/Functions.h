//===- Functions.h - The op families' functions by name ----------*- C++ -*-===//
//
// Every element-wise math, integer, bit and comparison function, the
// geometric and packing functions and the simdgroup / quad functions are
// rows of their family's table, generated from the family's .td file
// (docs/design/op-families.md). C++ kernels call them by their Python
// name:
//
//   enigma::Value y = enigma::callFunction(k, "clamp", {x, lo, hi});
//   enigma::Value s = enigma::callFunction(k, "simd_sum", {x});
//
// Operands are unified as the function's rule says (promotion as by
// KernelBuilder::promote, a scalar meeting a vector lane-wise); operands a
// function does not accept throw EnigmaError.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_FUNCTIONS_H
#define ENIGMA_BUILDER_FUNCTIONS_H

#include "enigma/Builder/KernelBuilder.h"

#include <string>
#include <vector>

namespace enigma {

/// How a function types its operands and its result (the rules are
/// described in include/enigma/Dialect/Enigma/IR/EnigmaFunctionTable.td).
enum class FunctionRule : uint8_t {
  Float,
  FloatPredicate,
  Numeric,
  Integer,
  IntegerToUnsigned,
  Compare,
  ExtractBits,
  InsertBits,
  Vector,
  VectorToScalar,
  VectorAndScalar,
  Pack,
  Unpack,
  GroupReduce,
  GroupScan,
  GroupBitwise,
  GroupMinMax,
  GroupShuffle,
  GroupVote,
  GroupBallot,
  GroupLaneQuery,
};

/// The rule's name as the table spells it ("Float", ...).
const char *functionRuleName(FunctionRule rule);

/// One row of a family's table.
struct Function {
  const char *family; // "math", "geometry", "pack", "simd"
  const char *name;   // the Python name, enigma.<name>
  FunctionRule rule;
  unsigned arity;     // operands (0: any number, the Python "*v")
  const char *args;   // Python parameter names, comma-separated
  // The op built for float / signed / unsigned integer operands, "" when
  // the rule rejects that kind, "identity" for the operand itself.
  const char *floatOp;
  const char *signedOp;
  const char *unsignedOp;
  unsigned lanes; // Vector rules: the lane count required (0: any);
                  // Pack / Unpack: the vector's lanes
  const char *doc;
};

/// Every function of every family, in the order the .td files define them.
const std::vector<Function> &functionTable();
/// The function called `name`, or nullptr.
const Function *findFunction(const std::string &name);

/// `name(args...)`: builds the function's op. Throws EnigmaError for an
/// unknown name, a wrong operand count or operands the function rejects.
Value callFunction(KernelBuilder &k, const std::string &name,
                   const std::vector<Value> &args);

} // namespace enigma

#endif
