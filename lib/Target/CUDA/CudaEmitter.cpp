//===- CudaEmitter.cpp - CUDA C++ for NVRTC -------------------------------===//
//
// Follows enigma_cuda_abi.h: buffers are device pointers, scalars by value,
// and a trailing EnigmaCudaLaunch gives the dispatch size in threads so the
// edge block can be partial, as with Metal's dispatchThreads. Async copies
// call the prelude's cp.async copies (EmitAsyncCopy.cpp), simdgroup matrices
// its per-lane pairs (enigma_cuda_simdgroup_matrix.cuh), and threadgroup
// arrays beyond 48 KiB live in dynamic shared memory (CudaSharedMemory.h).
//
//===----------------------------------------------------------------------===//
#include "CudaEmitter.h"
#include "CudaPipelines.h"
#include "CudaProxyFence.h"
#include "CudaSharedMemory.h"
#include "CudaTensorMaps.h"

#include "../CFamily/CFamilyEmitter.h"
#include "../CFamily/Families.h"
#include "../CFamily/KernelQueries.h"

#include "enigma/Dialect/Enigma/IR/EnigmaAsyncCopyOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaSimdOps.h"

#include "llvm/ADT/TypeSwitch.h"

#include <cstring>

using namespace mlir;

namespace enigma {
namespace {

const char *kBlockIdx[] = {"blockIdx.x", "blockIdx.y", "blockIdx.z"};
const char *kBlockDim[] = {"blockDim.x", "blockDim.y", "blockDim.z"};
const char *kThreadIdx[] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};

constexpr TargetSpellings kCudaSpellings = {
    .threadgroupArray = "__shared__ ",
    .atomicTypes = false,
    .functionConstantPrefix = "ENIGMA_FUNCTION_CONSTANT(",
    .functionConstantSuffix = ")",
    .functionConstantAttribute = false,
    .cudaFunctionNames = true,
    .opaque16 = "enigma_opaque_u32",
    // The lanes that exist (computed at kernel entry; see
    // enigma_existing_lanes in the CUDA prelude).
    .simdArguments = ", enigma_lanes",
    .unrollPragma = true,
    .vectorAccess = TargetSpellings::VectorAccess::PointerCast,
};

class CudaEmitter : public CFamilyEmitter {
public:
  using CFamilyEmitter::CFamilyEmitter;

  const TargetSpellings &spellings() const override { return kCudaSpellings; }

protected:
  void emitFileHeader() override {
    if (cudaFencesAtCopyWait(kernel))
      os << "#define ENIGMA_FENCE_AT_COPY_WAIT 1 // CudaProxyFence.h\n";
    os << "#include \"enigma_cuda_prelude.cuh\"\n\n";
  }

  LogicalResult emitKernelBody() override {
    emitFileScopeDeclarations(*this);
    os << "extern \"C\" __global__ void ";
    // ptxas then keeps each thread within the registers N threads can
    // have (64K / N), so a launch never fails for lack of them. With
    // pipelines the block has the producer warpgroup too, and one block
    // per multiprocessor: setmaxnreg needs the count known at entry.
    std::optional<uint64_t> threads = kernel.getRequiredThreadgroupSize();
    if (pipelines.consumerThreads)
      os << "__launch_bounds__(" << pipelines.consumerThreads + kProducerThreads
         << ", 1) ";
    else if (threads)
      os << "__launch_bounds__(" << *threads << ") ";
    if (pipelines.cluster > 1)
      os << "__cluster_dims__(" << pipelines.cluster << ", 1, 1) ";
    os << kernelFunctionName(kernel) << "(";
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
    os << sep << "const EnigmaCudaLaunch enigma_launch";
    // Tensor maps (enigma_cuda_tma.cuh), then which of them are valid.
    for (size_t k = 0; k < tma.maps.size(); ++k)
      os << sep << "const __grid_constant__ EnigmaTensorMap enigma_tmap" << k;
    if (!tma.maps.empty())
      os << sep << "const uint enigma_tmap_valid";
    os << ") {\n";
    indentMore();
    if (linear)
      emitLinearPlacement();
    else
      emitBlockGuard();
    if (tma.tileCopies)
      line() << "EnigmaTmaGroups enigma_tma = enigma_tma_begin((uint)"
             << linearIndex() << ");\n";
    if (usesAsyncCopy(kernel))
      line() << "uint enigma_async_groups = 0u; // cp.async groups committed\n";
    if (failed(emitBlock(entry)))
      return failure();
    indentLess();
    os << "}\n";
    return success();
  }

  /// 1-D blocks (enigma_cuda_abi.h): each thread's place in its group comes
  /// from its linear index over the group's actual size, so consecutive
  /// existing threads, Metal's simdgroups, share warps also in partial 2-D
  /// and 3-D groups.
  void emitLinearPlacement() {
    for (unsigned d = 0; d < 3; ++d)
      line() << "const uint enigma_s" << dimLetter(d)
             << " = enigma_group_size(" << kBlockIdx[d]
             << ", enigma_launch.threads[" << d << "], enigma_launch.grid["
             << d << "]);\n";
    line() << "const uint enigma_linear = threadIdx.x;\n";
    line() << "const EnigmaLanes enigma_lanes = enigma_linear_lanes("
              "enigma_linear, enigma_sx * enigma_sy * enigma_sz);\n";
    // With pipelines the threads past the threadgroup's are the producer
    // warpgroup (threadgroups are whole there).
    if (!pipelines.consumerThreads)
      line() << "if (enigma_linear >= enigma_sx * enigma_sy * enigma_sz) "
                "return;\n";
    // A 1-D threadgroup needs no division.
    line() << "const uint enigma_lx = enigma_launch.threads[1] * "
              "enigma_launch.threads[2] == 1u ? enigma_linear : enigma_linear "
              "% enigma_sx;\n";
    line() << "const uint enigma_ly = (enigma_linear / enigma_sx) % "
              "enigma_sy;\n";
    line() << "const uint enigma_lz = enigma_linear / (enigma_sx * "
              "enigma_sy);\n";
  }

  /// Blocks shaped like the threadgroup: threads past the end of the grid
  /// do not exist in Metal's model.
  void emitBlockGuard() {
    line() << "if (" << globalId(0) << " >= enigma_launch.grid[0] || "
           << "(enigma_launch.partial_yz && (" << globalId(1)
           << " >= enigma_launch.grid[1] || " << globalId(2)
           << " >= enigma_launch.grid[2]))) return;\n";
  }

  std::string globalId(unsigned d) const {
    if (linear)
      return std::string("(") + kBlockIdx[d] + " * enigma_launch.threads[" +
             std::to_string(d) + "] + enigma_l" + dimLetter(d) + ")";
    return std::string("(") + kBlockIdx[d] + " * " + kBlockDim[d] + " + " +
           kThreadIdx[d] + ")";
  }

  std::string localId(unsigned d) const {
    return linear ? std::string("enigma_l") + dimLetter(d) : kThreadIdx[d];
  }

  /// Threads in this block along `d`: the edge block may be partial.
  std::string groupSize(unsigned d) const {
    if (linear)
      return std::string("enigma_s") + dimLetter(d);
    return std::string("enigma_group_size(") + kBlockIdx[d] + ", " +
           kBlockDim[d] + ", enigma_launch.grid[" + std::to_string(d) + "])";
  }

  std::string linearIndex() const {
    if (linear)
      return "enigma_linear";
    return "((" + std::string(kThreadIdx[2]) + " * " + groupSize(1) + " + " +
           kThreadIdx[1] + ") * " + groupSize(0) + " + " + kThreadIdx[0] + ")";
  }

  const bool linear = cudaUsesLinearBlocks(kernel);
  const CudaTensorMapPlan tma = cudaTensorMapPlan(kernel);
  /// Set while the producer's TMA form is printed (CudaPipelineContext).
  mutable bool tmaProducer = false;
  const CudaPipelineContext pipelines = pipelineContext();

  CudaPipelineContext pipelineContext() const {
    CudaPipelineContext context{tma};
    context.tmaProducer = &tmaProducer;
    KernelOp k = kernel;
    SmallVector<PipelineRingOp> rings = pipelineRings(k);
    if (rings.empty())
      return context;
    context.consumerThreads = k.getRequiredThreadgroupSize().value_or(0);
    context.cluster = rings.front().getCluster();
    context.threadIndex = "enigma_linear";
    for (unsigned i = 0; i < k.getNumArguments(); ++i)
      if (k.getArgAttr(i, "enigma.bounds_record"))
        context.boundsRecordIndex = int(i);
    return context;
  }

  /// The context with the record parameter's name as this printing pass
  /// spells it (the first pass prints placeholders, the second the names
  /// chosen after them).
  CudaPipelineContext pipelinesNow() {
    CudaPipelineContext context = pipelines;
    if (context.boundsRecordIndex >= 0)
      context.boundsRecord = paramName(unsigned(context.boundsRecordIndex));
    return context;
  }

  std::optional<TmaCopyArgs> tmaCopyArgs(Operation *copy) override {
    auto map = tma.mapOf.find(copy);
    if (map == tma.mapOf.end())
      return std::nullopt;
    std::string k = std::to_string(map->second);
    TmaCopyArgs args;
    args.leading = "enigma_tma, enigma_tmap" + k +
                   ", (enigma_tmap_valid >> " + k + ") & 1u, ";
    auto origin = tma.originOf.find(copy);
    if (origin != tma.originOf.end()) {
      std::string column;
      for (Value term : origin->second.columnTerms)
        column += (column.empty() ? "" : " + ") + ("(ulong)(" + expr(term) + ")");
      args.trailing = ", (ulong)(" + expr(origin->second.row) + "), " +
                      (column.empty() ? std::string("0ul") : column);
    }
    return args;
  }
  bool hasTensorMaps() override { return tma.tileCopies; }

  std::string threadQuery(Operation *op) override {
    unsigned d = queryDim(op).value_or(0);
    std::string dim = std::to_string(d);
    return llvm::TypeSwitch<Operation *, std::string>(op)
        .Case([&](ThreadPositionInGridOp) { return globalId(d); })
        .Case([&](ThreadPositionInThreadgroupOp) { return localId(d); })
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
      // The consumers of a kernel with pipelines meet without the
      // producer warpgroup.
      if (inConsumerRole(op))
        line() << "enigma_consumer_barrier(" << pipelines.consumerThreads
               << "u);\n";
      else
        line() << "__syncthreads();\n";
      return success();
    }
    if (bitEnumContainsAll(cast<SimdBarrierOp>(op).getFlags(),
                           MemFlags::Device))
      line() << "__threadfence();\n";
    line() << "__syncwarp();\n";
    return success();
  }

  LogicalResult emitTargetOp(Operation *op, bool &handled) override {
    LogicalResult pipelineOp =
        emitCudaPipelineOp(*this, op, pipelinesNow(), handled);
    if (failed(pipelineOp) || handled)
      return pipelineOp;
    handled = true;
    if (isAsyncCopyOp(op)) {
      // enigma.async_copy_1d_d2t -> enigma_async_copy_1d_d2t (the prelude).
      std::string fn =
          "enigma_" +
          op->getName().getStringRef().drop_front(strlen("enigma.")).str();
      define(op->getResult(0),
             asyncCopyPreludeCall(*this, op, fn, "enigma_async_groups, ",
                                  "enigma_lanes"));
      return success();
    }
    if (auto wait = dyn_cast<AsyncCopyWaitOp>(op)) {
      std::string events;
      for (Value v : wait.getEvents())
        events += (events.empty() ? "" : ", ") + expr(v);
      line() << "enigma_async_copy_wait(enigma_async_groups, enigma_lanes, "
             << events << ");\n";
      return success();
    }
    if (isa<SimdgroupMatrixLoadOp, SimdgroupMatrixStoreOp,
            SimdgroupMultiplyAccumulateOp, MakeFilledSimdgroupMatrixOp>(op))
      return emitSimdgroupMatrix(op);
    if (auto dynamic = dyn_cast<DynamicThreadgroupAllocOp>(op))
      return emitLaunchSized(dynamic);
    if (auto alloc = dyn_cast<ThreadgroupAllocOp>(op)) {
      CudaSharedLayout layout = cudaSharedLayout(kernel);
      if (layout.dynamic)
        return emitDynamicShared(alloc, layout);
      if (layout.alignsLarge && CudaSharedLayout::isLarge(alloc.getPaddedBytes()))
        return emitAlignedShared(alloc);
    }
    handled = false;
    return success();
  }

private:
  /// Each lane's two elements of a simdgroup matrix in a float2 / half2,
  /// through the helpers of enigma_cuda_simdgroup_matrix.cuh.
  LogicalResult emitSimdgroupMatrix(Operation *op) {
    auto address = [&](Value memref, Value offset) {
      return expr(memref) + " + " + expr(offset);
    };
    if (auto load = dyn_cast<SimdgroupMatrixLoadOp>(op)) {
      std::string src = address(load.getMemref(), load.getOffset());
      std::string epr = expr(load.getElementsPerRow());
      define(load.getResult(), "enigma_simdgroup_matrix_load<" +
                                   typeName(load.getResult().getType()) +
                                   (load.getTranspose() ? ", true" : "") +
                                   ">(" + src + ", " + epr + ")");
      return success();
    }
    if (auto store = dyn_cast<SimdgroupMatrixStoreOp>(op)) {
      line() << "enigma_simdgroup_matrix_store(" << expr(store.getValue())
             << ", " << address(store.getMemref(), store.getOffset()) << ", "
             << expr(store.getElementsPerRow()) << ");\n";
      return success();
    }
    if (auto mma = dyn_cast<SimdgroupMultiplyAccumulateOp>(op)) {
      define(mma.getResult(), "enigma_simdgroup_multiply_accumulate(" +
                                  expr(mma.getA()) + ", " + expr(mma.getB()) +
                                  ", " + expr(mma.getC()) + ")");
      return success();
    }
    auto fill = cast<MakeFilledSimdgroupMatrixOp>(op);
    define(fill.getResult(), "enigma_make_filled_simdgroup_matrix<" +
                                 typeName(fill.getResult().getType()) + ">(" +
                                 expr(fill.getValue()) + ")");
    return success();
  }

  /// A static array on a 1024-byte boundary (CudaSharedMemory.h).
  LogicalResult emitAlignedShared(ThreadgroupAllocOp op) {
    MemRefType type = op.getMemref().getType();
    line() << "alignas(" << CudaSharedLayout::kLargeAlignment << ") __shared__ "
           << typeName(type.getElementType()) << " "
           << freshName(op.getMemref()) << "[" << type.getNumElements()
           << "];\n";
    return success();
  }

  /// The dynamic threadgroup array: dynamic shared memory after the static
  /// arrays carved out of it (if any), sized by the launch
  /// (CudaBackend: the carved bytes rounded up to 16, plus the launch's).
  LogicalResult emitLaunchSized(DynamicThreadgroupAllocOp op) {
    CudaSharedLayout layout = cudaSharedLayout(kernel);
    uint64_t offset = layout.dynamic ? (layout.bytes + 15) / 16 * 16 : 0;
    std::string element = typeName(op.getMemref().getType().getElementType());
    line() << "extern __shared__ __align__("
           << CudaSharedLayout::kLargeAlignment << ") unsigned char "
           << kCudaDynamicShared << "[];\n";
    line() << element << " *const " << freshName(op.getMemref())
           << " = reinterpret_cast<" << element << " *>("
           << kCudaDynamicShared << " + " << offset << ");\n";
    return success();
  }

  /// Beyond 48 KiB the threadgroup arrays are carved out of dynamic shared
  /// memory (CudaSharedMemory.h).
  LogicalResult emitDynamicShared(ThreadgroupAllocOp op,
                                  const CudaSharedLayout &layout) {
    std::string element = typeName(op.getMemref().getType().getElementType());
    std::string name = freshName(op.getMemref());
    if (layout.offsets.front().first == op.getOperation())
      line() << "extern __shared__ __align__("
             << CudaSharedLayout::kLargeAlignment << ") unsigned char "
             << kCudaDynamicShared << "[];\n";
    line() << element << " *const " << name << " = reinterpret_cast<"
           << element << " *>(" << kCudaDynamicShared << " + "
           << layout.offsetOf(op.getOperation()) << ");\n";
    return success();
  }
};

} // namespace

bool cudaUsesLinearBlocks(KernelOp kernel) {
  // Async copies are split among the lanes of a warp, which must then be
  // one simdgroup.
  return usesAsyncCopy(kernel) || usesMma(kernel) || usesPipelines(kernel) ||
         kernel
             .walk([](Operation *op) {
               return op->hasTrait<Collective>() ? WalkResult::interrupt()
                                                 : WalkResult::advance();
             })
             .wasInterrupted();
}

LogicalResult emitCuda(KernelOp kernel, raw_ostream &os) {
  return emitAvoidingNameClashes<CudaEmitter>(kernel, os);
}

} // namespace enigma
