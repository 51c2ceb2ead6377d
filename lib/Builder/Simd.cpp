//===- Simd.cpp - KernelBuilder calls of the simd family -------------===//
#include "enigma/Builder/Simd.h"

#include "BuilderImpl.h"

#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"

using namespace mlir;

namespace enigma {

static const char *reduceName(GroupReduce op) {
  switch (op) {
  case GroupReduce::Sum: return "sum";
  case GroupReduce::Product: return "product";
  case GroupReduce::Min: return "min";
  case GroupReduce::Max: return "max";
  case GroupReduce::And: return "and";
  case GroupReduce::Or: return "or";
  case GroupReduce::Xor: return "xor";
  case GroupReduce::PrefixExclusiveSum: return "prefix_exclusive_sum";
  case GroupReduce::PrefixInclusiveSum: return "prefix_inclusive_sum";
  case GroupReduce::PrefixExclusiveProduct: return "prefix_exclusive_product";
  case GroupReduce::PrefixInclusiveProduct: return "prefix_inclusive_product";
  }
  return "?";
}

static const char *shuffleName(GroupShuffle op) {
  switch (op) {
  case GroupShuffle::Shuffle: return "shuffle";
  case GroupShuffle::ShuffleUp: return "shuffle_up";
  case GroupShuffle::ShuffleDown: return "shuffle_down";
  case GroupShuffle::ShuffleXor: return "shuffle_xor";
  case GroupShuffle::Broadcast: return "broadcast";
  }
  return "?";
}

static std::string fullName(LaneGroup group, const char *op) {
  return std::string(group == LaneGroup::Simd ? "simd_" : "quad_") + op;
}

/// Creates `enigma.<name>` on v (and lane) at the builder's location.
static Value create(const std::string &name, Value v, Value lane,
                    bool isSignedCompare) {
  KernelBuilder &k = *v.builder();
  KernelBuilder::Impl &impl = k.internals();
  OperationState state(impl.location, "enigma." + name);
  state.addOperands(raw(v));
  if (lane.valid())
    state.addOperands(raw(lane));
  state.addTypes(raw(v).getType());
  if (isSignedCompare)
    state.addAttribute("is_signed", UnitAttr::get(&impl.context));
  Operation *op = impl.builder.create(state);
  return wrap(&k, op->getResult(0), v.dtype());
}

static void checkScalar(const Value &v, const std::string &name) {
  checkOwner(v.builder(), v, name.c_str());
  if (v.lanes() != 1)
    throw EnigmaError(name + " takes a scalar; apply it to each component of "
                             "a vector");
}

Value groupReduce(LaneGroup group, GroupReduce op, Value v) {
  std::string name = fullName(group, reduceName(op));
  checkScalar(v, name);
  DType t = v.dtype();
  bool bitwise = op == GroupReduce::And || op == GroupReduce::Or ||
                 op == GroupReduce::Xor;
  if (t == DType::Bool)
    throw EnigmaError(name + " is not defined for bool; convert with "
                             "metal_cast(x, \"uint\") first");
  if (bitwise && !isInteger(t))
    throw EnigmaError(name + " takes an integer, got " + shortName(t));
  bool signedCompare = (op == GroupReduce::Min || op == GroupReduce::Max) &&
                       isInteger(t) && isSigned(t);
  return create(name, v, Value(), signedCompare);
}

Value groupShuffle(LaneGroup group, GroupShuffle op, Value v, Value lane) {
  std::string name = fullName(group, shuffleName(op));
  checkScalar(v, name);
  checkOwner(v.builder(), lane, name.c_str());
  if (!isInteger(lane.dtype()) || lane.lanes() != 1)
    throw EnigmaError(name + ": the lane operand must be an integer scalar, "
                             "got " + std::string(shortName(lane.dtype())));
  KernelBuilder &k = *v.builder();
  return create(name, v, k.cast(lane, DType::U32), false);
}

Value simdGroupCall(const std::string &metalName, Value v, Value lane) {
  for (LaneGroup g : {LaneGroup::Simd, LaneGroup::Quad}) {
    for (int i = 0; i <= int(GroupReduce::PrefixInclusiveProduct); ++i) {
      auto op = static_cast<GroupReduce>(i);
      if (fullName(g, reduceName(op)) != metalName)
        continue;
      if (lane.valid())
        throw EnigmaError(metalName + " takes one operand");
      return groupReduce(g, op, v);
    }
    for (int i = 0; i <= int(GroupShuffle::Broadcast); ++i) {
      auto op = static_cast<GroupShuffle>(i);
      if (fullName(g, shuffleName(op)) != metalName)
        continue;
      if (!lane.valid())
        throw EnigmaError(metalName + " takes a value and a lane operand");
      return groupShuffle(g, op, v, lane);
    }
  }
  throw EnigmaError("unknown simdgroup function '" + metalName + "'");
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
