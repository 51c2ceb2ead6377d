//===- EnigmaDialect.cpp - Dialect registration ---------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace enigma;

#include "enigma/Dialect/Enigma/IR/EnigmaDialect.cpp.inc"
#include "enigma/Dialect/Enigma/IR/EnigmaEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaAttributes.cpp.inc"

void EnigmaDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaAttributes.cpp.inc"
      >();
  registerMathOps();
  registerCooperationOps();
  registerSimdOps();
  registerAsyncCopyOps();
  registerMmaOps();
  registerThreadLoopOps();
  registerFloat8Ops();
  registerPipelineOps();
}

AddressSpace enigma::getAddressSpace(MemRefType type) {
  if (auto attr = llvm::dyn_cast_or_null<AddressSpaceAttr>(type.getMemorySpace()))
    return attr.getValue();
  return AddressSpace::Device;
}

MemRefType enigma::getBufferType(Type element, AddressSpace space) {
  MLIRContext *ctx = element.getContext();
  return MemRefType::get({ShapedType::kDynamic}, element,
                         MemRefLayoutAttrInterface{},
                         AddressSpaceAttr::get(ctx, space));
}
