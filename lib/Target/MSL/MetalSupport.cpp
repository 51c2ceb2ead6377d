//===- MetalSupport.cpp - What Metal cannot run ---------------------------===//
//
// The other targets run everything the dialect expresses; Metal lacks a few
// things, and its MSL text then cannot be compiled. Rather than refuse the
// kernel for every target, compilation records the first such op, and the
// runtimes that run Metal source (MetalRuntime, MetalHostRuntime) refuse to
// load it with that reason (docs/reference/cooperation.md, "Atomics").
//
// Today that is 64-bit atomics: Metal 3.1 has only atomic_min_explicit and
// atomic_max_explicit on ulong device memory, which return nothing.
//
//===----------------------------------------------------------------------===//
#include "enigma/Target/Emit.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"
#include "enigma/Dialect/Enigma/Transforms/MemoryAccess.h"

using namespace mlir;

namespace enigma {
namespace {

/// The Python name of an atomic op.
std::string atomicName(Operation *op) {
  if (auto rmw = dyn_cast<AtomicRMWOp>(op)) {
    switch (rmw.getKind()) {
    case AtomicKind::Exchange: return "atomic_exchange";
    case AtomicKind::Add: return "atomic_fetch_add";
    case AtomicKind::Sub: return "atomic_fetch_sub";
    case AtomicKind::Min:
    case AtomicKind::UMin: return "atomic_fetch_min";
    case AtomicKind::Max:
    case AtomicKind::UMax: return "atomic_fetch_max";
    case AtomicKind::And: return "atomic_fetch_and";
    case AtomicKind::Or: return "atomic_fetch_or";
    case AtomicKind::Xor: return "atomic_fetch_xor";
    }
  }
  if (isa<AtomicLoadOp>(op))
    return "atomic_load";
  if (isa<AtomicStoreOp>(op))
    return "atomic_store";
  return "atomic_compare_exchange_weak";
}

/// Why Metal cannot run this 64-bit atomic, or "" when it can.
std::string wideAtomic(Operation *op, Value memref) {
  auto rmw = dyn_cast<AtomicRMWOp>(op);
  bool device = getAddressSpace(llvm::cast<MemRefType>(memref.getType())) ==
                AddressSpace::Device;
  if (rmw && device && rmw.getResult().use_empty() &&
      (rmw.getKind() == AtomicKind::UMin || rmw.getKind() == AtomicKind::UMax))
    return "";
  std::string what = atomicName(op) + " on 64-bit " +
                     (device ? "device" : "threadgroup") + " memory";
  if (rmw && (rmw.getKind() == AtomicKind::Min ||
              rmw.getKind() == AtomicKind::Max))
    what = atomicName(op) + " on long (signed 64-bit) memory";
  else if (rmw && device && !rmw.getResult().use_empty() &&
           (rmw.getKind() == AtomicKind::UMin ||
            rmw.getKind() == AtomicKind::UMax))
    what = atomicName(op) + " on ulong memory whose old value is used";
  std::string where = describeLocation(op->getLoc());
  return what + (where.empty() ? "" : " at " + where) +
         ": Metal's 64-bit atomics are only atomic_fetch_min and "
         "atomic_fetch_max of ulong device memory whose old value is not "
         "used (MSL 3.1)";
}
} // namespace

std::string metalUnsupported(KernelOp kernel) {
  std::string reason;
  kernel.walk([&](Operation *op) {
    if (!isAtomicOp(op))
      return WalkResult::advance();
    Value memref = op->getOperand(isa<AtomicStoreOp>(op) ? 1 : 0);
    if (!llvm::cast<MemRefType>(memref.getType()).getElementType().isInteger(
            64))
      return WalkResult::advance();
    reason = wideAtomic(op, memref);
    return reason.empty() ? WalkResult::advance() : WalkResult::interrupt();
  });
  return reason;
}

} // namespace enigma
