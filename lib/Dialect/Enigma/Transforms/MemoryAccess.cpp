//===- MemoryAccess.cpp - What an op reads or writes, and where ------------===//
#include "enigma/Dialect/Enigma/Transforms/MemoryAccess.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaDialect.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace enigma {

namespace {
bool isRank1(Value memref) {
  auto type = llvm::dyn_cast<MemRefType>(memref.getType());
  return type && type.getRank() == 1;
}

/// A vector op over a memref of scalars touches one element per lane; over
/// a memref of vectors (vec_width buffers), one entry.
template <typename VectorOp>
std::optional<MemoryAccess> vectorAccess(VectorOp op, const char *kind) {
  Value base = op.getBase();
  if (!isRank1(base) || op.getIndices().size() != 1)
    return std::nullopt;
  auto element = llvm::cast<MemRefType>(base.getType()).getElementType();
  unsigned extent = llvm::isa<VectorType>(element)
                        ? 1
                        : unsigned(op.getVectorType().getNumElements());
  return MemoryAccess{base, op.getIndices()[0], extent, kind};
}

std::optional<MemoryAccess> anyAccess(Operation *op) {
  Value memref, index;
  // An op with fragment operands or results (tensors held by a simdgroup,
  // such as a gather's indices) reads more than the element at its one
  // index; the fragment ops are not checked.
  auto isTensor = [](Type t) { return llvm::isa<RankedTensorType>(t); };
  if (llvm::any_of(op->getOperandTypes(), isTensor) ||
      llvm::any_of(op->getResultTypes(), isTensor))
    return std::nullopt;
  for (Value operand : op->getOperands()) {
    if (llvm::isa<MemRefType>(operand.getType())) {
      if (memref)
        return std::nullopt; // two memrefs: unknown shape of access
      memref = operand;
    } else if (operand.getType().isIndex()) {
      if (index)
        return std::nullopt; // two indices: unknown meaning
      index = operand;
    }
  }
  if (!memref || !index || !isRank1(memref))
    return std::nullopt;
  return MemoryAccess{memref, index, 1,
                      op->getName().stripDialect().str()};
}
} // namespace

std::optional<MemoryAccess> describeMemoryAccess(Operation *op) {
  // Simdgroup-wide ops (matrix loads/stores) run once per simdgroup on the
  // CPU backend and may not sit under a per-thread condition.
  if (op->hasTrait<Collective>())
    return std::nullopt;
  return llvm::TypeSwitch<Operation *, std::optional<MemoryAccess>>(op)
      .Case([](memref::LoadOp load) -> std::optional<MemoryAccess> {
        if (!isRank1(load.getMemRef()))
          return std::nullopt;
        return MemoryAccess{load.getMemRef(), load.getIndices()[0], 1, "load"};
      })
      .Case([](memref::StoreOp store) -> std::optional<MemoryAccess> {
        if (!isRank1(store.getMemRef()))
          return std::nullopt;
        return MemoryAccess{store.getMemRef(), store.getIndices()[0], 1,
                            "store"};
      })
      .Case([](vector::LoadOp op) { return vectorAccess(op, "vector_load"); })
      .Case([](vector::StoreOp op) { return vectorAccess(op, "vector_store"); })
      .Case([](vector::MaskedLoadOp op) {
        return vectorAccess(op, "vector_maskedload");
      })
      .Case([](vector::MaskedStoreOp op) {
        return vectorAccess(op, "vector_maskedstore");
      })
      .Case<memref::DimOp, memref::CastOp, ThreadgroupAllocOp>(
          [](Operation *) { return std::nullopt; })
      .Default([](Operation *other) { return anyAccess(other); });
}

std::string describeLocation(Location loc) {
  if (auto file = llvm::dyn_cast<FileLineColLoc>(loc))
    return file.getFilename().str() + ":" + std::to_string(file.getLine());
  if (auto named = llvm::dyn_cast<NameLoc>(loc))
    return describeLocation(named.getChildLoc());
  if (auto call = llvm::dyn_cast<CallSiteLoc>(loc))
    return describeLocation(call.getCallee());
  if (auto fused = llvm::dyn_cast<FusedLoc>(loc))
    for (Location part : fused.getLocations()) {
      std::string text = describeLocation(part);
      if (!text.empty())
        return text;
    }
  return "";
}

} // namespace enigma
