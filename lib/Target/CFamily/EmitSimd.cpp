//===- EmitSimd.cpp -------------------------------------------------------===//
//
// simd_* / quad_* ops print as the Metal function the simd family's table
// names for them (their mnemonic):
// `float v5 = simd_sum(v4);`. CUDA reads the same through the prelude's
// warp emulation (enigma_cuda_prelude.cuh). Integers are held unsigned, so
// a signed min / max converts its operand and result; CUDA adds the mask of
// existing lanes as a last argument. The CPU flavour never
// gets here: enigma-serialize-threads has made them enigma.lanes_call ops
// between thread loops. Simdgroup matrices print as Metal's simdgroup_float8x8 and its
// functions in MSL, and as per-lane pairs (float2 / half2) in CUDA.
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

/// Simdgroup matrices. MSL prints Metal's types and functions:
///   simdgroup_float8x8 v5;
///   simdgroup_load(v5, A + v3, v4);
///   simdgroup_multiply_accumulate(v8, v5, v6, v7);
///   simdgroup_store(v8, C + v3, v4);
///   simdgroup_float8x8 v9 = make_filled_simdgroup_matrix<float, 8, 8>(v2);
/// CUDA holds each lane's two elements in a float2 / half2 and calls the
/// helpers of enigma_cuda_simdgroup_matrix.cuh.
static LogicalResult emitSimdgroupMatrix(CFamilyEmitter &e, Operation *op) {
  if (e.target() == Target::Cpp)
    return op->emitOpError("is printed by the CPU emitter's group-level code");
  bool msl = e.target() == Target::MSL;
  auto matrixType = [&](Type t) {
    Type elem = llvm::cast<VectorType>(t).getElementType();
    return std::string(elem.isF16() ? "simdgroup_half8x8"
                                    : "simdgroup_float8x8");
  };
  auto address = [&](Value memref, Value offset) {
    return e.expr(memref) + " + " + e.expr(offset);
  };
  if (auto load = dyn_cast<SimdgroupMatrixLoadOp>(op)) {
    std::string src = address(load.getMemref(), load.getOffset());
    std::string epr = e.expr(load.getElementsPerRow());
    bool transpose = load.getTranspose();
    if (!msl) {
      e.define(load.getResult(), "enigma_simdgroup_matrix_load<" +
                                     e.typeName(load.getResult().getType()) +
                                     (transpose ? ", true" : "") + ">(" +
                                     src + ", " + epr + ")");
      return success();
    }
    std::string name = e.freshName(load.getResult());
    e.line() << matrixType(load.getResult().getType()) << " " << name << ";\n";
    e.line() << "simdgroup_load(" << name << ", " << src << ", " << epr
             << (transpose ? ", ulong2(0, 0), true" : "") << ");\n";
    return success();
  }
  if (auto store = dyn_cast<SimdgroupMatrixStoreOp>(op)) {
    e.line() << (msl ? "simdgroup_store(" : "enigma_simdgroup_matrix_store(")
             << e.expr(store.getValue()) << ", "
             << address(store.getMemref(), store.getOffset()) << ", "
             << e.expr(store.getElementsPerRow()) << ");\n";
    return success();
  }
  if (auto mma = dyn_cast<SimdgroupMultiplyAccumulateOp>(op)) {
    std::string args = e.expr(mma.getA()) + ", " + e.expr(mma.getB()) + ", " +
                       e.expr(mma.getC());
    if (!msl) {
      e.define(mma.getResult(),
               "enigma_simdgroup_multiply_accumulate(" + args + ")");
      return success();
    }
    std::string name = e.freshName(mma.getResult());
    e.line() << matrixType(mma.getResult().getType()) << " " << name << ";\n";
    e.line() << "simdgroup_multiply_accumulate(" << name << ", " << args
             << ");\n";
    return success();
  }
  auto fill = cast<MakeFilledSimdgroupMatrixOp>(op);
  Type resultType = fill.getResult().getType();
  std::string elem =
      e.typeName(llvm::cast<VectorType>(resultType).getElementType());
  if (!msl) {
    e.define(fill.getResult(), "enigma_make_filled_simdgroup_matrix<" +
                                   e.typeName(resultType) + ">(" +
                                   e.expr(fill.getValue()) + ")");
    return success();
  }
  std::string value = e.expr(fill.getValue());
  e.line() << matrixType(resultType) << " " << e.freshName(fill.getResult())
           << " = make_filled_simdgroup_matrix<" << elem << ", 8, 8>("
           << value << ");\n";
  return success();
}

LogicalResult emitSimdFamily(CFamilyEmitter &e, Operation *op, bool &handled) {
  handled = false;
  if (isa<SimdgroupMatrixLoadOp, SimdgroupMatrixStoreOp,
          SimdgroupMultiplyAccumulateOp, MakeFilledSimdgroupMatrixOp>(op)) {
    handled = true;
    return emitSimdgroupMatrix(e, op);
  }
  auto spelling = simdSpellings().find(op->getName().getStringRef());
  if (spelling == simdSpellings().end())
    return success();
  StringRef fn = spelling->second;
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
  // CUDA passes the lanes that exist (computed at kernel entry; see
  // enigma_existing_lanes in the CUDA prelude).
  if (e.target() == Target::CUDA)
    args += ", enigma_lanes";
  std::string call = fn.str() + "(" + args + ")";
  if (asSigned)
    call = "(" + e.typeName(result.getType()) + ")" + call;
  e.define(result, call);
  return success();
}

} // namespace enigma
