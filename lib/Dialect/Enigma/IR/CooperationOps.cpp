//===- CooperationOps.cpp - The cooperation op family -----------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"

#include "enigma/Support/DType.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace enigma;

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationAttributes.cpp.inc"
#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.cpp.inc"

void EnigmaDialect::registerCooperationOps() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationAttributes.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// threadgroup_alloc
//===----------------------------------------------------------------------===//

static uint64_t elementBytes(Type element) {
  return (element.getIntOrFloatBitWidth() + 7) / 8;
}

uint64_t ThreadgroupAllocOp::getBytes() {
  MemRefType type = getMemref().getType();
  if (!type.hasStaticShape() || !type.getElementType().isIntOrFloat())
    return 0;
  return uint64_t(type.getNumElements()) * elementBytes(type.getElementType());
}

uint64_t ThreadgroupAllocOp::getPaddedBytes() {
  return llvm::alignTo(getBytes(), kAlignment);
}

uint64_t ThreadgroupAllocOp::totalBytes(Operation *kernel) {
  uint64_t total = 0;
  for (Region &region : kernel->getRegions())
    for (Block &block : region)
      for (auto alloc : block.getOps<ThreadgroupAllocOp>())
        total += alloc.getPaddedBytes();
  return total;
}

LogicalResult ThreadgroupAllocOp::verify() {
  Operation *parent = (*this)->getParentOp();
  if (!parent || !isa<KernelOp>(parent))
    return emitOpError("must be directly in the kernel body, not inside a "
                       "loop, branch or other region: threadgroup memory is "
                       "allocated once per threadgroup");
  MemRefType type = getMemref().getType();
  if (type.getRank() != 1)
    return emitOpError("allocates a one-dimensional array, got rank ")
           << type.getRank();
  if (getAddressSpace(type) != AddressSpace::Threadgroup)
    return emitOpError("result must be in the threadgroup address space");
  Type element = type.getElementType();
  if (!element.isIntOrFloat())
    return emitOpError("element type must be a scalar integer or float");
  if (type.getNumElements() <= 0)
    return emitOpError("size must be positive, got ") << type.getNumElements();
  // Reported once, on the allocation that crosses the limit.
  uint64_t through = 0;
  for (auto alloc : (*this)->getBlock()->getOps<ThreadgroupAllocOp>()) {
    through += alloc.getPaddedBytes();
    if (alloc == *this)
      break;
  }
  uint64_t total = totalBytes(parent);
  if (through > kMaxBytes && through - getPaddedBytes() <= kMaxBytes)
    return emitOpError("threadgroup memory of the kernel is ")
           << total << " bytes (this allocation: " << getBytes()
           << " bytes; each array starts on a " << kAlignment
           << "-byte boundary), more than the " << kMaxBytes
           << " bytes (227 KiB) any target allows";
  return success();
}

//===----------------------------------------------------------------------===//
// Atomics
//===----------------------------------------------------------------------===//

DynamicThreadgroupAllocOp DynamicThreadgroupAllocOp::find(Operation *kernel) {
  DynamicThreadgroupAllocOp found;
  for (Region &region : kernel->getRegions())
    for (Block &block : region)
      for (auto alloc : block.getOps<DynamicThreadgroupAllocOp>())
        if (!found)
          found = alloc;
  return found;
}

LogicalResult DynamicThreadgroupAllocOp::verify() {
  auto kernel = dyn_cast_or_null<KernelOp>((*this)->getParentOp());
  if (!kernel)
    return emitOpError("must be directly in the kernel body, not inside a "
                       "loop, branch or other region: threadgroup memory is "
                       "allocated once per threadgroup");
  MemRefType type = getMemref().getType();
  if (type.hasStaticShape())
    return emitOpError("has a dynamic size: its type is memref<?x...>");
  if (getAddressSpace(type) != AddressSpace::Threadgroup)
    return emitOpError("result must be in the threadgroup address space");
  if (find(kernel) != *this)
    return emitOpError("is the kernel's second dynamic threadgroup array; a "
                       "kernel has one (Metal's [[threadgroup(0)]], CUDA's "
                       "extern __shared__): carve it into parts by offset");
  auto arg = llvm::dyn_cast<BlockArgument>(getBytes());
  if (!arg || arg.getOwner()->getParentOp() != kernel.getOperation() ||
      !kernel.getArgAttr(arg.getArgNumber(), "enigma.threadgroup_memory_bytes"))
    return emitOpError("takes its size from the kernel parameter marked "
                       "enigma.threadgroup_memory_bytes");
  return success();
}

bool enigma::isAtomicOp(Operation *op) {
  return isa<AtomicRMWOp, AtomicLoadOp, AtomicStoreOp,
             AtomicCompareExchangeOp>(op);
}

bool enigma::isUsedAtomically(Value memref) {
  // 64-bit memory keeps its plain type (MSL casts each atomic's address).
  if (llvm::cast<MemRefType>(memref.getType()).getElementType().isInteger(64))
    return false;
  return llvm::any_of(memref.getUsers(), [&](Operation *user) {
    return llvm::TypeSwitch<Operation *, bool>(user)
        .Case<AtomicRMWOp, AtomicLoadOp, AtomicStoreOp,
              AtomicCompareExchangeOp>(
            [&](auto op) { return op.getMemref() == memref; })
        .Default([](Operation *) { return false; });
  });
}

static LogicalResult verifyAtomicMemRef(Operation *op, MemRefType type) {
  AddressSpace space = getAddressSpace(type);
  if (space != AddressSpace::Device && space != AddressSpace::Threadgroup)
    return op->emitOpError("atomics need device or threadgroup memory, got "
                           "the ")
           << stringifyAddressSpace(space) << " address space";
  return success();
}

LogicalResult AtomicRMWOp::verify() {
  if (failed(verifyAtomicMemRef(*this, getMemref().getType())))
    return failure();
  if (isa<FloatType>(getValue().getType()) &&
      !llvm::is_contained({AtomicKind::Exchange, AtomicKind::Add,
                           AtomicKind::Sub, AtomicKind::Min, AtomicKind::Max},
                          getKind()))
    return emitOpError("atomic ")
           << stringifyAtomicKind(getKind())
           << " is integer-only; float atomics support exchange, add, sub, "
              "min and max";
  return success();
}

LogicalResult AtomicLoadOp::verify() {
  return verifyAtomicMemRef(*this, getMemref().getType());
}

LogicalResult AtomicStoreOp::verify() {
  return verifyAtomicMemRef(*this, getMemref().getType());
}

LogicalResult AtomicCompareExchangeOp::verify() {
  return verifyAtomicMemRef(*this, getMemref().getType());
}

//===----------------------------------------------------------------------===//
// function_constant
//===----------------------------------------------------------------------===//

LogicalResult FunctionConstantOp::verify() {
  std::optional<DType> dtype = parseDType(getDtype().str());
  if (!dtype)
    return emitOpError("unknown dtype '") << getDtype() << "'";
  Type type = getResult().getType();
  unsigned width = type.getIntOrFloatBitWidth();
  bool matches = isFloat(*dtype)
                     ? isa<FloatType>(type) &&
                           width == 8 * byteWidth(*dtype) &&
                           (*dtype != DType::BF16 || type.isBF16()) &&
                           (*dtype != DType::F8E4M3 ||
                            type.isFloat8E4M3FN()) &&
                           (*dtype != DType::F8E5M2 || type.isFloat8E5M2())
                 : *dtype == DType::Bool ? type.isInteger(1)
                     : type.isInteger(8 * byteWidth(*dtype));
  if (!matches)
    return emitOpError("result type ") << type << " does not hold dtype "
                                       << getDtype();
  if (getIndex() < 0 || getIndex() > 65535)
    return emitOpError("index must be in 0..65535, got ") << getIndex();
  auto kernel = (*this)->getParentOfType<KernelOp>();
  if (!kernel)
    return emitOpError("must be inside an enigma.kernel");
  // Reported on the later of two reads that disagree.
  bool clash = false;
  kernel.walk([&](FunctionConstantOp other) {
    if (other == *this)
      return WalkResult::interrupt();
    if (other.getIndex() == getIndex() &&
        parseDType(other.getDtype().str()) != dtype)
      clash = true;
    return WalkResult::advance();
  });
  if (clash)
    return emitOpError("function constant ")
           << getIndex() << " is read with two different dtypes";
  return success();
}
