//===- EmitCooperation.cpp ------------------------------------------------------===//
//
// Threadgroup memory, atomics and function constants for MSL, CUDA and host
// C++ (docs/reference/cooperation.md).
//
// Atomics print Metal's functions (atomic_fetch_add_explicit, ...) on every
// target; the CUDA prelude and enigma_cpu_atomics.h implement them on plain
// pointers. In MSL, memory used atomically has an atomic type (device
// atomic_uint*, threadgroup atomic_int[N]); its plain loads and stores go
// through a small view type printed at file scope whose element reference
// turns reads and writes into relaxed atomic loads and stores. Metal honours
// only memory_order_relaxed, so MSL prints relaxed for every order; CUDA and
// host C++ print the order asked for.
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Support/DType.h"

#include "llvm/ADT/TypeSwitch.h"

#include <set>

using namespace mlir;

namespace enigma {
namespace {

/// int or uint: the signedness of `memref`'s integers.
std::string atomicValueType32(CFamilyEmitter &e, Value memref) {
  std::optional<DType> dtype;
  if (auto arg = llvm::dyn_cast<BlockArgument>(memref)) {
    if (auto name = e.getKernel().getArgAttrOfType<StringAttr>(
            arg.getArgNumber(), "enigma.dtype"))
      dtype = parseDType(name.getValue());
  } else if (Operation *def = memref.getDefiningOp()) {
    if (auto name = def->getAttrOfType<StringAttr>("enigma.dtype"))
      dtype = parseDType(name.getValue());
  }
  if (dtype)
    return isSigned(*dtype) ? "int" : "uint";
  for (Operation *user : memref.getUsers())
    if (auto rmw = dyn_cast<AtomicRMWOp>(user))
      if (rmw.getKind() == AtomicKind::Min || rmw.getKind() == AtomicKind::Max)
        return "int";
  return "uint";
}

bool isWide(Value memref) {
  return llvm::cast<MemRefType>(memref.getType()).getElementType().isInteger(
      64);
}

/// The C type atomics on `memref` work with: int, uint, long, ulong or
/// float. Buffers know their dtype; threadgroup arrays carry it as
/// enigma.dtype (set by the builder), else signed min/max make them signed.
std::string atomicValueType(CFamilyEmitter &e, Value memref) {
  Type element = llvm::cast<MemRefType>(memref.getType()).getElementType();
  if (element.isF32())
    return "float";
  if (isWide(memref)) {
    std::string t = atomicValueType32(e, memref);
    return t == "int" ? "long" : "ulong";
  }
  return atomicValueType32(e, memref);
}

const char *orderName(MemoryOrder order) {
  switch (order) {
  case MemoryOrder::Relaxed: return "memory_order_relaxed";
  case MemoryOrder::Acquire: return "memory_order_acquire";
  case MemoryOrder::Release: return "memory_order_release";
  case MemoryOrder::AcqRel: return "memory_order_acq_rel";
  }
  return "memory_order_relaxed";
}

std::string order(CFamilyEmitter &e, MemoryOrder o) {
  // Metal supports only relaxed atomics (docs/reference/cooperation.md).
  if (e.spellings().atomicTypes)
    return "memory_order_relaxed";
  return orderName(o);
}

/// Pointer to element `index` of `memref`, typed for the atomic functions.
std::string atomicPointer(CFamilyEmitter &e, Value memref, Value index) {
  if (e.spellings().atomicTypes && isWide(memref)) {
    // 64-bit memory keeps its type in MSL (its plain accesses are ordinary
    // ones): the element's address is cast for each atomic.
    auto type = llvm::cast<MemRefType>(memref.getType());
    const char *space = getAddressSpace(type) == AddressSpace::Threadgroup
                            ? "threadgroup"
                            : "device";
    return "(" + std::string(space) + " atomic_" +
           atomicValueType(e, memref) + " *)&" + e.expr(memref) + "[" +
           e.expr(index) + "]";
  }
  if (e.spellings().atomicTypes) // the view's atomic pointer
    return "(" + e.expr(memref) + ".p + " + e.expr(index) + ")";
  return "(" + atomicValueType(e, memref) + " *)&" + e.expr(memref) + "[" +
         e.expr(index) + "]";
}

const char *rmwFunction(AtomicKind kind, bool isFloat) {
  // Float min / max: no target has them as such; Enigma's helper (a
  // compare-exchange loop) in the preludes and at MSL file scope.
  if (isFloat && kind == AtomicKind::Min)
    return "enigma_atomic_fetch_min_explicit";
  if (isFloat && kind == AtomicKind::Max)
    return "enigma_atomic_fetch_max_explicit";
  switch (kind) {
  case AtomicKind::Exchange: return "atomic_exchange_explicit";
  case AtomicKind::Add: return "atomic_fetch_add_explicit";
  case AtomicKind::Sub: return "atomic_fetch_sub_explicit";
  case AtomicKind::Min:
  case AtomicKind::UMin: return "atomic_fetch_min_explicit";
  case AtomicKind::Max:
  case AtomicKind::UMax: return "atomic_fetch_max_explicit";
  case AtomicKind::And: return "atomic_fetch_and_explicit";
  case AtomicKind::Or: return "atomic_fetch_or_explicit";
  case AtomicKind::Xor: return "atomic_fetch_xor_explicit";
  }
  return "<atomic>";
}

std::string castTo(const std::string &type, const std::string &x) {
  return "(" + type + ")" + x;
}

/// Position of `op` among the kernel's compare-exchanges (stable names).
unsigned ordinal(CFamilyEmitter &e, Operation *op) {
  unsigned n = 0;
  e.getKernel().walk([&](AtomicCompareExchangeOp other) {
    if (other.getOperation() == op)
      return WalkResult::interrupt();
    ++n;
    return WalkResult::advance();
  });
  return n;
}

LogicalResult emitThreadgroupAlloc(CFamilyEmitter &e, ThreadgroupAllocOp op) {
  MemRefType type = op.getMemref().getType();
  std::string size = std::to_string(type.getNumElements());
  Value result = op.getMemref();
  if (e.spellings().atomicTypes && isUsedAtomically(result)) {
    std::string t = atomicValueType(e, result);
    std::string view = e.freshName(result);
    std::string storage = "enigma_" + view;
    e.line() << "threadgroup atomic_" << t << " " << storage << "[" << size
             << "];\n";
    e.line() << "const enigma_atomics_threadgroup<" << t << ", atomic_" << t
             << "> " << view << "{" << storage << "};\n";
    return success();
  }
  std::string element = e.typeName(type.getElementType());
  std::string name = e.freshName(result);
  // Aligned like buffer bases, so that a float4 at a multiple of 4 elements
  // is aligned (include/enigma/Builder/VectorMemory.h). CUDA's arrays beyond
  // 48 KiB are its own (CudaEmitter's emitTargetOp).
  e.line() << "alignas(" << ThreadgroupAllocOp::kAlignment << ") "
           << e.spellings().threadgroupArray << element << " " << name << "["
           << size << "];\n";
  return success();
}

LogicalResult emitRMW(CFamilyEmitter &e, AtomicRMWOp op) {
  std::string t = atomicValueType(e, op.getMemref());
  bool isFloat = op.getValue().getType().isF32();
  // Metal's 64-bit atomics: min / max of ulong device memory, returning
  // nothing (other uses Metal cannot run: metalUnsupported).
  if (e.spellings().atomicTypes && isWide(op.getMemref()) &&
      op.getResult().use_empty() &&
      (op.getKind() == AtomicKind::UMin || op.getKind() == AtomicKind::UMax)) {
    e.line() << (op.getKind() == AtomicKind::UMin ? "atomic_min_explicit("
                                                  : "atomic_max_explicit(")
             << atomicPointer(e, op.getMemref(), op.getIndex()) << ", "
             << castTo(t, e.expr(op.getValue())) << ", "
             << order(e, op.getOrder()) << ");\n";
    return success();
  }
  std::string call = std::string(rmwFunction(op.getKind(), isFloat)) + "(" +
                     atomicPointer(e, op.getMemref(), op.getIndex()) + ", " +
                     castTo(t, e.expr(op.getValue())) + ", " +
                     order(e, op.getOrder()) + ")";
  e.define(op.getResult(), castTo(e.typeName(op.getType()), call));
  return success();
}

LogicalResult emitLoad(CFamilyEmitter &e, AtomicLoadOp op) {
  std::string call = "atomic_load_explicit(" +
                     atomicPointer(e, op.getMemref(), op.getIndex()) + ", " +
                     order(e, op.getOrder()) + ")";
  e.define(op.getResult(), castTo(e.typeName(op.getType()), call));
  return success();
}

LogicalResult emitStore(CFamilyEmitter &e, AtomicStoreOp op) {
  std::string t = atomicValueType(e, op.getMemref());
  e.line() << "atomic_store_explicit("
           << atomicPointer(e, op.getMemref(), op.getIndex()) << ", "
           << castTo(t, e.expr(op.getValue())) << ", "
           << order(e, op.getOrder()) << ");\n";
  return success();
}

LogicalResult emitCompareExchange(CFamilyEmitter &e,
                                  AtomicCompareExchangeOp op) {
  std::string t = atomicValueType(e, op.getMemref());
  std::string temp = "enigma_cas" + std::to_string(ordinal(e, op));
  e.line() << t << " " << temp << " = " << castTo(t, e.expr(op.getExpected()))
           << ";\n";
  e.define(op.getSuccess(),
           "atomic_compare_exchange_weak_explicit(" +
               atomicPointer(e, op.getMemref(), op.getIndex()) + ", &" + temp +
               ", " + castTo(t, e.expr(op.getDesired())) + ", " +
               order(e, op.getSuccessOrder()) + ", " +
               order(e, op.getFailureOrder()) + ")");
  e.define(op.getObserved(), castTo(e.typeName(op.getObserved().getType()),
                                    temp));
  return success();
}

std::string functionConstantName(CFamilyEmitter &e, unsigned index) {
  const TargetSpellings &s = e.spellings();
  return s.functionConstantPrefix + std::to_string(index) +
         s.functionConstantSuffix;
}

LogicalResult emitFunctionConstant(CFamilyEmitter &e, FunctionConstantOp op) {
  std::string name = functionConstantName(e, unsigned(op.getIndex()));
  e.define(op.getResult(), castTo(e.typeName(op.getType()), name));
  return success();
}

} // namespace

LogicalResult emitCooperationFamily(CFamilyEmitter &e, Operation *op,
                                    bool &handled) {
  handled = true;
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](ThreadgroupAllocOp o) { return emitThreadgroupAlloc(e, o); })
      .Case([&](AtomicRMWOp o) { return emitRMW(e, o); })
      .Case([&](AtomicLoadOp o) { return emitLoad(e, o); })
      .Case([&](AtomicStoreOp o) { return emitStore(e, o); })
      .Case([&](AtomicCompareExchangeOp o) {
        return emitCompareExchange(e, o);
      })
      .Case([&](FunctionConstantOp o) { return emitFunctionConstant(e, o); })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

} // namespace enigma

namespace enigma {

static void emitAtomicViews(CFamilyEmitter &e) {
  llvm::raw_ostream &os = e.stream();
  os << "// Memory used atomically has an atomic type; its plain loads and "
        "stores\n// are relaxed atomic loads and stores through these "
        "views.\n";
  for (const char *space : {"device", "threadgroup"}) {
    os << "template <typename T, typename A> struct enigma_atomic_ref_"
       << space << " {\n"
       << "  " << space << " A *p;\n"
       << "  operator T() const { return atomic_load_explicit(p, "
          "memory_order_relaxed); }\n"
       << "  void operator=(T v) const { atomic_store_explicit(p, v, "
          "memory_order_relaxed); }\n"
       << "};\n"
       << "template <typename T, typename A> struct enigma_atomics_" << space
       << " {\n"
       << "  " << space << " A *p;\n"
       << "  enigma_atomic_ref_" << space
       << "<T, A> operator[](ulong i) const { return {p + i}; }\n"
       << "};\n";
  }
  os << "\n";
}

/// Float atomic min / max in MSL: a compare-exchange loop on Metal's
/// atomic_float that stores the operand while it compares below (above)
/// the element, in each address space that holds atomics. Metal's atomics
/// are relaxed only (the order parameter is there for the call's shape).
static void emitFloatMinMax(CFamilyEmitter &e) {
  llvm::raw_ostream &os = e.stream();
  os << "// Float atomic min / max (Metal has none): a compare-exchange "
        "loop.\n";
  for (const char *space : {"device", "threadgroup"})
    for (auto [name, cmp] : {std::pair{"min", "<"}, std::pair{"max", ">"}})
      os << "inline float enigma_atomic_fetch_" << name << "_explicit("
         << space << " atomic_float *p, float v, memory_order o) {\n"
         << "  float old = atomic_load_explicit(p, memory_order_relaxed);\n"
         << "  while (v " << cmp << " old && "
         << "!atomic_compare_exchange_weak_explicit(p, &old, v, "
            "memory_order_relaxed, memory_order_relaxed)) {}\n"
         << "  return old;\n}\n";
  os << "\n";
}

void emitFileScopeDeclarations(CFamilyEmitter &e) {
  KernelOp kernel = e.getKernel();
  llvm::raw_ostream &os = e.stream();
  std::set<int32_t> seen;
  bool any = false;
  kernel.walk([&](FunctionConstantOp op) {
    if (!seen.insert(op.getIndex()).second)
      return;
    any = true;
    std::string i = std::to_string(op.getIndex());
    std::optional<DType> dtype = parseDType(op.getDtype().str());
    std::string type = dtype ? mslName(*dtype) : e.typeName(op.getType());
    if (e.spellings().functionConstantAttribute) {
      os << "constant " << type << " "
         << functionConstantName(e, unsigned(op.getIndex()))
         << " [[function_constant(" << i << ")]];\n";
    } else {
      // The runtime defines ENIGMA_FC_<i> when it compiles the kernel.
      os << "#ifndef ENIGMA_FC_" << i << "\n#error \"function constant " << i
         << " (" << op.getDtype() << ") was not given\"\n#endif\n";
    }
  });
  if (any)
    os << "\n";
  if (e.spellings().atomicTypes) {
    bool atomics = false, floatMinMax = false;
    kernel.walk([&](Operation *op) {
      if (isAtomicOp(op))
        atomics = true;
      if (auto rmw = dyn_cast<AtomicRMWOp>(op))
        floatMinMax |= rmw.getValue().getType().isF32() &&
                       (rmw.getKind() == AtomicKind::Min ||
                        rmw.getKind() == AtomicKind::Max);
    });
    if (atomics)
      emitAtomicViews(e);
    if (floatMinMax)
      emitFloatMinMax(e);
  }
}

} // namespace enigma
