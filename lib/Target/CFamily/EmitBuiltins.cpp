//===- EmitBuiltins.cpp - Printing the math op family ----------------------===//
//
// Every op of EnigmaMathOps.td is a call of the Metal function named by its
// kMetalName; MSL, CUDA and host C++ print it the same way, the CUDA and CPU
// preludes supplying Metal's functions. Integers are held in unsigned C
// types, so a `signed` op casts its integer operands to the signed type and
// its result back.
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.h"

using namespace mlir;

namespace enigma {
namespace {

void printCall(CFamilyEmitter &e, Operation *op, llvm::StringRef fn) {
  bool asSigned = op->hasAttr("is_signed");
  Type resultType = op->getResult(0).getType();
  // extract_bits's offset and bit count stay uint whatever the value's type.
  unsigned signedOperands = isa<ExtractBitsOp>(op) ? 1 : op->getNumOperands();
  std::string args;
  for (auto [index, operand] : llvm::enumerate(op->getOperands())) {
    std::string arg = e.expr(operand);
    if (asSigned && index < signedOperands)
      arg = "(" + e.typeName(operand.getType(), true) + ")" + arg;
    args += (args.empty() ? "" : ", ") + arg;
  }
  std::string call = fn.str() + "(" + args + ")";
  if (asSigned)
    call = "(" + e.typeName(resultType) + ")" + call;
  e.define(op->getResult(0), call);
}

template <typename OpT> bool printIf(CFamilyEmitter &e, Operation *op) {
  if (!isa<OpT>(op))
    return false;
  printCall(e, op, OpT::kMetalName);
  return true;
}

template <typename... Ops> bool printAny(CFamilyEmitter &e, Operation *op) {
  return (printIf<Ops>(e, op) || ...);
}

} // namespace

LogicalResult emitBuiltinFamily(CFamilyEmitter &e, Operation *op,
                                bool &handled) {
  handled = printAny<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.cpp.inc"
      >(e, op);
  return success();
}

} // namespace enigma
