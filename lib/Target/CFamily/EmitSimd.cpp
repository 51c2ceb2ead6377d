//===- EmitSimd.cpp -------------------------------------------------------===//
//
// simd_* / quad_* ops print as the Metal function the simd family's table
// names for them (their mnemonic):
// `float v5 = simd_sum(v4);`. CUDA reads the same through the prelude's
// warp emulation (enigma_cuda_prelude.cuh). Integers are held unsigned, so
// a signed min / max converts its operand and result; CUDA adds the mask of
// existing lanes as a last argument. The CPU flavour never
// gets here: enigma-serialize-threads has made them enigma.lanes_call ops
// between thread loops. Simdgroup matrices are each target's own
// (emitTargetOp): Metal's simdgroup_float8x8 and its functions in MSL,
// per-lane pairs (float2 / half2) in CUDA.
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"

#include "llvm/ADT/StringMap.h"

using namespace mlir;

namespace enigma {

/// The Metal function of each simd / quad op (the simd family's table).
static const llvm::StringMap<StringRef> &simdSpellings() {
  static const llvm::StringMap<StringRef> spellings = {
#define ENIGMA_SPELLING(op, metal, cuda, signedOperands, alwaysSigned)         \
  {op, metal},
#include "enigma/Dialect/Enigma/IR/EnigmaSimdFunctions.inc"
  };
  return spellings;
}

LogicalResult emitSimdFamily(CFamilyEmitter &e, Operation *op, bool &handled) {
  handled = false;
  auto spelling = simdSpellings().find(op->getName().getStringRef());
  if (spelling == simdSpellings().end())
    return success();
  StringRef fn = spelling->second;
  handled = true;
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
  StringRef lanes = e.spellings().simdArguments; // CUDA: the lanes that exist
  if (args.empty())
    lanes.consume_front(", ");
  args += lanes.str();
  std::string call = fn.str() + "(" + args + ")";
  if (asSigned)
    call = "(" + e.typeName(result.getType()) + ")" + call;
  // A ballot is Metal's simd_vote, read as its vote_t (the CUDA prelude
  // has the same type).
  if (isa<SimdBallotOp, SimdActiveThreadsMaskOp>(op))
    call = "(ulong)(simd_vote::vote_t)" + call;
  e.define(result, call);
  return success();
}

} // namespace enigma
