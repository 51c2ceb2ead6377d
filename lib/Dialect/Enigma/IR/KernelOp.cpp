//===- KernelOp.cpp - enigma.kernel ---------------------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionImplementation.h"

using namespace mlir;
using namespace enigma;

void KernelOp::build(OpBuilder &builder, OperationState &state, StringRef name,
                     FunctionType type) {
  state.addAttribute(SymbolTable::getSymbolAttrName(),
                     builder.getStringAttr(name));
  state.addAttribute(getFunctionTypeAttrName(state.name), TypeAttr::get(type));
  Region *body = state.addRegion();
  Block *entry = new Block();
  for (Type t : type.getInputs())
    entry->addArgument(t, state.location);
  body->push_back(entry);
}

ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  auto buildType = [](Builder &b, ArrayRef<Type> inputs, ArrayRef<Type> results,
                      function_interface_impl::VariadicFlag, std::string &) {
    return b.getFunctionType(inputs, results);
  };
  return function_interface_impl::parseFunctionOp(
      parser, result, /*allowVariadic=*/false,
      getFunctionTypeAttrName(result.name), buildType,
      getArgAttrsAttrName(result.name), getResAttrsAttrName(result.name));
}

void KernelOp::print(OpAsmPrinter &p) {
  function_interface_impl::printFunctionOp(
      p, *this, /*isVariadic=*/false, getFunctionTypeAttrName(),
      getArgAttrsAttrName(), getResAttrsAttrName());
}

std::string KernelOp::getParamName(unsigned i) {
  if (auto name = getArgAttrOfType<StringAttr>(i, "enigma.name"))
    return name.str();
  return "arg" + std::to_string(i);
}

bool KernelOp::isBufferParam(unsigned i) {
  return llvm::isa<MemRefType>(getArgumentTypes()[i]);
}

uint64_t KernelOp::getParamMultipleOf(unsigned i) {
  if (auto attr = getArgAttrOfType<IntegerAttr>(i, kMultipleOfAttr))
    if (attr.getInt() > 0)
      return uint64_t(attr.getInt());
  return 1;
}

void KernelOp::getAsmBlockArgumentNames(Region &region,
                                        OpAsmSetValueNameFn setNameFn) {
  if (region.empty())
    return;
  for (auto [i, arg] : llvm::enumerate(region.front().getArguments()))
    if (auto name = getArgAttrOfType<StringAttr>(i, "enigma.name"))
      setNameFn(arg, name.getValue());
}

static bool isElementType(Type t) {
  if (auto vec = llvm::dyn_cast<VectorType>(t))
    return vec.getRank() == 1 && vec.getNumElements() >= 2 &&
           vec.getNumElements() <= 4 && isElementType(vec.getElementType());
  if (auto i = llvm::dyn_cast<IntegerType>(t))
    return i.isSignless() && llvm::is_contained({1u, 8u, 16u, 32u, 64u},
                                                i.getWidth());
  return t.isF16() || t.isBF16() || t.isF32();
}

LogicalResult KernelOp::verify() {
  FunctionType type = getFunctionType();
  if (type.getNumResults() != 0)
    return emitOpError("kernels return nothing; write results to buffers");
  for (auto [i, t] : llvm::enumerate(type.getInputs())) {
    std::string what = "parameter '" + getParamName(i) + "'";
    if (auto mem = llvm::dyn_cast<MemRefType>(t)) {
      if (mem.getRank() != 1 || !mem.isDynamicDim(0) ||
          !mem.getLayout().isIdentity())
        return emitOpError() << what
                             << " must be a rank-1 dynamic buffer, got " << t;
      AddressSpace space = getAddressSpace(mem);
      if (space != AddressSpace::Device && space != AddressSpace::Constant)
        return emitOpError() << what
                             << " must be in the device or constant address "
                                "space, got "
                             << stringifyAddressSpace(space);
      if (!isElementType(mem.getElementType()))
        return emitOpError() << what << " has unsupported element type "
                             << mem.getElementType();
      continue;
    }
    if (!isElementType(t))
      return emitOpError() << what << " has unsupported scalar type " << t;
    if (Attribute promise = getArgAttr(i, kMultipleOfAttr)) {
      auto multiple = llvm::dyn_cast<IntegerAttr>(promise);
      if (!multiple || multiple.getInt() < 1 || !t.isInteger() ||
          t.isInteger(1))
        return emitOpError() << what << ": " << kMultipleOfAttr.str()
                             << " must be a positive integer on an integer "
                                "scalar";
    }
  }
  if (Attribute size = (*this)->getAttr(kThreadgroupSizeAttr)) {
    auto threads = llvm::dyn_cast<IntegerAttr>(size);
    if (!threads || threads.getInt() < 1 || threads.getInt() > 1024)
      return emitOpError() << kThreadgroupSizeAttr.str()
                           << " must be an integer from 1 to 1024 (threads "
                              "per threadgroup)";
  }
  return success();
}

std::optional<uint64_t> KernelOp::getRequiredThreadgroupSize() {
  if (auto size = (*this)->getAttrOfType<IntegerAttr>(kThreadgroupSizeAttr))
    return uint64_t(size.getInt());
  return std::nullopt;
}

LogicalResult KernelOp::verifyRegions() {
  Block &entry = getBody().front();
  if (entry.getNumArguments() != getFunctionType().getNumInputs())
    return emitOpError("entry block must have one argument per parameter");
  for (auto [arg, t] :
       llvm::zip(entry.getArgumentTypes(), getFunctionType().getInputs()))
    if (arg != t)
      return emitOpError("entry block argument types must match the "
                         "function type");
  return success();
}
