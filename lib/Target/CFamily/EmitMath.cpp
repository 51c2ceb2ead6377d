//===- EmitMath.cpp - Printing the math op family --------------------------===//
//
// Every op of the math family's table that is a Metal function call (its
// own ops and the upstream math ops the table spells, EnigmaMathOps.td) is
// printed as `name(args)`; MSL, CUDA and host C++ print it the same way, the
// CUDA and CPU preludes supplying Metal's functions through the Metal
// semantics library. Integers are held in unsigned C types, so an op read
// as signed casts its integer operands to the signed type and its result
// back.
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace enigma {
namespace {

struct Spelling {
  const char *metal;
  const char *cuda; // "" when CUDA prints the Metal name
  int signedOperands; // -1: all
  bool alwaysSigned;
};

const llvm::StringMap<Spelling> &mathSpellings() {
  static const llvm::StringMap<Spelling> spellings = {
#define ENIGMA_SPELLING(op, metal, cuda, signedOperands, alwaysSigned)         \
  {op, {metal, cuda, signedOperands, alwaysSigned}},
#include "enigma/Dialect/Enigma/IR/EnigmaMathFunctions.inc"
  };
  return spellings;
}

/// The table's CUDA name where it has one and the target takes it, else
/// Metal's.
const char *functionName(CFamilyEmitter &e, const Spelling &s) {
  return e.spellings().cudaFunctionNames && *s.cuda ? s.cuda : s.metal;
}

void printCall(CFamilyEmitter &e, Operation *op, const Spelling &s) {
  bool asSigned = s.alwaysSigned || op->hasAttr("is_signed");
  Type resultType = op->getResult(0).getType();
  unsigned signedOperands = s.signedOperands < 0 ? op->getNumOperands()
                                                 : unsigned(s.signedOperands);
  std::string args;
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    std::string arg = e.expr(operand);
    if (asSigned && index < signedOperands)
      arg = "(" + e.typeName(operand.getType(), true) + ")" + arg;
    args += (args.empty() ? "" : ", ") + arg;
  }
  std::string call = std::string(functionName(e, s)) + "(" + args + ")";
  if (asSigned)
    call = "(" + e.typeName(resultType) + ")" + call;
  e.define(op->getResult(0), call);
}

} // namespace

StringRef mathFunctionName(CFamilyEmitter &e, StringRef opName) {
  return functionName(e, mathSpellings().find(opName)->second);
}

LogicalResult emitMathFamily(CFamilyEmitter &e, Operation *op,
                             bool &handled) {
  const llvm::StringMap<Spelling> &spellings = mathSpellings();
  auto it = spellings.find(op->getName().getStringRef());
  handled = it != spellings.end();
  if (handled)
    printCall(e, op, it->second);
  return success();
}

} // namespace enigma
