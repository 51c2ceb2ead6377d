//===- ConsumerBody.cpp - A pipeline's consumer region, cloned -----------===//
#include "ConsumerBody.h"

#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace enigma {

/// Whether this thread's consumer group takes iteration `i`: the warpgroup
/// (simdgroup index / 4, which the divergence check knows to be the same
/// in its four simdgroups) modulo the groups against the iteration's turn.
static Value groupTakesIteration(OpBuilder &b, Location loc, PipelineOp op,
                                 Value i) {
  auto c = [&](int64_t v) { return b.create<arith::ConstantIndexOp>(loc, v); };
  int64_t groups = op.getConsumerGroups();
  Value simdgroup = b.create<arith::IndexCastUIOp>(
      loc, b.getIndexType(), b.create<SimdgroupIndexInThreadgroupOp>(loc));
  Value warpgroup = b.create<arith::DivUIOp>(loc, simdgroup, c(4));
  Value group = b.create<arith::RemUIOp>(loc, warpgroup, c(groups));
  Value turn = b.create<arith::RemUIOp>(
      loc, b.create<arith::SubIOp>(loc, i, op.getLower()), c(groups));
  return b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::eq, group, turn);
}

ClonedConsumer cloneConsumer(OpBuilder &b, PipelineOp op, Value i, Value slot,
                             ValueRange carried) {
  Location loc = op.getLoc();
  Block &consumer = op.getConsumer().front();
  ClonedConsumer out;
  OpBuilder::InsertionGuard guard(b);
  scf::IfOp branch;
  if (op.getConsumerGroups() > 1) {
    branch = b.create<scf::IfOp>(loc, carried.getTypes(),
                                 groupTakesIteration(b, loc, op, i),
                                 /*withElse=*/true);
    // Without carried values the builder has given both blocks their
    // (empty) yields; with them, the blocks are empty.
    if (carried.empty()) {
      b.setInsertionPoint(branch.thenBlock()->getTerminator());
    } else {
      b.setInsertionPointToStart(branch.elseBlock());
      b.create<scf::YieldOp>(loc, carried);
      b.setInsertionPointToStart(branch.thenBlock());
    }
    out.guard = branch;
  }
  IRMapping map;
  map.map(consumer.getArgument(0), i);
  map.map(consumer.getArgument(1), slot);
  for (auto [arg, value] : llvm::zip(consumer.getArguments().drop_front(2),
                                     carried))
    map.map(arg, value);
  for (Operation &inner : consumer.without_terminator())
    b.clone(inner, map);
  for (Value v : consumer.getTerminator()->getOperands())
    out.next.push_back(map.lookupOrDefault(v));
  if (branch && !carried.empty()) {
    b.create<scf::YieldOp>(loc, out.next);
    out.next.assign(branch.getResults().begin(), branch.getResults().end());
  }
  return out;
}

} // namespace enigma
