//===- VectorMemory.cpp - Vector loads and stores on scalar memory --------===//
//
// Upstream vector.load / vector.store on the 1-D memref of a buffer or
// threadgroup array: the C-family targets print them as one wide access
// (lib/Target/CFamily/EmitVectorMemory.cpp).
//
//===----------------------------------------------------------------------===//
#include "enigma/Builder/VectorMemory.h"

#include "BuilderImpl.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>

using namespace mlir;

namespace enigma {
namespace {

struct ScalarMemory {
  mlir::Value memref;
  DType dtype;
  std::string name;
};

ScalarMemory scalarMemory(KernelBuilder &k, VectorMemoryTarget mem,
                          const char *what) {
  KernelBuilder::Impl &impl = k.internals();
  if (mem.buffer) {
    const Buffer &b = *mem.buffer;
    if (b.paramIndex() >= impl.kernel.getNumArguments() ||
        !impl.kernel.isBufferParam(b.paramIndex()))
      throw EnigmaError(std::string(what) + ": not a buffer of this kernel");
    std::string name =
        "buffer '" + impl.kernel.getParamName(b.paramIndex()) + "'";
    if (b.lanes() != 1)
      throw EnigmaError(std::string(what) + ": " + name +
                        " already holds vectors (vec_width); vector "
                        "accesses read scalar buffers");
    return {impl.kernel.getBody().front().getArgument(b.paramIndex()),
            b.dtype(), name};
  }
  const ThreadgroupArray &a = *mem.array;
  if (a.builder() != &k)
    throw EnigmaError(std::string(what) +
                      ": the threadgroup array belongs to another kernel");
  return {mlir::Value::getFromOpaquePointer(a.handle()), a.dtype(),
          "threadgroup array"};
}

void checkLanes(unsigned lanes, const ScalarMemory &m, const char *what) {
  if (lanes != 2 && lanes != 4)
    throw EnigmaError(std::string(what) + " of " + m.name +
                      ": vector accesses move 2 or 4 elements, got " +
                      std::to_string(lanes));
  if (m.dtype == DType::Bool)
    throw EnigmaError(std::string(what) + " of " + m.name +
                      ": bool memory has no vector accesses");
}

mlir::Value elementIndex(KernelBuilder &k, const Value &index,
                         const char *what) {
  checkOwner(&k, index, what);
  if (isFloat(index.dtype()) || index.dtype() == DType::Bool ||
      index.lanes() != 1)
    throw EnigmaError(std::string(what) +
                      ": the index must be an integer scalar, got " +
                      shortName(index.dtype()));
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &b = impl.builder;
  if (isSigned(index.dtype()))
    return b.create<arith::IndexCastOp>(impl.location, b.getIndexType(),
                                        raw(index));
  return b.create<arith::IndexCastUIOp>(impl.location, b.getIndexType(),
                                        raw(index));
}

/// Known trailing zero bits of an integer value (at most kMaxZeros), by
/// walking the ops that define it; `depth` bounds the walk.
constexpr unsigned kMaxZeros = 31;

unsigned knownTrailingZeros(mlir::Value v, unsigned depth) {
  if (depth == 0)
    return 0;
  Operation *def = v.getDefiningOp();
  if (!def) {
    // A loop variable: nothing is known. A kernel scalar may promise a
    // multiple (checked at dispatch).
    auto arg = llvm::dyn_cast<BlockArgument>(v);
    auto kernel = arg ? llvm::dyn_cast<KernelOp>(arg.getOwner()->getParentOp())
                      : KernelOp();
    if (!kernel)
      return 0;
    uint64_t multiple = kernel.getParamMultipleOf(arg.getArgNumber());
    return std::min(unsigned(llvm::countr_zero(multiple)), kMaxZeros);
  }
  auto tz = [&](mlir::Value x) { return knownTrailingZeros(x, depth - 1); };
  APInt constant;
  if (matchPattern(v, m_ConstantInt(&constant)))
    return constant.isZero() ? kMaxZeros
                             : std::min(constant.countr_zero(), kMaxZeros);
  if (isa<arith::MulIOp>(def))
    return std::min(tz(def->getOperand(0)) + tz(def->getOperand(1)),
                    kMaxZeros);
  if (isa<arith::AddIOp, arith::SubIOp, arith::SelectOp>(def)) {
    unsigned first = isa<arith::SelectOp>(def) ? 1 : 0;
    return std::min(tz(def->getOperand(first)), tz(def->getOperand(first + 1)));
  }
  if (isa<arith::AndIOp>(def))
    return std::max(tz(def->getOperand(0)), tz(def->getOperand(1)));
  if (isa<arith::OrIOp, arith::XOrIOp>(def))
    return std::min(tz(def->getOperand(0)), tz(def->getOperand(1)));
  if (isa<arith::ShLIOp>(def)) {
    APInt shift;
    if (matchPattern(def->getOperand(1), m_ConstantInt(&shift)) &&
        shift.ult(64))
      return std::min(tz(def->getOperand(0)) + unsigned(shift.getZExtValue()),
                      kMaxZeros);
    return tz(def->getOperand(0));
  }
  // Widening keeps the low bits; truncating to w bits keeps them below w.
  if (isa<arith::ExtUIOp, arith::ExtSIOp, arith::IndexCastOp,
          arith::IndexCastUIOp>(def))
    return tz(def->getOperand(0));
  if (auto trunc = dyn_cast<arith::TruncIOp>(def))
    return std::min(tz(trunc.getIn()), trunc.getType().getIntOrFloatBitWidth());
  return 0;
}

} // namespace

uint64_t knownPowerOfTwoDivisor(KernelBuilder &k, Value v) {
  checkOwner(&k, v, "divisibility query");
  if (isFloat(v.dtype()) || v.dtype() == DType::Bool || v.lanes() != 1)
    return 1;
  return uint64_t(1) << knownTrailingZeros(raw(v), /*depth=*/32);
}

Value vectorLoad(KernelBuilder &k, VectorMemoryTarget mem, Value index,
                 unsigned lanes) {
  const char *what = "vector load";
  ScalarMemory m = scalarMemory(k, mem, what);
  checkLanes(lanes, m, what);
  mlir::Value i = elementIndex(k, index, what);
  KernelBuilder::Impl &impl = k.internals();
  auto type = llvm::cast<VectorType>(mlirType(&impl.context, m.dtype, lanes));
  auto op = impl.builder.create<vector::LoadOp>(impl.location, type, m.memref,
                                                ValueRange{i});
  return wrap(&k, op.getResult(), m.dtype);
}

void vectorStore(KernelBuilder &k, VectorMemoryTarget mem, Value index,
                 Value value) {
  const char *what = "vector store";
  ScalarMemory m = scalarMemory(k, mem, what);
  checkOwner(&k, value, what);
  checkLanes(value.lanes(), m, what);
  mlir::Value i = elementIndex(k, index, what);
  // Like a scalar store, the value converts to the memory's element type.
  value = k.cast(value, m.dtype);
  KernelBuilder::Impl &impl = k.internals();
  impl.builder.create<vector::StoreOp>(impl.location, raw(value), m.memref,
                                       ValueRange{i});
}

} // namespace enigma
