//===- MSLEmitter.cpp - Metal Shading Language ----------------------------===//
//
// Thread queries become kernel parameters with Metal's attributes
// ([[thread_position_in_grid]] ...), declared only when the body uses them.
// A buffer used by atomics is declared with Metal's atomic type
// (device atomic_uint*) and read and written through a view
// (EmitCooperation.cpp).
//
//===----------------------------------------------------------------------===//
#include "MSLEmitter.h"

#include "../CFamily/CFamilyEmitter.h"
#include "../CFamily/Families.h"
#include "../CFamily/KernelQueries.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace enigma {
namespace {

class MSLEmitter : public CFamilyEmitter {
public:
  using CFamilyEmitter::CFamilyEmitter;

  Target target() const override { return Target::MSL; }

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
    emitAsyncCopyDeclarations(*this);
    emitMmaDeclarations(*this);
    emitDivisionDeclarations(*this);
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
};

} // namespace

LogicalResult emitMSL(KernelOp kernel, raw_ostream &os) {
  return MSLEmitter(kernel, os).emit();
}

} // namespace enigma
