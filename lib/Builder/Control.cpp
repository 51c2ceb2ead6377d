//===- Control.cpp - Loops, guarded memory and register arrays ------------===//
#include "enigma/Builder/Control.h"

#include "BuilderImpl.h"

#include <string>

using namespace mlir;

namespace enigma {

/// Register arrays beyond this many elements would not live in registers on
/// any GPU; refuse them rather than spill silently.
constexpr int64_t kMaxRegisters = 4096;

static scf::WhileOp innermostWhile(KernelBuilder::Impl &impl, bool inBody,
                                   const char *what) {
  if (impl.frames.empty() || !isa<scf::WhileOp>(impl.frames.back().op) ||
      impl.frames.back().inElse != inBody)
    throw EnigmaError(std::string(what) + " without a matching beginWhile");
  return cast<scf::WhileOp>(impl.frames.back().op);
}

SmallVector<mlir::Value> carriedValues(KernelBuilder &k,
                                       const std::vector<Value> &values,
                                       const std::vector<DType> &types,
                                       const char *what) {
  if (values.size() != types.size())
    throw EnigmaError(std::string(what) + ": expected " +
                      std::to_string(types.size()) + " values, got " +
                      std::to_string(values.size()));
  SmallVector<mlir::Value> out;
  for (size_t i = 0; i < values.size(); ++i) {
    checkOwner(&k, values[i], what);
    out.push_back(raw(k.cast(values[i], types[i])));
  }
  return out;
}

static std::vector<Value> wrapAll(KernelBuilder &k, ValueRange values,
                                  const std::vector<DType> &types) {
  std::vector<Value> out;
  for (auto [v, t] : llvm::zip(values, types))
    out.push_back(wrap(&k, v, t));
  return out;
}

std::vector<Value> beginWhile(KernelBuilder &k,
                              const std::vector<Value> &inits) {
  KernelBuilder::Impl &impl = k.internals();
  BuilderFrame frame;
  SmallVector<mlir::Value> initValues;
  SmallVector<Type> types;
  for (const Value &v : inits) {
    checkOwner(&k, v, "loop-carried value");
    initValues.push_back(raw(v));
    types.push_back(raw(v).getType());
    frame.carried.push_back(v.dtype());
  }
  OpBuilder &b = impl.builder;
  auto loop = b.create<scf::WhileOp>(impl.location, types, initValues);
  SmallVector<Location> locs(types.size(), impl.location);
  b.createBlock(&loop.getAfter(), {}, types, locs);
  Block *before = b.createBlock(&loop.getBefore(), {}, types, locs);
  frame.op = loop;
  impl.frames.push_back(frame);
  b.setInsertionPointToEnd(before);
  return wrapAll(k, before->getArguments(), frame.carried);
}

std::vector<Value> beginDoWhile(KernelBuilder &k,
                                const std::vector<Value> &inits) {
  std::vector<Value> args = beginWhile(k, inits);
  KernelBuilder::Impl &impl = k.internals();
  impl.frames.back().op->setAttr(kDoWhileAttr, impl.builder.getUnitAttr());
  return args;
}

std::vector<Value> whileCondition(KernelBuilder &k, Value cond,
                                  const std::vector<Value> &forwarded) {
  KernelBuilder::Impl &impl = k.internals();
  scf::WhileOp loop = innermostWhile(impl, false, "whileCondition");
  checkOwner(&k, cond, "while condition");
  requireCondition(cond, "a while condition");
  BuilderFrame &frame = impl.frames.back();
  SmallVector<mlir::Value> values =
      carriedValues(k, forwarded, frame.carried, "while condition");
  impl.builder.create<scf::ConditionOp>(impl.location, raw(cond), values);
  frame.inElse = true;
  Block *after = &loop.getAfter().front();
  impl.builder.setInsertionPointToEnd(after);
  return wrapAll(k, after->getArguments(), frame.carried);
}

std::vector<Value> endWhile(KernelBuilder &k, const std::vector<Value> &next) {
  KernelBuilder::Impl &impl = k.internals();
  scf::WhileOp loop = innermostWhile(impl, true, "endWhile");
  BuilderFrame frame = impl.frames.back();
  SmallVector<mlir::Value> values =
      carriedValues(k, next, frame.carried, "end of while body");
  impl.builder.create<scf::YieldOp>(impl.location, values);
  impl.frames.pop_back();
  impl.builder.setInsertionPointAfter(loop);
  return wrapAll(k, loop.getResults(), frame.carried);
}

Value select(KernelBuilder &k, Value cond, Value ifTrue, Value ifFalse) {
  checkOwner(&k, cond, "select");
  checkOwner(&k, ifTrue, "select");
  checkOwner(&k, ifFalse, "select");
  requireCondition(cond, "a select condition");
  if (ifTrue.dtype() != ifFalse.dtype() || ifTrue.lanes() != ifFalse.lanes()) {
    auto type = [](const Value &v) {
      std::string name = shortName(v.dtype());
      return v.lanes() == 1 ? name
                            : std::to_string(v.lanes()) + "-lane " + name;
    };
    throw EnigmaError("select of different types (" + type(ifTrue) + " and " +
                      type(ifFalse) + ")");
  }
  KernelBuilder::Impl &impl = k.internals();
  auto op = impl.builder.create<arith::SelectOp>(impl.location, raw(cond),
                                                 raw(ifTrue), raw(ifFalse));
  return wrap(&k, op.getResult(), ifTrue.dtype());
}

Value loadIf(KernelBuilder &k, const Buffer &buffer, Value index, Value mask,
             Value fallback) {
  checkOwner(&k, index, "load_if");
  Value zero = k.constantInt(0, index.dtype());
  Value safe = select(k, mask, index, zero);
  Value loaded = k.load(buffer, safe);
  return select(k, mask, loaded, k.cast(fallback, buffer.dtype()));
}

void storeIf(KernelBuilder &k, const Buffer &buffer, Value index, Value value,
             Value mask) {
  k.beginIf(mask);
  k.store(buffer, index, value);
  k.endIf();
}

void checkIndex(KernelBuilder &k, Value index, Value extent, unsigned dim,
                const std::string &buffer, const std::string &shape,
                const std::string &extentName) {
  checkOwner(&k, index, "index");
  checkOwner(&k, extent, "extent");
  for (const Value *v : {&index, &extent})
    if (!isInteger(v->dtype()) || v->lanes() != 1)
      throw EnigmaError("index " + std::to_string(dim) + " of " + buffer +
                        " must be an integer, got " +
                        shortName(v->dtype()));
  // As 64-bit numbers: a negative signed index is reported as such, and
  // fails the unsigned compare of the check.
  index = k.cast(index, isSigned(index.dtype()) ? DType::I64 : DType::U64);
  extent = k.cast(extent, DType::U64);
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &b = impl.builder;
  impl.builder.create<IndexCheckOp>(
      impl.location, raw(index), raw(extent), b.getI32IntegerAttr(int(dim)),
      b.getStringAttr(buffer), b.getStringAttr(shape),
      b.getStringAttr(extentName));
}

RegisterArray allocRegisters(KernelBuilder &k, DType dtype, int64_t size,
                             double fill) {
  if (size <= 0 || size > kMaxRegisters)
    throw EnigmaError("a register tensor holds 1 to " +
                      std::to_string(kMaxRegisters) + " elements, got " +
                      std::to_string(size));
  KernelBuilder::Impl &impl = k.internals();
  MLIRContext *ctx = &impl.context;
  auto type = MemRefType::get({size}, mlirType(ctx, dtype),
                              MemRefLayoutAttrInterface{},
                              AddressSpaceAttr::get(ctx, AddressSpace::Thread));
  // A per-thread array with the lifetime of the kernel invocation (the
  // kernel op is an AutomaticAllocationScope).
  mlir::Value mem = impl.builder.create<memref::AllocaOp>(impl.location, type);
  RegisterArray regs(mem.getAsOpaquePointer(), dtype, size);
  Value init = k.constant(fill, dtype);
  for (int64_t i = 0; i < size; ++i)
    storeRegister(k, regs, i, init);
  return regs;
}

static mlir::Value registerIndex(KernelBuilder::Impl &impl,
                                 const RegisterArray &regs, int64_t index) {
  if (!regs.handle())
    throw EnigmaError("the register tensor is empty");
  if (index < 0 || index >= regs.size())
    throw EnigmaError("register tensor index " + std::to_string(index) +
                      " is out of range (size " + std::to_string(regs.size()) +
                      ")");
  return impl.builder.create<arith::ConstantIndexOp>(impl.location, index);
}

Value loadRegister(KernelBuilder &k, const RegisterArray &regs, int64_t index) {
  KernelBuilder::Impl &impl = k.internals();
  mlir::Value idx = registerIndex(impl, regs, index);
  auto mem = mlir::Value::getFromOpaquePointer(regs.handle());
  auto op = impl.builder.create<memref::LoadOp>(impl.location, mem,
                                                ValueRange{idx});
  return wrap(&k, op.getResult(), regs.dtype());
}

void storeRegister(KernelBuilder &k, const RegisterArray &regs, int64_t index,
                   Value value) {
  checkOwner(&k, value, "register store");
  requireScalar(value, "a register array");
  KernelBuilder::Impl &impl = k.internals();
  mlir::Value idx = registerIndex(impl, regs, index);
  // Assignment converts to the element type, as for buffers.
  mlir::Value v = raw(k.cast(value, regs.dtype()));
  auto mem = mlir::Value::getFromOpaquePointer(regs.handle());
  impl.builder.create<memref::StoreOp>(impl.location, v, mem, ValueRange{idx});
}

} // namespace enigma
