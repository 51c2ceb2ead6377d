//===- CppEmitter.cpp - Host C++ for the CPU backend ----------------------===//
//
// A CPU kernel runs a range of threadgroups (enigma_cpu_abi.h). It prints a
// kernel that enigma-serialize-threads has made run once per threadgroup:
// the function loops over its groups, and each enigma.thread_loop becomes a
// loop nest over the group's threads,
//
//   for (uint enigma_lz = 0; enigma_lz < enigma_nz; ++enigma_lz)
//   for (uint enigma_ly = 0; enigma_ly < enigma_ny; ++enigma_ly)
//   for (uint enigma_tx = enigma_bx; enigma_tx < enigma_bx + enigma_nx; ...
//
// whose innermost loop counts the global x position, so that indexing with
// it is a plain unit-stride loop the host compiler can vectorise. A thread
// loop of one simdgroup runs over that simdgroup's linear indices.
// enigma.lanes_call prints as the call of enigma_cpu_simd.h it names, an
// async copy as the lane's share of it (enigma_cpu_async_copy.h).
// Barriers are comments here: the loops around them already keep them.
//
//===----------------------------------------------------------------------===//
#include "CppEmitter.h"

#include "../CFamily/CFamilyEmitter.h"
#include "../CFamily/Families.h"
#include "../CFamily/KernelQueries.h"

#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaThreadLoopOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace enigma {
namespace {

constexpr TargetSpellings kCppSpellings = {
    .threadgroupArray = "",
    .atomicTypes = false,
    .functionConstantPrefix = "(ENIGMA_FC_",
    .functionConstantSuffix = ")",
    .functionConstantAttribute = false,
    .cudaFunctionNames = false,
    .opaque16 = nullptr,
    .simdArguments = "", // never printed: see emitTargetOp
    .unrollPragma = false,
    .vectorAccess = TargetSpellings::VectorAccess::Helpers,
};

class CppEmitter : public CFamilyEmitter {
public:
  using CFamilyEmitter::CFamilyEmitter;

  const TargetSpellings &spellings() const override { return kCppSpellings; }

protected:
  void emitFileHeader() override {
    os << "#include \"enigma_cpu_prelude.h\"\n\n";
  }

  LogicalResult emitKernelBody() override {
    if (failed(checkSerialized()))
      return failure();
    emitFileScopeDeclarations(*this);
    os << "extern \"C\" void " << kernelFunctionName(kernel)
       << "(void *const *enigma_args, const EnigmaCpuLaunch *enigma_launch, "
          "uint64_t enigma_group_begin, uint64_t enigma_group_end) {\n";
    indentMore();
    Block &entry = kernel.getBody().front();
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
      std::string name = paramName(i);
      std::string type = paramElementType(i);
      if (kernel.isBufferParam(i)) {
        line() << type << " *ENIGMA_CPU_RESTRICT " << name << " = (" << type
               << " *)enigma_args[" << i << "];\n";
        alias(entry.getArgument(i), name);
      } else {
        line() << "const " << type << " " << name << " = *(const " << type
               << " *)enigma_args[" << i << "];\n";
        alias(entry.getArgument(i), scalarParamExpr(i, name));
      }
    }
    line() << "const uint64_t enigma_groups_xy = (uint64_t)enigma_launch->"
              "groups[0] * enigma_launch->groups[1];\n";
    line() << "for (uint64_t enigma_g = enigma_group_begin; enigma_g < "
              "enigma_group_end; ++enigma_g) {\n";
    indentMore();
    line() << "const uint enigma_gx = (uint)(enigma_g % "
              "enigma_launch->groups[0]);\n";
    line() << "const uint enigma_gy = (uint)((enigma_g / "
              "enigma_launch->groups[0]) % enigma_launch->groups[1]);\n";
    line() << "const uint enigma_gz = (uint)(enigma_g / enigma_groups_xy);\n";
    // The edge threadgroup is partial (dispatchThreads semantics).
    for (unsigned d = 0; d < 3; ++d)
      line() << "const uint enigma_n" << dimLetter(d)
             << " = enigma_min_u32(enigma_launch->threads[" << d
             << "], enigma_launch->grid[" << d << "] - enigma_g"
             << dimLetter(d) << " * enigma_launch->threads[" << d << "]);\n";
    line() << "const uint enigma_bx = enigma_gx * enigma_launch->threads[0];\n";
    if (failed(emitBlock(entry)))
      return failure();
    indentLess();
    line() << "}\n";
    indentLess();
    os << "}\n";
    return success();
  }

  std::string threadQuery(Operation *op) override {
    unsigned d = queryDim(op).value_or(0);
    std::string L(1, dimLetter(d)), D = std::to_string(d);
    return llvm::TypeSwitch<Operation *, std::string>(op)
        .Case([&](ThreadPositionInGridOp) {
          if (d == 0)
            return std::string("enigma_tx");
          return "(enigma_g" + L + " * enigma_launch->threads[" + D +
                 "] + enigma_l" + L + ")";
        })
        .Case([&](ThreadPositionInThreadgroupOp) { return "enigma_l" + L; })
        .Case([&](ThreadgroupPositionInGridOp) { return "enigma_g" + L; })
        .Case([&](ThreadsPerThreadgroupOp) { return "enigma_n" + L; })
        .Case([&](ThreadsPerGridOp) {
          return "enigma_launch->grid[" + D + "]";
        })
        .Case([&](ThreadgroupsPerGridOp) {
          return "enigma_launch->groups[" + D + "]";
        })
        .Case([&](ThreadIndexInThreadgroupOp) {
          return std::string("enigma_lid");
        })
        .Case([&](ThreadIndexInSimdgroupOp) {
          return std::string("(enigma_lid & 31u)");
        })
        .Case([&](SimdgroupIndexInThreadgroupOp) {
          return std::string("(enigma_lid >> 5)");
        })
        .Case([&](ThreadsPerSimdgroupOp) { return std::string("32u"); })
        .Case([&](SimdgroupsPerThreadgroupOp) {
          return std::string("((enigma_nx * enigma_ny * enigma_nz + 31u) >> 5)");
        })
        .Default([](Operation *) { return std::string("<query>"); });
  }

  LogicalResult emitBarrier(Operation *op) override {
    // Between thread loops: every thread has finished the loop before.
    if (auto b = dyn_cast<BarrierOp>(op))
      line() << "// threadgroup_barrier(" << metalMemFlags(b.getFlags())
             << ")\n";
    else
      line() << "// simdgroup_barrier("
             << metalMemFlags(cast<SimdBarrierOp>(op).getFlags()) << ")\n";
    return success();
  }

  LogicalResult emitTargetOp(Operation *op, bool &handled) override {
    handled = true;
    if (auto loop = dyn_cast<ThreadLoopOp>(op))
      return emitThreadLoop(loop);
    if (auto call = dyn_cast<LanesCallOp>(op))
      return emitLanesCall(call);
    if (auto dynamic = dyn_cast<DynamicThreadgroupAllocOp>(op)) {
      // The launch's bytes, on this group's stack (a variable-length array
      // the host compilers take), 16-byte aligned as Metal's.
      std::string name = freshName(dynamic.getMemref());
      std::string element = typeName(
          llvm::cast<MemRefType>(dynamic.getMemref().getType())
              .getElementType());
      line() << "unsigned char " << name << "_storage[(size_t)"
             << expr(dynamic.getBytes()) << " + 16];\n";
      line() << element << " *const " << name << " = (" << element
             << " *)(((uintptr_t)" << name << "_storage + 15) & "
             << "~(uintptr_t)15);\n";
      return success();
    }
    if (isAsyncCopyOp(op))
      return emitAsyncCopy(op);
    // Simd functions, simdgroup matrices, async copy waits: between thread
    // loops (checkSerialized has already refused them here).
    if (op->hasTrait<Collective>())
      return op->emitOpError(
          "is printed by the CPU emitter's group-level code");
    handled = false;
    return success();
  }

private:
  /// The printer needs the form enigma-serialize-threads gives: thread
  /// queries of one thread only inside thread loops, simdgroup functions
  /// only as enigma.lanes_call.
  LogicalResult checkSerialized() {
    if (!kernel->hasAttr(kSerializedThreadsAttr))
      return kernel.emitOpError("must be run through enigma-serialize-threads "
                                "before it is printed as host C++");
    WalkResult result = kernel.walk([&](Operation *op) {
      if (op->hasTrait<Collective>() ||
          (isThreadVaryingQuery(op) && !op->getParentOfType<ThreadLoopOp>())) {
        op->emitOpError("cannot be printed as host C++ outside a thread loop");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(result.wasInterrupted());
  }

  LogicalResult emitThreadLoop(ThreadLoopOp loop) {
    if (Value sg = loop.getSimdgroup()) {
      // The lanes of one simdgroup, by linear index.
      std::string first = "(" + expr(sg) + " * 32u)";
      line() << "for (uint enigma_lid = " << first << ", enigma_lend = "
             << "enigma_min_u32(" << first
             << " + 32u, enigma_nx * enigma_ny * enigma_nz); enigma_lid < "
                "enigma_lend; ++enigma_lid) {\n";
      indentMore();
      line() << "const uint enigma_lx = enigma_lid % enigma_nx;\n";
      line() << "const uint enigma_ly = (enigma_lid / enigma_nx) % "
                "enigma_ny;\n";
      line() << "const uint enigma_lz = enigma_lid / (enigma_nx * "
                "enigma_ny);\n";
      line() << "const uint enigma_tx = enigma_bx + enigma_lx;\n";
    } else {
      line() << "for (uint enigma_lz = 0; enigma_lz < enigma_nz; "
                "++enigma_lz)\n";
      line() << "for (uint enigma_ly = 0; enigma_ly < enigma_ny; "
                "++enigma_ly)\n";
      line() << "for (uint enigma_tx = enigma_bx; enigma_tx < enigma_bx + "
                "enigma_nx; ++enigma_tx) {\n";
      indentMore();
      line() << "const uint enigma_lx = enigma_tx - enigma_bx;\n";
      line() << "const uint enigma_lid = (enigma_lz * enigma_ny + enigma_ly) "
                "* enigma_nx + enigma_lx;\n";
    }
    LogicalResult result = emitBlock(loop.getBody().front());
    indentLess();
    line() << "}\n";
    return result;
  }

  /// The lane's share of an async copy, done when the call returns: the
  /// event carries nothing, and is not kept in the thread loops' per-thread
  /// arrays.
  LogicalResult emitAsyncCopy(Operation *op) {
    // The lane of the thread being run and the lanes of its simdgroup.
    const char *linear =
        "((enigma_lz * enigma_ny + enigma_ly) * enigma_nx + enigma_lx)";
    std::string lanes = std::string("enigma_cpu_simd_lane(") + linear +
                        "), enigma_cpu_simd_lanes(" + linear +
                        ", enigma_nx * enigma_ny * enigma_nz)";
    bool twoD = isa<AsyncCopy2dD2TOp, AsyncCopy2dT2DOp>(op);
    line() << asyncCopyPreludeCall(*this, op,
                                   twoD ? "enigma_cpu_async_copy_2d"
                                        : "enigma_cpu_async_copy_1d",
                                   "", lanes)
           << ";\n";
    alias(op->getResult(0), "0u");
    return success();
  }

  /// enigma_cpu_<callee>(arrays and uniform scalars..., threads, first, last)
  LogicalResult emitLanesCall(LanesCallOp call) {
    std::string args;
    for (Value arg : call.getArgs()) {
      std::string text = expr(arg);
      if (auto mem = llvm::dyn_cast<MemRefType>(arg.getType())) {
        // Signed min / max read the unsigned storage as the signed type.
        if (call.getIsSigned() && mem.getElementType().isIntOrIndex())
          text = "(" + typeName(mem.getElementType(), true) + " *)" + text;
      } else {
        text = "enigma_cpu::Uniform{" + text + "}";
      }
      args += text + ", ";
    }
    line() << "enigma_cpu_" << call.getCallee() << "(" << args
           << expr(call.getThreads()) << ", " << expr(call.getFirst()) << ", "
           << expr(call.getLast()) << ");\n";
    return success();
  }
};

} // namespace

LogicalResult emitCpp(KernelOp kernel, raw_ostream &os) {
  return CppEmitter(kernel, os).emit();
}

} // namespace enigma
