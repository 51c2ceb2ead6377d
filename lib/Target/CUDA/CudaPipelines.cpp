//===- CudaPipelines.cpp - Rings, roles and stage copies in CUDA ----------===//
#include "CudaPipelines.h"

#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"
#include "enigma/Support/RoleRegisters.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;

namespace enigma {

bool inConsumerRole(Operation *op) {
  auto roles = op->getParentOfType<WarpRolesOp>();
  return roles && roles.getConsumer().isAncestor(op->getParentRegion());
}

namespace {

std::string swizzleArgs(std::optional<ArrayRef<int32_t>> sw) {
  if (!sw || sw->size() != 3)
    return "0, 0, 0";
  return std::to_string((*sw)[0]) + ", " + std::to_string((*sw)[1]) + ", " +
         std::to_string((*sw)[2]);
}

/// Whether a copy into `ring` transposes: its full barriers then count the
/// producer warpgroup's 128 arrivals, one per thread (each after its own
/// stores and proxy fence), instead of one.
bool transposingRing(PipelineRingOp ring) {
  bool found = false;
  ring->getParentOp()->walk([&](StageCopyOp copy) {
    if (copy.getRing() == ring.getResult() && copy.getTranspose())
      found = true;
  });
  return found;
}

/// Whether the whole producer warpgroup runs the producer region (a ring
/// of the kernel transposes), not only its first warp.
bool wholeProducerWarpgroup(Operation *op) {
  auto kernel = op->getParentOfType<KernelOp>();
  return kernel && llvm::any_of(pipelineRings(kernel), transposingRing);
}

class PipelinePrinter {
public:
  PipelinePrinter(CFamilyEmitter &e, const CudaPipelineContext &c)
      : e(e), c(c) {}

  std::string lane() const { return "(" + c.threadIndex + " & 31u)"; }
  /// The thread's index in the producer warpgroup (0 to 127).
  std::string producerThread() const {
    return "(" + c.threadIndex + " - " + std::to_string(c.consumerThreads) +
           "u)";
  }

  std::string check(Operation *op) {
    auto site = op->getAttrOfType<IntegerAttr>("enigma.bounds_site");
    if (c.boundsRecord.empty() || !site)
      return "";
    return ", &" + std::string("enigma_ring_check") +
           std::to_string(site.getInt());
  }

  /// Declares the bounds-check site of a wait (bounds-checked mode).
  void declareCheck(Operation *op) {
    auto site = op->getAttrOfType<IntegerAttr>("enigma.bounds_site");
    if (c.boundsRecord.empty() || !site)
      return;
    e.line() << "const EnigmaRingCheck enigma_ring_check" << site.getInt()
             << " = {(uint *)" << c.boundsRecord << ", " << site.getInt()
             << "u};\n";
  }

  /// The ring's copies that may use the TMA (a transposing copy never
  /// does).
  SmallVector<StageCopyOp> tmaCopies(PipelineRingOp ring) {
    SmallVector<StageCopyOp> copies;
    ring->getParentOp()->walk([&](StageCopyOp copy) {
      if (copy.getRing() == ring.getResult() && !copy.getTranspose())
        copies.push_back(copy);
    });
    return copies;
  }

  /// The bits of the tensor maps of `copies` when every one has a map;
  /// nothing when a copy has none or there is no copy (no TMA at all).
  std::optional<unsigned> mapMask(ArrayRef<StageCopyOp> copies) {
    if (copies.empty())
      return std::nullopt;
    unsigned mask = 0;
    for (StageCopyOp copy : copies) {
      auto map = c.maps.mapOf.find(copy);
      if (map == c.maps.mapOf.end())
        return std::nullopt;
      mask |= 1u << map->second;
    }
    return mask;
  }

  /// Whether every copy of the ring has a tensor map.
  bool mayUseTma(PipelineRingOp ring) {
    return mapMask(tmaCopies(ring)).has_value();
  }

  /// The runtime check that the ring's copies go through the TMA: their
  /// tensor maps valid and the buffers aligned ("false" without maps).
  std::string tmaCondition(PipelineRingOp ring) {
    SmallVector<StageCopyOp> copies = tmaCopies(ring);
    std::optional<unsigned> mask = mapMask(copies);
    if (!mask)
      return "false";
    std::string out = "(enigma_tmap_valid & " + std::to_string(*mask) +
                      "u) == " + std::to_string(*mask) + "u";
    for (auto [i, buffer] : llvm::enumerate(ring.getBuffers())) {
      bool swizzled = llvm::any_of(copies, [&](StageCopyOp copy) {
        return copy.getBuffer() == int64_t(i) && copy.getSwizzle() &&
               (*copy.getSwizzle())[0] != 0;
      });
      out += " && enigma_ring_aligned(" + e.expr(buffer) + ", " +
             (swizzled ? "1024u" : "128u") + ")";
    }
    return out;
  }

  LogicalResult ring(PipelineRingOp ring) {
    std::string name = e.freshName(ring.getResult());
    int64_t stages = ring.getStages();
    e.line() << "__shared__ __align__(8) unsigned long long " << name
             << "_bars[" << 2 * stages << "];\n";
    e.line() << "EnigmaRing<" << stages << "> " << name
             << " = enigma_ring_begin<" << stages << ", " << c.cluster << ">("
             << name << "_bars, " << c.consumerThreads / 32 << "u, "
             << c.threadIndex << ", " << tmaCondition(ring)
             << (transposingRing(ring)
                     ? ", " + std::to_string(kProducerThreads) + "u"
                     : std::string())
             << ");\n";
    return success();
  }

  LogicalResult roles(WarpRolesOp roles) {
    auto ring = pipelineRings(roles->getParentOfType<KernelOp>()).front();
    e.line() << "if (" << c.threadIndex << " >= " << c.consumerThreads
             << "u) { // the producer warpgroup\n";
    e.indentMore();
    e.line() << "enigma_producer_registers<" << ring.getProducerRegisters()
             << ">();\n";
    if (wholeProducerWarpgroup(roles)) {
      // A transposing copy: all four warps copy, the first alone issues
      // the other copies (transposeProducer).
      if (failed(e.emitBlock(roles.getProducer().front())))
        return failure();
    } else {
      e.line() << "if (" << c.threadIndex << " < " << c.consumerThreads + 32
               << "u) { // its first warp issues the copies\n";
      e.indentMore();
      if (failed(producer(roles)))
        return failure();
      e.indentLess();
      e.line() << "}\n";
    }
    e.indentLess();
    e.line() << "} else { // the consumers: the threadgroup's threads\n";
    e.indentMore();
    // The block holds launchRegisterLimit registers per thread from launch
    // on; the consumers raise theirs to their count, or lower it.
    e.line() << "enigma_consumer_registers<" << ring.getConsumerRegisters()
             << ", "
             << launchRegisterLimit(int64_t(c.consumerThreads) +
                                    kProducerThreads)
             << ">();\n";
    bool turns = hasConsumerTurns(roles);
    if (turns)
      consumerTurns("open");
    if (failed(e.emitBlock(roles.getConsumer().front())))
      return failure();
    if (turns)
      consumerTurns("close");
    e.indentLess();
    e.line() << "}\n";
    e.line() << "enigma_ring_end<" << c.cluster << ">();\n";
    return success();
  }

  /// The producer region, run by the producer's first warp. Where every
  /// ring may use the TMA it is printed twice: when the runtime's tensor
  /// maps are valid, run by the warp's first thread alone with copies that
  /// only issue TMA boxes (the warp's instructions per stage bound small
  /// blocks' K steps), else by the whole warp with the cp.async fallback.
  LogicalResult producer(WarpRolesOp roles) {
    Block &body = roles.getProducer().front();
    auto rings = pipelineRings(roles->getParentOfType<KernelOp>());
    bool tma = c.tmaProducer && llvm::all_of(rings, [&](PipelineRingOp ring) {
      return mayUseTma(ring);
    });
    if (!tma)
      return e.emitBlock(body);
    std::string condition;
    for (PipelineRingOp ring : rings)
      condition += (condition.empty() ? "" : " && ") +
                   e.expr(ring.getResult()) + ".tma";
    e.line() << "if (" << condition << ") { // through the TMA\n";
    e.indentMore();
    e.line() << "if (" << lane() << " == 0u) {\n";
    e.indentMore();
    *c.tmaProducer = true;
    LogicalResult printed = e.emitBlock(body);
    *c.tmaProducer = false;
    if (failed(printed))
      return failure();
    e.indentLess();
    e.line() << "}\n";
    e.indentLess();
    e.line() << "} else { // cp.async by the warp\n";
    e.indentMore();
    if (failed(e.emitBlock(body)))
      return failure();
    e.indentLess();
    e.line() << "}\n";
    return success();
  }

  /// A transposing copy, by the whole producer warpgroup.
  LogicalResult transposedCopy(StageCopyOp copy) {
    auto ring = copy.getRing().getDefiningOp<PipelineRingOp>();
    int64_t slot = ring.getSlotElements(unsigned(copy.getBuffer()));
    std::string base = "(ulong)" + e.expr(copy.getSlot()) + " * " +
                       std::to_string(slot) + "ul + " +
                       std::to_string(copy.getOffset()) + "ul";
    // 4 x 4 blocks in flight per thread (16 registers each): what the
    // producer's registers hold beside its loops and addresses (without
    // spills on the TF32 GEMM's 128 x 256 stages at 120 registers).
    int64_t registers = ring.getProducerRegisters();
    int batch = registers >= 120 ? 4 : registers >= 88 ? 2 : 1;
    e.line() << "enigma_stage_copy_transposed<" << copy.getBoxRows() << ", "
             << copy.getBoxCols() << ", " << copy.getBlockColumns() << ", "
             << copy.getBlockElementStride() << ", "
             << swizzleArgs(copy.getSwizzle()) << ", " << batch << ">("
             << e.expr(copy.getDestination()) << ", " << base << ", "
             << e.expr(copy.getSrc()) << ", (ulong)" << e.expr(copy.getRow())
             << ", (ulong)" << e.expr(copy.getCol()) << ", (ulong)"
             << e.expr(copy.getRows()) << ", (ulong)" << e.expr(copy.getCols())
             << ", (ulong)" << e.expr(copy.getLd()) << ", "
             << producerThread() << ");\n";
    return success();
  }

  /// In a producer run by the whole warpgroup, its first warp alone issues
  /// the other copies (TMA or cp.async), as without a transposing copy.
  template <class Print> LogicalResult firstWarpOnly(Operation *op,
                                                     Print print) {
    if (!wholeProducerWarpgroup(op))
      return print();
    e.line() << "if (" << producerThread() << " < 32u) {\n";
    e.indentMore();
    LogicalResult result = print();
    e.indentLess();
    e.line() << "}\n";
    return result;
  }

  /// enigma_turns_<what> / enigma_turn_<what> of the consumer warpgroups
  /// (docs/design/consumer-turns.md).
  void consumerTurns(const char *what) {
    e.line() << "enigma_turns_" << what << "<" << c.consumerThreads / 128
             << "u>(" << c.threadIndex << ");\n";
  }
  LogicalResult consumerTurn(Operation *op, const char *what) {
    if (!inConsumerRole(op))
      return op->emitOpError("must be in the consumer role of a kernel "
                             "split into warp roles");
    // The wait's barrier number depends (by 0) on the values the turn
    // waits for: the assembler must compute them first.
    std::string after = "0u";
    if (auto begin = dyn_cast<ConsumerTurnBeginOp>(op))
      for (Value v : begin.getAfter())
        after = "enigma_turn_after(" + after + ", " + e.expr(v) + ")";
    e.line() << "enigma_turn_" << what << "<" << c.consumerThreads / 128
             << "u>(" << c.threadIndex
             << (isa<ConsumerTurnBeginOp>(op) ? ", " + after : "") << ");\n";
    return success();
  }

  LogicalResult copy(StageCopyOp copy) {
    auto ring = copy.getRing().getDefiningOp<PipelineRingOp>();
    auto map = c.maps.mapOf.find(copy);
    std::string mapArg = map == c.maps.mapOf.end()
                             ? std::string("nullptr")
                             : "&enigma_tmap" + std::to_string(map->second);
    int64_t slot = ring.getSlotElements(unsigned(copy.getBuffer()));
    std::string base = "(ulong)" + e.expr(copy.getSlot()) + " * " +
                       std::to_string(slot) + "ul + " +
                       std::to_string(copy.getOffset()) + "ul";
    if (c.tmaProducer && *c.tmaProducer) {
      e.line() << "enigma_stage_copy_tma<" << copy.getBoxRows() << ", "
               << copy.getBoxCols() << ", " << copy.getBlockColumns() << ", "
               << copy.getBlockElementStride() << ", "
               << (copy.getMulticast() ? "true" : "false") << ", "
               << c.cluster << ">(" << e.expr(copy.getRing()) << ", (uint)"
               << e.expr(copy.getSlot()) << ", " << mapArg << ", "
               << e.expr(copy.getDestination()) << ", " << base
               << ", (ulong)" << e.expr(copy.getRow()) << ", (ulong)"
               << e.expr(copy.getCol()) << ");\n";
      return success();
    }
    e.line() << "enigma_stage_copy<" << copy.getBoxRows() << ", "
             << copy.getBoxCols() << ", " << copy.getBlockColumns() << ", "
             << copy.getBlockElementStride() << ", "
             << swizzleArgs(copy.getSwizzle()) << ", "
             << (copy.getMulticast() ? "true" : "false") << ", " << c.cluster
             << ">(" << e.expr(copy.getRing()) << ", (uint)"
             << e.expr(copy.getSlot()) << ", " << mapArg << ", "
             << e.expr(copy.getDestination()) << ", " << base << ", "
             << e.expr(copy.getSrc()) << ", (ulong)" << e.expr(copy.getRow())
             << ", (ulong)" << e.expr(copy.getCol()) << ", (ulong)"
             << e.expr(copy.getRows()) << ", (ulong)" << e.expr(copy.getCols())
             << ", (ulong)" << e.expr(copy.getLd()) << ", " << lane()
             << ");\n";
    return success();
  }

  CFamilyEmitter &e;
  const CudaPipelineContext &c;
};

} // namespace

LogicalResult emitCudaPipelineOp(CFamilyEmitter &e, Operation *op,
                                 const CudaPipelineContext &context,
                                 bool &handled) {
  handled = true;
  PipelinePrinter p(e, context);
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](PipelineRingOp ring) { return p.ring(ring); })
      .Case([&](WarpRolesOp roles) { return p.roles(roles); })
      .Case([&](PipelineYieldOp) { return success(); })
      .Case([&](StageCopyOp copy) {
        if (copy.getTranspose())
          return p.transposedCopy(copy);
        return p.firstWarpOnly(copy, [&] { return p.copy(copy); });
      })
      .Case([&](RingAcquireOp acquire) {
        p.declareCheck(acquire);
        e.define(acquire.getSlot(), "enigma_ring_acquire(" +
                                        e.expr(acquire.getRing()) +
                                        p.check(acquire) + ")");
        return success();
      })
      .Case([&](RingCommitOp commit) {
        if (transposingRing(commit.getRing().getDefiningOp<PipelineRingOp>())) {
          e.line() << "enigma_ring_commit_transposed("
                   << e.expr(commit.getRing()) << ", (uint)"
                   << e.expr(commit.getSlot()) << ", " << commit.getBytes()
                   << "u, " << p.producerThread() << ");\n";
          return success();
        }
        if (context.tmaProducer && *context.tmaProducer) {   // one thread
          e.line() << "enigma_ring_commit_tma(" << e.expr(commit.getRing())
                   << ", (uint)" << e.expr(commit.getSlot()) << ", "
                   << commit.getBytes() << "u);\n";
          return success();
        }
        // Every producer thread counts the commit; the one whose "lane"
        // is 0 arrives (with a whole producer warpgroup: its thread 0).
        e.line() << "enigma_ring_commit(" << e.expr(commit.getRing())
                 << ", (uint)" << e.expr(commit.getSlot()) << ", "
                 << commit.getBytes() << "u, "
                 << (wholeProducerWarpgroup(commit) ? p.producerThread()
                                                    : p.lane())
                 << ");\n";
        return success();
      })
      .Case([&](RingWaitOp wait) {
        p.declareCheck(wait);
        e.define(wait.getSlot(), "enigma_ring_wait(" + e.expr(wait.getRing()) +
                                     p.check(wait) + ")");
        return success();
      })
      .Case([&](RingReleaseOp release) {
        e.line() << "enigma_ring_release<" << context.cluster << ">("
                 << e.expr(release.getRing()) << ", " << p.lane() << ");\n";
        return success();
      })
      .Case([&](ConsumerTurnBeginOp turn) {
        return p.consumerTurn(turn, "begin");
      })
      .Case([&](ConsumerTurnEndOp turn) { return p.consumerTurn(turn, "end"); })
      .Case([&](PipelineOp pipeline) {
        return pipeline.emitOpError("must be split into roles before the "
                                    "CUDA text is printed");
      })
      .Default([&](Operation *) {
        handled = false;
        return success();
      });
}

} // namespace enigma
