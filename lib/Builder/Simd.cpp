//===- Simd.cpp - KernelBuilder calls of the simd family -------------===//
//
// The simd family's rules (the simd_* / quad_* rows of its table) and the
// simdgroup matrices.
//
//===----------------------------------------------------------------------===//
#include "enigma/Builder/Simd.h"

#include "FunctionBuilders.h"

#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"

using namespace mlir;

namespace enigma {

static void checkScalar(const Value &v, const std::string &name) {
  if (v.lanes() != 1)
    throw EnigmaError(name + " takes a scalar; apply it to each component of "
                             "a vector");
}

/// The votes and lane queries: operands read as bools, results a bool or
/// a ulong ballot.
static Value buildSimdVote(KernelBuilder &k, const Function &fn,
                           const std::vector<Value> &args) {
  std::vector<mlir::Value> operands;
  if (fn.rule != FunctionRule::GroupLaneQuery) {
    checkScalar(args[0], fn.name);
    operands.push_back(raw(k.cast(args[0], DType::Bool)));
  }
  // The op's own result type says which: i1 (bool) or i64 (a ballot).
  std::string op = fn.floatOp;
  DType result = fn.rule == FunctionRule::GroupVote ||
                         op == "enigma.simd_is_first"
                     ? DType::Bool
                     : DType::U64;
  mlir::Value r = createFunctionOp(
      k, op, operands, mlirType(&k.internals().context, result), false);
  return wrap(&k, r, result);
}

Value buildSimdFunction(KernelBuilder &k, const Function &fn,
                        const std::vector<Value> &args) {
  std::string name = fn.name;
  if (fn.rule == FunctionRule::GroupVote ||
      fn.rule == FunctionRule::GroupBallot ||
      fn.rule == FunctionRule::GroupLaneQuery)
    return buildSimdVote(k, fn, args);
  const Value v = computable(k, args[0]); // 8-bit floats in f32
  checkScalar(v, name);
  DType t = v.dtype();
  std::vector<mlir::Value> operands{raw(v)};
  switch (fn.rule) {
  case FunctionRule::GroupReduce:
  case FunctionRule::GroupScan:
  case FunctionRule::GroupMinMax:
  case FunctionRule::GroupBitwise:
    if (t == DType::Bool)
      throw EnigmaError(name + " is not defined for bool; convert with "
                               "metal_cast(x, \"uint\") first");
    if (fn.rule == FunctionRule::GroupBitwise && !isInteger(t))
      throw EnigmaError(name + " takes an integer, got " + shortName(t));
    break;
  case FunctionRule::GroupShuffle: {
    const Value &lane = args[1];
    if (!isInteger(lane.dtype()) || lane.lanes() != 1)
      throw EnigmaError(name + ": the lane operand must be an integer "
                               "scalar, got " +
                        std::string(shortName(lane.dtype())));
    operands.push_back(raw(k.cast(lane, DType::U32)));
    break;
  }
  default:
    throw EnigmaError(name + ": rule " + functionRuleName(fn.rule) +
                      " is not a simd rule");
  }
  // min / max compare integers by the dtype's signedness.
  mlir::Value r = createFunctionOp(k, opForDType(fn, t), operands,
                                   raw(v).getType(),
                                   isInteger(t) && isSigned(t));
  return wrap(&k, r, t);
}

// --- Simdgroup matrices ---------------------------------------------------

void checkSimdgroupMatrixShape(DType elem, int rows, int cols) {
  if (elem != DType::F32 && elem != DType::F16)
    throw EnigmaError(std::string("simdgroup matrices hold float or half, "
                                  "got ") + shortName(elem));
  if (rows != 8 || cols != 8)
    throw EnigmaError("simdgroup matrices are 8x8, got " +
                      std::to_string(rows) + "x" + std::to_string(cols));
}

namespace {
struct MatrixMemory {
  mlir::Value memref;
  DType dtype;
  std::string name;
};

MatrixMemory matrixMemoryOf(KernelBuilder &k, const SimdgroupMatrixMemory &mem,
                            const char *what) {
  KernelBuilder::Impl &impl = k.internals();
  if (mem.buffer) {
    unsigned i = mem.buffer->paramIndex();
    if (i >= impl.kernel.getNumArguments() || !impl.kernel.isBufferParam(i))
      throw EnigmaError(std::string(what) +
                        ": the buffer belongs to another kernel");
    if (mem.buffer->lanes() != 1)
      throw EnigmaError(std::string(what) + ": buffer '" +
                        impl.kernel.getParamName(i) +
                        "' is a vector buffer; use a scalar buffer");
    return {impl.kernel.getBody().front().getArgument(i), mem.buffer->dtype(),
            "buffer '" + impl.kernel.getParamName(i) + "'"};
  }
  if (!mem.array || mem.array->builder() != &k)
    throw EnigmaError(std::string(what) +
                      ": the threadgroup array belongs to another kernel");
  return {mlir::Value::getFromOpaquePointer(mem.array->handle()),
          mem.array->dtype(), "the threadgroup array"};
}

Value asUint(KernelBuilder &k, Value v, const char *what, const char *arg) {
  checkOwner(&k, v, what);
  if (!isInteger(v.dtype()) || v.lanes() != 1)
    throw EnigmaError(std::string(what) + ": " + arg +
                      " must be an integer scalar, got " +
                      shortName(v.dtype()));
  return k.cast(v, DType::U32);
}

void checkMatrix(const SimdgroupMatrix &m, const char *what) {
  if (!m.value.valid() || m.value.lanes() != 2 ||
      (m.elem != DType::F32 && m.elem != DType::F16))
    throw EnigmaError(std::string(what) + ": not a simdgroup matrix");
}

/// The memory operands of a load / store: memref, offset, elements_per_row.
std::vector<mlir::Value> memoryOperands(KernelBuilder &k,
                                        const SimdgroupMatrixMemory &mem,
                                        DType elem, Value elementsPerRow,
                                        Value offset, const char *what) {
  MatrixMemory m = matrixMemoryOf(k, mem, what);
  if (m.dtype != elem)
    throw EnigmaError(std::string(what) + ": " + m.name + " holds " +
                      shortName(m.dtype) + " but the matrix is " +
                      shortName(elem));
  Value epr = asUint(k, elementsPerRow, what, "elements_per_row");
  Value off = offset.valid() ? asUint(k, offset, what, "offset")
                             : k.constantInt(0, DType::U32);
  return {m.memref, raw(off), raw(epr)};
}
} // namespace

SimdgroupMatrix simdgroupMatrixLoad(KernelBuilder &k, SimdgroupMatrixMemory mem,
                                    Value elementsPerRow, Value offset,
                                    DType elem, int rows, int cols,
                                    bool transpose) {
  const char *what = "simdgroup_matrix_load";
  checkSimdgroupMatrixShape(elem, rows, cols);
  std::vector<mlir::Value> operands =
      memoryOperands(k, mem, elem, elementsPerRow, offset, what);
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<SimdgroupMatrixLoadOp>(
      impl.location, mlirType(&impl.context, elem, 2), operands[0],
      operands[1], operands[2], transpose);
  return {wrap(&k, op.getResult(), elem), elem};
}

void simdgroupMatrixStore(const SimdgroupMatrix &m, SimdgroupMatrixMemory mem,
                          Value elementsPerRow, Value offset) {
  const char *what = "simdgroup_matrix_store";
  checkMatrix(m, what);
  KernelBuilder &k = *m.value.builder();
  std::vector<mlir::Value> operands =
      memoryOperands(k, mem, m.elem, elementsPerRow, offset, what);
  KernelBuilder::Impl &impl = k.internals();
  impl.builder.create<SimdgroupMatrixStoreOp>(impl.location, raw(m.value),
                                              operands[0], operands[1],
                                              operands[2]);
}

SimdgroupMatrix simdgroupMultiplyAccumulate(const SimdgroupMatrix &a,
                                            const SimdgroupMatrix &b,
                                            const SimdgroupMatrix &c) {
  const char *what = "simdgroup_multiply_accumulate";
  checkMatrix(a, what);
  checkMatrix(b, what);
  checkMatrix(c, what);
  KernelBuilder &k = *a.value.builder();
  if (b.value.builder() != &k || c.value.builder() != &k)
    throw EnigmaError(std::string(what) +
                      ": the matrices belong to different kernels");
  if (a.elem != b.elem || a.elem != c.elem)
    throw EnigmaError(std::string(what) + ": a, b and c must share one "
                      "element type, got " + shortName(a.elem) + ", " +
                      shortName(b.elem) + " and " + shortName(c.elem));
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<SimdgroupMultiplyAccumulateOp>(
      impl.location, raw(a.value).getType(), raw(a.value), raw(b.value),
      raw(c.value));
  return {wrap(&k, op.getResult(), a.elem), a.elem};
}

SimdgroupMatrix makeFilledSimdgroupMatrix(Value value, DType elem, int rows,
                                          int cols) {
  const char *what = "make_filled_simdgroup_matrix";
  checkSimdgroupMatrixShape(elem, rows, cols);
  KernelBuilder &k = *value.builder();
  checkOwner(&k, value, what);
  if (value.lanes() != 1)
    throw EnigmaError(std::string(what) + ": the value must be a scalar");
  Value v = k.cast(value, elem);
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<MakeFilledSimdgroupMatrixOp>(
      impl.location, mlirType(&impl.context, elem, 2), raw(v));
  return {wrap(&k, op.getResult(), elem), elem};
}

} // namespace enigma
