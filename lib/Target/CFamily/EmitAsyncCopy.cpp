//===- EmitAsyncCopy.cpp --------------------------------------------------===//
//
// Simdgroup async copies (docs/reference/async-copy.md, design in
// docs/design/async-copy.md).
//
// MSL: Metal has no public function for them; Apple's AIR intrinsics (what
// its private simdgroup_async_copy lowers to) are declared at file scope by
// their LLVM names and called with the element size and alignment:
//   struct _simdgroup_event_t;
//   typedef thread _simdgroup_event_t *enigma_async_event;
//   thread _simdgroup_event_t *enigma_async_copy_1d_d2t(ulong, ulong,
//       threadgroup void *, const device void *, ulong)
//       __asm("air.simdgroup_async_copy_1d.p3i8.p1i8");
//   enigma_async_event v5 = enigma_async_copy_1d_d2t(sizeof(float),
//       alignof(float), (threadgroup void *)(v2 + 0ul), ..., (ulong)(64ul));
//   { enigma_async_event enigma_events[] = {v5};
//     enigma_async_copy_wait(1, enigma_events); }
// CUDA: the prelude's warp-level cp.async copies (enigma_cuda_async_copy.cuh)
// with the thread's group counter and the warp's existing lanes.
// Host C++: plain copies of the lane's share inside the thread loop
// (enigma_cpu_async_copy.h); the wait is a split point of the thread loops,
// printed by CppEmitter::emitCollective.
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"

#include <cstring>

using namespace mlir;

namespace enigma {
namespace {

/// The four copies by name, for the MSL declarations (in this order).
struct Intrinsic {
  StringRef op;        // enigma op name
  const char *air;     // LLVM name of Apple's intrinsic
  const char *params;  // MSL parameter list
};
constexpr Intrinsic kIntrinsics[] = {
    {"enigma.async_copy_1d_d2t", "air.simdgroup_async_copy_1d.p3i8.p1i8",
     "ulong, ulong, threadgroup void *, const device void *, ulong"},
    {"enigma.async_copy_1d_t2d", "air.simdgroup_async_copy_1d.p1i8.p3i8",
     "ulong, ulong, device void *, const threadgroup void *, ulong"},
    // element size, alignment; dst, its elements per row, element stride
    // (1), tile (cols, rows); the same for src; offset in the source tile
    // and clamp mode (0: elements outside the source tile become zero).
    {"enigma.async_copy_2d_d2t", "air.simdgroup_async_copy_2d.p3i8.p1i8",
     "ulong, ulong, threadgroup void *, ulong, ulong, ulong2, "
     "const device void *, ulong, ulong, ulong2, long2, int"},
    {"enigma.async_copy_2d_t2d", "air.simdgroup_async_copy_2d.p1i8.p3i8",
     "ulong, ulong, device void *, ulong, ulong, ulong2, "
     "const threadgroup void *, ulong, ulong, ulong2, long2, int"},
};

/// `memref + offset` as a pointer; in MSL, memory that atomics also use is
/// held through a view whose `p` is the pointer.
std::string address(CFamilyEmitter &e, Value memref, Value offset) {
  std::string base = e.expr(memref);
  if (e.target() == Target::MSL && isUsedAtomically(memref))
    base += ".p";
  return "(" + base + " + " + e.expr(offset) + ")";
}

std::string elementType(CFamilyEmitter &e, Value memref) {
  return e.typeName(llvm::cast<MemRefType>(memref.getType()).getElementType());
}

std::string asUlong(CFamilyEmitter &e, Value v) {
  return "(ulong)(" + e.expr(v) + ")";
}

/// CPU: the lane of the thread being run and the lanes of its simdgroup
/// (CppEmitter's thread loops define enigma_lx/ly/lz and enigma_nx/ny/nz).
std::string cpuLanes() {
  const char *linear =
      "((enigma_lz * enigma_ny + enigma_ly) * enigma_nx + enigma_lx)";
  return std::string("enigma_cpu_simd_lane(") + linear +
         "), enigma_cpu_simd_lanes(" + linear +
         ", enigma_nx * enigma_ny * enigma_nz)";
}

LogicalResult emitCopy(CFamilyEmitter &e, Operation *op) {
  StringRef name = op->getName().getStringRef();
  bool twoD = isa<AsyncCopy2dD2TOp, AsyncCopy2dT2DOp>(op);
  bool toThreadgroup = name.ends_with("d2t");
  Value dst = op->getOperand(0), dstOffset = op->getOperand(1);
  Value src = op->getOperand(twoD ? 3 : 2);
  Value srcOffset = op->getOperand(twoD ? 4 : 3);
  std::string elem = elementType(e, dst);
  std::string dstPtr = address(e, dst, dstOffset);
  std::string srcPtr = address(e, src, srcOffset);
  // enigma.async_copy_1d_d2t -> enigma_async_copy_1d_d2t (prelude / MSL).
  std::string fn = "enigma_" + name.drop_front(strlen("enigma.")).str();
  Value event = op->getResult(0);

  if (e.target() == Target::MSL) {
    const char *dstSpace = toThreadgroup ? "threadgroup" : "device";
    const char *srcSpace = toThreadgroup ? "device" : "threadgroup";
    std::string call = fn + "(sizeof(" + elem + "), alignof(" + elem + "), (" +
                       dstSpace + " void *)" + dstPtr;
    if (!twoD) {
      call += ", (const " + std::string(srcSpace) + " void *)" + srcPtr +
              ", " + asUlong(e, op->getOperand(4)) + ")";
    } else {
      std::string tile = "ulong2(" + asUlong(e, op->getOperand(6)) + ", " +
                         asUlong(e, op->getOperand(7)) + ")";
      call += ", " + asUlong(e, op->getOperand(2)) + ", 1ul, " + tile +
              ", (const " + srcSpace + " void *)" + srcPtr + ", " +
              asUlong(e, op->getOperand(5)) + ", 1ul, " + tile +
              ", long2(0, 0), 0)";
    }
    e.define(event, call);
    return success();
  }

  std::string size = "sizeof(" + elem + ")";
  std::string call;
  if (e.target() == Target::CUDA) {
    call = fn + "(enigma_async_groups, " + dstPtr;
    if (!twoD)
      call += ", " + srcPtr + ", " + e.expr(op->getOperand(4));
    else
      call += ", " + e.expr(op->getOperand(2)) + ", " + srcPtr + ", " +
              e.expr(op->getOperand(5)) + ", " + e.expr(op->getOperand(6)) +
              ", " + e.expr(op->getOperand(7));
    call += ", " + size + ", enigma_lanes)";
  } else {
    if (!twoD)
      call = "enigma_cpu_async_copy_1d(" + dstPtr + ", " + srcPtr + ", " +
             e.expr(op->getOperand(4));
    else
      call = "enigma_cpu_async_copy_2d(" + dstPtr + ", " +
             e.expr(op->getOperand(2)) + ", " + srcPtr + ", " +
             e.expr(op->getOperand(5)) + ", " + e.expr(op->getOperand(6)) +
             ", " + e.expr(op->getOperand(7));
    call += ", " + size + ", " + cpuLanes() + ")";
    // The copy is done when the call returns: the event carries nothing,
    // and is not kept in the thread loops' per-thread arrays.
    e.line() << call << ";\n";
    e.alias(event, "0u");
    return success();
  }
  e.define(event, call);
  return success();
}

LogicalResult emitWait(CFamilyEmitter &e, AsyncCopyWaitOp op) {
  if (e.target() == Target::Cpp)
    return op->emitOpError("is printed by the CPU emitter's group-level code");
  std::string events;
  for (Value v : op.getEvents())
    events += (events.empty() ? "" : ", ") + e.expr(v);
  if (e.target() == Target::CUDA) {
    e.line() << "enigma_async_copy_wait(enigma_async_groups, enigma_lanes, "
             << events << ");\n";
    return success();
  }
  // A block of its own, so the list's name never clashes.
  e.line() << "{\n";
  e.line() << "  enigma_async_event enigma_events[] = {" << events << "};\n";
  e.line() << "  enigma_async_copy_wait(" << op.getEvents().size()
           << ", enigma_events);\n";
  e.line() << "}\n";
  return success();
}

} // namespace

bool usesAsyncCopy(KernelOp kernel) {
  return kernel
      .walk([](Operation *op) {
        return isAsyncCopyOp(op) || isa<AsyncCopyWaitOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

void emitAsyncCopyDeclarations(CFamilyEmitter &e) {
  if (e.target() != Target::MSL || !usesAsyncCopy(e.getKernel()))
    return;
  llvm::raw_ostream &os = e.stream();
  bool used[4] = {};
  bool waits = false;
  e.getKernel().walk([&](Operation *op) {
    for (unsigned i = 0; i < 4; ++i)
      if (op->getName().getStringRef() == kIntrinsics[i].op)
        used[i] = true;
    waits |= isa<AsyncCopyWaitOp>(op);
  });
  os << "// Simdgroup async copies: Apple's AIR intrinsics, bound by their "
        "LLVM names\n// (Metal has no public function for them).\n";
  os << "struct _simdgroup_event_t;\n";
  os << "typedef thread _simdgroup_event_t *enigma_async_event;\n";
  for (unsigned i = 0; i < 4; ++i)
    if (used[i])
      os << "thread _simdgroup_event_t *"
         << "enigma_" << kIntrinsics[i].op.drop_front(strlen("enigma.")) << "("
         << kIntrinsics[i].params << ")\n    __asm(\"" << kIntrinsics[i].air
         << "\");\n";
  if (waits)
    os << "void enigma_async_copy_wait(int, thread _simdgroup_event_t **)\n"
          "    __asm(\"air.wait_simdgroup_events\");\n";
  os << "\n";
}

void emitAsyncCopyPrologue(CFamilyEmitter &e) {
  if (e.target() == Target::CUDA && usesAsyncCopy(e.getKernel()))
    e.line() << "uint enigma_async_groups = 0u; // cp.async groups committed\n";
}

LogicalResult emitAsyncCopyFamily(CFamilyEmitter &e, Operation *op,
                                  bool &handled) {
  handled = true;
  if (isAsyncCopyOp(op))
    return emitCopy(e, op);
  if (auto wait = dyn_cast<AsyncCopyWaitOp>(op))
    return emitWait(e, wait);
  handled = false;
  return success();
}

} // namespace enigma
