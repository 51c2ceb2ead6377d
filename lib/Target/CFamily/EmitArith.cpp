//===- EmitArith.cpp - Printing the arith dialect --------------------------===//
//
// Upstream arith ops print as C expressions that mean the same in MSL, CUDA
// and host C++, in four kinds: integer arithmetic, float arithmetic,
// comparisons and selection, conversions. Integers are held in unsigned C
// types (docs/design/integer-emission.md): an op that reads its operands as
// signed casts them to the signed type first. Constants stay in the core
// walker (CFamilyEmitter::emitOp).
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace enigma {
namespace {

unsigned intWidth(Type type) {
  if (auto vec = llvm::dyn_cast<VectorType>(type))
    type = vec.getElementType();
  return type.isIndex() ? 64 : type.getIntOrFloatBitWidth();
}

/// The pieces every kind prints with: operands, result, signed reads.
struct ArithPrinter {
  CFamilyEmitter &e;
  Operation *op;

  Value a() const { return op->getOperand(0); }
  Value b() const { return op->getOperand(1); }
  Value result() const { return op->getResult(0); }
  std::string type() const { return e.typeName(result().getType()); }

  /// `v` read as a signed number; an i1 is then 0 or -1 (extsi, sitofp,
  /// signed compares).
  std::string S(Value v) const {
    if (v.getType().isInteger(1))
      return "(-(int)" + e.expr(v) + ")";
    return "(" + e.typeName(v.getType(), true) + ")" + e.expr(v);
  }
  std::string read(Value v, bool asSigned) const {
    return asSigned ? S(v) : e.expr(v);
  }
  void define(const std::string &rhs) const { e.define(result(), rhs); }
  /// `fn(a, b)` converted to the result type.
  void call2(const char *fn, bool asSigned) const {
    define("(" + type() + ")" + fn + "(" + read(a(), asSigned) + ", " +
           read(b(), asSigned) + ")");
  }
  /// A conversion: the operand (read as signed or not) converted to the
  /// result type, through its signed form when `toSigned`.
  void convert(bool fromSigned, bool toSigned) const {
    Type to = result().getType();
    std::string src = read(a(), fromSigned);
    if (toSigned)
      define("(" + e.typeName(to) + ")(" + e.typeName(to, true) + ")" + src);
    else
      define("(" + e.typeName(to) + ")" + src);
  }
  /// Float -> integer: NaN and values past the range are defined
  /// (metal_float_to_int.h, printed into MSL that converts). The operand is
  /// widened to float (exact for half and bfloat) first.
  void floatToInt(bool toSigned) const {
    Type to = result().getType(), from = a().getType();
    Type element = getElementTypeOrSelf(to);
    std::string x = e.expr(a());
    if (!getElementTypeOrSelf(from).isF32()) {
      Type wide = Float32Type::get(from.getContext());
      if (auto vec = llvm::dyn_cast<VectorType>(from))
        wide = VectorType::get(vec.getShape(), wide);
      x = e.typeName(wide) + "(" + x + ")";
    }
    define("(" + e.typeName(to) + ")enigma_float_to_int<" +
           e.typeName(element, toSigned) + ", " + e.typeName(to, toSigned) +
           ">(" + x + ")");
  }
};

/// + - * & | ^ << >> / % min max on integers.
LogicalResult emitIntegerArith(ArithPrinter &p, bool &handled) {
  CFamilyEmitter &e = p.e;
  // Integer + - * & | ^ <<: done in at least 32 bits so that C's promotion
  // of narrow types to (signed) int cannot overflow.
  auto wrapping = [&](const char *sym) {
    Type t = p.result().getType();
    unsigned w = intWidth(t);
    if (w == 1 || w >= 32 || llvm::isa<VectorType>(t))
      return p.define(e.expr(p.a()) + " " + sym + " " + e.expr(p.b()));
    std::string wide =
        "(uint)" + e.expr(p.a()) + " " + sym + " (uint)" + e.expr(p.b());
    // NVRTC turns a 16-bit negation (0 - x, x * -1, ~x + 1) into neg.s16,
    // and on sm_90 the result then sign-extends wrongly for x = -32768
    // (docs/design/integer-emission.md): CUDA keeps 16-bit sums and
    // products in an opaque 32-bit value before they are narrowed.
    llvm::StringRef op(sym);
    bool arithmetic = op == "+" || op == "-" || op == "*";
    if (w == 16 && arithmetic && e.spellings().opaque16)
      wide = std::string(e.spellings().opaque16) + "(" + wide + ")";
    p.define("(" + p.type() + ")(" + wide + ")");
  };
  auto shift = [&](const char *sym, bool asSigned) {
    p.define("(" + p.type() + ")(" + p.read(p.a(), asSigned) + " " + sym +
             " " + p.read(p.b(), asSigned) + ")");
  };
  // Integer / and % are total on every target: metal_total_division.h
  // defines a zero divisor and MIN / -1 (printed into MSL that divides).
  auto division = [&](const char *sym, bool asSigned) {
    Type t = p.result().getType();
    std::string callee = std::string("enigma_") + (asSigned ? "s" : "u") +
                         (*sym == '/' ? "div" : "rem");
    callee += "<" + e.typeName(t, asSigned);
    if (asSigned)
      callee += ", " + e.typeName(t, /*asSigned=*/false);
    callee += ">";
    p.define("(" + e.typeName(t) + ")" + callee + "(" +
             p.read(p.a(), asSigned) + ", " + p.read(p.b(), asSigned) + ")");
  };
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(p.op)
      .Case([&](arith::AddIOp) { wrapping("+"); return success(); })
      .Case([&](arith::SubIOp) { wrapping("-"); return success(); })
      .Case([&](arith::MulIOp) { wrapping("*"); return success(); })
      .Case([&](arith::AndIOp) { wrapping("&"); return success(); })
      .Case([&](arith::OrIOp) { wrapping("|"); return success(); })
      .Case([&](arith::XOrIOp) { wrapping("^"); return success(); })
      .Case([&](arith::ShLIOp) { wrapping("<<"); return success(); })
      .Case([&](arith::ShRUIOp) { shift(">>", false); return success(); })
      .Case([&](arith::ShRSIOp) { shift(">>", true); return success(); })
      .Case([&](arith::DivUIOp) { division("/", false); return success(); })
      .Case([&](arith::RemUIOp) { division("%", false); return success(); })
      .Case([&](arith::DivSIOp) { division("/", true); return success(); })
      .Case([&](arith::RemSIOp) { division("%", true); return success(); })
      .Case([&](arith::MaxSIOp) { p.call2("max", true); return success(); })
      .Case([&](arith::MinSIOp) { p.call2("min", true); return success(); })
      .Case([&](arith::MaxUIOp) { p.call2("max", false); return success(); })
      .Case([&](arith::MinUIOp) { p.call2("min", false); return success(); })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

/// + - * / fmod fmin fmax and negation on floats.
LogicalResult emitFloatArith(ArithPrinter &p, bool &handled) {
  CFamilyEmitter &e = p.e;
  auto infix = [&](const char *sym) {
    p.define(e.expr(p.a()) + " " + sym + " " + e.expr(p.b()));
    return success();
  };
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(p.op)
      .Case([&](arith::AddFOp) { return infix("+"); })
      .Case([&](arith::SubFOp) { return infix("-"); })
      .Case([&](arith::MulFOp) { return infix("*"); })
      .Case([&](arith::DivFOp) { return infix("/"); })
      .Case([&](arith::RemFOp) { p.call2("fmod", false); return success(); })
      .Case([&](arith::MaxNumFOp) { p.call2("fmax", false); return success(); })
      .Case([&](arith::MinNumFOp) { p.call2("fmin", false); return success(); })
      .Case([&](arith::NegFOp) {
        // Parenthesise negative literals: "--1.5f" would be a decrement.
        std::string x = e.expr(p.a());
        p.define(x.starts_with("-") ? "-(" + x + ")" : "-" + x);
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

std::string integerComparison(ArithPrinter &p, arith::CmpIOp c) {
  using P = arith::CmpIPredicate;
  static const std::pair<P, const char *> ops[] = {
      {P::eq, "=="}, {P::ne, "!="}, {P::slt, "<"}, {P::sle, "<="},
      {P::sgt, ">"}, {P::sge, ">="}, {P::ult, "<"}, {P::ule, "<="},
      {P::ugt, ">"}, {P::uge, ">="}};
  bool asSigned =
      llvm::is_contained({P::slt, P::sle, P::sgt, P::sge}, c.getPredicate());
  const char *sym = "==";
  for (auto [pred, s] : ops)
    if (pred == c.getPredicate())
      sym = s;
  return p.read(c.getLhs(), asSigned) + " " + sym + " " +
         p.read(c.getRhs(), asSigned);
}

std::string floatComparison(ArithPrinter &p, arith::CmpFOp c) {
  using P = arith::CmpFPredicate;
  std::string x = p.e.expr(c.getLhs()), y = p.e.expr(c.getRhs());
  // On vectors the logical operators are the element-wise | and &.
  bool lanes = llvm::isa<VectorType>(c.getLhs().getType());
  std::string OR = lanes ? " | " : " || ", AND = lanes ? " & " : " && ";
  switch (c.getPredicate()) {
  case P::AlwaysFalse: return "false";
  case P::AlwaysTrue: return "true";
  case P::OEQ: return x + " == " + y;
  case P::OGT: return x + " > " + y;
  case P::OGE: return x + " >= " + y;
  case P::OLT: return x + " < " + y;
  case P::OLE: return x + " <= " + y;
  case P::ONE: return "(" + x + " < " + y + OR + x + " > " + y + ")";
  case P::ORD: return "(!isnan(" + x + ")" + AND + "!isnan(" + y + "))";
  case P::UEQ: return "!(" + x + " < " + y + OR + x + " > " + y + ")";
  case P::UGT: return "!(" + x + " <= " + y + ")";
  case P::UGE: return "!(" + x + " < " + y + ")";
  case P::ULT: return "!(" + x + " >= " + y + ")";
  case P::ULE: return "!(" + x + " > " + y + ")";
  case P::UNE: return x + " != " + y;
  case P::UNO: return "(isnan(" + x + ")" + OR + "isnan(" + y + "))";
  }
  llvm_unreachable("every predicate is listed");
}

/// cmpi, cmpf and select.
LogicalResult emitComparison(ArithPrinter &p, bool &handled) {
  CFamilyEmitter &e = p.e;
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(p.op)
      .Case([&](arith::CmpIOp c) {
        p.define(integerComparison(p, c));
        return success();
      })
      .Case([&](arith::CmpFOp c) {
        p.define(floatComparison(p, c));
        return success();
      })
      .Case([&](arith::SelectOp s) {
        // A vector condition picks lane by lane: Metal's select(f, t, c).
        if (llvm::isa<VectorType>(s.getCondition().getType()))
          p.define("select(" + e.expr(s.getFalseValue()) + ", " +
                   e.expr(s.getTrueValue()) + ", " +
                   e.expr(s.getCondition()) + ")");
        else
          p.define(e.expr(s.getCondition()) + " ? " +
                   e.expr(s.getTrueValue()) + " : " +
                   e.expr(s.getFalseValue()));
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

/// Extensions, truncations, int <-> float, bitcasts and index casts.
LogicalResult emitConversion(ArithPrinter &p, bool &handled) {
  CFamilyEmitter &e = p.e;
  auto convert = [&](bool fromSigned, bool toSigned) {
    p.convert(fromSigned, toSigned);
    return success();
  };
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(p.op)
      .Case([&](arith::ExtSIOp) { return convert(true, false); })
      .Case([&](arith::ExtUIOp) { return convert(false, false); })
      .Case([&](arith::TruncIOp t) {
        // Truncation to i1 keeps the lowest bit; a C cast to bool would
        // test for non-zero.
        if (t.getType().isInteger(1)) {
          p.define("(bool)(" + e.expr(p.a()) + " & 1)");
          return success();
        }
        return convert(false, false);
      })
      .Case([&](arith::SIToFPOp) { return convert(true, false); })
      .Case([&](arith::UIToFPOp) { return convert(false, false); })
      .Case([&](arith::FPToSIOp) {
        p.floatToInt(true);
        return success();
      })
      .Case([&](arith::FPToUIOp) {
        p.floatToInt(false);
        return success();
      })
      .Case([&](arith::ExtFOp) { return convert(false, false); })
      .Case([&](arith::TruncFOp) { return convert(false, false); })
      .Case([&](arith::BitcastOp) {
        p.define("as_type<" + p.type() + ">(" + e.expr(p.a()) + ")");
        return success();
      })
      .Case([&](arith::IndexCastOp c) {
        // index -> iN narrows: print the conversion, since the result may
        // be used as an integer, not only as a subscript.
        if (!c.getType().isIndex())
          return convert(true, false);
        // Indices are only used as subscripts, which accept any integer:
        // keep the source expression, signed when the cast is signed.
        unsigned w = intWidth(c.getIn().getType());
        if (c.getIn().getType().isIndex() || w == 64)
          e.alias(c.getResult(), e.expr(c.getIn()));
        else
          e.alias(c.getResult(), "(" + p.S(c.getIn()) + ")");
        return success();
      })
      .Case([&](arith::IndexCastUIOp c) {
        if (!c.getType().isIndex())
          return convert(false, false);
        e.alias(c.getResult(), e.expr(c.getIn()));
        return success();
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

} // namespace

LogicalResult emitArithFamily(CFamilyEmitter &e, Operation *op,
                              bool &handled) {
  handled = false;
  if (!isa<arith::ArithDialect>(op->getDialect()))
    return success();
  ArithPrinter printer{e, op};
  for (auto kind :
       {emitIntegerArith, emitFloatArith, emitComparison, emitConversion}) {
    if (failed(kind(printer, handled)))
      return failure();
    if (handled)
      return success();
  }
  return success();
}

} // namespace enigma
