//===- MSLEmitter.cpp - Metal Shading Language ----------------------------===//
//
// Thread queries become kernel parameters with Metal's attributes
// ([[thread_position_in_grid]] ...), declared only when the body uses them.
// A buffer used by atomics is declared with Metal's atomic type
// (device atomic_uint*) and read and written through a view
// (EmitCooperation.cpp). Async copies call Apple's AIR intrinsics
// (EmitAsyncCopy.cpp); simdgroup matrices are Metal's own.
//
//===----------------------------------------------------------------------===//
#include "MSLEmitter.h"

#include "../CFamily/CFamilyEmitter.h"
#include "../CFamily/Families.h"
#include "../CFamily/KernelQueries.h"

#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"

#include "llvm/ADT/SetVector.h"

#include <cstring>

using namespace mlir;

namespace enigma {
namespace {

constexpr TargetSpellings kMslSpellings = {
    .threadgroupArray = "threadgroup ",
    .atomicTypes = true,
    .functionConstantPrefix = "enigma_fc_",
    .functionConstantSuffix = "",
    .functionConstantAttribute = true,
    .cudaFunctionNames = false,
    .opaque16 = nullptr,
    .simdArguments = "",
    .unrollPragma = true,
    .vectorAccess = TargetSpellings::VectorAccess::AddressSpaceCast,
};

/// The four copies by name, for the declarations (in this order).
struct Intrinsic {
  StringRef op;       // enigma op name
  const char *air;    // LLVM name of Apple's intrinsic
  const char *params; // MSL parameter list
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

class MSLEmitter : public CFamilyEmitter {
public:
  using CFamilyEmitter::CFamilyEmitter;

  const TargetSpellings &spellings() const override { return kMslSpellings; }

protected:
  void emitFileHeader() override {
    os << "#include <metal_stdlib>\nusing namespace metal;\n\n";
  }

  LogicalResult emitKernelBody() override {
    // Metal attributes the body reads, in first-use order.
    llvm::SetVector<StringRef> queries;
    llvm::DenseMap<StringRef, bool> isVectorQuery;
    kernel.walk([&](Operation *op) {
      StringRef name = metalQueryName(op);
      if (name.empty())
        return;
      queries.insert(name);
      isVectorQuery[name] = queryDim(op).has_value();
    });
    for (auto [name, isVector] : mmaMetalQueries(kernel)) {
      queries.insert(name);
      isVectorQuery[name] = isVector;
    }

    emitFileScopeDeclarations(*this);
    emitAsyncCopyDeclarations();
    emitMmaDeclarations(*this);
    emitTotalOperationDeclarations(*this);
    if (std::optional<uint64_t> threads = kernel.getRequiredThreadgroupSize())
      os << "[[max_total_threads_per_threadgroup(" << *threads << ")]]\n";
    os << "kernel void " << kernelFunctionName(kernel) << "(";
    std::string sep = "\n    ";
    Block &entry = kernel.getBody().front();
    std::vector<std::string> views;
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
      std::string name = paramName(i);
      if (kernel.isBufferParam(i) && isUsedAtomically(entry.getArgument(i))) {
        std::string t = paramElementType(i);
        std::string view = "enigma_view_" + std::to_string(i);
        os << sep << "device atomic_" << t << "* " << name << " [[buffer("
           << i << ")]]";
        views.push_back("const enigma_atomics_device<" + t + ", atomic_" + t +
                        "> " + view + "{" + name + "};");
        alias(entry.getArgument(i), view);
      } else if (kernel.isBufferParam(i)) {
        auto type = llvm::cast<MemRefType>(kernel.getArgumentTypes()[i]);
        const char *space = getAddressSpace(type) == AddressSpace::Constant
                                ? "constant"
                                : "device";
        os << sep << space << " " << paramElementType(i) << "* " << name
           << " [[buffer(" << i << ")]]";
        alias(entry.getArgument(i), name);
      } else {
        os << sep << "constant " << paramElementType(i) << "& " << name
           << " [[buffer(" << i << ")]]";
        alias(entry.getArgument(i), scalarParamExpr(i, name));
      }
      sep = ",\n    ";
    }
    for (StringRef q : queries) {
      os << sep << (isVectorQuery[q] ? "uint3 " : "uint ") << q << " [[" << q
         << "]]";
      sep = ",\n    ";
    }
    os << ") {\n";
    indentMore();
    for (const std::string &view : views)
      line() << view << "\n";
    if (failed(emitBlock(entry)))
      return failure();
    indentLess();
    os << "}\n";
    return success();
  }

  std::string threadQuery(Operation *op) override {
    std::string name = metalQueryName(op).str();
    if (std::optional<unsigned> d = queryDim(op))
      return name + "." + dimLetter(*d);
    return name;
  }

  LogicalResult emitBarrier(Operation *op) override {
    if (auto b = dyn_cast<BarrierOp>(op))
      line() << "threadgroup_barrier(" << metalMemFlags(b.getFlags())
             << ");\n";
    else
      line() << "simdgroup_barrier("
             << metalMemFlags(cast<SimdBarrierOp>(op).getFlags()) << ");\n";
    return success();
  }

  LogicalResult emitTargetOp(Operation *op, bool &handled) override {
    handled = true;
    if (isAsyncCopyOp(op))
      return emitAsyncCopy(op);
    if (auto wait = dyn_cast<AsyncCopyWaitOp>(op))
      return emitAsyncCopyWait(wait);
    if (isa<SimdgroupMatrixLoadOp, SimdgroupMatrixStoreOp,
            SimdgroupMultiplyAccumulateOp, MakeFilledSimdgroupMatrixOp>(op))
      return emitSimdgroupMatrix(op);
    handled = false;
    return success();
  }

private:
  /// The AIR intrinsics the kernel's async copies call, at file scope.
  void emitAsyncCopyDeclarations() {
    if (!usesAsyncCopy(kernel))
      return;
    bool used[4] = {};
    bool waits = false;
    kernel.walk([&](Operation *op) {
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
           << "enigma_" << kIntrinsics[i].op.drop_front(strlen("enigma."))
           << "(" << kIntrinsics[i].params << ")\n    __asm(\""
           << kIntrinsics[i].air << "\");\n";
    if (waits)
      os << "void enigma_async_copy_wait(int, thread _simdgroup_event_t **)\n"
            "    __asm(\"air.wait_simdgroup_events\");\n";
    os << "\n";
  }

  LogicalResult emitAsyncCopy(Operation *op) {
    StringRef name = op->getName().getStringRef();
    bool twoD = isa<AsyncCopy2dD2TOp, AsyncCopy2dT2DOp>(op);
    bool toThreadgroup = name.ends_with("d2t");
    Value dst = op->getOperand(0);
    std::string elem =
        typeName(llvm::cast<MemRefType>(dst.getType()).getElementType());
    std::string dstPtr = asyncCopyPointer(*this, dst, op->getOperand(1));
    std::string srcPtr = asyncCopyPointer(*this, op->getOperand(twoD ? 3 : 2),
                                          op->getOperand(twoD ? 4 : 3));
    auto asUlong = [&](unsigned i) {
      return "(ulong)(" + expr(op->getOperand(i)) + ")";
    };
    const char *dstSpace = toThreadgroup ? "threadgroup" : "device";
    const char *srcSpace = toThreadgroup ? "device" : "threadgroup";
    // enigma.async_copy_1d_d2t -> enigma_async_copy_1d_d2t (declared above).
    std::string call = "enigma_" + name.drop_front(strlen("enigma.")).str() +
                       "(sizeof(" + elem + "), alignof(" + elem + "), (" +
                       dstSpace + " void *)" + dstPtr;
    if (!twoD) {
      call += ", (const " + std::string(srcSpace) + " void *)" + srcPtr +
              ", " + asUlong(4) + ")";
    } else {
      std::string tile = "ulong2(" + asUlong(6) + ", " + asUlong(7) + ")";
      call += ", " + asUlong(2) + ", 1ul, " + tile + ", (const " + srcSpace +
              " void *)" + srcPtr + ", " + asUlong(5) + ", 1ul, " + tile +
              ", long2(0, 0), 0)";
    }
    define(op->getResult(0), call);
    return success();
  }

  LogicalResult emitAsyncCopyWait(AsyncCopyWaitOp op) {
    std::string events;
    for (Value v : op.getEvents())
      events += (events.empty() ? "" : ", ") + expr(v);
    // A block of its own, so the list's name never clashes.
    line() << "{\n";
    line() << "  enigma_async_event enigma_events[] = {" << events << "};\n";
    line() << "  enigma_async_copy_wait(" << op.getEvents().size()
           << ", enigma_events);\n";
    line() << "}\n";
    return success();
  }

  /// Metal's simdgroup matrices:
  ///   simdgroup_float8x8 v5;
  ///   simdgroup_load(v5, A + v3, v4);
  ///   simdgroup_multiply_accumulate(v8, v5, v6, v7);
  ///   simdgroup_store(v8, C + v3, v4);
  ///   simdgroup_float8x8 v9 = make_filled_simdgroup_matrix<float, 8, 8>(v2);
  LogicalResult emitSimdgroupMatrix(Operation *op) {
    auto matrixType = [&](Type t) {
      Type elem = llvm::cast<VectorType>(t).getElementType();
      return std::string(elem.isF16() ? "simdgroup_half8x8"
                                      : "simdgroup_float8x8");
    };
    auto address = [&](Value memref, Value offset) {
      return expr(memref) + " + " + expr(offset);
    };
    if (auto load = dyn_cast<SimdgroupMatrixLoadOp>(op)) {
      std::string src = address(load.getMemref(), load.getOffset());
      std::string epr = expr(load.getElementsPerRow());
      std::string name = freshName(load.getResult());
      line() << matrixType(load.getResult().getType()) << " " << name << ";\n";
      line() << "simdgroup_load(" << name << ", " << src << ", " << epr
             << (load.getTranspose() ? ", ulong2(0, 0), true" : "") << ");\n";
      return success();
    }
    if (auto store = dyn_cast<SimdgroupMatrixStoreOp>(op)) {
      line() << "simdgroup_store(" << expr(store.getValue()) << ", "
             << address(store.getMemref(), store.getOffset()) << ", "
             << expr(store.getElementsPerRow()) << ");\n";
      return success();
    }
    if (auto mma = dyn_cast<SimdgroupMultiplyAccumulateOp>(op)) {
      std::string args = expr(mma.getA()) + ", " + expr(mma.getB()) + ", " +
                         expr(mma.getC());
      std::string name = freshName(mma.getResult());
      line() << matrixType(mma.getResult().getType()) << " " << name << ";\n";
      line() << "simdgroup_multiply_accumulate(" << name << ", " << args
             << ");\n";
      return success();
    }
    auto fill = cast<MakeFilledSimdgroupMatrixOp>(op);
    Type resultType = fill.getResult().getType();
    std::string elem =
        typeName(llvm::cast<VectorType>(resultType).getElementType());
    std::string value = expr(fill.getValue());
    line() << matrixType(resultType) << " " << freshName(fill.getResult())
           << " = make_filled_simdgroup_matrix<" << elem << ", 8, 8>("
           << value << ");\n";
    return success();
  }
};

} // namespace

LogicalResult emitMSL(KernelOp kernel, raw_ostream &os) {
  return emitAvoidingNameClashes<MSLEmitter>(kernel, os);
}

} // namespace enigma
