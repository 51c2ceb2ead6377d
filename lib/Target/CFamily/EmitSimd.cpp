//===- EmitSimd.cpp -------------------------------------------------------===//
//
// simd_* / quad_* ops print as the Metal function their mnemonic names:
// `float v5 = simd_sum(v4);`. CUDA reads the same through the prelude's
// warp emulation (enigma_cuda_prelude.cuh). Integers are held unsigned, so
// a signed min / max converts its operand and result. The CPU flavour never
// gets here: CppEmitter::emitCollective prints these ops between its thread
// loops.
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"

using namespace mlir;

namespace enigma {

LogicalResult emitSimdFamily(CFamilyEmitter &e, Operation *op, bool &handled) {
  handled = false;
  if (op->getDialect() == nullptr ||
      op->getDialect()->getNamespace() != "enigma" ||
      !op->hasTrait<Collective>() || op->getNumResults() != 1)
    return success();
  StringRef fn = op->getName().stripDialect();
  if (!fn.starts_with("simd_") && !fn.starts_with("quad_"))
    return success();
  handled = true;
  if (e.target() == Target::Cpp)
    return op->emitOpError("is printed by the CPU emitter's group-level code");
  Value result = op->getResult(0);
  bool asSigned = op->hasAttr("is_signed");
  std::string args;
  for (Value operand : op->getOperands()) {
    if (!args.empty())
      args += ", ";
    args += asSigned ? "(" + e.typeName(operand.getType(), true) + ")" +
                           e.expr(operand)
                     : e.expr(operand);
  }
  std::string call = fn.str() + "(" + args + ")";
  if (asSigned)
    call = "(" + e.typeName(result.getType()) + ")" + call;
  e.define(result, call);
  return success();
}

} // namespace enigma
