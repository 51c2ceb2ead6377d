//===- KernelQueries.cpp --------------------------------------------------===//
#include "KernelQueries.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace enigma {

std::string kernelFunctionName(KernelOp kernel) {
  return "enigma_kernel_" + kernel.getSymName().str();
}

StringRef metalQueryName(Operation *query) {
  return llvm::TypeSwitch<Operation *, StringRef>(query)
#define ENIGMA_QUERY(Op) .Case([](Op) { return Op::getMetalAttribute(); })
      ENIGMA_QUERY(ThreadPositionInGridOp)
      ENIGMA_QUERY(ThreadPositionInThreadgroupOp)
      ENIGMA_QUERY(ThreadgroupPositionInGridOp)
      ENIGMA_QUERY(ThreadsPerThreadgroupOp)
      ENIGMA_QUERY(ThreadsPerGridOp)
      ENIGMA_QUERY(ThreadgroupsPerGridOp)
      ENIGMA_QUERY(ThreadIndexInThreadgroupOp)
      ENIGMA_QUERY(ThreadIndexInSimdgroupOp)
      ENIGMA_QUERY(SimdgroupIndexInThreadgroupOp)
      ENIGMA_QUERY(ThreadsPerSimdgroupOp)
      ENIGMA_QUERY(SimdgroupsPerThreadgroupOp)
#undef ENIGMA_QUERY
      .Default([](Operation *) { return StringRef(); });
}

std::optional<unsigned> queryDim(Operation *query) {
  if (auto attr = query->getAttrOfType<DimAttr>("dim"))
    return static_cast<unsigned>(attr.getValue());
  return std::nullopt;
}

} // namespace enigma
