//===- KernelBuilder.cpp - The C++ tracing API ----------------------------===//
#include "BuilderImpl.h"
#include "enigma/Builder/Control.h"
#include "enigma/Compiler/Compile.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMathOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;

namespace enigma {


bool queryHasDim(ThreadQuery q) {
  return q <= ThreadQuery::ThreadgroupsPerGrid;
}

KernelBuilder::KernelBuilder(const std::string &name)
    : impl(std::make_unique<Impl>(name)) {
  if (name.empty())
    throw EnigmaError("a kernel needs a name");
}

KernelBuilder::~KernelBuilder() = default;

const std::string &KernelBuilder::name() const { return impl->kernelName; }

void KernelBuilder::setLocation(const std::string &file, unsigned line) {
  impl->location = FileLineColLoc::get(&impl->context, file, line, 0);
  // The kernel and its terminator exist before any location is known; the
  // first one given (the front ends pass the def line) becomes theirs, so
  // errors about the kernel itself name the user's file too.
  if (llvm::isa<UnknownLoc>(impl->kernel.getLoc())) {
    impl->kernel->setLoc(impl->location);
    impl->kernel.getBody().front().getTerminator()->setLoc(impl->location);
  }
}

/// "file:line" of a location, or "" when it names none.
static std::string lineOf(Location loc) {
  if (auto file = llvm::dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().str() + ":" + std::to_string(file.getLine());
  if (auto name = llvm::dyn_cast<NameLoc>(loc))
    return lineOf(name.getChildLoc());
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (std::string text = lineOf(inner); !text.empty())
        return text;
  return "";
}

/// A value computed inside a loop or branch body exists only there: a
/// front end that kept it in some container and uses it after the body
/// closed would build IR the verifier rejects ("does not dominate"); say
/// which construct it escaped instead.
static void checkVisible(KernelBuilder::Impl &impl, const Value &v) {
  mlir::Value value = raw(v);
  Region *defined = value.getParentRegion();
  Block *here = impl.builder.getInsertionBlock();
  if (!defined || !here || defined->isAncestor(here->getParent()))
    return;
  Operation *construct = defined->getParentOp();
  std::string what = "the region of " +
                     construct->getName().getStringRef().str();
  if (llvm::isa<scf::ForOp>(construct))
    what = "the loop";
  else if (llvm::isa<scf::IfOp>(construct))
    what = "the branch";
  else if (auto loop = llvm::dyn_cast<scf::WhileOp>(construct))
    what = defined == &loop.getBefore() && !loop->hasAttr(kDoWhileAttr)
               ? "the condition of the while loop"
               : "the while loop";
  std::string at = lineOf(construct->getLoc());
  std::string by = value.getDefiningOp()
                       ? lineOf(value.getDefiningOp()->getLoc())
                       : "";
  // "(line 8)" when the value comes from the construct's own file.
  size_t colon = at.rfind(':');
  if (colon != std::string::npos && by.compare(0, colon + 1, at, 0,
                                               colon + 1) == 0)
    by = "line " + by.substr(colon + 1);
  throw EnigmaError(
      "this value was computed inside " + what +
      (at.empty() ? "" : " at " + at) + (by.empty() ? "" : " (" + by + ")") +
      " and is used outside it, where it does not exist. A loop or branch "
      "hands values on only through carried variables: assign it to a "
      "variable, or an element of a list, tuple or dict, that already has "
      "a value before the loop or branch and is written inside it (or use "
      "a for_range/while_ Carry)");
}

void checkOwner(const KernelBuilder *b, const Value &v, const char *what) {
  if (!v.valid())
    throw EnigmaError(std::string(what) + ": the value is empty");
  if (v.builder() != b)
    throw EnigmaError(std::string(what) +
                      ": the value belongs to another kernel");
  checkVisible(v.builder()->internals(), v);
}

KernelBuilder::Impl &KernelBuilder::internals() { return *impl; }

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

/// Adds a parameter; returns its index. The hidden parameter of the dynamic
/// threadgroup memory (Cooperation.cpp) stays after the user's.
static unsigned addParam(KernelBuilder::Impl &impl, const std::string &name,
                         DType dtype, Type type) {
  for (unsigned i = 0; i < impl.kernel.getNumArguments(); ++i)
    if (impl.kernel.getParamName(i) == name)
      throw EnigmaError("kernel '" + impl.kernelName +
                        "' has two parameters named '" + name + "'");
  MLIRContext *ctx = &impl.context;
  unsigned index = impl.kernel.getNumArguments();
  for (unsigned i = 0; i < impl.kernel.getNumArguments(); ++i)
    if (impl.kernel.getArgAttr(i, "enigma.threadgroup_memory_bytes")) {
      index = i;
      break;
    }
  NamedAttrList attrs;
  attrs.set("enigma.name", StringAttr::get(ctx, name));
  attrs.set("enigma.dtype", StringAttr::get(ctx, shortName(dtype)));
  impl.kernel.insertArgument(index, type, attrs.getDictionary(ctx),
                             impl.location);
  return index;
}

Buffer KernelBuilder::addBuffer(const std::string &name, DType dtype,
                                unsigned lanes) {
  if (lanes < 1 || lanes > 4)
    throw EnigmaError("buffer '" + name + "': a vector buffer has 2, 3 or 4 "
                      "lanes, got " + std::to_string(lanes));
  if (lanes > 1 && dtype == DType::Bool)
    throw EnigmaError("buffer '" + name + "': bool vector buffers are not "
                      "supported");
  Type element = mlirType(&impl->context, dtype, lanes);
  unsigned index = addParam(*impl, name, dtype,
                            getBufferType(element, AddressSpace::Device));
  mlir::Value arg = impl->kernel.getBody().front().getArgument(index);
  return Buffer(this, arg.getAsOpaquePointer(), dtype, index, lanes);
}

Value KernelBuilder::addScalar(const std::string &name, DType dtype,
                                uint64_t multipleOf) {
  if (multipleOf == 0 || (multipleOf > 1 && !isInteger(dtype)))
    throw EnigmaError("scalar '" + name + "': multiple_of must be a positive "
                      "int, and only integer scalars take one (got " +
                      std::to_string(multipleOf) + " for " +
                      shortName(dtype) + ")");
  unsigned index = addParam(*impl, name, dtype,
                            mlirType(&impl->context, dtype));
  if (multipleOf > 1)
    impl->kernel.setArgAttr(
        index, KernelOp::kMultipleOfAttr,
        IntegerAttr::get(IntegerType::get(&impl->context, 64),
                         int64_t(multipleOf)));
  mlir::Value arg = impl->kernel.getBody().front().getArgument(index);
  return wrap(this, arg, dtype);
}

//===----------------------------------------------------------------------===//
// Values
//===----------------------------------------------------------------------===//

Value KernelBuilder::constant(double value, DType dtype) {
  if (!isFloat(dtype)) {
    if (std::trunc(value) != value || !std::isfinite(value))
      throw EnigmaError("the number " + std::to_string(value) +
                        " is not a whole number, so it cannot be a " +
                        shortName(dtype) + " constant");
    return constantInt(static_cast<int64_t>(value), dtype);
  }
  Type type = mlirType(&impl->context, dtype);
  auto op = impl->builder.create<arith::ConstantOp>(
      impl->location, FloatAttr::get(type, value));
  return wrap(this, op.getResult(), dtype);
}

Value KernelBuilder::constantInt(int64_t value, DType dtype) {
  if (isFloat(dtype))
    return constant(static_cast<double>(value), dtype);
  Type type = mlirType(&impl->context, dtype);
  unsigned width = type.getIntOrFloatBitWidth();
  if (dtype == DType::Bool) {
    if (value != 0 && value != 1)
      throw EnigmaError("a bool constant must be 0 or 1, got " +
                        std::to_string(value));
  } else if (width < 64) {
    // Accept anything representable in the width as signed or unsigned
    // (C's modular conversion), reject the rest instead of wrapping silently.
    int64_t lo = -(int64_t(1) << (width - 1));
    int64_t hi = (int64_t(1) << width) - 1;
    if (value < lo || value > hi)
      throw EnigmaError("the number " + std::to_string(value) +
                        " does not fit in " + shortName(dtype));
  }
  auto op = impl->builder.create<arith::ConstantOp>(
      impl->location,
      IntegerAttr::get(type, APInt(width, static_cast<uint64_t>(value),
                                   /*isSigned=*/width < 64 && value < 0)));
  return wrap(this, op.getResult(), dtype);
}

Value KernelBuilder::threadQuery(ThreadQuery query, unsigned dim) {
  if (dim > 2)
    throw EnigmaError("dimension must be x, y or z (0, 1 or 2), got " +
                      std::to_string(dim));
  OpBuilder &b = impl->builder;
  Location loc = impl->location;
  auto d = DimAttr::get(&impl->context, static_cast<Dim>(dim));
  mlir::Value v;
  switch (query) {
  case ThreadQuery::ThreadPositionInGrid:
    v = b.create<ThreadPositionInGridOp>(loc, d); break;
  case ThreadQuery::ThreadPositionInThreadgroup:
    v = b.create<ThreadPositionInThreadgroupOp>(loc, d); break;
  case ThreadQuery::ThreadgroupPositionInGrid:
    v = b.create<ThreadgroupPositionInGridOp>(loc, d); break;
  case ThreadQuery::ThreadsPerThreadgroup:
    v = b.create<ThreadsPerThreadgroupOp>(loc, d); break;
  case ThreadQuery::ThreadsPerGrid:
    v = b.create<ThreadsPerGridOp>(loc, d); break;
  case ThreadQuery::ThreadgroupsPerGrid:
    v = b.create<ThreadgroupsPerGridOp>(loc, d); break;
  case ThreadQuery::ThreadIndexInThreadgroup:
    v = b.create<ThreadIndexInThreadgroupOp>(loc); break;
  case ThreadQuery::ThreadIndexInSimdgroup:
    v = b.create<ThreadIndexInSimdgroupOp>(loc); break;
  case ThreadQuery::SimdgroupIndexInThreadgroup:
    v = b.create<SimdgroupIndexInThreadgroupOp>(loc); break;
  case ThreadQuery::ThreadsPerSimdgroup:
    v = b.create<ThreadsPerSimdgroupOp>(loc); break;
  case ThreadQuery::SimdgroupsPerThreadgroup:
    v = b.create<SimdgroupsPerThreadgroupOp>(loc); break;
  }
  return wrap(this, v, DType::U32);
}

Value KernelBuilder::broadcast(Value scalar, unsigned lanes) {
  checkOwner(this, scalar, "broadcast");
  if (lanes == scalar.lanes())
    return scalar;
  if (scalar.lanes() != 1)
    throw EnigmaError("cannot broadcast a " + std::to_string(scalar.lanes()) +
                      "-lane vector to " + std::to_string(lanes) + " lanes");
  if (lanes < 2 || lanes > 4)
    throw EnigmaError("vectors have 2, 3 or 4 lanes, got " +
                      std::to_string(lanes));
  Type type = mlirType(&impl->context, scalar.dtype(), lanes);
  auto op = impl->builder.create<vector::BroadcastOp>(impl->location, type,
                                                      raw(scalar));
  return wrap(this, op.getResult(), scalar.dtype());
}

/// Gives two operands the same lane count: a scalar next to a vector is
/// broadcast (Metal's rule); vectors of different lengths are an error.
static void matchLanes(KernelBuilder &k, Value &a, Value &b,
                       const char *what) {
  if (a.lanes() == b.lanes())
    return;
  if (a.lanes() == 1)
    a = k.broadcast(a, b.lanes());
  else if (b.lanes() == 1)
    b = k.broadcast(b, a.lanes());
  else
    throw EnigmaError(std::string(what) + " of vectors with different lane "
                      "counts (" + std::to_string(a.lanes()) + " and " +
                      std::to_string(b.lanes()) + ")");
}

DType KernelBuilder::promote(DType a, DType b) {
  if (a == b)
    return a;
  if (isFloat(a) || isFloat(b)) {
    if (!isFloat(a)) return b;
    if (!isFloat(b)) return a;
    // Two different float types: f32 wins; f16 with bf16 meets in f32.
    return DType::F32;
  }
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  size_t wa = byteWidth(a), wb = byteWidth(b);
  if (wa != wb)
    return wa > wb ? a : b;
  // Same width, different signedness: unsigned, as in C.
  return isSigned(a) ? b : a;
}

Value KernelBuilder::binary(BinaryOp op, Value a, Value b) {
  checkOwner(this, a, "binary operation");
  checkOwner(this, b, "binary operation");
  if (a.dtype() != b.dtype())
    throw EnigmaError(std::string("operands have different types (") +
                      shortName(a.dtype()) + " and " + shortName(b.dtype()) +
                      "); convert one with metal_cast");
  matchLanes(*this, a, b, "binary operation");
  a = computable(*this, a);
  b = computable(*this, b);
  OpBuilder &bd = impl->builder;
  Location loc = impl->location;
  mlir::Value x = raw(a), y = raw(b), r;
  DType t = a.dtype();
  auto notFor = [&](const char *what) {
    throw EnigmaError(std::string(what) + " is not defined for " +
                      shortName(t) + " operands");
  };
  if (isFloat(t)) {
    switch (op) {
    case BinaryOp::Add: r = bd.create<arith::AddFOp>(loc, x, y); break;
    case BinaryOp::Sub: r = bd.create<arith::SubFOp>(loc, x, y); break;
    case BinaryOp::Mul: r = bd.create<arith::MulFOp>(loc, x, y); break;
    case BinaryOp::Div: r = bd.create<arith::DivFOp>(loc, x, y); break;
    case BinaryOp::FloorDiv:
      r = bd.create<math::FloorOp>(loc, bd.create<arith::DivFOp>(loc, x, y));
      break;
    case BinaryOp::Rem: r = bd.create<arith::RemFOp>(loc, x, y); break;
    case BinaryOp::Min: r = bd.create<FminOp>(loc, x, y); break;
    case BinaryOp::Max: r = bd.create<FmaxOp>(loc, x, y); break;
    case BinaryOp::And: notFor("'&'");
    case BinaryOp::Or: notFor("'|'");
    case BinaryOp::Xor: notFor("'^'");
    case BinaryOp::Shl: notFor("'<<'");
    case BinaryOp::Shr: notFor("'>>'");
    }
    return wrap(this, r, t);
  }
  if (t == DType::Bool) {
    switch (op) {
    case BinaryOp::And: r = bd.create<arith::AndIOp>(loc, x, y); break;
    case BinaryOp::Or: r = bd.create<arith::OrIOp>(loc, x, y); break;
    case BinaryOp::Xor: r = bd.create<arith::XOrIOp>(loc, x, y); break;
    default: notFor("arithmetic");
    }
    return wrap(this, r, t);
  }
  bool s = isSigned(t);
  switch (op) {
  case BinaryOp::Add: r = bd.create<arith::AddIOp>(loc, x, y); break;
  case BinaryOp::Sub: r = bd.create<arith::SubIOp>(loc, x, y); break;
  case BinaryOp::Mul: r = bd.create<arith::MulIOp>(loc, x, y); break;
  case BinaryOp::Div:
  case BinaryOp::FloorDiv:
    r = s ? bd.create<arith::DivSIOp>(loc, x, y).getResult()
          : bd.create<arith::DivUIOp>(loc, x, y).getResult();
    break;
  case BinaryOp::Rem:
    r = s ? bd.create<arith::RemSIOp>(loc, x, y).getResult()
          : bd.create<arith::RemUIOp>(loc, x, y).getResult();
    break;
  case BinaryOp::And: r = bd.create<arith::AndIOp>(loc, x, y); break;
  case BinaryOp::Or: r = bd.create<arith::OrIOp>(loc, x, y); break;
  case BinaryOp::Xor: r = bd.create<arith::XOrIOp>(loc, x, y); break;
  case BinaryOp::Shl: r = bd.create<arith::ShLIOp>(loc, x, y); break;
  case BinaryOp::Shr:
    r = s ? bd.create<arith::ShRSIOp>(loc, x, y).getResult()
          : bd.create<arith::ShRUIOp>(loc, x, y).getResult();
    break;
  case BinaryOp::Min:
    r = s ? bd.create<arith::MinSIOp>(loc, x, y).getResult()
          : bd.create<arith::MinUIOp>(loc, x, y).getResult();
    break;
  case BinaryOp::Max:
    r = s ? bd.create<arith::MaxSIOp>(loc, x, y).getResult()
          : bd.create<arith::MaxUIOp>(loc, x, y).getResult();
    break;
  }
  // Bounds-checked mode checks these for overflow in the type's signedness.
  if (op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul)
    r.getDefiningOp()->setAttr(kOverflowCheckAttr,
                               bd.getStringAttr(s ? "signed" : "unsigned"));
  return wrap(this, r, t);
}

Value KernelBuilder::compare(CompareOp op, Value a, Value b) {
  checkOwner(this, a, "comparison");
  checkOwner(this, b, "comparison");
  if (a.dtype() != b.dtype())
    throw EnigmaError(std::string("comparison of different types (") +
                      shortName(a.dtype()) + " and " + shortName(b.dtype()) +
                      "); convert one with metal_cast");
  matchLanes(*this, a, b, "comparison");
  a = computable(*this, a);
  b = computable(*this, b);
  OpBuilder &bd = impl->builder;
  Location loc = impl->location;
  mlir::Value r;
  if (isFloat(a.dtype())) {
    using P = arith::CmpFPredicate;
    // != is true when either side is NaN, as in C and Metal.
    static const P preds[] = {P::OEQ, P::UNE, P::OLT, P::OLE, P::OGT, P::OGE};
    r = bd.create<arith::CmpFOp>(loc, preds[int(op)], raw(a), raw(b));
  } else {
    using P = arith::CmpIPredicate;
    bool s = isSigned(a.dtype());
    static const P sp[] = {P::eq, P::ne, P::slt, P::sle, P::sgt, P::sge};
    static const P up[] = {P::eq, P::ne, P::ult, P::ule, P::ugt, P::uge};
    r = bd.create<arith::CmpIOp>(loc, s ? sp[int(op)] : up[int(op)], raw(a),
                                 raw(b));
  }
  return wrap(this, r, DType::Bool);
}

Value KernelBuilder::unary(UnaryOp op, Value a) {
  checkOwner(this, a, "unary operation");
  if (op == UnaryOp::Neg)
    a = computable(*this, a);
  OpBuilder &bd = impl->builder;
  Location loc = impl->location;
  DType t = a.dtype();
  if (op == UnaryOp::Neg) {
    if (isFloat(t))
      return wrap(this, bd.create<arith::NegFOp>(loc, raw(a)).getResult(),
                         t);
    if (t == DType::Bool)
      throw EnigmaError("negation is not defined for bool; use ~ or where");
    Value negated = binary(BinaryOp::Sub, constantInt(0, t), a);
    raw(negated).getDefiningOp()->setAttr(
        kOverflowCheckAttr, bd.getStringAttr(isSigned(t) ? "signed negation"
                                                         : "unsigned negation"));
    return negated;
  }
  if (isFloat(t))
    throw EnigmaError(std::string("'~' is not defined for ") + shortName(t) +
                      " operands");
  // binary() broadcasts the all-ones constant to vectors.
  return binary(BinaryOp::Xor, a, constantInt(t == DType::Bool ? 1 : -1, t));
}

Value KernelBuilder::cast(Value a, DType to) {
  checkOwner(this, a, "cast");
  DType from = a.dtype();
  if (from == to)
    return a;
  OpBuilder &bd = impl->builder;
  Location loc = impl->location;
  // Vectors convert lane by lane and keep their lane count.
  Type toType = mlirType(&impl->context, to, a.lanes());
  // 8-bit floats convert directly only to and from the other floats; to
  // integers and bool (-0.0 is false) and from integers through f32.
  if ((isFloat8(from) && !isFloat(to)) || (isFloat8(to) && !isFloat(from)))
    return cast(cast(a, DType::F32), to);
  mlir::Value x = raw(a), r;
  auto bits = [](Type t) { return getElementTypeOrSelf(t).getIntOrFloatBitWidth(); };
  if (to == DType::Bool) {
    // Non-zero is true, as in C.
    auto zero = bd.create<arith::ConstantOp>(
        loc, llvm::cast<TypedAttr>(bd.getZeroAttr(x.getType())));
    if (isFloat(from))
      r = bd.create<arith::CmpFOp>(loc, arith::CmpFPredicate::UNE, x, zero);
    else
      r = bd.create<arith::CmpIOp>(loc, arith::CmpIPredicate::ne, x, zero);
    return wrap(this, r, to);
  }
  if (isFloat(from) && isFloat(to)) {
    unsigned fw = bits(x.getType()), tw = bits(toType);
    if (fw == tw) { // f16 <-> bf16 through f32
      x = bd.create<arith::ExtFOp>(
          loc, mlirType(&impl->context, DType::F32, a.lanes()), x);
      r = bd.create<arith::TruncFOp>(loc, toType, x);
    } else if (fw < tw) {
      r = bd.create<arith::ExtFOp>(loc, toType, x);
    } else {
      r = bd.create<arith::TruncFOp>(loc, toType, x);
    }
  } else if (isFloat(from)) {
    r = isSigned(to) ? bd.create<arith::FPToSIOp>(loc, toType, x).getResult()
                     : bd.create<arith::FPToUIOp>(loc, toType, x).getResult();
  } else if (isFloat(to)) {
    r = isSigned(from) && from != DType::Bool
            ? bd.create<arith::SIToFPOp>(loc, toType, x).getResult()
            : bd.create<arith::UIToFPOp>(loc, toType, x).getResult();
  } else {
    unsigned fw = bits(x.getType()), tw = bits(toType);
    if (fw == tw)
      return wrap(this, x, to); // same bits, new signedness
    if (fw < tw)
      r = isSigned(from) && from != DType::Bool
              ? bd.create<arith::ExtSIOp>(loc, toType, x).getResult()
              : bd.create<arith::ExtUIOp>(loc, toType, x).getResult();
    else
      r = bd.create<arith::TruncIOp>(loc, toType, x);
  }
  return wrap(this, r, to);
}

//===----------------------------------------------------------------------===//
// Memory
//===----------------------------------------------------------------------===//

static mlir::Value toIndex(KernelBuilder::Impl &impl, const Value &index) {
  if (index.lanes() != 1)
    throw EnigmaError("a buffer index must be a scalar, got a " +
                      std::to_string(index.lanes()) + "-lane vector");
  if (isFloat(index.dtype()) || index.dtype() == DType::Bool)
    throw EnigmaError(std::string("a buffer index must be an integer, got ") +
                      shortName(index.dtype()));
  OpBuilder &b = impl.builder;
  Type indexType = b.getIndexType();
  if (isSigned(index.dtype()))
    return b.create<arith::IndexCastOp>(impl.location, indexType, raw(index));
  return b.create<arith::IndexCastUIOp>(impl.location, indexType, raw(index));
}

Value KernelBuilder::load(const Buffer &buffer, Value index) {
  checkOwner(this, index, "buffer load");
  mlir::Value mem = mlir::Value::getFromOpaquePointer(
      impl->kernel.getBody().front().getArgument(buffer.paramIndex())
          .getAsOpaquePointer());
  auto op = impl->builder.create<memref::LoadOp>(
      impl->location, mem, ValueRange{toIndex(*impl, index)});
  return wrap(this, op.getResult(), buffer.dtype());
}

void KernelBuilder::store(const Buffer &buffer, Value index, Value value) {
  checkOwner(this, index, "buffer store");
  checkOwner(this, value, "buffer store");
  // Assignment converts the value to the element type, as in C and Metal;
  // a scalar stored into a vector buffer fills every lane.
  if (value.lanes() != buffer.lanes() && value.lanes() != 1)
    throw EnigmaError("cannot store a " + std::to_string(value.lanes()) +
                      "-lane vector into a buffer of " +
                      (buffer.lanes() == 1
                           ? std::string("scalars")
                           : std::to_string(buffer.lanes()) + "-lane vectors"));
  value = broadcast(cast(value, buffer.dtype()), buffer.lanes());
  mlir::Value mem =
      impl->kernel.getBody().front().getArgument(buffer.paramIndex());
  impl->builder.create<memref::StoreOp>(impl->location, raw(value), mem,
                                        ValueRange{toIndex(*impl, index)});
}

Value Buffer::load(Value index) const { return owner->load(*this, index); }
void Buffer::store(Value index, Value value) const {
  owner->store(*this, index, value);
}
BufferElement::operator Value() const { return buf.load(index); }
BufferElement &BufferElement::operator=(const Value &v) {
  buf.store(index, v);
  return *this;
}
BufferElement &BufferElement::operator=(const BufferElement &other) {
  buf.store(index, Value(other));
  return *this;
}

static MemFlags toMemFlags(unsigned bits) {
  if (bits & ~7u)
    throw EnigmaError("unknown barrier memory flags " + std::to_string(bits));
  return static_cast<MemFlags>(bits);
}

void KernelBuilder::barrier(unsigned memFlags) {
  impl->builder.create<BarrierOp>(
      impl->location, MemFlagsAttr::get(&impl->context, toMemFlags(memFlags)));
}

void KernelBuilder::simdBarrier(unsigned memFlags) {
  impl->builder.create<SimdBarrierOp>(
      impl->location, MemFlagsAttr::get(&impl->context, toMemFlags(memFlags)));
}

//===----------------------------------------------------------------------===//
// Results
//===----------------------------------------------------------------------===//

std::string KernelBuilder::mlirText(bool withLocations) const {
  std::string text;
  llvm::raw_string_ostream os(text);
  OpPrintingFlags flags;
  if (withLocations) // inline loc("file.py":line:0), as compileKernel prints
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false)
        .useLocalScope();
  flags.assumeVerified();
  impl->module->print(os, flags);
  return text;
}

void KernelBuilder::requireThreadgroupSize(unsigned threads) {
  KernelOp kernel = impl->kernel;
  if (threads < 1 || threads > 1024)
    throw EnigmaError("a threadgroup has 1 to 1024 threads, not " +
                      std::to_string(threads));
  if (std::optional<uint64_t> had = kernel.getRequiredThreadgroupSize();
      had && *had != threads)
    throw EnigmaError("kernel '" + impl->kernelName +
                      "' already runs in threadgroups of " +
                      std::to_string(*had) + " threads; this part needs " +
                      std::to_string(threads));
  kernel->setAttr(KernelOp::kThreadgroupSizeAttr,
                  IntegerAttr::get(IntegerType::get(kernel.getContext(), 64),
                                   threads));
}

void KernelBuilder::requireMatrixExtent(const Buffer &buffer,
                                        const Value &rows, const Value &cols,
                                        const Value &pitch,
                                        const std::string &what,
                                        std::array<uint64_t, 6> factors) {
  KernelOp kernel = impl->kernel;
  if (buffer.owner != this)
    throw EnigmaError(what + ": the buffer belongs to another kernel");
  Block &entry = kernel.getBody().front();
  // Only what every launch does: under an if or in a loop the part may
  // never run, and a kernel that is correct must not be refused.
  if (impl->builder.getInsertionBlock() != &entry)
    return;
  // A side's attribute: the scalar argument itself or a constant.
  auto side = [&](const Value &v, StringRef name,
                  SmallVectorImpl<NamedAttribute> &out) {
    checkOwner(this, v, what.c_str());
    mlir::Value value = raw(v);
    if (auto arg = llvm::dyn_cast<BlockArgument>(value);
        arg && arg.getOwner() == &entry && isInteger(v.dtype())) {
      out.emplace_back(impl->builder.getStringAttr((name + "_param").str()),
                       impl->builder.getI64IntegerAttr(arg.getArgNumber()));
      return true;
    }
    APInt constant;
    if (matchPattern(value, m_ConstantInt(&constant)) &&
        !(isSigned(v.dtype()) && constant.isNegative())) {
      out.emplace_back(impl->builder.getStringAttr(name),
                       impl->builder.getI64IntegerAttr(
                           int64_t(constant.getZExtValue())));
      return true;
    }
    return false;
  };
  OpBuilder &b = impl->builder;
  SmallVector<NamedAttribute> fields{
      {b.getStringAttr("buffer"), b.getI64IntegerAttr(buffer.paramIndex())},
      {b.getStringAttr("what"), b.getStringAttr(what)}};
  if (!side(rows, "rows", fields) || !side(cols, "cols", fields) ||
      !side(pitch, "pitch", fields))
    return;
  // Divisors and scales other than 1 (a side counted in blocks).
  const char *names[3] = {"rows", "cols", "pitch"};
  for (unsigned i = 0; i < 3; ++i)
    for (auto [suffix, value] : {std::pair{"_divisor", factors[2 * i]},
                                 std::pair{"_scale", factors[2 * i + 1]}}) {
      if (value == 0)
        throw EnigmaError(what + ": a side's " + std::string(suffix + 1) +
                          " must be positive");
      if (value != 1)
        fields.emplace_back(
            b.getStringAttr(std::string(names[i]) + suffix),
            b.getI64IntegerAttr(int64_t(value)));
    }
  SmallVector<Attribute> entries;
  if (auto had = kernel->getAttrOfType<ArrayAttr>(KernelOp::kMatrixExtentsAttr))
    entries.assign(had.begin(), had.end());
  DictionaryAttr matrix = b.getDictionaryAttr(fields);
  if (llvm::is_contained(entries, matrix))
    return; // the same part called again (attributes are uniqued)
  entries.push_back(matrix);
  kernel->setAttr(KernelOp::kMatrixExtentsAttr, b.getArrayAttr(entries));
}

KernelArtifact KernelBuilder::compile(const CompileOptions &options) {
  if (!impl->frames.empty())
    throw EnigmaError("kernel '" + impl->kernelName +
                      "' ends inside an unfinished loop or if");
  // Compile a copy so the builder keeps its unoptimised IR.
  OwningOpRef<ModuleOp> copy(impl->module->clone());
  auto kernel = *copy->getOps<KernelOp>().begin();
  if (options.cudaTma)
    kernel->setAttr("enigma.cuda_tma", UnitAttr::get(kernel.getContext()));
  return compileKernel(*copy, kernel, options);
}

//===----------------------------------------------------------------------===//
// Operators
//===----------------------------------------------------------------------===//

static Value promoted(BinaryOp op, Value a, Value b) {
  checkOwner(a.builder(), b, "operator");
  KernelBuilder &k = *a.builder();
  DType t = KernelBuilder::promote(a.dtype(), b.dtype());
  return k.binary(op, k.cast(a, t), k.cast(b, t));
}

static Value promotedCompare(CompareOp op, Value a, Value b) {
  checkOwner(a.builder(), b, "comparison");
  KernelBuilder &k = *a.builder();
  DType t = KernelBuilder::promote(a.dtype(), b.dtype());
  return k.compare(op, k.cast(a, t), k.cast(b, t));
}

Value operator+(Value a, Value b) { return promoted(BinaryOp::Add, a, b); }
Value operator-(Value a, Value b) { return promoted(BinaryOp::Sub, a, b); }
Value operator*(Value a, Value b) { return promoted(BinaryOp::Mul, a, b); }
Value operator/(Value a, Value b) { return promoted(BinaryOp::Div, a, b); }
Value operator%(Value a, Value b) { return promoted(BinaryOp::Rem, a, b); }
Value operator&(Value a, Value b) { return promoted(BinaryOp::And, a, b); }
Value operator|(Value a, Value b) { return promoted(BinaryOp::Or, a, b); }
Value operator^(Value a, Value b) { return promoted(BinaryOp::Xor, a, b); }
Value operator<<(Value a, Value b) { return promoted(BinaryOp::Shl, a, b); }
Value operator>>(Value a, Value b) { return promoted(BinaryOp::Shr, a, b); }
Value operator<(Value a, Value b) { return promotedCompare(CompareOp::LT, a, b); }
Value operator<=(Value a, Value b) { return promotedCompare(CompareOp::LE, a, b); }
Value operator>(Value a, Value b) { return promotedCompare(CompareOp::GT, a, b); }
Value operator>=(Value a, Value b) { return promotedCompare(CompareOp::GE, a, b); }
Value operator==(Value a, Value b) { return promotedCompare(CompareOp::EQ, a, b); }
Value operator!=(Value a, Value b) { return promotedCompare(CompareOp::NE, a, b); }
Value operator-(Value a) { return a.builder()->unary(UnaryOp::Neg, a); }
Value operator+(Value a, double b) {
  return a + a.builder()->constant(b, isFloat(a.dtype()) ? a.dtype() : DType::F32);
}
Value operator*(Value a, double b) {
  return a * a.builder()->constant(b, isFloat(a.dtype()) ? a.dtype() : DType::F32);
}
Value operator+(Value a, int b) { return a + a.builder()->constantInt(b, a.dtype()); }
Value operator*(Value a, int b) { return a * a.builder()->constantInt(b, a.dtype()); }

} // namespace enigma
