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
// In MSL, memory that atomics also use has an atomic element type and is
// reached through a view whose elements convert to and from plain values
// (EmitCooperation.cpp); there a vector access is one access per lane:
//
//   MSL   float4 v5 = float4(float(view[v4 + 0]), ..., float(view[v4 + 3]));
//         view[v4 + 0] = (v6).x; ...
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
  return "(" + e.expr(memref) + " + " + e.expr(indices[0]) + ")";
}

/// Memory with Metal's atomic type: accessed one lane at a time.
bool isLaneWise(CFamilyEmitter &e, Value memref) {
  return e.spellings().atomicTypes && isUsedAtomically(memref);
}

/// `view[index + lane]`, one element of lane-wise memory.
std::string laneElement(CFamilyEmitter &e, Value memref, Value index,
                        int64_t lane) {
  return e.expr(memref) + "[" + e.expr(index) + " + " +
         std::to_string(lane) + "]";
}

/// The pointer-cast dereference `*(device float4*)(A + i)` (MSL, CUDA).
std::string derefAs(CFamilyEmitter &e, Value memref, VectorType vectorType,
                    const std::string &addr) {
  std::string space;
  if (e.spellings().vectorAccess ==
      TargetSpellings::VectorAccess::AddressSpaceCast)
    space = std::string(mslAddressSpace(llvm::cast<MemRefType>(
                memref.getType()))) + " ";
  return "*(" + space + e.typeName(vectorType) + "*)" + addr;
}

} // namespace

LogicalResult emitVectorMemoryFamily(CFamilyEmitter &e, Operation *op,
                                     bool &handled) {
  handled = true;
  bool helpers =
      e.spellings().vectorAccess == TargetSpellings::VectorAccess::Helpers;
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](vector::LoadOp load) -> LogicalResult {
        VectorType type = load.getVectorType();
        FailureOr<std::string> addr =
            address(e, op, load.getBase(), load.getIndices(), type);
        if (failed(addr))
          return failure();
        if (isLaneWise(e, load.getBase())) {
          std::string element = e.typeName(type.getElementType());
          std::string lanes;
          for (int64_t j = 0; j < type.getNumElements(); ++j)
            lanes += (j ? ", " : "") + element + "(" +
                     laneElement(e, load.getBase(), load.getIndices()[0], j) +
                     ")";
          e.define(load.getResult(), e.typeName(type) + "(" + lanes + ")");
        } else if (helpers)
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
        if (isLaneWise(e, store.getBase())) {
          for (int64_t j = 0; j < type.getNumElements(); ++j)
            e.line() << laneElement(e, store.getBase(), store.getIndices()[0],
                                    j)
                     << " = (" << value << ")." << "xyzw"[j] << ";\n";
        } else if (helpers) {
          // The address without its parentheses.
          e.line() << "enigma_vector_store("
                   << addr->substr(1, addr->size() - 2) << ", " << value
                   << ");\n";
        } else
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
