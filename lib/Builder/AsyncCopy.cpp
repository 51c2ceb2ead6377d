//===- AsyncCopy.cpp - KernelBuilder calls of the async copy family -------===//
#include "enigma/Builder/AsyncCopy.h"

#include "BuilderImpl.h"

#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"

#include "mlir/IR/Matchers.h"

#include <optional>

using namespace mlir;

namespace enigma {

struct AsyncCopyEventAccess {
  static AsyncCopyEvent make(KernelBuilder *k, mlir::Value v) {
    return AsyncCopyEvent(k, v.getAsOpaquePointer());
  }
};

namespace {

const char *opName(bool twoD, AsyncCopyDirection direction) {
  bool d2t = direction == AsyncCopyDirection::DeviceToThreadgroup;
  if (twoD)
    return d2t ? "async_copy_2d_d2t" : "async_copy_2d_t2d";
  return d2t ? "async_copy_1d_d2t" : "async_copy_1d_t2d";
}

struct Memory {
  mlir::Value memref;
  DType dtype;
  std::string name;
  std::optional<uint64_t> size; // elements, for threadgroup arrays
};

/// The memref of `mem`, which must be a buffer (`wantBuffer`) or a
/// threadgroup array of this kernel.
Memory memoryOf(KernelBuilder &k, const AsyncCopyMemory &mem, bool wantBuffer,
                const std::string &what, const char *role) {
  KernelBuilder::Impl &impl = k.internals();
  std::string direction =
      std::string(role) + " must be " +
      (wantBuffer ? "a buffer parameter (device memory)"
                  : "a threadgroup_alloc array (threadgroup memory)");
  if (mem.buffer) {
    unsigned i = mem.buffer->paramIndex();
    if (i >= impl.kernel.getNumArguments() || !impl.kernel.isBufferParam(i))
      throw EnigmaError(what + ": the " + role +
                        " buffer belongs to another kernel");
    std::string name = "buffer '" + impl.kernel.getParamName(i) + "'";
    if (!wantBuffer)
      throw EnigmaError(what + " copies " +
                        (std::string(role) == "dst" ? "into" : "from") +
                        " threadgroup memory: " + direction + ", got " + name);
    if (mem.buffer->lanes() != 1)
      throw EnigmaError(what + ": " + name + " holds " +
                        std::to_string(mem.buffer->lanes()) +
                        "-lane vectors (vec_width); async copies move the "
                        "scalar elements of threadgroup arrays");
    return {impl.kernel.getBody().front().getArgument(i), mem.buffer->dtype(),
            name, std::nullopt};
  }
  if (!mem.array || mem.array->builder() != &k)
    throw EnigmaError(what + ": the " + role +
                      " threadgroup array belongs to another kernel");
  if (wantBuffer)
    throw EnigmaError(what + " copies " +
                      (std::string(role) == "dst" ? "into" : "from") +
                      " device memory: " + direction +
                      ", got a threadgroup array");
  // The dynamic threadgroup array's size is known at launch only.
  std::optional<uint64_t> size;
  if (mem.array->size())
    size = mem.array->size();
  return {mlir::Value::getFromOpaquePointer(mem.array->handle()),
          mem.array->dtype(), "the threadgroup array", size};
}

/// An offset or extent as an index, read as unsigned unless its dtype is
/// signed (as buffer subscripts are).
mlir::Value indexOf(KernelBuilder &k, const Value &v, const std::string &what,
                    const char *arg) {
  checkOwner(&k, v, (what + ": " + arg).c_str());
  if (v.lanes() != 1 || !isInteger(v.dtype()))
    throw EnigmaError(what + ": " + arg + " must be an integer scalar, got " +
                      (v.lanes() != 1 ? std::to_string(v.lanes()) + "-lane "
                                      : std::string()) +
                      shortName(v.dtype()));
  KernelBuilder::Impl &impl = k.internals();
  Type index = impl.builder.getIndexType();
  if (isSigned(v.dtype()))
    return impl.builder.create<arith::IndexCastOp>(impl.location, index,
                                                   raw(v));
  return impl.builder.create<arith::IndexCastUIOp>(impl.location, index,
                                                   raw(v));
}

/// The value of `v` when it is a constant (before any cast).
std::optional<int64_t> constantOf(mlir::Value v) {
  bool isUnsigned = false;
  if (auto cast = v.getDefiningOp<arith::IndexCastOp>()) {
    v = cast.getIn();
  } else if (auto castUI = v.getDefiningOp<arith::IndexCastUIOp>()) {
    v = castUI.getIn();
    isUnsigned = true;
  }
  APInt value;
  if (!matchPattern(v, m_ConstantInt(&value)))
    return std::nullopt;
  if (isUnsigned && value.getActiveBits() > 62)
    return std::nullopt; // far past any threadgroup array anyway
  return isUnsigned ? int64_t(value.getZExtValue()) : value.getSExtValue();
}

/// A copy whose extent is known at trace time must fit its threadgroup
/// array: the last element it touches is offset + (rows - 1) * epr + cols.
void checkFits(const Memory &m, mlir::Value offset, mlir::Value perRow,
               mlir::Value cols, mlir::Value rows, const std::string &what,
               const char *role) {
  if (!m.size)
    return;
  std::optional<int64_t> off = constantOf(offset), c = constantOf(cols);
  std::optional<int64_t> r = rows ? constantOf(rows) : std::optional<int64_t>(1);
  std::optional<int64_t> epr =
      perRow ? constantOf(perRow) : std::optional<int64_t>(0);
  if (!off || !c || !r || !epr || *c <= 0 || *r <= 0)
    return;
  int64_t end = *off + (*r - 1) * *epr + *c;
  if (*off < 0 || end > int64_t(*m.size))
    throw EnigmaError(what + ": the copy reaches element " +
                      std::to_string(end - 1) + " of its " + role + " (" +
                      m.name + " of " + std::to_string(*m.size) +
                      " elements)");
}

struct Operands {
  Memory dst, src;
  std::string what;
};

Operands operandsOf(KernelBuilder &k, bool twoD, AsyncCopyDirection direction,
                    const AsyncCopyMemory &dst, const AsyncCopyMemory &src) {
  std::string what = opName(twoD, direction);
  bool d2t = direction == AsyncCopyDirection::DeviceToThreadgroup;
  Memory d = memoryOf(k, dst, /*wantBuffer=*/!d2t, what, "dst");
  Memory s = memoryOf(k, src, /*wantBuffer=*/d2t, what, "src");
  KernelBuilder::Impl &impl = k.internals();
  if (mlirType(&impl.context, d.dtype) != mlirType(&impl.context, s.dtype))
    throw EnigmaError(what + ": the source (" + s.name + ") holds " +
                      shortName(s.dtype) + " but the destination (" + d.name +
                      ") holds " + shortName(d.dtype) +
                      "; an async copy moves elements unchanged, so both "
                      "must have one element type");
  return {d, s, what};
}

} // namespace

AsyncCopyEvent asyncCopy1d(KernelBuilder &k, AsyncCopyDirection direction,
                           AsyncCopyMemory dst, Value dstOffset,
                           AsyncCopyMemory src, Value srcOffset, Value count) {
  Operands o = operandsOf(k, false, direction, dst, src);
  mlir::Value dOff = indexOf(k, dstOffset, o.what, "dst_offset");
  mlir::Value sOff = indexOf(k, srcOffset, o.what, "src_offset");
  mlir::Value n = indexOf(k, count, o.what, "count");
  checkFits(o.dst, dOff, {}, n, {}, o.what, "dst");
  checkFits(o.src, sOff, {}, n, {}, o.what, "src");
  KernelBuilder::Impl &impl = k.internals();
  Type event = AsyncEventType::get(&impl.context);
  mlir::Value result =
      direction == AsyncCopyDirection::DeviceToThreadgroup
          ? impl.builder
                .create<AsyncCopy1dD2TOp>(impl.location, event, o.dst.memref,
                                          dOff, o.src.memref, sOff, n)
                .getEvent()
          : impl.builder
                .create<AsyncCopy1dT2DOp>(impl.location, event, o.dst.memref,
                                          dOff, o.src.memref, sOff, n)
                .getEvent();
  return AsyncCopyEventAccess::make(&k, result);
}

AsyncCopyEvent asyncCopy2d(KernelBuilder &k, AsyncCopyDirection direction,
                           AsyncCopyMemory dst, Value dstOffset,
                           Value dstElementsPerRow, AsyncCopyMemory src,
                           Value srcOffset, Value srcElementsPerRow,
                           Value tileCols, Value tileRows) {
  Operands o = operandsOf(k, true, direction, dst, src);
  mlir::Value dOff = indexOf(k, dstOffset, o.what, "dst_offset");
  mlir::Value dEpr = indexOf(k, dstElementsPerRow, o.what,
                             "dst_elements_per_row");
  mlir::Value sOff = indexOf(k, srcOffset, o.what, "src_offset");
  mlir::Value sEpr = indexOf(k, srcElementsPerRow, o.what,
                             "src_elements_per_row");
  mlir::Value cols = indexOf(k, tileCols, o.what, "tile_cols");
  mlir::Value rows = indexOf(k, tileRows, o.what, "tile_rows");
  checkFits(o.dst, dOff, dEpr, cols, rows, o.what, "dst");
  checkFits(o.src, sOff, sEpr, cols, rows, o.what, "src");
  KernelBuilder::Impl &impl = k.internals();
  Type event = AsyncEventType::get(&impl.context);
  mlir::Value result =
      direction == AsyncCopyDirection::DeviceToThreadgroup
          ? impl.builder
                .create<AsyncCopy2dD2TOp>(impl.location, event, o.dst.memref,
                                          dOff, dEpr, o.src.memref, sOff, sEpr,
                                          cols, rows)
                .getEvent()
          : impl.builder
                .create<AsyncCopy2dT2DOp>(impl.location, event, o.dst.memref,
                                          dOff, dEpr, o.src.memref, sOff, sEpr,
                                          cols, rows)
                .getEvent();
  return AsyncCopyEventAccess::make(&k, result);
}

void asyncCopyWait(KernelBuilder &k, const std::vector<AsyncCopyEvent> &events) {
  KernelBuilder::Impl &impl = k.internals();
  std::vector<mlir::Value> values;
  for (const AsyncCopyEvent &e : events) {
    if (!e.valid() || e.builder() != &k)
      throw EnigmaError("async_copy_wait: the event belongs to another kernel");
    mlir::Value v = mlir::Value::getFromOpaquePointer(e.handle());
    // Events are not carried out of loops and branches (they are not
    // values a kernel computes with): one made inside a body that has
    // ended no longer exists.
    Region *defined = v.getParentRegion();
    Block *here = impl.builder.getInsertionBlock();
    if (defined && here && !defined->isAncestor(here->getParent())) {
      Operation *construct = defined->getParentOp();
      const char *what = llvm::isa<scf::ForOp>(construct)  ? "loop"
                         : llvm::isa<scf::IfOp>(construct) ? "branch"
                                                           : "while loop";
      throw EnigmaError(std::string("async_copy_wait: the event was made by "
                                    "a copy inside a ") +
                        what +
                        " that has ended; wait for it inside that " + what +
                        " (events cannot be carried out of one)");
    }
    values.push_back(v);
  }
  if (values.empty())
    return;
  impl.builder.create<AsyncCopyWaitOp>(impl.location, values);
}

} // namespace enigma
