//===- GridIndexBounds.cpp - Indices that grow with the grid --------------===//
#include "enigma/Dialect/Enigma/Transforms/GridIndexBounds.h"

#include "enigma/Dialect/Enigma/Transforms/MemoryAccess.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>
#include <optional>

using namespace mlir;

namespace enigma {
namespace {
/// Coefficients beyond this are not followed (no overflow in the sums).
constexpr uint64_t kLimit = uint64_t(1) << 40;

struct Affine {
  uint64_t coefficient[3] = {0, 0, 0};
  uint64_t offset = 0;
  unsigned bits = 64; // the narrowest integer width the value went through
};

std::optional<uint64_t> constantOf(Value value) {
  APInt bits;
  if (!matchPattern(value, m_ConstantInt(&bits)) || bits.getActiveBits() > 40)
    return std::nullopt;
  return bits.getZExtValue();
}

unsigned widthOf(Type type) {
  return type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
}

std::optional<Affine> scaled(std::optional<Affine> a, uint64_t factor) {
  if (!a || factor >= kLimit)
    return std::nullopt;
  for (uint64_t &c : a->coefficient)
    if ((c *= factor) >= kLimit)
      return std::nullopt;
  if ((a->offset *= factor) >= kLimit)
    return std::nullopt;
  return a;
}

/// The induction variable of a counted loop with constant bounds directly
/// in the body, and the last value it takes.
struct CountedLoop {
  Value iv;
  uint64_t last = 0;
};

/// `value` as an affine function of the thread's grid position, computed in
/// unsigned integers with no wrap-around for the positions that exist.
/// Inside `loop`, its induction variable counts as its last value: every
/// coefficient is non-negative, so that iteration reaches the largest index.
std::optional<Affine> affineOf(Value value, const CountedLoop *loop,
                               unsigned depth = 0) {
  if (depth > 32 || !value.getType().isIntOrIndex())
    return std::nullopt;
  if (loop && value == loop->iv) {
    Affine a;
    a.offset = loop->last;
    a.bits = widthOf(value.getType());
    return a;
  }
  if (std::optional<uint64_t> c = constantOf(value)) {
    Affine a;
    a.offset = *c;
    a.bits = widthOf(value.getType());
    return a;
  }
  Operation *def = value.getDefiningOp();
  if (!def)
    return std::nullopt;
  unsigned bits = widthOf(value.getType());
  auto narrowed = [&](std::optional<Affine> a) -> std::optional<Affine> {
    if (a)
      a->bits = std::min(a->bits, bits);
    return a;
  };
  if (auto position = dyn_cast<ThreadPositionInGridOp>(def)) {
    Affine a;
    a.coefficient[unsigned(position.getDim())] = 1;
    a.bits = bits;
    return a;
  }
  if (isa<arith::IndexCastUIOp, arith::ExtUIOp>(def))
    return narrowed(affineOf(def->getOperand(0), loop, depth + 1));
  if (isa<arith::AddIOp>(def)) {
    std::optional<Affine> x = affineOf(def->getOperand(0), loop, depth + 1);
    std::optional<Affine> y = affineOf(def->getOperand(1), loop, depth + 1);
    if (!x || !y)
      return std::nullopt;
    for (int d = 0; d < 3; ++d)
      if ((x->coefficient[d] += y->coefficient[d]) >= kLimit)
        return std::nullopt;
    if ((x->offset += y->offset) >= kLimit)
      return std::nullopt;
    x->bits = std::min({x->bits, y->bits, bits});
    return x;
  }
  if (isa<arith::MulIOp>(def)) {
    for (int side = 0; side < 2; ++side)
      if (std::optional<uint64_t> factor = constantOf(def->getOperand(side)))
        return narrowed(scaled(
            affineOf(def->getOperand(1 - side), loop, depth + 1), *factor));
    return std::nullopt;
  }
  if (isa<arith::ShLIOp>(def))
    if (std::optional<uint64_t> shift = constantOf(def->getOperand(1));
        shift && *shift < 40)
      return narrowed(scaled(affineOf(def->getOperand(0), loop, depth + 1),
                             uint64_t(1) << *shift));
  return std::nullopt;
}

/// `op` as a grid-affine access of a buffer parameter of `kernel` (inside
/// `loop` when that is given).
std::optional<GridIndexBound> gridAffineAccess(Operation &op, KernelOp kernel,
                                               const CountedLoop *loop) {
  std::optional<MemoryAccess> access = describeMemoryAccess(&op);
  if (!access)
    return std::nullopt;
  auto arg = llvm::dyn_cast<BlockArgument>(access->memref);
  if (!arg || arg.getOwner()->getParentOp() != kernel.getOperation())
    return std::nullopt;
  // The index reaches the access through one cast (or none) from the
  // integer arithmetic; a signed cast reads the value as signed.
  Value index = access->index;
  bool signedIndex = false;
  if (auto cast = index.getDefiningOp<arith::IndexCastOp>()) {
    signedIndex = true;
    index = cast.getIn();
  }
  std::optional<Affine> affine = affineOf(index, loop);
  if (!affine)
    return std::nullopt;
  GridIndexBound entry;
  entry.param = arg.getArgNumber();
  std::copy(std::begin(affine->coefficient), std::end(affine->coefficient),
            entry.coefficient);
  entry.offset = affine->offset;
  entry.extent = access->extent;
  entry.valueBits = std::min(affine->bits, widthOf(index.getType()));
  entry.signedIndex = signedIndex;
  entry.access = access->kind;
  entry.location = describeLocation(op.getLoc());
  return entry;
}

/// The guard of `if (thread_position_in_grid[d] < limit)` (or `limit >
/// position`), `limit` a scalar parameter of `kernel` or a constant;
/// nothing for any other condition.
std::optional<GridIndexBound::Guard> positionGuard(scf::IfOp branch,
                                                     KernelOp kernel) {
  auto compare = branch.getCondition().getDefiningOp<arith::CmpIOp>();
  if (!compare)
    return std::nullopt;
  Value position = compare.getLhs(), limit = compare.getRhs();
  using Predicate = arith::CmpIPredicate;
  Predicate predicate = compare.getPredicate();
  if (predicate == Predicate::ugt || predicate == Predicate::sgt)
    std::swap(position, limit);
  else if (predicate != Predicate::ult && predicate != Predicate::slt)
    return std::nullopt;
  std::optional<Affine> affine = affineOf(position, nullptr);
  if (!affine || affine->offset != 0)
    return std::nullopt;
  GridIndexBound::Guard guard;
  for (int d = 0; d < 3; ++d) {
    if (affine->coefficient[d] == 0)
      continue;
    if (affine->coefficient[d] != 1 || guard.dim >= 0)
      return std::nullopt; // not a single position
    guard.dim = d;
  }
  if (guard.dim < 0)
    return std::nullopt;
  guard.bits = std::min(affine->bits, widthOf(limit.getType()));
  guard.isSigned = predicate == Predicate::slt || predicate == Predicate::sgt;
  if (std::optional<uint64_t> constant = constantOf(limit)) {
    guard.limit = *constant;
    return guard;
  }
  auto arg = llvm::dyn_cast<BlockArgument>(limit);
  if (!arg || arg.getOwner()->getParentOp() != kernel.getOperation())
    return std::nullopt;
  guard.param = int(arg.getArgNumber());
  return guard;
}
} // namespace

/// The loop as a CountedLoop when its bounds and step are constants and it
/// runs at least once.
std::optional<CountedLoop> countedLoop(scf::ForOp loop) {
  std::optional<uint64_t> lower = constantOf(loop.getLowerBound());
  std::optional<uint64_t> upper = constantOf(loop.getUpperBound());
  std::optional<uint64_t> step = constantOf(loop.getStep());
  if (!lower || !upper || !step || *step == 0 || *upper <= *lower)
    return std::nullopt;
  // scf.for compares signed: a bound with its sign bit set is negative.
  const unsigned bits = widthOf(loop.getInductionVar().getType());
  if (bits < 64 && (*upper | *step) >> (bits - 1) != 0)
    return std::nullopt;
  return CountedLoop{loop.getInductionVar(),
                     *lower + (*upper - *lower - 1) / *step * *step};
}

std::vector<GridIndexBound> findGridAffineAccesses(KernelOp kernel) {
  std::vector<GridIndexBound> found;
  // Ops directly in the body run in every thread, and so do ops directly
  // in a counted loop there; ops directly in the then-block of a position
  // guard run in every thread that passes it.
  for (Operation &op : kernel.getBody().front()) {
    if (std::optional<GridIndexBound> access =
            gridAffineAccess(op, kernel, nullptr)) {
      found.push_back(std::move(*access));
      continue;
    }
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      if (std::optional<CountedLoop> counted = countedLoop(loop))
        for (Operation &inner : *loop.getBody())
          if (std::optional<GridIndexBound> access =
                  gridAffineAccess(inner, kernel, &*counted))
            found.push_back(std::move(*access));
      continue;
    }
    auto branch = dyn_cast<scf::IfOp>(op);
    if (!branch)
      continue;
    std::optional<GridIndexBound::Guard> guard =
        positionGuard(branch, kernel);
    if (!guard)
      continue;
    for (Operation &inner : branch.getThenRegion().front()) {
      std::optional<GridIndexBound> access =
          gridAffineAccess(inner, kernel, nullptr);
      if (!access)
        continue;
      access->guard = *guard;
      found.push_back(std::move(*access));
    }
  }
  return found;
}

} // namespace enigma
