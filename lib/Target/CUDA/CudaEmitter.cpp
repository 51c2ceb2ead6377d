//===- CudaEmitter.cpp - CUDA C++ for NVRTC -------------------------------===//
//
// Follows enigma_cuda_abi.h: buffers are device pointers, scalars by value,
// and a trailing EnigmaCudaLaunch gives the dispatch size in threads so the
// edge block can be partial, as with Metal's dispatchThreads.
//
//===----------------------------------------------------------------------===//
#include "CudaEmitter.h"

#include "../CFamily/CFamilyEmitter.h"
#include "../CFamily/Families.h"
#include "../CFamily/KernelQueries.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace enigma {
namespace {

const char *kBlockIdx[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
const char *kBlockDim[] = {"blockDim.x", "blockDim.y", "blockDim.z"};
const char *kThreadIdx[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};

class CudaEmitter : public CFamilyEmitter {
public:
  using CFamilyEmitter::CFamilyEmitter;

  Target target() const override { return Target::CUDA; }

protected:
  void emitFileHeader() override {
    os << "#include \"enigma_cuda_prelude.cuh\"\n\n";
  }

  LogicalResult emitKernelBody() override {
    emitFileScopeDeclarations(*this);
    os << "extern \"C\" __global__ void " << kernelFunctionName(kernel) << "(";
    std::string sep = "\n    ";
    Block &entry = kernel.getBody().front();
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
      std::string name = paramName(i);
      if (kernel.isBufferParam(i)) {
        os << sep << paramElementType(i) << "* " << name;
        alias(entry.getArgument(i), name);
      } else {
        os << sep << "const " << paramElementType(i) << " " << name;
        alias(entry.getArgument(i), scalarParamExpr(i, name));
      }
      sep = ",\n    ";
    }
    os << sep << "const EnigmaCudaLaunch enigma_launch) {\n";
    indentMore();
    // Simd functions need the lanes that exist, known only while every
    // thread of the warp is still here.
    if (usesSimdFunctions(kernel))
      line() << "const EnigmaLanes enigma_lanes = "
                "enigma_existing_lanes(enigma_launch);\n";
    // Threads past the end of the grid do not exist in Metal's model.
    line() << "if (" << globalId(0) << " >= enigma_launch.grid[0] || "
           << "(enigma_launch.partial_yz && (" << globalId(1)
           << " >= enigma_launch.grid[1] || " << globalId(2)
           << " >= enigma_launch.grid[2]))) return;\n";
    if (failed(emitBlock(entry)))
      return failure();
    indentLess();
    os << "}\n";
    return success();
  }

  /// Whether the kernel calls a simd_* / quad_* function (simdgroup
  /// matrices work on whole warps and take no lane mask).
  static bool usesSimdFunctions(KernelOp kernel) {
    return kernel
        .walk([](Operation *op) {
          if (!op->hasTrait<Collective>() || !op->getDialect() ||
              op->getDialect()->getNamespace() != "enigma")
            return WalkResult::advance();
          StringRef name = op->getName().stripDialect();
          return name.starts_with("simd_") || name.starts_with("quad_")
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        })
        .wasInterrupted();
  }

  static std::string globalId(unsigned d) {
    return std::string("(") + kBlockIdx[d] + " * " + kBlockDim[d] + " + " +
           kThreadIdx[d] + ")";
  }

  /// Threads in this block along `d`: the edge block may be partial.
  static std::string groupSize(unsigned d) {
    return std::string("enigma_group_size(") + kBlockIdx[d] + ", " +
           kBlockDim[d] + ", enigma_launch.grid[" + std::to_string(d) + "])";
  }

  static std::string linearIndex() {
    return "((" + std::string(kThreadIdx[2]) + " * " + groupSize(1) + " + " +
           kThreadIdx[1] + ") * " + groupSize(0) + " + " + kThreadIdx[0] + ")";
  }

  std::string threadQuery(Operation *op) override {
    unsigned d = queryDim(op).value_or(0);
    std::string dim = std::to_string(d);
    return llvm::TypeSwitch<Operation *, std::string>(op)
        .Case([&](ThreadPositionInGridOp) { return globalId(d); })
        .Case([&](ThreadPositionInThreadgroupOp) {
          return std::string(kThreadIdx[d]);
        })
        .Case([&](ThreadgroupPositionInGridOp) {
          return std::string(kBlockIdx[d]);
        })
        .Case([&](ThreadsPerThreadgroupOp) { return groupSize(d); })
        .Case([&](ThreadsPerGridOp) {
          return "enigma_launch.grid[" + dim + "]";
        })
        .Case([&](ThreadgroupsPerGridOp) {
          return std::string("gridDim.") + dimLetter(d);
        })
        .Case([&](ThreadIndexInThreadgroupOp) { return linearIndex(); })
        .Case([&](ThreadIndexInSimdgroupOp) {
          return "(" + linearIndex() + " & 31u)";
        })
        .Case([&](SimdgroupIndexInThreadgroupOp) {
          return "(" + linearIndex() + " >> 5)";
        })
        .Case([&](ThreadsPerSimdgroupOp) { return std::string("32u"); })
        .Case([&](SimdgroupsPerThreadgroupOp) {
          return "((" + groupSize(0) + " * " + groupSize(1) + " * " +
                 groupSize(2) + " + 31u) >> 5)";
        })
        .Default([](Operation *) { return std::string("<query>"); });
  }

  LogicalResult emitBarrier(Operation *op) override {
    if (auto b = dyn_cast<BarrierOp>(op)) {
      if (bitEnumContainsAll(b.getFlags(), MemFlags::Device))
        line() << "__threadfence();\n";
      line() << "__syncthreads();\n";
      return success();
    }
    if (bitEnumContainsAll(cast<SimdBarrierOp>(op).getFlags(),
                           MemFlags::Device))
      line() << "__threadfence();\n";
    line() << "__syncwarp();\n";
    return success();
  }
};

} // namespace

LogicalResult emitCuda(KernelOp kernel, raw_ostream &os) {
  return CudaEmitter(kernel, os).emit();
}

} // namespace enigma
