//===- EmitAsyncCopy.cpp --------------------------------------------------===//
//
// Simdgroup async copies (docs/reference/async-copy.md, design in
// docs/design/async-copy.md). Each target prints them in its emitTargetOp,
// as nothing of the spelling is shared:
//
// MSL (MSLEmitter.cpp): Metal has no public function for them; Apple's AIR
// intrinsics (what its private simdgroup_async_copy lowers to) are declared
// at file scope by their LLVM names and called with the element size and
// alignment:
//   struct _simdgroup_event_t;
//   typedef thread _simdgroup_event_t *enigma_async_event;
//   thread _simdgroup_event_t *enigma_async_copy_1d_d2t(ulong, ulong,
//       threadgroup void *, const device void *, ulong)
//       __asm("air.simdgroup_async_copy_1d.p3i8.p1i8");
//   enigma_async_event v5 = enigma_async_copy_1d_d2t(sizeof(float),
//       alignof(float), (threadgroup void *)(v2 + 0ul), ..., (ulong)(64ul));
//   { enigma_async_event enigma_events[] = {v5};
//     enigma_async_copy_wait(1, enigma_events); }
// CUDA (CudaEmitter.cpp): the prelude's warp-level cp.async copies
// (enigma_cuda_async_copy.cuh) with the thread's group counter and the
// warp's existing lanes.
// Host C++ (CppEmitter.cpp): plain copies of the lane's share inside the
// thread loop (enigma_cpu_async_copy.h); the wait is a split point of the
// thread loops (enigma-serialize-threads).
//
// This file has what they share.
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"

using namespace mlir;

namespace enigma {

bool usesAsyncCopy(KernelOp kernel) {
  return kernel
      .walk([](Operation *op) {
        return isAsyncCopyOp(op) || isa<AsyncCopyWaitOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

std::string asyncCopyPointer(CFamilyEmitter &e, Value memref, Value offset) {
  std::string base = e.expr(memref);
  if (e.spellings().atomicTypes && isUsedAtomically(memref))
    base += ".p";
  return "(" + base + " + " + e.expr(offset) + ")";
}

std::string asyncCopyPreludeCall(CFamilyEmitter &e, Operation *op,
                                 llvm::StringRef fn, llvm::StringRef first,
                                 llvm::StringRef last) {
  bool twoD = isa<AsyncCopy2dD2TOp, AsyncCopy2dT2DOp>(op);
  Value dst = op->getOperand(0), src = op->getOperand(twoD ? 3 : 2);
  std::string call = fn.str() + "(" + first.str() +
                     asyncCopyPointer(e, dst, op->getOperand(1));
  std::string srcPtr = asyncCopyPointer(e, src, op->getOperand(twoD ? 4 : 3));
  if (!twoD)
    call += ", " + srcPtr + ", " + e.expr(op->getOperand(4));
  else
    call += ", " + e.expr(op->getOperand(2)) + ", " + srcPtr + ", " +
            e.expr(op->getOperand(5)) + ", " + e.expr(op->getOperand(6)) +
            ", " + e.expr(op->getOperand(7));
  std::string elem =
      e.typeName(llvm::cast<MemRefType>(dst.getType()).getElementType());
  return call + ", sizeof(" + elem + "), " + last.str() + ")";
}

} // namespace enigma
