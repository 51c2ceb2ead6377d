//===- Pipeline.cpp - KernelBuilder calls of the pipeline family ----------===//
#include "enigma/Builder/Pipeline.h"

#include "BuilderImpl.h"

#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include <string>

using namespace mlir;

namespace enigma {

namespace {

mlir::Value toIndex(KernelBuilder &k, const Value &v, const char *what) {
  checkOwner(&k, v, what);
  if (isFloat(v.dtype()) || v.dtype() == DType::Bool || v.lanes() != 1 ||
      llvm::isa<RankedTensorType>(raw(v).getType()))
    throw EnigmaError(std::string(what) + " must be an integer scalar, got " +
                      shortName(v.dtype()));
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &b = impl.builder;
  if (isSigned(v.dtype()))
    return b.create<arith::IndexCastOp>(impl.location, b.getIndexType(),
                                        raw(v));
  return b.create<arith::IndexCastUIOp>(impl.location, b.getIndexType(),
                                        raw(v));
}

Value fromIndex(KernelBuilder &k, mlir::Value index) {
  KernelBuilder::Impl &impl = k.internals();
  OpBuilder &b = impl.builder;
  mlir::Value v =
      b.create<arith::IndexCastUIOp>(impl.location, b.getI32Type(), index);
  return ValueAccess::wrap(&k, v, DType::U32, 1);
}

PipelineOp openPipeline(KernelBuilder::Impl &impl, bool inConsumer,
                        const char *what) {
  if (impl.frames.empty() || !isa<PipelineOp>(impl.frames.back().op) ||
      impl.frames.back().inElse != inConsumer)
    throw EnigmaError(std::string(what) +
                      " without a matching beginPipeline" +
                      (inConsumer ? " and beginConsumer" : ""));
  return cast<PipelineOp>(impl.frames.back().op);
}

} // namespace

PipelineRing pipelineRing(KernelBuilder &k,
                          const std::vector<ThreadgroupArray> &buffers,
                          int stages, int producerRegisters,
                          int consumerRegisters, int cluster) {
  KernelBuilder::Impl &impl = k.internals();
  if (buffers.empty())
    throw EnigmaError("pipeline_ring needs at least one buffer");
  if (!impl.frames.empty())
    throw EnigmaError("pipeline_ring must be called at the top of the "
                      "kernel body, not inside a loop or branch");
  SmallVector<mlir::Value> memrefs;
  for (const ThreadgroupArray &a : buffers) {
    if (a.builder() != &k)
      throw EnigmaError("pipeline_ring: a buffer belongs to another kernel");
    memrefs.push_back(mlir::Value::getFromOpaquePointer(a.handle()));
  }
  OpBuilder &b = impl.builder;
  auto type = MemRefType::get(
      {2 * int64_t(stages)}, b.getI64Type(), MemRefLayoutAttrInterface{},
      AddressSpaceAttr::get(&impl.context, AddressSpace::Threadgroup));
  auto op = b.create<PipelineRingOp>(
      impl.location, type, memrefs, b.getI64IntegerAttr(stages),
      b.getI64IntegerAttr(producerRegisters),
      b.getI64IntegerAttr(consumerRegisters), b.getI64IntegerAttr(cluster));
  PipelineRing ring;
  ring.owner = &k;
  ring.impl = op.getResult().getAsOpaquePointer();
  ring.count = stages;
  ring.arrays = buffers;
  return ring;
}

std::vector<Value> beginPipeline(KernelBuilder &k, const PipelineRing &ring,
                                 Value lower, Value upper,
                                 const std::vector<Value> &inits,
                                 int consumerGroups) {
  if (ring.builder() != &k)
    throw EnigmaError("pipeline: the ring belongs to another kernel");
  if (consumerGroups < 1 || consumerGroups > 4)
    throw EnigmaError("pipeline: consumer_groups must be 1 to 4, got " +
                      std::to_string(consumerGroups));
  KernelBuilder::Impl &impl = k.internals();
  for (const BuilderFrame &f : impl.frames)
    if (isa<PipelineOp>(f.op))
      throw EnigmaError("a pipeline cannot be nested in another pipeline");
  mlir::Value lo = toIndex(k, lower, "pipeline lower bound");
  mlir::Value hi = toIndex(k, upper, "pipeline upper bound");
  SmallVector<mlir::Value> initValues;
  SmallVector<Type> types;
  BuilderFrame frame;
  for (const Value &v : inits) {
    checkOwner(&k, v, "pipeline carried value");
    initValues.push_back(raw(v));
    types.push_back(raw(v).getType());
    frame.carried.push_back(v.dtype());
  }
  OpBuilder &b = impl.builder;
  Location loc = impl.location;
  auto op = b.create<PipelineOp>(
      loc, types, mlir::Value::getFromOpaquePointer(ring.handle()), lo, hi,
      initValues, int64_t(consumerGroups));
  SmallVector<Type> consumerArgs{b.getIndexType(), b.getIndexType()};
  llvm::append_range(consumerArgs, types);
  SmallVector<Location> locs(consumerArgs.size(), loc);
  Block *consumer =
      b.createBlock(&op.getConsumer(), {}, consumerArgs, locs);
  (void)consumer;
  Block *producer = b.createBlock(&op.getProducer(), {},
                                  {b.getIndexType(), b.getIndexType()},
                                  {loc, loc});
  frame.op = op;
  impl.frames.push_back(frame);
  b.setInsertionPointToEnd(producer);
  return {fromIndex(k, producer->getArgument(0)),
          fromIndex(k, producer->getArgument(1))};
}

std::vector<Value> beginConsumer(KernelBuilder &k) {
  KernelBuilder::Impl &impl = k.internals();
  PipelineOp op = openPipeline(impl, false, "beginConsumer");
  OpBuilder &b = impl.builder;
  b.setInsertionPointToEnd(&op.getProducer().front());
  b.create<PipelineYieldOp>(impl.location, ValueRange{});
  impl.frames.back().inElse = true;
  Block &consumer = op.getConsumer().front();
  b.setInsertionPointToEnd(&consumer);
  std::vector<Value> out{fromIndex(k, consumer.getArgument(0)),
                         fromIndex(k, consumer.getArgument(1))};
  for (auto [arg, dtype] : llvm::zip(consumer.getArguments().drop_front(2),
                                     impl.frames.back().carried))
    out.push_back(ValueAccess::wrap(&k, arg, dtype, lanesOf(arg.getType())));
  return out;
}

std::vector<Value> endPipeline(KernelBuilder &k,
                               const std::vector<Value> &next) {
  KernelBuilder::Impl &impl = k.internals();
  PipelineOp op = openPipeline(impl, true, "endPipeline");
  BuilderFrame frame = impl.frames.back();
  if (next.size() != frame.carried.size())
    throw EnigmaError("end of the consumer region: expected " +
                      std::to_string(frame.carried.size()) +
                      " carried values, got " + std::to_string(next.size()));
  SmallVector<mlir::Value> values;
  for (size_t i = 0; i < next.size(); ++i) {
    checkOwner(&k, next[i], "pipeline carried value");
    mlir::Value v = raw(next[i]);
    if (v.getType() != op.getInits()[i].getType())
      v = raw(k.cast(next[i], frame.carried[i]));
    if (v.getType() != op.getInits()[i].getType())
      throw EnigmaError("carried value " + std::to_string(i) +
                        " changes its type in the consumer region");
    values.push_back(v);
  }
  OpBuilder &b = impl.builder;
  b.create<PipelineYieldOp>(impl.location, values);
  impl.frames.pop_back();
  b.setInsertionPointAfter(op);
  std::vector<Value> out;
  for (auto [result, dtype] : llvm::zip(op.getResults(), frame.carried))
    out.push_back(
        ValueAccess::wrap(&k, result, dtype, lanesOf(result.getType())));
  return out;
}

void stageCopy(KernelBuilder &k, const PipelineRing &ring, Value slot,
               const StageBox &box, const Buffer &src, Value row, Value col,
               Value rows, Value cols, Value ld) {
  KernelBuilder::Impl &impl = k.internals();
  if (ring.builder() != &k)
    throw EnigmaError("stage_copy: the ring belongs to another kernel");
  if (impl.frames.empty() || !isa<PipelineOp>(impl.frames.back().op) ||
      impl.frames.back().inElse)
    throw EnigmaError("stage_copy belongs in a pipeline's producer region");
  if (box.buffer < 0 || box.buffer >= int(ring.buffers().size()))
    throw EnigmaError("stage_copy: buffer " + std::to_string(box.buffer) +
                      " of a ring of " +
                      std::to_string(ring.buffers().size()));
  if (box.boxRows <= 0 || box.boxCols <= 0 || box.offset < 0 ||
      box.blockCols < 0 || box.blockStride < 0)
    throw EnigmaError("stage_copy: the box needs positive sides, a "
                      "non-negative offset and block layout");
  unsigned p = src.paramIndex();
  if (p >= impl.kernel.getNumArguments() || !impl.kernel.isBufferParam(p) ||
      src.lanes() != 1)
    throw EnigmaError("stage_copy: the source must be a scalar buffer "
                      "parameter of this kernel");
  OpBuilder &b = impl.builder;
  DenseI32ArrayAttr swizzle;
  if (box.swizzle && (*box.swizzle)[0] != 0)
    swizzle = DenseI32ArrayAttr::get(
        &impl.context, {(*box.swizzle)[0], (*box.swizzle)[1],
                        (*box.swizzle)[2]});
  // The region's slot came to the front end as a u32 (fromIndex): take
  // the index itself back, which is what the verifier matches.
  mlir::Value slotIndex;
  if (auto cast = raw(slot).getDefiningOp<arith::IndexCastUIOp>();
      cast && cast.getIn().getType().isIndex())
    slotIndex = cast.getIn();
  else
    slotIndex = toIndex(k, slot, "stage_copy slot");
  b.create<StageCopyOp>(
      impl.location, mlir::Value::getFromOpaquePointer(ring.handle()),
      slotIndex, impl.kernel.getBody().front().getArgument(p),
      toIndex(k, row, "stage_copy row"), toIndex(k, col, "stage_copy column"),
      toIndex(k, rows, "stage_copy rows"),
      toIndex(k, cols, "stage_copy columns"),
      toIndex(k, ld, "stage_copy pitch"), b.getI64IntegerAttr(box.buffer),
      b.getI64IntegerAttr(box.offset), b.getI64IntegerAttr(box.boxRows),
      b.getI64IntegerAttr(box.boxCols),
      box.blockCols ? b.getI64IntegerAttr(box.blockCols) : IntegerAttr(),
      box.blockStride ? b.getI64IntegerAttr(box.blockStride) : IntegerAttr(),
      swizzle, box.multicast ? b.getUnitAttr() : UnitAttr(),
      box.transpose ? b.getUnitAttr() : UnitAttr());
}

void consumerTurn(KernelBuilder &k, bool begin,
                  const std::vector<Value> &after) {
  KernelBuilder::Impl &impl = k.internals();
  if (impl.frames.empty() || !isa<PipelineOp>(impl.frames.back().op) ||
      !impl.frames.back().inElse)
    throw EnigmaError("consumer_turn belongs at the top level of a "
                      "pipeline_loop's consumer (not inside a loop or "
                      "branch there, nor in a producer)");
  Block *block = impl.builder.getInsertionBlock();
  bool open = false;
  for (Operation &op : llvm::reverse(*block))
    if (isa<ConsumerTurnBeginOp, ConsumerTurnEndOp>(op)) {
      open = isa<ConsumerTurnBeginOp>(op);
      break;
    }
  if (begin && open)
    throw EnigmaError("consumer_turn: turns do not nest (a turn is already "
                      "open in this consumer)");
  if (!begin && !open)
    throw EnigmaError("consumer_turn: no turn to end");
  if (!begin && !after.empty())
    throw EnigmaError("consumer_turn: only a turn that begins waits for "
                      "values");
  SmallVector<mlir::Value> waited;
  for (const Value &v : after) {
    checkOwner(&k, v, "consumer_turn after");
    if (v.dtype() != DType::F32 || v.lanes() != 1)
      throw EnigmaError(std::string("consumer_turn: after= takes float "
                                    "scalars and float fragments, got ") +
                        shortName(v.dtype()));
    waited.push_back(raw(v));
  }
  OpBuilder &b = impl.builder;
  if (begin)
    b.create<ConsumerTurnBeginOp>(impl.location, waited);
  else
    b.create<ConsumerTurnEndOp>(impl.location);
}

} // namespace enigma
