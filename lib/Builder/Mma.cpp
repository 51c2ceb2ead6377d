//===- Mma.cpp - KernelBuilder calls of the mma family --------------------===//
#include "enigma/Builder/Mma.h"

#include "BuilderImpl.h"

#include "enigma/Dialect/Enigma/IR/EnigmaFloat8Ops.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;

namespace enigma {

namespace {

KernelBuilder::Impl &implOf(const Value &v) {
  return v.builder()->internals();
}

RankedTensorType tensorOf(const Value &v) {
  return llvm::dyn_cast<RankedTensorType>(raw(v).getType());
}

RankedTensorType tensorType(KernelBuilder &k, DType dtype,
                            ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape,
                               mlirType(&k.internals().context, dtype));
}

RankedTensorType requireFragment(const Value &v, const char *what) {
  if (!v.valid())
    throw EnigmaError(std::string(what) + ": the value is empty");
  RankedTensorType t = tensorOf(v);
  if (!t)
    throw EnigmaError(std::string(what) + " takes a fragment, got a " +
                      shortName(v.dtype()) +
                      (v.lanes() > 1 ? " vector" : " scalar"));
  checkOwner(v.builder(), v, what);
  return t;
}

std::string shapeText(RankedTensorType t) {
  std::string s;
  for (int64_t d : t.getShape())
    s += (s.empty() ? "" : " x ") + std::to_string(d);
  return s;
}

Value wrapAs(KernelBuilder &k, mlir::Value v, DType t) {
  return ValueAccess::wrap(&k, v, t, 1);
}

mlir::Value asIndex(KernelBuilder &k, const Value &v, const char *what) {
  checkOwner(&k, v, what);
  if (isFloat(v.dtype()) || v.dtype() == DType::Bool || v.lanes() != 1 ||
      tensorOf(v))
    throw EnigmaError(std::string(what) + " must be an integer scalar, got " +
                      (tensorOf(v) ? std::string("a fragment")
                                   : std::string(shortName(v.dtype()))));
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &b = impl.builder;
  if (isSigned(v.dtype()))
    return b.create<arith::IndexCastOp>(impl.location, b.getIndexType(),
                                        raw(v));
  return b.create<arith::IndexCastUIOp>(impl.location, b.getIndexType(),
                                        raw(v));
}

struct Memory {
  mlir::Value memref;
  DType dtype;
  std::string name;
};

Memory memoryOf(KernelBuilder &k, const MmaMemory &mem, const char *what) {
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

KernelBuilder &builderOf(const MmaMemory &mem) {
  if (mem.buffer)
    throw EnigmaError("an mma operand tile must be in threadgroup memory, "
                      "not a buffer");
  if (!mem.array || !mem.array->builder())
    throw EnigmaError("an mma operand needs a threadgroup array");
  return *mem.array->builder();
}

DenseI32ArrayAttr swizzleAttr(KernelBuilder &k,
                              const std::optional<MmaSwizzle> &sw) {
  if (!sw || (*sw)[0] == 0)
    return {};
  return DenseI32ArrayAttr::get(&k.internals().context,
                                {(*sw)[0], (*sw)[1], (*sw)[2]});
}

/// `x` as a fragment shaped like `like` (a scalar is converted and filled).
Value asFragmentLike(const Value &x, RankedTensorType like, DType dtype,
                     const char *what) {
  KernelBuilder &k = *x.builder();
  if (RankedTensorType t = tensorOf(x)) {
    checkOwner(&k, x, what);
    if (t.getShape() != like.getShape())
      throw EnigmaError(std::string(what) + ": fragments of different shapes (" +
                        shapeText(t) + " and " + shapeText(like) + ")");
    if (x.dtype() != dtype)
      throw EnigmaError(std::string(what) + ": fragments of different types (" +
                        shortName(x.dtype()) + " and " + shortName(dtype) +
                        "); convert one with .cast()");
    return x;
  }
  checkOwner(&k, x, what);
  if (x.lanes() != 1)
    throw EnigmaError(std::string(what) +
                      ": a fragment cannot be combined with a vector");
  ArrayRef<int64_t> shape = like.getShape();
  return mmaFill(k, k.cast(x, dtype), dtype, int(shape[0]),
                 shape.size() > 1 ? int(shape[1]) : 0);
}

/// The fragment among a and b (the first one), for shapes and dtypes.
const Value &fragmentAmong(const Value &a, const Value &b, const char *what) {
  if (a.valid() && tensorOf(a))
    return a;
  if (b.valid() && tensorOf(b))
    return b;
  throw EnigmaError(std::string(what) + " takes at least one fragment");
}

/// The element-wise conversion of `x` (a tensor) to `to`, as
/// KernelBuilder::cast does for scalars.
mlir::Value convert(KernelBuilder &k, mlir::Value x, DType from, DType to) {
  // 8-bit floats convert directly only to and from the other floats.
  if ((isFloat8(from) && !isFloat(to)) || (isFloat8(to) && !isFloat(from)))
    return convert(k, convert(k, x, from, DType::F32), DType::F32, to);
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &bd = impl.builder;
  Location loc = impl.location;
  auto shape = llvm::cast<RankedTensorType>(x.getType()).getShape();
  Type toType = tensorType(k, to, shape);
  auto bits = [](Type t) { return getElementTypeOrSelf(t).getIntOrFloatBitWidth(); };
  if (to == DType::Bool) {
    mlir::Value zero = bd.create<arith::ConstantOp>(
        loc, llvm::cast<TypedAttr>(bd.getZeroAttr(x.getType())));
    if (isFloat(from))
      return bd.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, x, zero);
    return bd.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, x, zero);
  }
  if (isFloat(from) && isFloat(to)) {
    unsigned fw = bits(x.getType()), tw = bits(toType);
    if (fw == tw) {
      x = bd.create<arith::ExtFOp>(loc, tensorType(k, DType::F32, shape), x);
      return bd.create<arith::TruncFOp>(loc, toType, x);
    }
    if (fw < tw)
      return bd.create<arith::ExtFOp>(loc, toType, x);
    return bd.create<arith::TruncFOp>(loc, toType, x);
  }
  if (isFloat(from))
    return isSigned(to) ? bd.create<arith::FPToSIOp>(loc, toType, x).getResult()
                        : bd.create<arith::FPToUIOp>(loc, toType, x).getResult();
  if (isFloat(to))
    return isSigned(from) && from != DType::Bool
               ? bd.create<arith::SIToFPOp>(loc, toType, x).getResult()
               : bd.create<arith::UIToFPOp>(loc, toType, x).getResult();
  unsigned fw = bits(x.getType()), tw = bits(toType);
  if (fw == tw)
    return x;
  if (fw < tw)
    return isSigned(from) && from != DType::Bool
               ? bd.create<arith::ExtSIOp>(loc, toType, x).getResult()
               : bd.create<arith::ExtUIOp>(loc, toType, x).getResult();
  return bd.create<arith::TruncIOp>(loc, toType, x);
}

UnitAttr unit(OpBuilder &b, bool set) { return set ? b.getUnitAttr() : UnitAttr(); }

/// The operand tile's memref, base and offset as index values.
struct Tile {
  mlir::Value memref, base, offset;
  DType dtype;
};

/// A warpgroup product's accumulator: each simdgroup's 16 rows.
void checkWarpgroupRows(RankedTensorType acc) {
  if (acc.getDimSize(0) != 16)
    throw EnigmaError("mma(warpgroup=True): each simdgroup holds 16 rows of "
                      "the group's product; the accumulator is " +
                      shapeText(acc));
}

Tile tileOf(KernelBuilder &k, const MmaOperand &operand, const char *name) {
  std::string what = std::string("mma operand ") + name;
  Memory m = memoryOf(k, operand.memory, what.c_str());
  if (operand.ld <= 0)
    throw EnigmaError(what + ": the pitch (elements per stored row) must be "
                             "positive, got " + std::to_string(operand.ld));
  Value base = operand.base.valid() ? operand.base : k.constantInt(0, DType::U32);
  Value offset =
      operand.offset.valid() ? operand.offset : k.constantInt(0, DType::U32);
  std::string baseWhat = what + " base", offsetWhat = what + " offset";
  return {m.memref, asIndex(k, base, baseWhat.c_str()),
          asIndex(k, offset, offsetWhat.c_str()), m.dtype};
}

} // namespace

bool isFragment(const Value &v) { return v.valid() && tensorOf(v); }

/// 8-bit float fragments compute in f32 (docs/design/fp8.md).
static Value computableFragment(const Value &v) {
  if (v.valid() && tensorOf(v) && isFloat8(v.dtype()))
    return mmaCast(v, DType::F32);
  return v;
}


FragmentShape fragmentShape(const Value &v) {
  RankedTensorType t = requireFragment(v, "fragmentShape");
  FragmentShape s;
  s.rows = int(t.getDimSize(0));
  s.cols = t.getRank() > 1 ? int(t.getDimSize(1)) : 0;
  return s;
}

Value mmaFill(KernelBuilder &k, Value value, DType dtype, int rows, int cols) {
  checkOwner(&k, value, "mma_fill");
  if (tensorOf(value) || value.lanes() != 1)
    throw EnigmaError("mma_fill takes a scalar value");
  if (rows <= 0 || cols < 0)
    throw EnigmaError("mma_fill: a fragment has positive sides, got " +
                      std::to_string(rows) + " x " + std::to_string(cols));
  SmallVector<int64_t> shape{rows};
  if (cols > 0)
    shape.push_back(cols);
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<MmaFillOp>(
      impl.location, tensorType(k, dtype, shape), raw(k.cast(value, dtype)));
  return wrapAs(k, op.getResult(), dtype);
}

Value mmaIota(KernelBuilder &k, int dim, int rows, int cols) {
  if (dim != 0 && dim != 1)
    throw EnigmaError("mma_iota: dim must be 0 (rows) or 1 (columns), got " +
                      std::to_string(dim));
  if (rows <= 0 || cols <= 0)
    throw EnigmaError("mma_iota: a fragment has positive sides");
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<MmaIotaOp>(
      impl.location, tensorType(k, DType::I32, {rows, cols}),
      impl.builder.getI64IntegerAttr(dim));
  return wrapAs(k, op.getResult(), DType::I32);
}

/// Memory a fragment is read from: the fragment element types.
static void checkFragmentMemory(const Memory &m, const char *what) {
  if (m.dtype != DType::F32 && m.dtype != DType::F16 &&
      m.dtype != DType::BF16 && m.dtype != DType::I32 &&
      m.dtype != DType::U32 && !isFloat8(m.dtype))
    throw EnigmaError(std::string(what) +
                      " reads float, half, bfloat, 8-bit float or 32-bit "
                      "integer memory, not " + shortName(m.dtype));
}

Value mmaLoad(KernelBuilder &k, MmaMemory mem, Value offset, Value ld,
              int rows, int cols, bool transpose, Value boundRows,
              Value boundCols) {
  Memory m = memoryOf(k, mem, "mma_load");
  checkFragmentMemory(m, "mma_load");
  if (rows <= 0 || cols <= 0)
    throw EnigmaError("mma_load: a fragment has positive sides");
  if (boundRows.valid() != boundCols.valid())
    throw EnigmaError("mma_load takes both bounds (rows and columns) or "
                      "neither");
  KernelBuilder::Impl &impl = k.internals();
  mlir::Value r, c;
  if (boundRows.valid()) {
    r = asIndex(k, boundRows, "mma_load row bound");
    c = asIndex(k, boundCols, "mma_load column bound");
  }
  auto op = impl.builder.create<MmaLoadOp>(
      impl.location, tensorType(k, m.dtype, {rows, cols}), m.memref,
      asIndex(k, offset, "mma_load offset"), asIndex(k, ld, "mma_load pitch"),
      r, c, transpose);
  return wrapAs(k, op.getResult(), m.dtype);
}

Value mmaGather(KernelBuilder &k, MmaMemory mem, Value offset, Value index) {
  Memory m = memoryOf(k, mem, "mma_gather");
  RankedTensorType t = requireFragment(index, "mma_gather index");
  if (t.getRank() != 2 || isFloat(index.dtype()) ||
      index.dtype() == DType::Bool || byteWidth(index.dtype()) != 4)
    throw EnigmaError("mma_gather: the index must be an int fragment (from "
                      "mma_iota and arithmetic), got a " + shapeText(t) +
                      " of " + shortName(index.dtype()));
  checkFragmentMemory(m, "mma_gather");
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<MmaGatherOp>(
      impl.location, tensorType(k, m.dtype, t.getShape()), m.memref,
      asIndex(k, offset, "mma_gather offset"), raw(index));
  return wrapAs(k, op.getResult(), m.dtype);
}

void mmaStore(Value fragment, MmaMemory mem, Value offset, Value ld,
              bool transpose, Value boundRows, Value boundCols) {
  requireFragment(fragment, "mma_store");
  KernelBuilder &k = *fragment.builder();
  Memory m = memoryOf(k, mem, "mma_store");
  if (tensorOf(fragment).getRank() != 2)
    throw EnigmaError("mma_store writes a fragment, not a row vector");
  if (boundRows.valid() != boundCols.valid())
    throw EnigmaError("mma_store takes both bounds (rows and columns) or "
                      "neither");
  Value value = mmaCast(fragment, m.dtype);
  KernelBuilder::Impl &impl = k.internals();
  mlir::Value r, c;
  if (boundRows.valid()) {
    r = asIndex(k, boundRows, "mma_store row bound");
    c = asIndex(k, boundCols, "mma_store column bound");
  }
  impl.builder.create<MmaStoreOp>(impl.location, raw(value), m.memref,
                                  asIndex(k, offset, "mma_store offset"),
                                  asIndex(k, ld, "mma_store pitch"), r, c,
                                  transpose);
}

Value mma(Value acc, const MmaOperand &a, const MmaOperand &b, int k,
          bool allowTf32, bool warpgroup, bool asynchronous) {
  if (asynchronous && !warpgroup)
    throw EnigmaError("mma: asynchronous=True applies to warpgroup products "
                      "(warpgroup=True) only");
  RankedTensorType t = requireFragment(acc, "mma accumulator");
  if (t.getRank() != 2 || acc.dtype() != DType::F32)
    throw EnigmaError("mma accumulates into a float fragment, got " +
                      std::string(shortName(acc.dtype())) + " " +
                      shapeText(t));
  if (k <= 0)
    throw EnigmaError("mma: K must be positive, got " + std::to_string(k));
  KernelBuilder &kb = *acc.builder();
  if (&builderOf(a.memory) != &kb || &builderOf(b.memory) != &kb)
    throw EnigmaError("mma: an operand belongs to another kernel");
  Tile ta = tileOf(kb, a, "A"), tb = tileOf(kb, b, "B");
  // 8-bit floats of the two formats multiply together (e4m3 by e5m2).
  if (ta.dtype != tb.dtype && !(isFloat8(ta.dtype) && isFloat8(tb.dtype)))
    throw EnigmaError(std::string("mma multiplies ") + shortName(ta.dtype) +
                      " by " + shortName(tb.dtype) +
                      "; both operand tiles must have one dtype (or both "
                      "be 8-bit floats)");
  KernelBuilder::Impl &impl = kb.internals();
  if (warpgroup) {
    checkWarpgroupRows(t);
    // Simdgroup i of the group starts 16 i rows into the group's A tile.
    // Stored K x M, those rows are stored columns, which come in blocks of
    // ld columns when A has a block stride.
    Value sg = kb.threadQuery(ThreadQuery::SimdgroupIndexInThreadgroup);
    Value first = (sg % kb.constantInt(4, DType::U32)) *
                  kb.constantInt(16, DType::U32);
    Value rows = first * kb.constantInt(a.ld, DType::U32);
    if (a.transpose) {
      Value ld = kb.constantInt(a.ld, DType::U32);
      rows = a.blockStride > 0
                 ? (first / ld) * kb.constantInt(a.blockStride, DType::U32) +
                       first % ld
                 : first;
    }
    ta.offset = impl.builder.create<arith::AddIOp>(
        impl.location, ta.offset, asIndex(kb, rows, "mma operand A offset"));
  }
  OpBuilder &bd = impl.builder;
  auto blocks = [&](int64_t stride) {
    return stride > 0 ? bd.getI64IntegerAttr(stride) : IntegerAttr();
  };
  auto op = bd.create<MmaOp>(
      impl.location, t, raw(acc), ta.memref, ta.base, ta.offset, tb.memref,
      tb.base, tb.offset, bd.getI64IntegerAttr(k),
      bd.getI64IntegerAttr(a.ld), bd.getI64IntegerAttr(b.ld),
      unit(bd, a.transpose), unit(bd, b.transpose), swizzleAttr(kb, a.swizzle),
      swizzleAttr(kb, b.swizzle), unit(bd, allowTf32 && ta.dtype == DType::F32),
      blocks(a.blockStride), blocks(b.blockStride), unit(bd, warpgroup),
      unit(bd, asynchronous));
  return wrapAs(kb, op.getResult(), DType::F32);
}

Value mmaWait(Value acc, int pending) {
  RankedTensorType t = requireFragment(acc, "mma_wait");
  if (t.getRank() != 2 || acc.dtype() != DType::F32)
    throw EnigmaError("mma_wait takes a float accumulator fragment, got " +
                      std::string(shortName(acc.dtype())) + " " +
                      shapeText(t));
  if (pending < 0 || pending > 7)
    throw EnigmaError("mma_wait: pending must be 0 to 7, got " +
                      std::to_string(pending));
  KernelBuilder &kb = *acc.builder();
  KernelBuilder::Impl &impl = kb.internals();
  auto op = impl.builder.create<MmaWaitOp>(
      impl.location, t, raw(acc), impl.builder.getI64IntegerAttr(pending));
  return wrapAs(kb, op.getResult(), DType::F32);
}

Value mmaReg(Value acc, Value a, const MmaOperand &b, bool warpgroup,
             bool asynchronous) {
  RankedTensorType t = requireFragment(acc, "mma accumulator");
  if (t.getRank() != 2 || acc.dtype() != DType::F32)
    throw EnigmaError("mma accumulates into a float fragment, got " +
                      std::string(shortName(acc.dtype())) + " " +
                      shapeText(t));
  if (warpgroup)
    checkWarpgroupRows(t);
  RankedTensorType ta = requireFragment(a, "mma operand A");
  KernelBuilder &kb = *acc.builder();
  if (a.builder() != &kb || &builderOf(b.memory) != &kb)
    throw EnigmaError("mma: an operand belongs to another kernel");
  if (ta.getRank() != 2)
    throw EnigmaError("mma operand A must be a fragment, not a row vector");
  Tile tb = tileOf(kb, b, "B");
  if (tb.dtype != DType::F16 && tb.dtype != DType::BF16)
    throw EnigmaError(std::string("mma with A in registers multiplies half or "
                                  "bfloat tiles, got ") +
                      shortName(tb.dtype));
  Value aConv = mmaCast(a, tb.dtype);
  KernelBuilder::Impl &impl = kb.internals();
  OpBuilder &bd = impl.builder;
  auto op = bd.create<MmaRegOp>(impl.location, t, raw(acc), raw(aConv),
                                tb.memref, tb.base, tb.offset,
                                bd.getI64IntegerAttr(b.ld),
                                unit(bd, b.transpose),
                                swizzleAttr(kb, b.swizzle),
                                b.blockStride > 0
                                    ? bd.getI64IntegerAttr(b.blockStride)
                                    : IntegerAttr(),
                                unit(bd, warpgroup), unit(bd, asynchronous));
  return wrapAs(kb, op.getResult(), DType::F32);
}

Value mmaReduceRows(Value fragment, RowReduce kind) {
  RankedTensorType t = requireFragment(fragment, "reduce_rows");
  fragment = computableFragment(fragment);
  if (t.getRank() != 2)
    throw EnigmaError("reduce_rows takes a fragment, not a row vector");
  if (!isFloat(fragment.dtype()))
    throw EnigmaError(std::string("reduce_rows takes a float, half or bfloat "
                                  "fragment, got ") +
                      shortName(fragment.dtype()));
  KernelBuilder &k = *fragment.builder();
  KernelBuilder::Impl &impl = k.internals();
  MmaReduceKind mk = kind == RowReduce::Sum   ? MmaReduceKind::Sum
                     : kind == RowReduce::Max ? MmaReduceKind::Max
                                              : MmaReduceKind::Min;
  auto op = impl.builder.create<MmaReduceRowsOp>(
      impl.location, tensorType(k, fragment.dtype(), {t.getDimSize(0)}),
      raw(fragment), mk);
  return wrapAs(k, op.getResult(), fragment.dtype());
}

Value mmaBroadcastRows(Value row, int cols) {
  RankedTensorType t = requireFragment(row, "broadcast_rows");
  if (t.getRank() != 1)
    throw EnigmaError("broadcast_rows takes a row vector (from reduce_rows), "
                      "not a " + shapeText(t) + " fragment");
  if (cols <= 0)
    throw EnigmaError("broadcast_rows: the number of columns must be positive");
  KernelBuilder &k = *row.builder();
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<MmaBroadcastRowsOp>(
      impl.location, tensorType(k, row.dtype(), {t.getDimSize(0), cols}),
      raw(row));
  return wrapAs(k, op.getResult(), row.dtype());
}

Value mmaHalves(Value words, DType dtype) {
  RankedTensorType t = requireFragment(words, "mma_halves");
  if (t.getRank() != 2 || words.dtype() == DType::Bool ||
      byteWidth(words.dtype()) != 4)
    throw EnigmaError("mma_halves takes a fragment of 32-bit words (int, "
                      "uint or float), got a " + shapeText(t) + " of " +
                      shortName(words.dtype()));
  if (dtype != DType::F16 && dtype != DType::BF16)
    throw EnigmaError(std::string("mma_halves gives half or bfloat halves, "
                                  "not ") + shortName(dtype));
  KernelBuilder &k = *words.builder();
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<MmaHalvesOp>(
      impl.location,
      tensorType(k, dtype, {t.getDimSize(0), 2 * t.getDimSize(1)}),
      raw(words));
  return wrapAs(k, op.getResult(), dtype);
}

Value mmaBinary(BinaryOp op, Value a, Value b) {
  const char *what = "fragment arithmetic";
  a = computableFragment(a);
  b = computableFragment(b);
  const Value &f = fragmentAmong(a, b, what);
  RankedTensorType t = tensorOf(f);
  DType dt = f.dtype();
  Value x = asFragmentLike(a, t, dt, what), y = asFragmentLike(b, t, dt, what);
  KernelBuilder &k = *f.builder();
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &bd = impl.builder;
  Location loc = impl.location;
  mlir::Value p = raw(x), q = raw(y), r;
  auto notFor = [&](const char *sym) {
    throw EnigmaError(std::string(sym) + " is not defined for " +
                      shortName(dt) + " fragments");
  };
  if (isFloat(dt)) {
    switch (op) {
    case BinaryOp::Add: r = bd.create<arith::AddFOp>(loc, p, q); break;
    case BinaryOp::Sub: r = bd.create<arith::SubFOp>(loc, p, q); break;
    case BinaryOp::Mul: r = bd.create<arith::MulFOp>(loc, p, q); break;
    case BinaryOp::Div: r = bd.create<arith::DivFOp>(loc, p, q); break;
    case BinaryOp::FloorDiv:
      r = bd.create<math::FloorOp>(loc, bd.create<arith::DivFOp>(loc, p, q));
      break;
    case BinaryOp::Rem: r = bd.create<arith::RemFOp>(loc, p, q); break;
    case BinaryOp::Min: r = bd.create<arith::MinNumFOp>(loc, p, q); break;
    case BinaryOp::Max: r = bd.create<arith::MaxNumFOp>(loc, p, q); break;
    case BinaryOp::And: notFor("'&'");
    case BinaryOp::Or: notFor("'|'");
    case BinaryOp::Xor: notFor("'^'");
    case BinaryOp::Shl: notFor("'<<'");
    case BinaryOp::Shr: notFor("'>>'");
    }
  } else if (dt == DType::Bool) {
    switch (op) {
    case BinaryOp::And: r = bd.create<arith::AndIOp>(loc, p, q); break;
    case BinaryOp::Or: r = bd.create<arith::OrIOp>(loc, p, q); break;
    case BinaryOp::Xor: r = bd.create<arith::XOrIOp>(loc, p, q); break;
    default: notFor("arithmetic");
    }
  } else {
    bool s = isSigned(dt);
    switch (op) {
    case BinaryOp::Add: r = bd.create<arith::AddIOp>(loc, p, q); break;
    case BinaryOp::Sub: r = bd.create<arith::SubIOp>(loc, p, q); break;
    case BinaryOp::Mul: r = bd.create<arith::MulIOp>(loc, p, q); break;
    case BinaryOp::And: r = bd.create<arith::AndIOp>(loc, p, q); break;
    case BinaryOp::Or: r = bd.create<arith::OrIOp>(loc, p, q); break;
    case BinaryOp::Xor: r = bd.create<arith::XOrIOp>(loc, p, q); break;
    case BinaryOp::Shl: r = bd.create<arith::ShLIOp>(loc, p, q); break;
    case BinaryOp::Shr:
      r = s ? bd.create<arith::ShRSIOp>(loc, p, q).getResult()
            : bd.create<arith::ShRUIOp>(loc, p, q).getResult();
      break;
    case BinaryOp::Div:
      r = s ? bd.create<arith::DivSIOp>(loc, p, q).getResult()
            : bd.create<arith::DivUIOp>(loc, p, q).getResult();
      break;
    case BinaryOp::FloorDiv:
      r = s ? bd.create<arith::FloorDivSIOp>(loc, p, q).getResult()
            : bd.create<arith::DivUIOp>(loc, p, q).getResult();
      break;
    case BinaryOp::Rem:
      r = s ? bd.create<arith::RemSIOp>(loc, p, q).getResult()
            : bd.create<arith::RemUIOp>(loc, p, q).getResult();
      break;
    case BinaryOp::Min:
      r = s ? bd.create<arith::MinSIOp>(loc, p, q).getResult()
            : bd.create<arith::MinUIOp>(loc, p, q).getResult();
      break;
    case BinaryOp::Max:
      r = s ? bd.create<arith::MaxSIOp>(loc, p, q).getResult()
            : bd.create<arith::MaxUIOp>(loc, p, q).getResult();
      break;
    }
  }
  return wrapAs(k, r, dt);
}

Value mmaCompare(CompareOp op, Value a, Value b) {
  const char *what = "fragment comparison";
  a = computableFragment(a);
  b = computableFragment(b);
  const Value &f = fragmentAmong(a, b, what);
  RankedTensorType t = tensorOf(f);
  DType dt = f.dtype();
  Value x = asFragmentLike(a, t, dt, what), y = asFragmentLike(b, t, dt, what);
  KernelBuilder &k = *f.builder();
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &bd = impl.builder;
  mlir::Value r;
  if (isFloat(dt)) {
    using P = arith::CmpFPredicate;
    P p = op == CompareOp::EQ   ? P::OEQ
          : op == CompareOp::NE ? P::UNE
          : op == CompareOp::LT ? P::OLT
          : op == CompareOp::LE ? P::OLE
          : op == CompareOp::GT ? P::OGT
                                : P::OGE;
    r = bd.create<arith::CmpFOp>(impl.location, p, raw(x), raw(y));
  } else {
    using P = arith::CmpIPredicate;
    bool s = isSigned(dt) && dt != DType::Bool;
    P p = op == CompareOp::EQ   ? P::eq
          : op == CompareOp::NE ? P::ne
          : op == CompareOp::LT ? (s ? P::slt : P::ult)
          : op == CompareOp::LE ? (s ? P::sle : P::ule)
          : op == CompareOp::GT ? (s ? P::sgt : P::ugt)
                                : (s ? P::sge : P::uge);
    r = bd.create<arith::CmpIOp>(impl.location, p, raw(x), raw(y));
  }
  return wrapAs(k, r, DType::Bool);
}

Value mmaSelect(Value cond, Value a, Value b) {
  const char *what = "fragment select";
  const Value *f = nullptr;
  for (const Value *v : {&a, &b, &cond})
    if (v->valid() && tensorOf(*v)) {
      f = v;
      break;
    }
  if (!f)
    throw EnigmaError(std::string(what) + " takes at least one fragment");
  RankedTensorType t = tensorOf(*f);
  // The value type comes from a fragment operand, else from a (scalar)
  // value operand.
  DType dt = (a.valid() && tensorOf(a)) ? a.dtype()
             : (b.valid() && tensorOf(b)) ? b.dtype()
                                          : KernelBuilder::promote(a.dtype(),
                                                                   b.dtype());
  if (cond.dtype() != DType::Bool)
    throw EnigmaError(std::string(what) + ": the condition must be bool, got " +
                      shortName(cond.dtype()));
  Value c = asFragmentLike(cond, t, DType::Bool, what);
  Value x = asFragmentLike(a, t, dt, what), y = asFragmentLike(b, t, dt, what);
  KernelBuilder &k = *f->builder();
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<arith::SelectOp>(impl.location, raw(c), raw(x),
                                                 raw(y));
  return wrapAs(k, op.getResult(), dt);
}

Value mmaCast(Value a, DType to) {
  requireFragment(a, "fragment conversion");
  if (a.dtype() == to)
    return a;
  KernelBuilder &k = *a.builder();
  return wrapAs(k, convert(k, raw(a), a.dtype(), to), to);
}

Value mmaSaturatingCast(Value a, DType to) {
  RankedTensorType t = requireFragment(a, "saturating_cast");
  if (!isFloat8(to))
    throw EnigmaError(std::string("saturating_cast converts to an 8-bit "
                                  "float (f8e4m3 or f8e5m2), not ") +
                      shortName(to) + "; use .cast()");
  if (a.dtype() != DType::F32 && a.dtype() != DType::F16 &&
      a.dtype() != DType::BF16)
    a = mmaCast(a, DType::F32);
  KernelBuilder &k = *a.builder();
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<TruncFSatOp>(
      impl.location, tensorType(k, to, t.getShape()), raw(a));
  return wrapAs(k, op.getResult(), to);
}

Value mmaFma(Value a, Value b, Value c) {
  const char *what = "fma";
  a = computableFragment(a);
  b = computableFragment(b);
  c = computableFragment(c);
  const Value &f = isFragment(a) ? a : fragmentAmong(b, c, what);
  RankedTensorType t = tensorOf(f);
  DType dt = f.dtype();
  if (!isFloat(dt))
    throw EnigmaError(std::string("fma takes float, half or bfloat "
                                  "fragments, got ") +
                      shortName(dt));
  Value x = asFragmentLike(a, t, dt, what), y = asFragmentLike(b, t, dt, what),
        z = asFragmentLike(c, t, dt, what);
  KernelBuilder &k = *f.builder();
  KernelBuilder::Impl &impl = k.internals();
  return wrapAs(k,
                impl.builder.create<math::FmaOp>(impl.location, raw(x), raw(y),
                                                 raw(z)),
                dt);
}

Value mmaUnary(const std::string &fn, Value a) {
  RankedTensorType t = requireFragment(a, fn.c_str());
  (void)t;
  a = computableFragment(a);
  KernelBuilder &k = *a.builder();
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &bd = impl.builder;
  Location loc = impl.location;
  DType dt = a.dtype();
  mlir::Value x = raw(a), r;
  if (fn == "neg") {
    if (dt == DType::Bool)
      throw EnigmaError("negation is not defined for bool fragments");
    if (isFloat(dt))
      r = bd.create<arith::NegFOp>(loc, x);
    else
      return mmaBinary(BinaryOp::Sub, k.constantInt(0, dt), a);
    return wrapAs(k, r, dt);
  }
  if (fn == "abs" && !isFloat(dt)) {
    if (dt == DType::Bool || !isSigned(dt))
      return a;
    return wrapAs(k, bd.create<math::AbsIOp>(loc, x), dt);
  }
  if (!isFloat(dt))
    throw EnigmaError(fn + " takes a float, half or bfloat fragment, got " +
                      shortName(dt));
  if (fn == "exp") r = bd.create<math::ExpOp>(loc, x);
  else if (fn == "exp2") r = bd.create<math::Exp2Op>(loc, x);
  else if (fn == "log") r = bd.create<math::LogOp>(loc, x);
  else if (fn == "log2") r = bd.create<math::Log2Op>(loc, x);
  else if (fn == "sqrt") r = bd.create<math::SqrtOp>(loc, x);
  else if (fn == "rsqrt") r = bd.create<math::RsqrtOp>(loc, x);
  else if (fn == "tanh") r = bd.create<math::TanhOp>(loc, x);
  else if (fn == "abs") r = bd.create<math::AbsFOp>(loc, x);
  else if (fn == "sin") r = bd.create<math::SinOp>(loc, x);
  else if (fn == "cos") r = bd.create<math::CosOp>(loc, x);
  else if (fn == "floor") r = bd.create<math::FloorOp>(loc, x);
  else if (fn == "ceil") r = bd.create<math::CeilOp>(loc, x);
  else
    throw EnigmaError("'" + fn + "' is not an element-wise fragment function "
                      "(exp, exp2, log, log2, sqrt, rsqrt, tanh, abs, neg, "
                      "sin, cos, floor, ceil)");
  return wrapAs(k, r, dt);
}

void copyTileAsync(const ThreadgroupArray &dst, Value dstBase,
                   const Buffer &src, Value srcOffset, Value srcLd,
                   Value validRows, Value validCols, int rows, int cols,
                   int dstLd, std::optional<MmaSwizzle> swizzle,
                   int blockStride) {
  if (!dst.builder())
    throw EnigmaError("copy_tile: the destination is not a threadgroup array");
  KernelBuilder &k = *dst.builder();
  Memory d = memoryOf(k, MmaMemory(dst), "copy_tile");
  Memory s = memoryOf(k, MmaMemory(src), "copy_tile");
  if (llvm::cast<MemRefType>(d.memref.getType()).getElementType() !=
      llvm::cast<MemRefType>(s.memref.getType()).getElementType())
    throw EnigmaError(std::string("copy_tile copies ") + shortName(s.dtype) +
                      " into " + shortName(d.dtype) +
                      "; both must have one dtype");
  if (rows <= 0 || cols <= 0 || dstLd <= 0 || blockStride < 0)
    throw EnigmaError("copy_tile: rows, columns and the pitch must be "
                      "positive, the block stride not negative");
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &bd = impl.builder;
  bd.create<CopyTileAsyncOp>(
      impl.location, d.memref, asIndex(k, dstBase, "copy_tile base"), s.memref,
      asIndex(k, srcOffset, "copy_tile source offset"),
      asIndex(k, srcLd, "copy_tile source pitch"),
      asIndex(k, validRows, "copy_tile valid rows"),
      asIndex(k, validCols, "copy_tile valid columns"),
      bd.getI64IntegerAttr(rows), bd.getI64IntegerAttr(cols),
      bd.getI64IntegerAttr(dstLd), swizzleAttr(k, swizzle),
      blockStride ? bd.getI64IntegerAttr(blockStride) : IntegerAttr());
}

void copyAsyncCommit(KernelBuilder &k) {
  KernelBuilder::Impl &impl = k.internals();
  impl.builder.create<CopyAsyncCommitOp>(impl.location);
}

void copyAsyncWait(KernelBuilder &k, int pending) {
  if (pending < 0 || pending > 7)
    throw EnigmaError("copy_async_wait: pending must be 0 to 7, got " +
                      std::to_string(pending));
  KernelBuilder::Impl &impl = k.internals();
  impl.builder.create<CopyAsyncWaitOp>(
      impl.location, impl.builder.getI64IntegerAttr(pending));
}

} // namespace enigma
