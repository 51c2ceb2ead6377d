//===- EmitControl.cpp - scf.while and register arrays --------------------===//
//
// scf.while prints as
//
//   T c = init;                  // one variable per carried value
//   while (true) {
//     <before region>            // computes the condition
//     if (!cond) break;
//     <after region>             // the body
//     c = next;                  // scf.yield
//   }
//
// When the condition forwards its own arguments unchanged (what the builder
// produces) the results, the before arguments and the after arguments share
// one variable; otherwise the results get variables of their own, assigned
// before the test.
//
// A memref.alloca (or, until the kernel op is an AutomaticAllocationScope,
// memref.alloc) in the thread address space (register_tensor) prints as a
// local array `T v[N];`, the same in every target; a unit-stride
// memref.subview of one as a pointer into it, `T *v = base + offset;`.
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;

namespace enigma {

/// `targets = values`, reading every value before writing any target (a
/// yield may swap carried values).
static void assignAll(CFamilyEmitter &e, ValueRange targets,
                      ValueRange values) {
  if (targets.size() == 1) {
    e.assign(targets[0], e.expr(values[0]));
    return;
  }
  // Temporaries in a block of their own; the enigma_ prefix keeps them out
  // of the value and parameter name spaces.
  e.line() << "{\n";
  e.indentMore();
  for (auto [i, v] : llvm::enumerate(values))
    e.line() << e.typeName(v.getType()) << " enigma_y" << i << " = "
             << e.expr(v) << ";\n";
  for (auto [i, target] : llvm::enumerate(targets))
    e.assign(target, "enigma_y" + std::to_string(i));
  e.indentLess();
  e.line() << "}\n";
}

static bool forwardsItsArguments(scf::WhileOp op) {
  scf::ConditionOp cond = op.getConditionOp();
  Block *before = op.getBeforeBody();
  if (cond.getArgs().size() != before->getNumArguments())
    return false;
  for (auto [arg, fwd] : llvm::zip(before->getArguments(), cond.getArgs()))
    if (arg != fwd)
      return false;
  return true;
}

static LogicalResult emitWhile(CFamilyEmitter &e, scf::WhileOp op) {
  Block *before = op.getBeforeBody(), *after = op.getAfterBody();
  scf::ConditionOp cond = op.getConditionOp();
  bool shared = forwardsItsArguments(op);
  if (shared) {
    for (auto [result, init, arg] :
         llvm::zip(op.getResults(), op.getInits(), before->getArguments())) {
      e.declareVariable(result, e.expr(init));
      e.alias(arg, e.expr(result));
    }
  } else {
    // The canonicalizer may give the two regions different arguments (a
    // flag only the condition reads): each list gets its own variables.
    for (auto [init, arg] : llvm::zip(op.getInits(), before->getArguments()))
      e.declareVariable(arg, e.expr(init));
    for (Value result : op.getResults())
      e.declareVariable(result, "");
  }
  for (auto [result, arg] : llvm::zip(op.getResults(), after->getArguments()))
    e.alias(arg, e.expr(result));
  e.line() << "while (true) {\n";
  e.indentMore();
  if (failed(e.emitBlock(*before)))
    return failure();
  if (!shared && !cond.getArgs().empty())
    assignAll(e, op.getResults(), cond.getArgs());
  e.line() << "if (!" << e.expr(cond.getCondition()) << ") break;\n";
  if (failed(e.emitBlock(*after)))
    return failure();
  auto yield = cast<scf::YieldOp>(after->getTerminator());
  if (!yield.getOperands().empty()) {
    if (shared)
      assignAll(e, op.getResults(), yield.getOperands());
    else
      assignAll(e, before->getArguments(), yield.getOperands());
  }
  e.indentLess();
  e.line() << "}\n";
  return success();
}

static LogicalResult emitRegisterArray(CFamilyEmitter &e, Operation *op) {
  auto type = cast<MemRefType>(op->getResult(0).getType());
  if (getAddressSpace(type) != AddressSpace::Thread || type.getRank() != 1 ||
      !type.hasStaticShape())
    return op->emitOpError("only one-dimensional static arrays in the thread "
                          "address space can be printed");
  Value result = op->getResult(0);
  std::string name = e.freshName(result);
  e.line() << e.typeName(type.getElementType()) << " " << name << "["
           << type.getNumElements() << "];\n";
  return success();
}

/// A one-dimensional slice of a thread array (the CPU backend's slice of a
/// group-level array of register arrays): a pointer to its first element.
static LogicalResult emitSlice(CFamilyEmitter &e, memref::SubViewOp op) {
  MemRefType type = op.getSourceType();
  if (getAddressSpace(type) != AddressSpace::Thread || type.getRank() != 1 ||
      op.getStaticStrides()[0] != 1)
    return op->emitOpError("only unit-stride slices of one-dimensional "
                           "thread arrays can be printed");
  int64_t offset = op.getStaticOffsets()[0];
  std::string start = ShapedType::isDynamic(offset)
                          ? e.expr(op.getOffsets()[0])
                          : std::to_string(offset) + "ul";
  std::string base = e.expr(op.getSource());
  e.line() << e.typeName(type.getElementType()) << " *"
           << e.freshName(op.getResult()) << " = " << base << " + " << start
           << ";\n";
  return success();
}

LogicalResult emitControlFamily(CFamilyEmitter &e, Operation *op,
                                bool &handled) {
  handled = true;
  if (auto loop = dyn_cast<scf::WhileOp>(op))
    return emitWhile(e, loop);
  if (isa<memref::AllocaOp, memref::AllocOp>(op))
    return emitRegisterArray(e, op);
  if (auto slice = dyn_cast<memref::SubViewOp>(op))
    return emitSlice(e, slice);
  if (isa<scf::ConditionOp>(op))
    return success(); // printed by emitWhile
  handled = false;
  return success();
}

} // namespace enigma
