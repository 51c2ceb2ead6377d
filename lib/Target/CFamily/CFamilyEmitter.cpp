//===- CFamilyEmitter.cpp - The shared C-family walker --------------------===//
#include "CFamilyEmitter.h"
#include "ReservedNames.h"
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Support/DType.h"
#include "enigma/Target/Preludes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace enigma {

//===----------------------------------------------------------------------===//
// Names and types
//===----------------------------------------------------------------------===//

static const char *intTypeName(unsigned width, bool asSigned) {
  switch (width) {
  case 1: return "bool";
  case 8: return asSigned ? "char" : "uchar";
  case 16: return asSigned ? "short" : "ushort";
  case 32: return asSigned ? "int" : "uint";
  default: return asSigned ? "long" : "ulong";
  }
}

std::string CFamilyEmitter::typeName(Type type, bool asSigned) {
  if (auto vec = llvm::dyn_cast<VectorType>(type))
    return typeName(vec.getElementType(), asSigned) +
           std::to_string(vec.getNumElements());
  if (auto i = llvm::dyn_cast<IntegerType>(type))
    return intTypeName(i.getWidth(), asSigned);
  if (type.isIndex())
    return intTypeName(64, asSigned);
  if (type.isF32()) return "float";
  if (type.isF16()) return "half";
  if (type.isBF16()) return "bfloat";
  // 8-bit floats are stored as bytes everywhere (EmitFloat8.cpp).
  if (type.isFloat8E4M3FN() || type.isFloat8E5M2()) return "uchar";
  // Each target defines it (MSLEmitter.cpp, the preludes).
  if (llvm::isa<AsyncEventType>(type)) return "enigma_async_event";
  if (auto tensor = llvm::dyn_cast<RankedTensorType>(type))
    return fragmentTypeName(*this, tensor); // EmitMma.cpp
  return "<unsupported type>";
}

std::string CFamilyEmitter::paramElementType(unsigned index) {
  if (auto dtype = kernel.getArgAttrOfType<StringAttr>(index, "enigma.dtype"))
    if (std::optional<DType> t = parseDType(dtype.getValue())) {
      Type argType = kernel.getArgumentTypes()[index];
      Type element = argType;
      if (auto mem = llvm::dyn_cast<MemRefType>(argType))
        element = mem.getElementType();
      std::string name = mslName(*t);
      if (auto vec = llvm::dyn_cast<VectorType>(element))
        name += std::to_string(vec.getNumElements());
      return name;
    }
  Type argType = kernel.getArgumentTypes()[index];
  if (auto mem = llvm::dyn_cast<MemRefType>(argType))
    return typeName(mem.getElementType());
  return typeName(argType);
}

/// `name` made a C identifier (letters, digits, underscores, not starting
/// with a digit).
static std::string sanitizeParamName(StringRef userName) {
  std::string name;
  for (char c : userName)
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    name = "p_" + name;
  return name;
}

std::string CFamilyEmitter::paramName(unsigned index) {
  if (parameterPlaceholders)
    return "enigma_param_" + std::to_string(index);
  // A name the targets reserve, or one the kernel's own text uses, gets a
  // trailing `_` (ReservedNames.h). Distinct user names can sanitise to the
  // same identifier ("a-b", "a_b", or one name given twice): a parameter
  // that clashes with an earlier one gets its index appended.
  std::vector<std::string> taken;
  for (unsigned i = 0; i <= index; ++i) {
    std::string name =
        unreservedName(sanitizeParamName(kernel.getParamName(i)), usedNames);
    if (llvm::is_contained(taken, name))
      name = unreservedName(name + "_" + std::to_string(i), usedNames);
    while (llvm::is_contained(taken, name))
      name = unreservedName(name + "_", usedNames);
    taken.push_back(std::move(name));
  }
  return taken.back();
}

std::string CFamilyEmitter::scalarParamExpr(unsigned index,
                                            const std::string &name) {
  Type type = kernel.getArgumentTypes()[index];
  if (type.isSignlessInteger() && type.getIntOrFloatBitWidth() > 1 &&
      paramElementType(index) != typeName(type))
    return "((" + typeName(type) + ")" + name + ")";
  return name;
}

std::string CFamilyEmitter::freshName(Value value) {
  std::string name = "v" + std::to_string(nextId++);
  names[value] = name;
  return name;
}

void CFamilyEmitter::alias(Value value, std::string expression) {
  names[value] = std::move(expression);
}

std::string CFamilyEmitter::expr(Value value) {
  auto it = names.find(value);
  if (it != names.end())
    return it->second;
  return "<unnamed value>";
}

llvm::raw_ostream &CFamilyEmitter::line() {
  return os.indent(indent);
}

void CFamilyEmitter::define(Value value, const std::string &rhs) {
  std::string type = typeName(value.getType());
  line() << type << " " << freshName(value) << " = " << rhs << ";\n";
}

void CFamilyEmitter::assign(Value target, const std::string &rhs) {
  line() << expr(target) << " = " << rhs << ";\n";
}

void CFamilyEmitter::declareVariable(Value value, const std::string &init) {
  std::string type = typeName(value.getType());
  line() << type << " " << freshName(value);
  if (!init.empty())
    os << " = " << init;
  os << ";\n";
}

std::string metalMemFlags(MemFlags flags) {
  if (flags == MemFlags::None)
    return "mem_flags::mem_none";
  std::string out;
  auto add = [&](MemFlags bit, const char *name) {
    if (!bitEnumContainsAll(flags, bit))
      return;
    if (!out.empty())
      out += " | ";
    out += name;
  };
  add(MemFlags::Device, "mem_flags::mem_device");
  add(MemFlags::Threadgroup, "mem_flags::mem_threadgroup");
  add(MemFlags::Texture, "mem_flags::mem_texture");
  return out;
}

bool containsBarrier(Operation *op) {
  bool found = false;
  op->walk([&](Operation *nested) {
    if (isa<BarrierOp, SimdBarrierOp>(nested)) {
      found = true;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return found;
}

//===----------------------------------------------------------------------===//
// Constants
//===----------------------------------------------------------------------===//

static std::string floatLiteral(const llvm::APFloat &value) {
  if (value.isNaN())
    return "NAN";
  if (value.isInfinity())
    return value.isNegative() ? "(-INFINITY)" : "INFINITY";
  double d = value.convertToDouble();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", d);
  std::string text = buf;
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text + "f";
}

std::string CFamilyEmitter::constant(Attribute value, Type type) {
  if (auto f = llvm::dyn_cast<FloatAttr>(value)) {
    if (type.isFloat8E4M3FN() || type.isFloat8E5M2())
      return float8Literal(f.getValue());
    llvm::APFloat v = f.getValue();
    bool lost;
    v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
              &lost);
    std::string literal = floatLiteral(v);
    if (type.isF32())
      return literal;
    return typeName(type) + "(" + literal + ")";
  }
  if (auto i = llvm::dyn_cast<IntegerAttr>(value)) {
    unsigned width = type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
    if (width == 1)
      return i.getValue().isZero() ? "false" : "true";
    std::string digits = std::to_string(i.getValue().getZExtValue() &
                                        (width == 64 ? ~0ull
                                                     : ((1ull << width) - 1)));
    if (width == 32)
      return digits + "u";
    if (width == 64)
      return digits + "ul";
    return "(" + typeName(type) + ")" + digits;
  }
  if (auto dense = llvm::dyn_cast<SplatElementsAttr>(value)) {
    auto vec = llvm::cast<VectorType>(type);
    return typeName(type) + "(" +
           constant(dense.getSplatValue<Attribute>(), vec.getElementType()) +
           ")";
  }
  // A vector with different lanes: float4(a, b, c, d), lane 0 first.
  if (auto dense = llvm::dyn_cast<DenseElementsAttr>(value)) {
    auto vec = llvm::cast<VectorType>(type);
    std::string lanes;
    for (Attribute lane : dense.getValues<Attribute>())
      lanes += (lanes.empty() ? "" : ", ") +
               constant(lane, vec.getElementType());
    return typeName(type) + "(" + lanes + ")";
  }
  return "<unsupported constant>";
}

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

LogicalResult CFamilyEmitter::emit() {
  emitFileHeader();
  return emitKernelBody();
}

LogicalResult CFamilyEmitter::emitBlock(Block &block) {
  for (Operation &op : block)
    if (failed(emitOp(&op)))
      return failure();
  return success();
}

static bool isThreadQuery(Operation *op) {
  return isa<ThreadPositionInGridOp, ThreadPositionInThreadgroupOp,
             ThreadgroupPositionInGridOp, ThreadsPerThreadgroupOp,
             ThreadsPerGridOp, ThreadgroupsPerGridOp,
             ThreadIndexInThreadgroupOp, ThreadIndexInSimdgroupOp,
             SimdgroupIndexInThreadgroupOp, ThreadsPerSimdgroupOp,
             SimdgroupsPerThreadgroupOp>(op);
}

LogicalResult CFamilyEmitter::emitOp(Operation *op) {
  if (isThreadQuery(op)) {
    alias(op->getResult(0), threadQuery(op));
    return success();
  }
  if (isa<BarrierOp, SimdBarrierOp>(op))
    return emitBarrier(op);
  if (isa<ReturnOp, scf::YieldOp>(op))
    return success(); // handled by the enclosing construct
  if (auto load = dyn_cast<memref::LoadOp>(op)) {
    define(load.getResult(), expr(load.getMemRef()) + "[" +
                                 expr(load.getIndices()[0]) + "]");
    return success();
  }
  if (auto store = dyn_cast<memref::StoreOp>(op)) {
    line() << expr(store.getMemRef()) << "[" << expr(store.getIndices()[0])
           << "] = " << expr(store.getValueToStore()) << ";\n";
    return success();
  }
  // A fragment constant is a fill (the mma family prints it).
  if (auto c = dyn_cast<arith::ConstantOp>(op);
      c && !isFragmentType(c.getType())) {
    alias(c.getResult(), constant(c.getValue(), c.getType()));
    return success();
  }
  if (auto forOp = dyn_cast<scf::ForOp>(op))
    return emitFor(forOp);
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return emitIf(ifOp);
  bool handled = false;
  if (failed(emitTargetOp(op, handled)))
    return failure();
  if (handled)
    return success();
  if (failed(emitMmaFamily(*this, op, handled)))
    return failure();
  if (handled)
    return success();
  for (auto family : {emitFloat8Family, emitArithFamily, emitMathFamily,
                      emitVectorFamily,
                      emitCooperationFamily, emitSimdFamily, emitControlFamily,
                      emitVectorMemoryFamily}) {
    if (failed(family(*this, op, handled)))
      return failure();
    if (handled)
      return success();
  }
  return op->emitOpError("cannot be printed as C-family source yet");
}

void CFamilyEmitter::emitYield(ValueRange targets, ValueRange values) {
  if (targets.size() == 1) {
    assign(targets[0], expr(values[0]));
    return;
  }
  // Read every yielded value before writing any carried variable: a yield
  // may swap carried values.
  std::vector<std::string> temps;
  for (Value v : values) {
    std::string temp = "t" + std::to_string(nextId++);
    line() << typeName(v.getType()) << " " << temp << " = " << expr(v)
           << ";\n";
    temps.push_back(temp);
  }
  for (auto [target, temp] : llvm::zip(targets, temps))
    assign(target, temp);
}

LogicalResult CFamilyEmitter::emitFor(scf::ForOp op) {
  for (auto [result, init, iterArg] :
       llvm::zip(op.getResults(), op.getInitArgs(), op.getRegionIterArgs())) {
    declareVariable(result, expr(init));
    alias(iterArg, expr(result));
  }
  Value iv = op.getInductionVar();
  std::string type = typeName(iv.getType());
  std::string signedType = typeName(iv.getType(), /*asSigned=*/true);
  std::string lb = expr(op.getLowerBound()), ub = expr(op.getUpperBound()),
              step = expr(op.getStep());
  std::string name = freshName(iv);
  // scf.for compares its bounds as signed integers.
  line() << "for (" << type << " " << name << " = " << lb << "; ("
         << signedType << ")" << name << " < (" << signedType << ")" << ub
         << "; " << name << " += " << step << ") {\n";
  indentMore();
  if (failed(emitBlock(*op.getBody())))
    return failure();
  auto yield = cast<scf::YieldOp>(op.getBody()->getTerminator());
  if (!yield.getOperands().empty())
    emitYield(op.getResults(), yield.getOperands());
  indentLess();
  line() << "}\n";
  return success();
}

LogicalResult CFamilyEmitter::emitIfArms(
    scf::IfOp op, llvm::function_ref<LogicalResult(Block &)> arm,
    llvm::function_ref<void(ValueRange, ValueRange)> assign) {
  line() << "if (" << expr(op.getCondition()) << ") {\n";
  indentMore();
  if (failed(arm(op.getThenRegion().front())))
    return failure();
  if (op.getNumResults())
    assign(op.getResults(), op.thenYield().getOperands());
  indentLess();
  if (!op.getElseRegion().empty()) {
    line() << "} else {\n";
    indentMore();
    if (failed(arm(op.getElseRegion().front())))
      return failure();
    if (op.getNumResults())
      assign(op.getResults(), op.elseYield().getOperands());
    indentLess();
  }
  line() << "}\n";
  return success();
}

/// `op` and the ifs nested in it as a chain of guards: each without results
/// or else branch, each ending with the next one.
static SmallVector<scf::IfOp> guardChain(scf::IfOp op) {
  auto isGuard = [](scf::IfOp i) {
    return i.getNumResults() == 0 && i.getElseRegion().empty();
  };
  SmallVector<scf::IfOp> chain;
  for (scf::IfOp link = op; link && isGuard(link);) {
    chain.push_back(link);
    Block &body = link.getThenRegion().front();
    Operation *last = body.getTerminator()->getPrevNode();
    link = last ? dyn_cast<scf::IfOp>(last) : scf::IfOp();
  }
  return chain;
}

/// Chains of guards at least this long print flat (emitGuardChain).
static constexpr size_t kFlatGuardChain = 8;

/// `if (a) { S1; if (b) { S2; ... } }` nested N deep prints as
///
///   do {
///     if (!(a)) break;
///     S1;
///     if (!(b)) break;
///     S2; ...
///   } while (false);
///
/// which means the same (nothing follows an inner if in its block) without
/// a brace level per if: compilers limit nesting (clang, and so Metal's
/// compiler and the MSL host runtime, to 256 levels).
LogicalResult CFamilyEmitter::emitGuardChain(ArrayRef<scf::IfOp> chain) {
  line() << "do { // " << chain.size() << " nested ifs, flat\n";
  indentMore();
  for (size_t k = 0; k < chain.size(); ++k) {
    scf::IfOp link = chain[k];
    line() << "if (!(" << expr(link.getCondition()) << ")) break;\n";
    Operation *next = k + 1 < chain.size() ? scf::IfOp(chain[k + 1]).getOperation()
                                           : nullptr;
    for (Operation &inner : link.getThenRegion().front().without_terminator())
      if (&inner != next && failed(emitOp(&inner)))
        return failure();
  }
  indentLess();
  line() << "} while (false);\n";
  return success();
}

LogicalResult CFamilyEmitter::emitIf(scf::IfOp op) {
  SmallVector<scf::IfOp> chain = guardChain(op);
  if (chain.size() >= kFlatGuardChain)
    return emitGuardChain(chain);
  for (Value result : op.getResults())
    declareVariable(result, "");
  return emitIfArms(
      op, [&](Block &block) { return emitBlock(block); },
      [&](ValueRange results, ValueRange values) {
        emitYield(results, values);
      });
}

void emitTotalOperationDeclarations(CFamilyEmitter &e) {
  bool divides = false, convertsFloats = false;
  e.getKernel().walk([&](Operation *op) {
    if (isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp>(
            op))
      divides = true;
    if (isa<arith::FPToSIOp, arith::FPToUIOp>(op))
      convertsFloats = true;
  });
  for (const PreludeFile &file : cpuPreludeFiles()) {
    bool needed = (divides && file.name == "metal_total_division.h") ||
                  (convertsFloats && file.name == "metal_float_to_int.h");
    if (!needed)
      continue;
    // The header is MSL as well as C++; only its function qualifier differs.
    std::string text(file.text);
    for (size_t at; (at = text.find("METAL_FUNC")) != std::string::npos;)
      text.replace(at, 10, "inline");
    e.stream() << text << "\n";
  }
}

} // namespace enigma
