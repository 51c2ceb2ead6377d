//===- CppEmitter.cpp - Host C++ for the CPU backend ----------------------===//
//
// A CPU kernel runs a range of threadgroups (enigma_cpu_abi.h). It prints a
// kernel that enigma-serialize-threads has made run once per threadgroup:
// the function loops over its groups, and each enigma.thread_loop becomes a
// loop nest over the group's threads,
//
//   for (uint enigma_lz = 0; enigma_lz < enigma_nz; ++enigma_lz)
//   for (uint enigma_ly = 0; enigma_ly < enigma_ny; ++enigma_ly)
//   for (uint64_t enigma_x = enigma_bx; enigma_x < enigma_bx + enigma_nx; ...
//
// whose innermost loop counts the global x position (in 64 bits), so that
// indexing with it is a plain unit-stride loop the host compiler can
// vectorise. A thread loop of one simdgroup runs over that simdgroup's
// linear indices.
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
#include "enigma/Dialect/Enigma/IR/EnigmaThreadLoopOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
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
    if (indexSubscript(op))
      return success();
    if (auto alloca = dyn_cast<memref::AllocaOp>(op))
      if (isPerThreadArray(alloca))
        return emitPerThreadArray(alloca);
    if (auto call = dyn_cast<LanesCallOp>(op))
      return emitLanesCall(call);
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

  /// An index cast of the thread's linear index or x position inside a
  /// thread loop: the 64-bit count of the loop (emitThreadLoop), equal to
  /// the 32-bit value, so that the host compiler sees unit-stride subscripts.
  bool indexSubscript(Operation *op) {
    if (!isa<arith::IndexCastOp, arith::IndexCastUIOp>(op) ||
        !op->getResult(0).getType().isIndex() ||
        !op->getParentOfType<ThreadLoopOp>())
      return false;
    Operation *query = op->getOperand(0).getDefiningOp();
    if (isa_and_nonnull<ThreadIndexInThreadgroupOp>(query)) {
      alias(op->getResult(0), "enigma_slot");
      return true;
    }
    auto position = dyn_cast_or_null<ThreadPositionInGridOp>(query);
    if (position && queryDim(position).value_or(0) == 0) {
      alias(op->getResult(0), "enigma_x");
      return true;
    }
    return false;
  }

  /// An array of enigma-serialize-threads holding a value (or register
  /// array) of every thread of the group: kMaxThreadsPerGroup entries (or
  /// slices), declared at group level.
  bool isPerThreadArray(memref::AllocaOp alloca) {
    MemRefType type = alloca.getType();
    return alloca->getParentOp() == kernel.getOperation() &&
           type.getRank() == 1 && type.hasStaticShape() &&
           type.getNumElements() % kMaxThreadsPerGroup == 0 &&
           getAddressSpace(type) == AddressSpace::Thread;
  }

  /// A per-thread array, one cache line longer than its threads need, so
  /// that arrays laid out one after another start on different cache lines
  /// (mod 4 KiB). Unpadded, every such array is a multiple of 4 KiB and a
  /// group of threads uses the same few lines of each, which all fall in
  /// the same sets of an 8-way L1 cache: a thread loop touching 64 of them
  /// ran 25 times slower.
  LogicalResult emitPerThreadArray(memref::AllocaOp alloca) {
    MemRefType type = alloca.getType();
    Type element = type.getElementType();
    // Scalars and vectors (3 lanes take the room of 4); other elements
    // (fragments, events) are left as they are.
    int64_t bytes = 0;
    if (auto vec = llvm::dyn_cast<VectorType>(element)) {
      int64_t lanes = vec.getNumElements() == 3 ? 4 : vec.getNumElements();
      bytes = lanes * std::max<int64_t>(
                          1, vec.getElementType().getIntOrFloatBitWidth() / 8);
    } else if (element.isIntOrIndexOrFloat()) {
      bytes = element.isIndex()
                  ? 8
                  : std::max<int64_t>(1, element.getIntOrFloatBitWidth() / 8);
    }
    int64_t pad = bytes ? (64 + bytes - 1) / bytes : 0;
    line() << typeName(element) << " " << freshName(alloca.getResult()) << "["
           << type.getNumElements() + pad << "];\n";
    return success();
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
      line() << "const uint64_t enigma_x = enigma_tx;\n";
      line() << "const uint64_t enigma_slot = enigma_lid;\n";
    } else {
      // The innermost loop counts in 64 bits, and subscripts that are the
      // thread's x position or linear index (indexSubscript) use the 64-bit
      // counts: a 32-bit count may wrap as far as the host compiler knows,
      // which turns every access of a per-thread array into a gather and
      // made g++'s compile time grow with the square of their number.
      line() << "for (uint enigma_lz = 0; enigma_lz < enigma_nz; "
                "++enigma_lz)\n";
      line() << "for (uint enigma_ly = 0; enigma_ly < enigma_ny; "
                "++enigma_ly)\n";
      line() << "for (uint64_t enigma_x = enigma_bx; enigma_x < "
                "(uint64_t)enigma_bx + enigma_nx; ++enigma_x) {\n";
      indentMore();
      line() << "const uint enigma_tx = (uint)enigma_x;\n";
      line() << "const uint enigma_lx = enigma_tx - enigma_bx;\n";
      line() << "const uint enigma_lid = (enigma_lz * enigma_ny + enigma_ly) "
                "* enigma_nx + enigma_lx;\n";
      line() << "const uint64_t enigma_slot = ((uint64_t)enigma_lz * "
                "enigma_ny + enigma_ly) * enigma_nx + (enigma_x - "
                "enigma_bx);\n";
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
  return emitAvoidingNameClashes<CppEmitter>(kernel, os);
}

} // namespace enigma
