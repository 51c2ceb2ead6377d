//===- CFamilyEmitter.cpp - The shared C-family walker --------------------===//
#include "CFamilyEmitter.h"
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Support/DType.h"
#include "enigma/Target/Preludes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/TypeSwitch.h"

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
  // Each target defines it (EmitAsyncCopy.cpp, the preludes).
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

static bool isReservedName(StringRef name) {
  static const llvm::StringSet<> reserved = {
      "auto", "bool", "break", "case", "char", "const", "constant", "continue",
      "default", "device", "do", "double", "else", "enum", "extern", "float",
      "for", "goto", "half", "if", "int", "kernel", "long", "register",
      "return", "short", "signed", "sizeof", "static", "struct", "switch",
      "thread", "threadgroup", "typedef", "union", "unsigned", "void",
      "volatile", "while", "uint", "uchar", "ushort", "ulong", "bfloat",
      "class", "namespace", "template", "this", "new", "delete", "true",
      "false", "using", "metal", "main", "min", "max", "abs",
      "thread_position_in_grid", "thread_position_in_threadgroup",
      "threadgroup_position_in_grid", "threads_per_threadgroup",
      "threads_per_grid", "threadgroups_per_grid",
      "thread_index_in_threadgroup", "thread_index_in_simdgroup",
      "simdgroup_index_in_threadgroup", "threads_per_simdgroup",
      "simdgroups_per_threadgroup"};
  if (reserved.contains(name) || name.starts_with("enigma_") ||
      name.starts_with("__"))
    return true;
  // Value names are v<N> and temporaries t<N>; keep parameters out of
  // those spaces.
  return name.size() > 1 && (name[0] == 'v' || name[0] == 't') &&
         llvm::all_of(name.drop_front(), llvm::isDigit);
}

/// `name` made a C identifier that none of the languages reserves.
static std::string sanitizeParamName(StringRef userName) {
  std::string name;
  for (char c : userName)
    name += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    name = "p_" + name;
  if (isReservedName(name))
    name += "_";
  return name;
}

std::string CFamilyEmitter::paramName(unsigned index) {
  // Distinct user names can sanitise to the same identifier ("a-b", "a_b",
  // or one name given twice): a parameter that clashes with an earlier one
  // gets its index appended.
  std::vector<std::string> taken;
  for (unsigned i = 0; i <= index; ++i) {
    std::string name = sanitizeParamName(kernel.getParamName(i));
    if (llvm::is_contained(taken, name))
      name += "_" + std::to_string(i);
    while (llvm::is_contained(taken, name))
      name += "_";
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
  if (auto forOp = dyn_cast<scf::ForOp>(op))
    return emitFor(forOp);
  if (auto ifOp = dyn_cast<scf::IfOp>(op))
    return emitIf(ifOp);
  bool handled = false;
  if (failed(emitMmaFamily(*this, op, handled)))
    return failure();
  if (handled)
    return success();
  if (failed(emitArith(op, handled)))
    return failure();
  if (handled)
    return success();
  if (failed(emitMath(op, handled)))
    return failure();
  if (handled)
    return success();
  for (auto family : {emitBuiltinFamily, emitVectorFamily,
                      emitCooperationFamily, emitSimdFamily,
                      emitControlFamily, emitVectorMemoryFamily,
                      emitAsyncCopyFamily}) {
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

LogicalResult CFamilyEmitter::emitIf(scf::IfOp op) {
  for (Value result : op.getResults())
    declareVariable(result, "");
  return emitIfArms(
      op, [&](Block &block) { return emitBlock(block); },
      [&](ValueRange results, ValueRange values) {
        emitYield(results, values);
      });
}

//===----------------------------------------------------------------------===//
// arith
//===----------------------------------------------------------------------===//

static unsigned intWidth(Type type) {
  if (auto vec = llvm::dyn_cast<VectorType>(type))
    type = vec.getElementType();
  return type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
}

LogicalResult CFamilyEmitter::emitArith(Operation *op, bool &handled) {
  handled = true;
  auto S = [&](Value v) {
    // As a signed number an i1 is 0 or -1 (extsi, sitofp, signed compares).
    if (v.getType().isInteger(1))
      return "(-(int)" + expr(v) + ")";
    return "(" + typeName(v.getType(), true) + ")" + expr(v);
  };
  auto result = [&]() { return op->getResult(0); };
  auto a = [&]() { return op->getOperand(0); };
  auto b = [&]() { return op->getOperand(1); };
  // Integer + - * & | ^ <<: done in at least 32 bits so that C's promotion of
  // narrow types to (signed) int cannot overflow.
  auto intBinary = [&](const char *sym) {
    Type t = result().getType();
    unsigned w = intWidth(t);
    if (w == 1 || w >= 32 || llvm::isa<VectorType>(t))
      return define(result(), expr(a()) + " " + sym + " " + expr(b()));
    std::string wide = "(uint)" + expr(a()) + " " + sym + " (uint)" + expr(b());
    // NVRTC turns a 16-bit negation (0 - x, x * -1, ~x + 1) into neg.s16,
    // and on sm_90 the result then sign-extends wrongly for x = -32768
    // (docs/design/integer-emission.md): CUDA keeps 16-bit sums and
    // products in an opaque 32-bit value before they are narrowed.
    llvm::StringRef op(sym);
    bool arithmetic = op == "+" || op == "-" || op == "*";
    if (w == 16 && arithmetic && target() == Target::CUDA)
      wide = "enigma_opaque_u32(" + wide + ")";
    define(result(), "(" + typeName(t) + ")(" + wide + ")");
  };
  auto signedBinary = [&](const char *sym) {
    define(result(), "(" + typeName(result().getType()) + ")(" + S(a()) + " " +
                         sym + " " + S(b()) + ")");
  };
  auto unsignedBinary = [&](const char *sym) {
    define(result(), "(" + typeName(result().getType()) + ")(" + expr(a()) +
                         " " + sym + " " + expr(b()) + ")");
  };
  // Integer / and % are total on every target: metal_total_division.h
  // defines a zero divisor and MIN / -1 (printed into MSL that divides).
  auto division = [&](const char *sym, bool asSigned) {
    Type t = result().getType();
    std::string callee = std::string("enigma_") + (asSigned ? "s" : "u") +
                         (*sym == '/' ? "div" : "rem");
    callee += "<" + typeName(t, asSigned);
    if (asSigned)
      callee += ", " + typeName(t, /*asSigned=*/false);
    callee += ">";
    std::string x = asSigned ? S(a()) : expr(a());
    std::string y = asSigned ? S(b()) : expr(b());
    define(result(),
           "(" + typeName(t) + ")" + callee + "(" + x + ", " + y + ")");
  };
  auto call2 = [&](const char *fn, bool asSigned) {
    std::string x = asSigned ? S(a()) : expr(a());
    std::string y = asSigned ? S(b()) : expr(b());
    define(result(), "(" + typeName(result().getType()) + ")" + fn + "(" + x +
                         ", " + y + ")");
  };
  auto cast = [&](bool fromSigned, bool toSigned) {
    std::string src = fromSigned ? S(a()) : expr(a());
    Type to = result().getType();
    if (toSigned)
      define(result(), "(" + typeName(to) + ")(" + typeName(to, true) + ")" +
                           src);
    else
      define(result(), "(" + typeName(to) + ")" + src);
  };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](arith::ConstantOp c) {
        alias(c.getResult(), constant(c.getValue(), c.getType()));
        return success();
      })
      .Case([&](arith::AddIOp) { intBinary("+"); return success(); })
      .Case([&](arith::SubIOp) { intBinary("-"); return success(); })
      .Case([&](arith::MulIOp) { intBinary("*"); return success(); })
      .Case([&](arith::AndIOp) { intBinary("&"); return success(); })
      .Case([&](arith::OrIOp) { intBinary("|"); return success(); })
      .Case([&](arith::XOrIOp) { intBinary("^"); return success(); })
      .Case([&](arith::ShLIOp) { intBinary("<<"); return success(); })
      .Case([&](arith::ShRUIOp) { unsignedBinary(">>"); return success(); })
      .Case([&](arith::ShRSIOp) { signedBinary(">>"); return success(); })
      .Case([&](arith::DivUIOp) { division("/", false); return success(); })
      .Case([&](arith::RemUIOp) { division("%", false); return success(); })
      .Case([&](arith::DivSIOp) { division("/", true); return success(); })
      .Case([&](arith::RemSIOp) { division("%", true); return success(); })
      .Case([&](arith::MaxSIOp) { call2("max", true); return success(); })
      .Case([&](arith::MinSIOp) { call2("min", true); return success(); })
      .Case([&](arith::MaxUIOp) { call2("max", false); return success(); })
      .Case([&](arith::MinUIOp) { call2("min", false); return success(); })
      .Case([&](arith::AddFOp) {
        define(result(), expr(a()) + " + " + expr(b()));
        return success();
      })
      .Case([&](arith::SubFOp) {
        define(result(), expr(a()) + " - " + expr(b()));
        return success();
      })
      .Case([&](arith::MulFOp) {
        define(result(), expr(a()) + " * " + expr(b()));
        return success();
      })
      .Case([&](arith::DivFOp) {
        define(result(), expr(a()) + " / " + expr(b()));
        return success();
      })
      .Case([&](arith::RemFOp) { call2("fmod", false); return success(); })
      .Case([&](arith::MaxNumFOp) { call2("fmax", false); return success(); })
      .Case([&](arith::MinNumFOp) { call2("fmin", false); return success(); })
      .Case([&](arith::NegFOp) {
        // Parenthesise negative literals: "--1.5f" would be a decrement.
        std::string x = expr(a());
        define(result(), x.starts_with("-") ? "-(" + x + ")" : "-" + x);
        return success();
      })
      .Case([&](arith::CmpIOp c) {
        using P = arith::CmpIPredicate;
        static const std::pair<P, const char *> ops[] = {
            {P::eq, "=="}, {P::ne, "!="}, {P::slt, "<"}, {P::sle, "<="},
            {P::sgt, ">"}, {P::sge, ">="}, {P::ult, "<"}, {P::ule, "<="},
            {P::ugt, ">"}, {P::uge, ">="}};
        bool isSignedCmp = llvm::is_contained(
            {P::slt, P::sle, P::sgt, P::sge}, c.getPredicate());
        const char *sym = "==";
        for (auto [p, s] : ops)
          if (p == c.getPredicate())
            sym = s;
        std::string x = isSignedCmp ? S(c.getLhs()) : expr(c.getLhs());
        std::string y = isSignedCmp ? S(c.getRhs()) : expr(c.getRhs());
        define(c.getResult(), x + " " + sym + " " + y);
        return success();
      })
      .Case([&](arith::CmpFOp c) {
        using P = arith::CmpFPredicate;
        std::string x = expr(c.getLhs()), y = expr(c.getRhs());
        // On vectors the logical operators are the element-wise | and &.
        bool lanes = llvm::isa<VectorType>(c.getLhs().getType());
        std::string OR = lanes ? " | " : " || ", AND = lanes ? " & " : " && ";
        std::string e;
        switch (c.getPredicate()) {
        case P::AlwaysFalse: e = "false"; break;
        case P::AlwaysTrue: e = "true"; break;
        case P::OEQ: e = x + " == " + y; break;
        case P::OGT: e = x + " > " + y; break;
        case P::OGE: e = x + " >= " + y; break;
        case P::OLT: e = x + " < " + y; break;
        case P::OLE: e = x + " <= " + y; break;
        case P::ONE: e = "(" + x + " < " + y + OR + x + " > " + y + ")"; break;
        case P::ORD: e = "(!isnan(" + x + ")" + AND + "!isnan(" + y + "))"; break;
        case P::UEQ: e = "!(" + x + " < " + y + OR + x + " > " + y + ")"; break;
        case P::UGT: e = "!(" + x + " <= " + y + ")"; break;
        case P::UGE: e = "!(" + x + " < " + y + ")"; break;
        case P::ULT: e = "!(" + x + " >= " + y + ")"; break;
        case P::ULE: e = "!(" + x + " > " + y + ")"; break;
        case P::UNE: e = x + " != " + y; break;
        case P::UNO: e = "(isnan(" + x + ")" + OR + "isnan(" + y + "))"; break;
        }
        define(c.getResult(), e);
        return success();
      })
      .Case([&](arith::SelectOp s) {
        // A vector condition picks lane by lane: Metal's select(f, t, c).
        if (llvm::isa<VectorType>(s.getCondition().getType()))
          define(s.getResult(), "select(" + expr(s.getFalseValue()) + ", " +
                                    expr(s.getTrueValue()) + ", " +
                                    expr(s.getCondition()) + ")");
        else
          define(s.getResult(), expr(s.getCondition()) + " ? " +
                                    expr(s.getTrueValue()) + " : " +
                                    expr(s.getFalseValue()));
        return success();
      })
      .Case([&](arith::ExtSIOp) { cast(true, false); return success(); })
      .Case([&](arith::ExtUIOp) { cast(false, false); return success(); })
      .Case([&](arith::TruncIOp t) {
        // Truncation to i1 keeps the lowest bit; a C cast to bool would
        // test for non-zero.
        if (t.getType().isInteger(1))
          define(result(), "(bool)(" + expr(a()) + " & 1)");
        else
          cast(false, false);
        return success();
      })
      .Case([&](arith::SIToFPOp) { cast(true, false); return success(); })
      .Case([&](arith::UIToFPOp) { cast(false, false); return success(); })
      .Case([&](arith::FPToSIOp) { cast(false, true); return success(); })
      .Case([&](arith::FPToUIOp) { cast(false, false); return success(); })
      .Case([&](arith::ExtFOp) { cast(false, false); return success(); })
      .Case([&](arith::TruncFOp) { cast(false, false); return success(); })
      .Case([&](arith::BitcastOp) {
        define(result(), "as_type<" + typeName(result().getType()) + ">(" +
                             expr(a()) + ")");
        return success();
      })
      .Case([&](arith::IndexCastOp c) {
        // index -> iN narrows: print the conversion, since the result may
        // be used as an integer, not only as a subscript.
        if (!foldIndexCasts() || !c.getType().isIndex()) {
          cast(true, false);
          return success();
        }
        // Indices are only used as subscripts, which accept any integer:
        // keep the source expression, signed when the cast is signed.
        unsigned w = intWidth(c.getIn().getType());
        if (c.getIn().getType().isIndex() || w == 64)
          alias(c.getResult(), expr(c.getIn()));
        else
          alias(c.getResult(), "(" + S(c.getIn()) + ")");
        return success();
      })
      .Case([&](arith::IndexCastUIOp c) {
        if (!foldIndexCasts() || !c.getType().isIndex()) {
          cast(false, false);
          return success();
        }
        alias(c.getResult(), expr(c.getIn()));
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

//===----------------------------------------------------------------------===//
// math
//===----------------------------------------------------------------------===//

LogicalResult CFamilyEmitter::emitMath(Operation *op, bool &handled) {
  handled = true;
  auto call = [&](const char *fn) {
    std::string args;
    for (Value operand : op->getOperands())
      args += (args.empty() ? "" : ", ") + expr(operand);
    define(op->getResult(0), std::string(fn) + "(" + args + ")");
    return success();
  };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](math::SqrtOp) { return call("sqrt"); })
      .Case([&](math::RsqrtOp) { return call("rsqrt"); })
      .Case([&](math::AbsFOp) { return call("abs"); })
      .Case([&](math::CeilOp) { return call("ceil"); })
      .Case([&](math::FloorOp) { return call("floor"); })
      .Case([&](math::RoundOp) { return call("round"); })
      .Case([&](math::RoundEvenOp) { return call("rint"); })
      .Case([&](math::TruncOp) { return call("trunc"); })
      .Case([&](math::ExpOp) { return call("exp"); })
      .Case([&](math::Exp2Op) { return call("exp2"); })
      .Case([&](math::LogOp) { return call("log"); })
      .Case([&](math::Log2Op) { return call("log2"); })
      .Case([&](math::Log10Op) { return call("log10"); })
      .Case([&](math::SinOp) { return call("sin"); })
      .Case([&](math::CosOp) { return call("cos"); })
      .Case([&](math::TanOp) { return call("tan"); })
      .Case([&](math::AsinOp) { return call("asin"); })
      .Case([&](math::AcosOp) { return call("acos"); })
      .Case([&](math::AtanOp) { return call("atan"); })
      .Case([&](math::SinhOp) { return call("sinh"); })
      .Case([&](math::CoshOp) { return call("cosh"); })
      .Case([&](math::TanhOp) { return call("tanh"); })
      .Case([&](math::PowFOp) { return call("pow"); })
      .Case([&](math::Atan2Op) { return call("atan2"); })
      .Case([&](math::CopySignOp) { return call("copysign"); })
      .Case([&](math::FmaOp) { return call("fma"); })
      .Case([&](math::AbsIOp a) {
        // absi reads its operand as signed; abs(INT_MIN) wraps to INT_MIN.
        // CUDA's abs(int) leaves INT_MIN undefined and NVRTC exploits it
        // (the result was taken as non-negative): the CUDA prelude's
        // enigma_abs wraps.
        Type t = a.getType();
        const char *fn = target() == Target::CUDA ? "enigma_abs" : "abs";
        define(a.getResult(), "(" + typeName(t) + ")" + fn + "((" +
                                  typeName(t, true) + ")" +
                                  expr(a.getOperand()) + ")");
        return success();
      })
      .Case([&](math::CtPopOp) { return call("popcount"); })
      .Case([&](math::CountLeadingZerosOp) { return call("clz"); })
      .Case([&](math::CountTrailingZerosOp) { return call("ctz"); })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

void emitDivisionDeclarations(CFamilyEmitter &e) {
  if (e.target() != Target::MSL)
    return;
  bool divides = false;
  e.getKernel().walk([&](Operation *op) {
    if (isa<arith::DivSIOp, arith::DivUIOp, arith::RemSIOp, arith::RemUIOp>(
            op))
      divides = true;
  });
  if (!divides)
    return;
  for (const PreludeFile &file : cpuPreludeFiles()) {
    if (file.name != "metal_total_division.h")
      continue;
    // The header is MSL as well as C++; only its function qualifier differs.
    std::string text(file.text);
    for (size_t at; (at = text.find("METAL_FUNC")) != std::string::npos;)
      text.replace(at, 10, "inline");
    e.stream() << text << "\n";
    return;
  }
}

} // namespace enigma
