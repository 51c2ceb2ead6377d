//===- Cooperation.cpp - KernelBuilder calls of the cooperation family -------------===//
#include "enigma/Builder/Cooperation.h"

#include "BuilderImpl.h"
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"

using namespace mlir;

namespace enigma {

struct ThreadgroupArrayAccess {
  static ThreadgroupArray make(KernelBuilder *k, mlir::Value v, DType t,
                               unsigned n) {
    return ThreadgroupArray(k, v.getAsOpaquePointer(), t, n);
  }
};

namespace {

mlir::Value indexOf(KernelBuilder &k, const Value &index, const char *what) {
  checkOwner(&k, index, what);
  if (isFloat(index.dtype()) || index.dtype() == DType::Bool || index.lanes() != 1)
    throw EnigmaError(std::string(what) + ": the index must be an integer, got " +
                      shortName(index.dtype()));
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &b = impl.builder;
  if (isSigned(index.dtype()))
    return b.create<arith::IndexCastOp>(impl.location, b.getIndexType(),
                                        raw(index));
  return b.create<arith::IndexCastUIOp>(impl.location, b.getIndexType(),
                                        raw(index));
}

/// The memref, its dtype and a name for messages.
struct Memory {
  mlir::Value memref;
  DType dtype;
  std::string name;
};

Memory memoryOf(KernelBuilder &k, const AtomicTarget &mem) {
  KernelBuilder::Impl &impl = k.internals();
  if (mem.buffer) {
    unsigned i = mem.buffer->paramIndex();
    if (i >= impl.kernel.getNumArguments() ||
        !impl.kernel.isBufferParam(i))
      throw EnigmaError("atomic: the buffer belongs to another kernel");
    return {impl.kernel.getBody().front().getArgument(i), mem.buffer->dtype(),
            "buffer '" + impl.kernel.getParamName(i) + "'"};
  }
  if (!mem.array || mem.array->builder() != &k)
    throw EnigmaError("atomic: the threadgroup array belongs to another "
                      "kernel");
  return {mlir::Value::getFromOpaquePointer(mem.array->handle()),
          mem.array->dtype(), "threadgroup array"};
}

/// Metal has atomic_int, atomic_uint and (Metal 3) atomic_float.
void checkAtomicType(const Memory &m, const char *op, bool floatAllowed) {
  DType t = m.dtype;
  if (t == DType::I32 || t == DType::U32 || t == DType::I64 ||
      t == DType::U64)
    return;
  if (t == DType::F32 && floatAllowed)
    return;
  std::string allowed = floatAllowed ? "int, uint, long, ulong or float"
                                     : "int, uint, long or ulong";
  throw EnigmaError(std::string(op) + " needs " + allowed +
                    " memory (the atomic types), but " + m.name +
                    " holds " + shortName(t));
}

MemoryOrderAttr orderAttr(KernelBuilder &k, AtomicOrder o) {
  return MemoryOrderAttr::get(&k.internals().context,
                              static_cast<enigma::MemoryOrder>(o));
}

mlir::Value converted(KernelBuilder &k, Value v, DType t, const char *what) {
  checkOwner(&k, v, what);
  if (v.lanes() != 1)
    throw EnigmaError(std::string(what) + ": atomics take scalar values");
  return raw(k.cast(v, t));
}

} // namespace

AtomicOrder parseMemoryOrder(const std::string &name) {
  if (name == "relaxed") return AtomicOrder::Relaxed;
  if (name == "acquire") return AtomicOrder::Acquire;
  if (name == "release") return AtomicOrder::Release;
  if (name == "acq_rel") return AtomicOrder::AcqRel;
  throw EnigmaError("unknown memory order '" + name +
                    "'; use \"relaxed\", \"acquire\", \"release\" or "
                    "\"acq_rel\"");
}

AtomicOp parseAtomicOp(const std::string &name) {
  static const std::pair<const char *, AtomicOp> ops[] = {
      {"exchange", AtomicOp::Exchange}, {"add", AtomicOp::Add},
      {"sub", AtomicOp::Sub},           {"min", AtomicOp::Min},
      {"max", AtomicOp::Max},           {"and", AtomicOp::And},
      {"or", AtomicOp::Or},             {"xor", AtomicOp::Xor}};
  for (auto [n, op] : ops)
    if (name == n)
      return op;
  throw EnigmaError("unknown atomic operation '" + name + "'");
}

ThreadgroupArray threadgroupAlloc(KernelBuilder &k, DType dtype,
                                  unsigned size) {
  KernelBuilder::Impl &impl = k.internals();
  if (!impl.frames.empty())
    throw EnigmaError("threadgroup_alloc must be called at the top level of "
                      "the kernel body, not inside a loop or if: threadgroup "
                      "memory is allocated once per threadgroup");
  if (size == 0)
    throw EnigmaError("threadgroup_alloc: size must be positive, got 0");
  uint64_t bytes = uint64_t(size) * byteWidth(dtype);
  uint64_t padded = llvm::alignTo(bytes, ThreadgroupAllocOp::kAlignment);
  uint64_t before = ThreadgroupAllocOp::totalBytes(impl.kernel);
  if (before + padded > ThreadgroupAllocOp::kMaxBytes)
    throw EnigmaError(
        "threadgroup_alloc(" + std::string(shortName(dtype)) + ", " +
        std::to_string(size) + ") needs " + std::to_string(bytes) +
        " bytes; with the " + std::to_string(before) +
        " bytes already allocated (each array starts on a 16-byte "
        "boundary) the kernel would use " + std::to_string(before + padded) +
        " bytes of threadgroup memory, more than the " +
        std::to_string(ThreadgroupAllocOp::kMaxBytes) +
        " bytes (227 KiB) any target allows (Metal allows 32 KiB)");
  MLIRContext *ctx = &impl.context;
  auto type = MemRefType::get({int64_t(size)}, mlirType(ctx, dtype),
                              MemRefLayoutAttrInterface{},
                              AddressSpaceAttr::get(ctx,
                                                    AddressSpace::Threadgroup));
  // Allocations live at the top of the kernel body, in program order.
  auto op = impl.builder.create<ThreadgroupAllocOp>(impl.location, type);
  // The signedness MLIR's signless integers lack (for atomic types).
  op->setAttr("enigma.dtype", StringAttr::get(ctx, shortName(dtype)));
  return ThreadgroupArrayAccess::make(&k, op.getResult(), dtype, size);
}

ThreadgroupArray dynamicThreadgroupAlloc(KernelBuilder &k, DType dtype) {
  KernelBuilder::Impl &impl = k.internals();
  if (!impl.frames.empty())
    throw EnigmaError("dynamic_threadgroup_alloc must be called at the top "
                      "level of the kernel body, not inside a loop or if: "
                      "threadgroup memory is allocated once per threadgroup");
  if (DynamicThreadgroupAllocOp::find(impl.kernel))
    throw EnigmaError("dynamic_threadgroup_alloc: the kernel already has "
                      "its dynamic threadgroup array; a kernel has one "
                      "(Metal's [[threadgroup(0)]], CUDA's extern "
                      "__shared__): take parts of it by offset");
  MLIRContext *ctx = &impl.context;
  // The launch's byte count, a hidden u64 parameter after the user's.
  unsigned index = impl.kernel.getNumArguments();
  NamedAttrList attrs;
  attrs.set("enigma.name",
            StringAttr::get(ctx, DynamicThreadgroupAllocOp::kBytesParamName));
  attrs.set("enigma.dtype", StringAttr::get(ctx, "u64"));
  attrs.set("enigma.threadgroup_memory_bytes", UnitAttr::get(ctx));
  impl.kernel.insertArgument(index, IntegerType::get(ctx, 64),
                             attrs.getDictionary(ctx), impl.location);
  mlir::Value bytes = impl.kernel.getBody().front().getArgument(index);
  auto type = MemRefType::get({ShapedType::kDynamic}, mlirType(ctx, dtype),
                              MemRefLayoutAttrInterface{},
                              AddressSpaceAttr::get(ctx,
                                                    AddressSpace::Threadgroup));
  auto op = impl.builder.create<DynamicThreadgroupAllocOp>(impl.location,
                                                          type, bytes);
  op->setAttr("enigma.dtype", StringAttr::get(ctx, shortName(dtype)));
  return ThreadgroupArrayAccess::make(&k, op.getResult(), dtype, 0);
}

Value ThreadgroupArray::load(Value index) const {
  KernelBuilder &k = *owner;
  mlir::Value mem = mlir::Value::getFromOpaquePointer(impl);
  auto op = k.internals().builder.create<memref::LoadOp>(
      k.internals().location, mem,
      ValueRange{indexOf(k, index, "threadgroup load")});
  return wrap(&k, op.getResult(), type);
}

void ThreadgroupArray::store(Value index, Value value) const {
  KernelBuilder &k = *owner;
  checkOwner(&k, value, "threadgroup store");
  requireScalar(value, "a threadgroup array");
  mlir::Value v = raw(k.cast(value, type));
  mlir::Value mem = mlir::Value::getFromOpaquePointer(impl);
  k.internals().builder.create<memref::StoreOp>(
      k.internals().location, v, mem,
      ValueRange{indexOf(k, index, "threadgroup store")});
}

Value atomicRMW(KernelBuilder &k, AtomicTarget target, Value index,
                Value value, AtomicOp op, AtomicOrder order) {
  Memory m = memoryOf(k, target);
  static const char *names[] = {"atomic_exchange", "atomic_fetch_add",
                                "atomic_fetch_sub", "atomic_fetch_min",
                                "atomic_fetch_max", "atomic_fetch_and",
                                "atomic_fetch_or",  "atomic_fetch_xor"};
  const char *name = names[int(op)];
  bool floatOk = op == AtomicOp::Exchange || op == AtomicOp::Add ||
                 op == AtomicOp::Sub || op == AtomicOp::Min ||
                 op == AtomicOp::Max;
  checkAtomicType(m, name, floatOk);
  mlir::Value idx = indexOf(k, index, name);
  mlir::Value v = converted(k, value, m.dtype, name);
  bool s = isFloat(m.dtype) || isSigned(m.dtype); // float: min / max
  AtomicKind kind;
  switch (op) {
  case AtomicOp::Exchange: kind = AtomicKind::Exchange; break;
  case AtomicOp::Add: kind = AtomicKind::Add; break;
  case AtomicOp::Sub: kind = AtomicKind::Sub; break;
  case AtomicOp::Min: kind = s ? AtomicKind::Min : AtomicKind::UMin; break;
  case AtomicOp::Max: kind = s ? AtomicKind::Max : AtomicKind::UMax; break;
  case AtomicOp::And: kind = AtomicKind::And; break;
  case AtomicOp::Or: kind = AtomicKind::Or; break;
  case AtomicOp::Xor: kind = AtomicKind::Xor; break;
  }
  KernelBuilder::Impl &impl = k.internals();
  auto rmw = impl.builder.create<AtomicRMWOp>(
      impl.location, v.getType(), AtomicKindAttr::get(&impl.context, kind),
      m.memref, idx, v, orderAttr(k, order));
  return wrap(&k, rmw.getResult(), m.dtype);
}

Value atomicLoad(KernelBuilder &k, AtomicTarget target, Value index,
                 AtomicOrder order) {
  Memory m = memoryOf(k, target);
  checkAtomicType(m, "atomic_load", true);
  mlir::Value idx = indexOf(k, index, "atomic_load");
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<AtomicLoadOp>(
      impl.location, mlirType(&impl.context, m.dtype), m.memref, idx,
      orderAttr(k, order));
  return wrap(&k, op.getResult(), m.dtype);
}

void atomicStore(KernelBuilder &k, AtomicTarget target, Value index,
                 Value value, AtomicOrder order) {
  Memory m = memoryOf(k, target);
  checkAtomicType(m, "atomic_store", true);
  mlir::Value idx = indexOf(k, index, "atomic_store");
  mlir::Value v = converted(k, value, m.dtype, "atomic_store");
  KernelBuilder::Impl &impl = k.internals();
  impl.builder.create<AtomicStoreOp>(impl.location, v, m.memref, idx,
                                     orderAttr(k, order));
}

std::pair<Value, Value>
atomicCompareExchangeWeak(KernelBuilder &k, AtomicTarget target, Value index,
                          Value expected, Value desired, AtomicOrder success,
                          AtomicOrder failure) {
  const char *name = "atomic_compare_exchange_weak";
  Memory m = memoryOf(k, target);
  checkAtomicType(m, name, true);
  mlir::Value idx = indexOf(k, index, name);
  mlir::Value e = converted(k, expected, m.dtype, name);
  mlir::Value d = converted(k, desired, m.dtype, name);
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<AtomicCompareExchangeOp>(
      impl.location, e.getType(), impl.builder.getI1Type(), m.memref, idx, e,
      d, orderAttr(k, success), orderAttr(k, failure));
  return {wrap(&k, op.getSuccess(), DType::Bool),
          wrap(&k, op.getObserved(), m.dtype)};
}

Value functionConstant(KernelBuilder &k, DType dtype, unsigned index) {
  if (dtype == DType::I64 || dtype == DType::U64 || dtype == DType::BF16)
    throw EnigmaError(std::string("function constants of type ") +
                      shortName(dtype) +
                      " are not supported (Metal's function constants are "
                      "bool, char, uchar, short, ushort, int, uint, half or "
                      "float)");
  if (index > 65535)
    throw EnigmaError("function constant index must be in 0..65535, got " +
                      std::to_string(index));
  KernelBuilder::Impl &impl = k.internals();
  // One index, one dtype: a second read with another type is a mistake.
  WalkResult clash = impl.kernel.walk([&](FunctionConstantOp other) {
    if (other.getIndex() == int32_t(index) &&
        other.getDtype() != shortName(dtype))
      return WalkResult::interrupt();
    return WalkResult::advance();
  });
  if (clash.wasInterrupted())
    throw EnigmaError("function constant " + std::to_string(index) +
                      " is already read with another dtype in this kernel");
  auto op = impl.builder.create<FunctionConstantOp>(
      impl.location, mlirType(&impl.context, dtype),
      impl.builder.getI32IntegerAttr(int32_t(index)),
      impl.builder.getStringAttr(shortName(dtype)));
  return wrap(&k, op.getResult(), dtype);
}

} // namespace enigma
