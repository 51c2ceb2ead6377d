//===- KernelOp.cpp - enigma.kernel ---------------------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaOps.h"

#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/FunctionImplementation.h"

#include "llvm/ADT/StringExtras.h"

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
  return t.isF16() || t.isBF16() || t.isF32() || t.isFloat8E4M3FN() ||
         t.isFloat8E5M2();
}

/// The kernel's name is printed as the C identifier enigma_kernel_<name>:
/// ASCII letters, digits and '_' (bytes of non-ASCII letters, which Python
/// identifiers and the C-family compilers accept, pass as they are), not
/// starting with a digit.
static bool isIdentifier(StringRef name) {
  if (name.empty() || llvm::isDigit(name.front()))
    return false;
  return llvm::all_of(name, [](char c) {
    return llvm::isAlnum(c) || c == '_' || static_cast<unsigned char>(c) >= 0x80;
  });
}

LogicalResult KernelOp::verify() {
  if (!isIdentifier(getSymName()))
    return emitOpError() << "kernel name '" << getSymName()
                         << "' is not an identifier: it names the function "
                            "enigma_kernel_<name> in MSL, CUDA and C++, so it "
                            "may hold only letters, digits and '_' and must "
                            "not start with a digit";
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
  return verifyMatrixExtents();
}

namespace {
/// Side `name` of a matrix_extents entry: a constant `name` or the index of
/// a scalar argument `name_param`; "" when it is well-formed.
std::string checkSide(KernelOp kernel, DictionaryAttr entry, StringRef name) {
  auto constant = entry.getAs<IntegerAttr>(name);
  auto param = entry.getAs<IntegerAttr>((name + "_param").str());
  if (bool(constant) == bool(param))
    return ("needs exactly one of `" + name + "` (a constant) and `" + name +
            "_param` (a scalar argument's index)")
        .str();
  for (StringRef factor : {"_divisor", "_scale"})
    if (auto f = entry.get((name + factor).str())) {
      auto value = llvm::dyn_cast<IntegerAttr>(f);
      if (!value || value.getValue().isNegative() || value.getValue().isZero())
        return ("has a `" + name + factor + "` that is not a positive integer")
            .str();
    }
  if (constant)
    return constant.getValue().isNegative()
               ? ("has a negative `" + name + "`").str()
               : "";
  int64_t i = param.getInt();
  if (i < 0 || i >= int64_t(kernel.getNumArguments()) ||
      kernel.isBufferParam(unsigned(i)) ||
      !kernel.getArgument(unsigned(i)).getType().isInteger() ||
      kernel.getArgument(unsigned(i)).getType().isInteger(1))
    return ("`" + name + "_param` = " + std::to_string(i) +
            " is not an integer scalar argument")
        .str();
  return "";
}
} // namespace

LogicalResult KernelOp::verifyMatrixExtents() {
  Attribute attr = (*this)->getAttr(kMatrixExtentsAttr);
  if (!attr)
    return success();
  auto entries = llvm::dyn_cast<ArrayAttr>(attr);
  if (!entries)
    return emitOpError() << kMatrixExtentsAttr.str()
                         << " must be an array of dictionaries";
  for (auto [n, element] : llvm::enumerate(entries)) {
    auto entry = llvm::dyn_cast<DictionaryAttr>(element);
    auto where = [&]() {
      return emitOpError() << kMatrixExtentsAttr.str() << " entry " << n
                           << " ";
    };
    if (!entry)
      return where() << "is not a dictionary";
    auto buffer = entry.getAs<IntegerAttr>("buffer");
    if (!buffer || buffer.getInt() < 0 ||
        buffer.getInt() >= int64_t(getNumArguments()) ||
        !isBufferParam(unsigned(buffer.getInt())))
      return where() << "needs `buffer`, the index of a buffer argument";
    for (StringRef side : {"rows", "cols", "pitch"})
      if (std::string error = checkSide(*this, entry, side); !error.empty())
        return where() << error;
    if (!entry.getAs<StringAttr>("what"))
      return where() << "needs `what`, a string for the runtime's message";
  }
  return success();
}

std::vector<MatrixExtent> KernelOp::getMatrixExtents() {
  std::vector<MatrixExtent> out;
  auto entries = (*this)->getAttrOfType<ArrayAttr>(kMatrixExtentsAttr);
  if (!entries)
    return out;
  for (auto entry : entries.getAsRange<DictionaryAttr>()) {
    MatrixExtent extent;
    extent.param = unsigned(entry.getAs<IntegerAttr>("buffer").getInt());
    auto side = [&](StringRef name) {
      MatrixExtent::Side s;
      if (auto constant = entry.getAs<IntegerAttr>(name))
        s.value = constant.getValue().getZExtValue();
      else
        s.param = int(entry.getAs<IntegerAttr>((name + "_param").str())
                          .getInt());
      if (auto d = entry.getAs<IntegerAttr>((name + "_divisor").str()))
        s.divisor = d.getValue().getZExtValue();
      if (auto f = entry.getAs<IntegerAttr>((name + "_scale").str()))
        s.scale = f.getValue().getZExtValue();
      return s;
    };
    extent.rows = side("rows");
    extent.cols = side("cols");
    extent.pitch = side("pitch");
    extent.what = entry.getAs<StringAttr>("what").str();
    out.push_back(std::move(extent));
  }
  return out;
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
