//===- EmitVectorMemory.cpp - vector.load / vector.store on scalar memory -===//
//
// One wide access of 2 or 4 consecutive elements of a scalar buffer or
// threadgroup array (lib/Builder/VectorMemory.cpp):
//
//   MSL   float4 v5 = *(device float4*)(A + v4);
//         *(device float4*)(C + v4) = v6;
//   CUDA  float4 v5 = *(float4*)(A + v4);       (the prelude's float4 is
//                                                16-byte aligned: one ld.v4)
//   C++   float4 v5 = enigma_vector_load<float4>(A + v4);
//         enigma_vector_store(C + v4, v6);      (memcpy: aliasing-safe, and
//                                                still one vector move)
//
// Integers are held in unsigned C types, so the pointer is cast to the
// unsigned vector type (uint4 for an int buffer): same bits, same size.
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"

#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace enigma {
namespace {

/// Metal's address-space keyword for a memref, for pointer casts in MSL.
const char *mslAddressSpace(MemRefType type) {
  switch (getAddressSpace(type)) {
  case AddressSpace::Constant: return "constant";
  case AddressSpace::Threadgroup: return "threadgroup";
  case AddressSpace::Thread: return "thread";
  case AddressSpace::Device: break;
  }
  return "device";
}

bool usedAtomically(Value memref) {
  return llvm::any_of(memref.getUsers(), [](Operation *user) {
    return isa<AtomicRMWOp, AtomicLoadOp, AtomicStoreOp,
               AtomicCompareExchangeOp>(user);
  });
}

/// Checks the access can be printed and returns the address expression
/// `(base + index)`.
FailureOr<std::string> address(CFamilyEmitter &e, Operation *op,
                               Value memref, ValueRange indices,
                               VectorType vectorType) {
  auto type = llvm::dyn_cast<MemRefType>(memref.getType());
  if (!type || type.getRank() != 1 || indices.size() != 1)
    return op->emitOpError("only 1-D memory with one index can be printed");
  if (vectorType.getRank() != 1 ||
      !llvm::is_contained({2, 4}, vectorType.getNumElements()))
    return op->emitOpError("only 2- and 4-lane vector accesses can be "
                           "printed");
  // In MSL such memory has an atomic type and is read through a view.
  if (usedAtomically(memref))
    return op->emitOpError("memory used by atomics has no vector accesses");
  return "(" + e.expr(memref) + " + " + e.expr(indices[0]) + ")";
}

/// The pointer-cast dereference `*(device float4*)(A + i)` (MSL, CUDA).
std::string derefAs(CFamilyEmitter &e, Value memref, VectorType vectorType,
                    const std::string &addr) {
  std::string space;
  if (e.target() == Target::MSL)
    space = std::string(mslAddressSpace(llvm::cast<MemRefType>(
                memref.getType()))) + " ";
  return "*(" + space + e.typeName(vectorType) + "*)" + addr;
}

} // namespace

LogicalResult emitVectorMemoryFamily(CFamilyEmitter &e, Operation *op,
                                     bool &handled) {
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](vector::LoadOp load) -> LogicalResult {
        VectorType type = load.getVectorType();
        FailureOr<std::string> addr =
            address(e, op, load.getBase(), load.getIndices(), type);
        if (failed(addr))
          return failure();
        if (e.target() == Target::Cpp)
          e.define(load.getResult(), "enigma_vector_load<" +
                                         e.typeName(type) + ">" + *addr);
        else
          e.define(load.getResult(), derefAs(e, load.getBase(), type, *addr));
        return success();
      })
      .Case([&](vector::StoreOp store) -> LogicalResult {
        VectorType type = store.getVectorType();
        FailureOr<std::string> addr =
            address(e, op, store.getBase(), store.getIndices(), type);
        if (failed(addr))
          return failure();
        std::string value = e.expr(store.getValueToStore());
        if (e.target() == Target::Cpp) // the address without its parentheses
          e.line() << "enigma_vector_store("
                   << addr->substr(1, addr->size() - 2) << ", " << value
                   << ");\n";
        else
          e.line() << derefAs(e, store.getBase(), type, *addr) << " = "
                   << value << ";\n";
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

} // namespace enigma
