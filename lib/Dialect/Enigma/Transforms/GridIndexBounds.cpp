//===- GridIndexBounds.cpp - Indices that grow with the grid --------------===//
#include "enigma/Dialect/Enigma/Transforms/GridIndexBounds.h"

#include "enigma/Dialect/Enigma/Transforms/MemoryAccess.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
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

/// `value` as an affine function of the thread's grid position, computed in
/// unsigned integers with no wrap-around for the positions that exist.
std::optional<Affine> affineOf(Value value, unsigned depth = 0) {
  if (depth > 32 || !value.getType().isIntOrIndex())
    return std::nullopt;
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
    return narrowed(affineOf(def->getOperand(0), depth + 1));
  if (isa<arith::AddIOp>(def)) {
    std::optional<Affine> x = affineOf(def->getOperand(0), depth + 1);
    std::optional<Affine> y = affineOf(def->getOperand(1), depth + 1);
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
        return narrowed(scaled(affineOf(def->getOperand(1 - side), depth + 1),
                               *factor));
    return std::nullopt;
  }
  if (isa<arith::ShLIOp>(def))
    if (std::optional<uint64_t> shift = constantOf(def->getOperand(1));
        shift && *shift < 40)
      return narrowed(
          scaled(affineOf(def->getOperand(0), depth + 1), uint64_t(1) << *shift));
  return std::nullopt;
}
} // namespace

std::vector<GridAffineAccess> findGridAffineAccesses(KernelOp kernel) {
  std::vector<GridAffineAccess> found;
  // Only ops directly in the body run in every thread.
  for (Operation &op : kernel.getBody().front()) {
    std::optional<MemoryAccess> access = describeMemoryAccess(&op);
    if (!access)
      continue;
    auto arg = llvm::dyn_cast<BlockArgument>(access->memref);
    if (!arg || arg.getOwner()->getParentOp() != kernel.getOperation())
      continue;
    // The index reaches the access through one cast (or none) from the
    // integer arithmetic; a signed cast reads the value as signed.
    Value index = access->index;
    bool signedIndex = false;
    if (auto cast = index.getDefiningOp<arith::IndexCastOp>()) {
      signedIndex = true;
      index = cast.getIn();
    }
    std::optional<Affine> affine = affineOf(index);
    if (!affine)
      continue;
    GridAffineAccess entry;
    entry.param = arg.getArgNumber();
    std::copy(std::begin(affine->coefficient), std::end(affine->coefficient),
              entry.coefficient);
    entry.offset = affine->offset;
    entry.extent = access->extent;
    entry.valueBits = std::min(affine->bits, widthOf(index.getType()));
    entry.signedIndex = signedIndex;
    entry.access = access->kind;
    entry.location = describeLocation(op.getLoc());
    found.push_back(std::move(entry));
  }
  return found;
}

} // namespace enigma
