//===- PipelineOps.cpp - Pipelines with roles -----------------------------===//
//
// Verifiers of the pipeline family (EnigmaPipelineOps.td). What they prove
// is what makes the sequential meaning and the warp-specialised schedule
// agree: producers only copy, from values every thread (and so a producer
// warpgroup) can compute; consumers never write a ring; a copy stays in
// its stage; the roles' registers and shared memory fit; and in the
// explicit form every consumer wait has a producer commit under the same
// loops, expecting exactly its copies' bytes.
//
//===----------------------------------------------------------------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"

#include "enigma/Dialect/Enigma/IR/Divergence.h"
#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Support/RoleRegisters.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/TypeSwitch.h"

#include <map>
#include <string>

using namespace mlir;
using namespace enigma;

namespace enigma {

bool usesPipelines(KernelOp kernel) {
  return !pipelineRings(kernel).empty();
}

SmallVector<PipelineRingOp> pipelineRings(KernelOp kernel) {
  SmallVector<PipelineRingOp> rings;
  for (Operation &op : kernel.getBody().front())
    if (auto ring = dyn_cast<PipelineRingOp>(op))
      rings.push_back(ring);
  return rings;
}

int64_t fragmentRegisters(Type type) {
  auto t = llvm::dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return 0;
  return (t.getNumElements() + 31) / 32;
}

namespace {

/// Left to a consumer beyond its carried fragments (addresses, counters,
/// loop state): fewer and ptxas spills or serialises the products.
constexpr int64_t kConsumerRegisterMargin = 24;
/// Shared memory of an sm_90 block, and what 1024-byte alignment of the
/// tiles may cost on top of the arrays.
constexpr int64_t kSharedLimit = 227 * 1024;
constexpr int64_t kAlignmentRoom = 1024;

unsigned elementBytes(Type t) { return (t.getIntOrFloatBitWidth() + 7) / 8; }

std::string typeText(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

std::optional<int64_t> constantOf(Value v) {
  if (Operation *def = v.getDefiningOp())
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(def))
      v = def->getOperand(0);
  APInt value;
  if (matchPattern(v, m_ConstantInt(&value)))
    return value.getSExtValue();
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Rings
//===----------------------------------------------------------------------===//

LogicalResult verifyRing(PipelineRingOp ring) {
  auto kernel = dyn_cast<KernelOp>(ring->getParentOp());
  if (!kernel)
    return ring.emitOpError("must be directly in the kernel body");
  if (ring.getBuffers().empty())
    return ring.emitOpError("needs at least one buffer");
  int64_t stages = ring.getStages();
  for (auto [i, buffer] : llvm::enumerate(ring.getBuffers())) {
    auto type = llvm::cast<MemRefType>(buffer.getType());
    if (!buffer.getDefiningOp<ThreadgroupAllocOp>() ||
        getAddressSpace(type) != AddressSpace::Threadgroup)
      return ring.emitOpError() << "buffer " << i
                                << " must be an enigma.threadgroup_alloc";
    if (!type.hasStaticShape() || type.getNumElements() % stages)
      return ring.emitOpError()
             << "buffer " << i << " has " << type.getNumElements()
             << " elements, which " << stages
             << " stages cannot share equally";
  }
  int64_t cluster = ring.getCluster();
  if (cluster != 1 && cluster != 2 && cluster != 4 && cluster != 8)
    return ring.emitOpError()
           << "cluster = " << cluster
           << ": a cluster is 1, 2, 4 or 8 threadgroups (8 is the most "
              "every sm_90 GPU allows)";
  for (PipelineRingOp other : pipelineRings(kernel))
    if (other.getProducerRegisters() != ring.getProducerRegisters() ||
        other.getConsumerRegisters() != ring.getConsumerRegisters() ||
        other.getCluster() != cluster)
      return ring.emitOpError("the rings of a kernel must have the same "
                              "roles (registers and cluster)");
  std::optional<uint64_t> threads = kernel.getRequiredThreadgroupSize();
  if (!threads || *threads % 128 || *threads + kProducerThreads > 1024)
    return ring.emitOpError()
           << "needs a threadgroup of whole warpgroups (a multiple of 128 "
              "threads, at most "
           << 1024 - kProducerThreads
           << " to leave room for the producer warpgroup) fixed by "
              "enigma.threadgroup_size"
           << (threads ? ", got " + std::to_string(*threads) : std::string());
  // setmaxnreg redistributes what the block holds from launch on (the
  // registers ptxas gives each of its threads); more would deadlock.
  const int64_t launchThreads = int64_t(*threads) + kProducerThreads;
  std::string problem = roleRegisterProblem(
      int64_t(*threads), kProducerThreads, ring.getProducerRegisters(),
      ring.getConsumerRegisters(), launchRegisterLimit(launchThreads));
  if (!problem.empty())
    return ring.emitOpError() << problem;
  int64_t shared = int64_t(ThreadgroupAllocOp::totalBytes(kernel));
  for (PipelineRingOp other : pipelineRings(kernel))
    shared += other.getBarrierBytes();
  if (shared + kAlignmentRoom > kSharedLimit)
    return ring.emitOpError()
           << "threadgroup memory and ring barriers take " << shared
           << " bytes (+ " << kAlignmentRoom << " for tile alignment); an "
           << "sm_90 threadgroup has " << kSharedLimit;
  return success();
}

//===----------------------------------------------------------------------===//
// Pipelines
//===----------------------------------------------------------------------===//

/// Whether `op` writes `buffer` (an op with unknown effects that takes it
/// counts as a writer).
bool writes(Operation *op, Value buffer) {
  if (!llvm::is_contained(op->getOperands(), buffer))
    return false;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return !op->hasTrait<OpTrait::HasRecursiveMemoryEffects>();
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  for (const MemoryEffects::EffectInstance &e : list)
    if (isa<MemoryEffects::Write>(e.getEffect()) &&
        (!e.getValue() || e.getValue() == buffer))
      return true;
  return false;
}

/// Whether no op of `kernel` writes `buffer`.
bool neverWritten(KernelOp kernel, Value buffer) {
  WalkResult walk = kernel.walk([&](Operation *op) {
    return writes(op, buffer) ? WalkResult::interrupt()
                              : WalkResult::advance();
  });
  return !walk.wasInterrupted();
}

/// Whether a producer (a warpgroup of its own on CUDA) can compute `root`:
/// kernel parameters, enclosing loops' counters, pure arithmetic and
/// uniform queries on those, and reads of buffers the kernel never writes
/// (producerMayRun). Returns the offending op or value otherwise.
std::optional<std::string> producerComputable(Value root, Operation *pipeline) {
  llvm::DenseSet<Value> seen;
  SmallVector<Value> work{root};
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
      Operation *owner = arg.getOwner()->getParentOp();
      if (isa<KernelOp>(owner))
        continue;
      if (auto loop = dyn_cast<scf::ForOp>(owner)) {
        if (arg == loop.getInductionVar()) {
          work.append({loop.getLowerBound(), loop.getUpperBound(),
                       loop.getStep()});
          continue;
        }
        return std::string("a value carried by an enclosing loop");
      }
      if (auto p = dyn_cast<PipelineOp>(owner))
        if (&p.getProducer() == arg.getOwner()->getParent())
          continue;
      return std::string("a block argument of ") +
             owner->getName().getStringRef().str();
    }
    Operation *def = v.getDefiningOp();
    if (!producerMayRun(def))
      return def->getName().getStringRef().str() +
             " (the producer runs only pure arithmetic and reads of buffers "
             "the kernel never writes)";
    if (isThreadVarying(v, SyncScope::Threadgroup))
      return def->getName().getStringRef().str() +
             " (a value that differs between threads)";
    if (auto branch = dyn_cast<scf::IfOp>(def)) {
      // A guarded read (bounds-checked mode): what the branch decides on
      // and what it yields; its diagnostics stay inside.
      unsigned k = llvm::cast<OpResult>(v).getResultNumber();
      work.push_back(branch.getCondition());
      work.push_back(branch.thenYield().getOperand(k));
      if (!branch.getElseRegion().empty())
        work.push_back(branch.elseYield().getOperand(k));
      continue;
    }
    for (Value operand : def->getOperands())
      work.push_back(operand);
  }
  return std::nullopt;
}

/// Groups of consumer warpgroups taking iterations in turn: 1 to 4 of them,
/// each of whole warpgroups, and no turns (the turns order all consumer
/// warpgroups of every iteration; a group runs only its own iterations).
LogicalResult verifyConsumerGroups(PipelineOp op) {
  int64_t groups = op.getConsumerGroups();
  if (groups < 1 || groups > 4)
    return op.emitOpError() << "consumer_groups = " << groups
                            << ": 1 to 4 groups of consumer warpgroups";
  if (groups == 1)
    return success();
  std::optional<uint64_t> threads =
      op->getParentOfType<KernelOp>().getRequiredThreadgroupSize();
  if (threads && *threads % uint64_t(128 * groups))
    return op.emitOpError()
           << "consumer_groups = " << groups << " needs a threadgroup of "
           << 128 * groups << " threads or a multiple (whole warpgroups in "
           << "every group), got " << *threads;
  WalkResult turns = op.getConsumer().walk([](Operation *inner) {
    return isa<ConsumerTurnBeginOp, ConsumerTurnEndOp>(inner)
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (turns.wasInterrupted())
    return op.emitOpError("with consumer_groups > 1 takes no consumer turns "
                          "(each group runs only its own iterations)");
  return success();
}

LogicalResult verifyPipeline(PipelineOp op) {
  PipelineRingOp ring = op.getRingOp();
  if (!ring)
    return op.emitOpError("'s ring must be an enigma.pipeline_ring");
  // Uniform control flow up to the kernel: a producer warpgroup runs the
  // same loops and branches.
  for (Operation *p = op->getParentOp(); !isa<KernelOp>(p);
       p = p->getParentOp()) {
    if (!p || isa<PipelineOp, WarpRolesOp>(p))
      return op.emitOpError("cannot be nested in another pipeline");
    if (!isa<scf::ForOp, scf::IfOp>(p))
      return op.emitOpError()
             << "may stand only in the kernel body and in loops and "
                "branches (enigma.range, enigma.if_), not in "
             << p->getName();
  }
  if (Operation *owner = findDivergentRegionOwner(op, SyncScope::Threadgroup)) {
    InFlightDiagnostic diag = op.emitOpError(
        "is under control flow that differs between threads; every thread "
        "of the threadgroup runs the pipeline");
    diag.attachNote(owner->getLoc()) << "divergent control flow is here";
    return diag;
  }
  for (Value bound : {op.getLower(), op.getUpper()})
    if (isThreadVarying(bound, SyncScope::Threadgroup))
      return op.emitOpError("bounds must be the same in every thread");
    else if (auto why = producerComputable(bound, op))
      return op.emitOpError() << "bounds depend on " << *why
                              << ", which a producer warpgroup cannot compute";

  if (failed(verifyConsumerGroups(op)))
    return failure();

  Block &producer = op.getProducer().front();
  Block &consumer = op.getConsumer().front();
  auto isIndex = [](BlockArgument a) { return a.getType().isIndex(); };
  if (producer.getNumArguments() != 2 ||
      !llvm::all_of(producer.getArguments(), isIndex))
    return op.emitOpError("'s producer region takes (index, slot): two "
                          "index arguments");
  if (consumer.getNumArguments() != 2 + op.getInits().size() ||
      !isIndex(consumer.getArgument(0)) || !isIndex(consumer.getArgument(1)))
    return op.emitOpError("'s consumer region takes (index, slot, carried "
                          "values...)");
  for (auto [i, init] : llvm::enumerate(op.getInits()))
    if (consumer.getArgument(2 + i).getType() != init.getType() ||
        op.getResult(i).getType() != init.getType())
      return op.emitOpError() << "carried value " << i << " has type "
                              << init.getType()
                              << " but its block argument or result does not";
  auto consumerYield = cast<PipelineYieldOp>(consumer.getTerminator());
  if (consumerYield.getValues().getTypes() != op.getInits().getTypes())
    return consumerYield.emitOpError("must yield the carried values (")
           << op.getInits().size() << " of the pipeline's types)";
  if (!cast<PipelineYieldOp>(producer.getTerminator()).getValues().empty())
    return op.emitOpError("'s producer region yields nothing");

  // The producer: copies into its slot and arithmetic the producer can do.
  for (Operation &inner : producer.without_terminator()) {
    if (auto copy = dyn_cast<StageCopyOp>(inner)) {
      if (copy.getRing() != op.getRing() ||
          copy.getSlot() != producer.getArgument(1))
        return copy.emitOpError("copies into the slot of its producer "
                                "region, on the pipeline's ring");
      continue;
    }
    if (!producerMayRun(&inner))
      return inner.emitOpError(
          "cannot be in a producer region: it holds only enigma.stage_copy, "
          "arithmetic and reads of buffers the kernel never writes (a "
          "producer warpgroup runs it on CUDA)");
    for (Value operand : inner.getOperands())
      if (auto why = producerComputable(operand, op))
        return inner.emitOpError() << "in a producer region uses " << *why
                                   << ", which a producer warpgroup cannot "
                                      "compute";
  }
  for (StageCopyOp copy : producer.getOps<StageCopyOp>())
    for (Value operand : copy->getOperands())
      if (operand != copy.getRing() && operand != copy.getSrc())
        if (auto why = producerComputable(operand, op))
          return copy.emitOpError() << "uses " << *why
                                    << ", which a producer warpgroup cannot "
                                       "compute";

  // The consumer never writes a ring buffer (the producer may be filling
  // it) and holds no pipeline.
  SmallVector<Value> ringBuffers;
  for (PipelineRingOp r : pipelineRings(op->getParentOfType<KernelOp>()))
    llvm::append_range(ringBuffers, r.getBuffers());
  WalkResult walk = op.getConsumer().walk([&](Operation *inner) {
    if (isa<PipelineOp>(inner)) {
      inner->emitOpError("cannot be nested in another pipeline");
      return WalkResult::interrupt();
    }
    for (Value buffer : ringBuffers)
        if (writes(inner, buffer)) {
          inner->emitOpError(
              "writes a pipeline ring's buffer in a consumer region; only "
              "the producers' enigma.stage_copy fill the stages");
          return WalkResult::interrupt();
        }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  // Carried fragments stay in the consumers' registers.
  int64_t carried = 0;
  for (Value init : op.getInits())
    carried += fragmentRegisters(init.getType());
  if (carried + kConsumerRegisterMargin > ring.getConsumerRegisters())
    return op.emitOpError()
           << "carries fragments of " << carried
           << " registers per thread; with consumer_registers = "
           << ring.getConsumerRegisters() << " fewer than "
           << kConsumerRegisterMargin << " are left for everything else";
  return success();
}

//===----------------------------------------------------------------------===//
// Stage copies
//===----------------------------------------------------------------------===//

/// The layout rules of a transposing copy (the stored tile is the box's
/// transpose), after verifyStageCopy's checks of ring, region and types.
/// The elements one stored block of `rows x bc` spans under the copy's
/// swizzle, once the swizzle is known to keep 16-byte chunks whole.
static FailureOr<int64_t> swizzledBlockExtent(StageCopyOp copy, Type element,
                                              int64_t rows, int64_t bc) {
  ArrayRef<int32_t> sw;
  if (auto s = copy.getSwizzle()) {
    sw = *s;
    if (sw.size() != 3 || sw[0] < 0 || sw[0] > 16 || sw[1] < 0 ||
        std::abs(sw[2]) < sw[0] ||
        (sw[0] > 0 &&
         std::min(sw[1], sw[1] + sw[2]) < int32_t(chunkBits(element))))
      return copy.emitOpError("swizzle must be a Swizzle(bits, base, shift) "
                              "that keeps 16-byte chunks whole");
  }
  int64_t extent = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < bc; ++c)
      extent = std::max(extent, applyMmaSwizzle(sw, r * bc + c) + 1);
  return extent;
}

static LogicalResult verifyTransposedStageCopy(StageCopyOp copy,
                                               PipelineRingOp ring,
                                               Type element) {
  if (elementBytes(element) != 4)
    return copy.emitOpError() << "'transpose' copies 32-bit elements only, "
                                 "got "
                              << typeText(element);
  if (copy.getMulticast())
    return copy.emitOpError("'transpose' and 'multicast' do not combine: "
                            "a transposing copy is not the TMA's");
  if (copy.getBoxRows() % 4 || copy.getBoxCols() % 4)
    return copy.emitOpError()
           << "'transpose' needs box sides that are multiples of 4 (it "
              "moves 4 x 4 blocks), got "
           << copy.getBoxRows() << " x " << copy.getBoxCols();
  int64_t rows = copy.getStoredRows(), cols = copy.getStoredCols();
  int64_t bc = copy.getBlockColumns(), stride = copy.getBlockElementStride();
  if (rows > 256 || bc > 256)
    return copy.emitOpError() << "stores the transposed box in blocks of "
                              << rows << " x " << bc
                              << " elements; at most 256 x 256";
  if (cols % bc || (bc * 4) % 16)
    return copy.emitOpError()
           << "stores the transposed box's " << cols
           << " columns (the box's rows) in blocks of " << bc
           << "; the block must divide them and hold whole 16-byte chunks";
  if (stride < rows * bc || (stride * 4) % 16)
    return copy.emitOpError() << "blocks of " << rows << " x " << bc
                              << " elements " << stride
                              << " apart overlap or start off 16 bytes";
  FailureOr<int64_t> extent = swizzledBlockExtent(copy, element, rows, bc);
  if (failed(extent))
    return failure();
  int64_t end = copy.getOffset() + (cols / bc - 1) * stride + *extent;
  int64_t slot = ring.getSlotElements(unsigned(copy.getBuffer()));
  if (end > slot)
    return copy.emitOpError() << "the transposed " << copy.getBoxRows()
                              << " x " << copy.getBoxCols()
                              << " box at offset " << copy.getOffset()
                              << " reaches element " << end - 1
                              << " of a stage of " << slot;
  for (Value v : {copy.getRow(), copy.getCol(), copy.getRows(), copy.getCols(),
                  copy.getLd()})
    if (isThreadVarying(v, SyncScope::Threadgroup))
      return copy.emitOpError("operands must be the same in every thread");
  return success();
}

LogicalResult verifyStageCopy(StageCopyOp copy) {
  auto ring = copy.getRing().getDefiningOp<PipelineRingOp>();
  if (!ring)
    return copy.emitOpError("'s ring must be an enigma.pipeline_ring");
  Operation *parent = copy->getParentOp();
  bool inProducer =
      (isa<PipelineOp>(parent) &&
       copy->getParentRegion() == &cast<PipelineOp>(parent).getProducer()) ||
      (copy->getParentOfType<WarpRolesOp>() &&
       copy.getSlot().getDefiningOp<RingAcquireOp>());
  if (!inProducer)
    return copy.emitOpError(
        "must be in a producer region (its slot) or follow an "
        "enigma.ring_acquire in enigma.warp_roles");
  if (copy.getBuffer() >= int64_t(ring.getBuffers().size()))
    return copy.emitOpError() << "buffer " << copy.getBuffer()
                              << ": the ring has "
                              << ring.getBuffers().size();
  Value dst = copy.getDestination();
  auto dstType = llvm::cast<MemRefType>(dst.getType());
  auto srcType = copy.getSrc().getType();
  Type element = dstType.getElementType();
  if (srcType.getElementType() != element)
    return copy.emitOpError() << "copies " << typeText(srcType.getElementType())
                              << " into a ring buffer of "
                              << typeText(element);
  AddressSpace space = getAddressSpace(srcType);
  if (space == AddressSpace::Threadgroup || space == AddressSpace::Thread)
    return copy.emitOpError("copies from a device buffer only");
  if (copy.getTranspose())
    return verifyTransposedStageCopy(copy, ring, element);
  unsigned bytes = elementBytes(element);
  int64_t bc = copy.getBlockColumns(), stride = copy.getBlockElementStride();
  if (copy.getBoxRows() > 256 || bc > 256)
    return copy.emitOpError() << "box blocks of " << copy.getBoxRows()
                              << " x " << bc
                              << " elements; at most 256 x 256";
  if (copy.getBoxCols() % bc)
    return copy.emitOpError() << "stores " << copy.getBoxCols()
                              << " columns in blocks of " << bc
                              << "; the block must divide them";
  if ((bc * bytes) % 16)
    return copy.emitOpError() << "block rows of " << bc << " elements are "
                              << bc * bytes
                              << " bytes; they must be whole 16-byte chunks";
  if (stride < copy.getBoxRows() * bc || (stride * bytes) % 16)
    return copy.emitOpError() << "blocks of " << copy.getBoxRows() << " x "
                              << bc << " elements " << stride
                              << " apart overlap or start off 16 bytes";
  FailureOr<int64_t> extent =
      swizzledBlockExtent(copy, element, copy.getBoxRows(), bc);
  if (failed(extent))
    return failure();
  int64_t end =
      copy.getOffset() + (copy.getBoxCols() / bc - 1) * stride + *extent;
  int64_t slot = ring.getSlotElements(unsigned(copy.getBuffer()));
  if (end > slot)
    return copy.emitOpError() << "the " << copy.getBoxRows() << " x "
                              << copy.getBoxCols() << " box at offset "
                              << copy.getOffset() << " reaches element "
                              << end - 1 << " of a stage of " << slot;
  if (copy.getMulticast()) {
    int64_t cluster = ring.getCluster();
    if (cluster < 2)
      return copy.emitOpError("'multicast' needs a ring with a cluster of "
                              "2 or more threadgroups");
    if (copy.getBoxRows() % (8 * cluster))
      return copy.emitOpError()
             << "'multicast' splits the " << copy.getBoxRows()
             << " rows among " << cluster
             << " threadgroups in shares of whole 8-row swizzle periods";
  }
  for (Value v : {copy.getRow(), copy.getCol(), copy.getRows(), copy.getCols(),
                  copy.getLd()})
    if (isThreadVarying(v, SyncScope::Threadgroup))
      return copy.emitOpError("operands must be the same in every thread");
  return success();
}

//===----------------------------------------------------------------------===//
// The explicit form
//===----------------------------------------------------------------------===//

/// A description of `v` that is equal for equal computations in the two
/// regions of a warp_roles op (they are clones of one program).
class Fingerprints {
public:
  explicit Fingerprints(Operation *roles) : roles(roles) {}

  std::string of(Value v, int depth = 0) {
    if (depth > 24)
      return "?";
    auto it = memo.find(v);
    if (it != memo.end())
      return it->second;
    std::string out;
    llvm::raw_string_ostream os(out);
    if (std::optional<int64_t> c = constantOf(v)) {
      os << *c;
    } else if (!roles->isAncestor(v.getParentRegion()->getParentOp())) {
      // Defined before the roles split: the same value in both.
      if (auto arg = llvm::dyn_cast<BlockArgument>(v))
        os << "%arg" << arg.getArgNumber();
      else
        os << "%" << v.getAsOpaquePointer();
    } else if (auto arg = llvm::dyn_cast<BlockArgument>(v)) {
      Operation *owner = arg.getOwner()->getParentOp();
      os << owner->getName().getStringRef() << "#" << arg.getArgNumber()
         << "@" << depthOf(owner);
    } else {
      Operation *def = v.getDefiningOp();
      os << def->getName().getStringRef() << def->getAttrDictionary() << "(";
      for (Value operand : def->getOperands())
        os << of(operand, depth + 1) << ",";
      os << ")";
    }
    return memo[v] = out;
  }

  /// The loops and branches around `op` inside the roles, outermost first.
  std::string skeleton(Operation *op) {
    std::string out;
    for (Operation *p = op->getParentOp(); p && p != roles;
         p = p->getParentOp()) {
      std::string here;
      if (auto loop = dyn_cast<scf::ForOp>(p))
        here = "loop [" + of(loop.getLowerBound()) + ", " +
               of(loop.getUpperBound()) + ") step " + of(loop.getStep());
      else if (auto branch = dyn_cast<scf::IfOp>(p))
        here = std::string("if ") + of(branch.getCondition()) +
               (op->getParentRegion() == &branch.getElseRegion() ? " (else)"
                                                                 : "");
      else
        here = p->getName().getStringRef().str();
      out = out.empty() ? here : here + " / " + out;
    }
    return out.empty() ? "the top of its role" : out;
  }

private:
  int depthOf(Operation *op) {
    int d = 0;
    for (Operation *p = op; p && p != roles; p = p->getParentOp())
      ++d;
    return d;
  }
  Operation *roles;
  llvm::DenseMap<Value, std::string> memo;
};

LogicalResult verifyWarpRoles(WarpRolesOp roles) {
  if (!isa<KernelOp>(roles->getParentOp()))
    return roles.emitOpError("must be directly in the kernel body");
  // Every consumer wait on a ring needs a producer commit on it under the
  // same loops, as often: a wait without one never completes.
  Fingerprints prints(roles);
  std::map<std::pair<void *, std::string>, int> balance;
  std::map<std::pair<void *, std::string>, Operation *> example;
  roles.getProducer().walk([&](RingCommitOp commit) {
    auto key = std::make_pair(commit.getRing().getAsOpaquePointer(),
                              prints.skeleton(commit));
    ++balance[key];
    example.emplace(key, commit);
  });
  roles.getConsumer().walk([&](RingWaitOp wait) {
    auto key = std::make_pair(wait.getRing().getAsOpaquePointer(),
                              prints.skeleton(wait));
    --balance[key];
    example.emplace(key, wait);
  });
  // Waits without commits first: they are what hangs the consumers.
  for (auto &[key, count] : balance)
    if (count < 0)
      return example[key]->emitOpError()
             << "waits for a phase no producer arrives at: the consumers "
                "wait "
             << -count << " more time(s) per pass of " << key.second
             << " than the producer commits there";
  for (auto &[key, count] : balance) {
    if (count == 0)
      continue;
    Operation *op = example[key];
    return op->emitOpError()
           << "commits " << count << " more stage(s) per pass of "
           << key.second
           << " than the consumers wait for: the producer would wait for "
              "empty stages forever";
  }
  return success();
}

LogicalResult verifyCommit(RingCommitOp commit) {
  if (!commit->getParentOfType<WarpRolesOp>() ||
      !commit->getParentOfType<WarpRolesOp>().getProducer().isAncestor(
          commit->getParentRegion()))
    return commit.emitOpError("belongs in the producer region of "
                              "enigma.warp_roles");
  auto acquire = commit.getSlot().getDefiningOp<RingAcquireOp>();
  if (!acquire || acquire.getRing() != commit.getRing() ||
      acquire->getBlock() != commit->getBlock())
    return commit.emitOpError("commits a slot an enigma.ring_acquire of its "
                              "ring gave in the same block");
  int64_t bytes = 0;
  for (Operation *op = acquire->getNextNode(); op && op != commit;
       op = op->getNextNode())
    if (auto copy = dyn_cast<StageCopyOp>(op))
      if (copy.getSlot() == commit.getSlot())
        bytes += copy.getTransactionBytes();
  if (bytes != commit.getBytes())
    return commit.emitOpError()
           << "expects " << commit.getBytes()
           << " bytes of copies, but the copies into its slot write "
           << bytes;
  return success();
}

template <class OpT>
LogicalResult checkRole(OpT op, bool producer) {
  auto roles = op->template getParentOfType<WarpRolesOp>();
  Region &region = producer ? roles.getProducer() : roles.getConsumer();
  if (!roles || !region.isAncestor(op->getParentRegion()))
    return op.emitOpError() << "belongs in the "
                            << (producer ? "producer" : "consumer")
                            << " region of enigma.warp_roles";
  if (!op.getRing().template getDefiningOp<PipelineRingOp>())
    return op.emitOpError("'s ring must be an enigma.pipeline_ring");
  return success();
}

} // namespace

bool producerMayRun(Operation *op) {
  if (isa<scf::IfOp, scf::YieldOp>(op)) {
    for (Region &region : op->getRegions())
      for (Operation &inner : region.getOps())
        if (!producerMayRun(&inner))
          return false;
    return true;
  }
  if (op->getNumRegions())
    return false;
  if (isMemoryEffectFree(op))
    return true;
  auto kernel = op->getParentOfType<KernelOp>();
  if (!kernel)
    return false;
  auto isRecord = [&](Value v) {
    auto arg = llvm::dyn_cast_or_null<BlockArgument>(v);
    return arg && arg.getOwner()->getParentOp() == kernel.getOperation() &&
           kernel.getArgAttr(arg.getArgNumber(), "enigma.bounds_record");
  };
  // Bounds-checked mode's diagnostics (stores and atomics on its record,
  // whatever effects they declare) may run in any role.
  bool touches = false, onlyRecord = true;
  for (Value operand : op->getOperands())
    if (isa<MemRefType>(operand.getType())) {
      touches = true;
      onlyRecord = onlyRecord && isRecord(operand);
    }
  if (touches && onlyRecord)
    return true;
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> list;
  effects.getEffects(list);
  for (const MemoryEffects::EffectInstance &e : list) {
    auto arg = llvm::dyn_cast_or_null<BlockArgument>(e.getValue());
    if (!arg || arg.getOwner()->getParentOp() != kernel.getOperation())
      return false;
    if (isRecord(arg))
      continue;
    if (!isa<MemoryEffects::Read>(e.getEffect()) || !neverWritten(kernel, arg))
      return false;
  }
  return true;
}

LogicalResult verifyPipelineOp(Operation *op) {
  if (!op->getParentOfType<KernelOp>())
    return op->emitOpError("must be inside an enigma.kernel");
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([](PipelineRingOp ring) { return verifyRing(ring); })
      .Case([](PipelineOp pipeline) { return verifyPipeline(pipeline); })
      .Case([](StageCopyOp copy) { return verifyStageCopy(copy); })
      .Case([](WarpRolesOp roles) { return verifyWarpRoles(roles); })
      .Case([](RingCommitOp commit) { return verifyCommit(commit); })
      .Case([](RingAcquireOp acquire) { return checkRole(acquire, true); })
      .Case([](RingWaitOp wait) { return checkRole(wait, false); })
      .Case([](RingReleaseOp release) { return checkRole(release, false); })
      .Default([](Operation *) { return success(); });
}

} // namespace enigma

int64_t PipelineRingOp::getSlotElements(unsigned i) {
  auto type = llvm::cast<MemRefType>(getBuffers()[i].getType());
  return type.getNumElements() / getStages();
}

PipelineRingOp PipelineOp::getRingOp() {
  return getRing().getDefiningOp<PipelineRingOp>();
}

int64_t StageCopyOp::getBytes() {
  Type element = getSrc().getType().getElementType();
  return getBoxRows() * getBoxCols() * int64_t(elementBytes(element));
}

Value StageCopyOp::getDestination() {
  auto ring = getRing().getDefiningOp<PipelineRingOp>();
  if (!ring || getBuffer() >= int64_t(ring.getBuffers().size()))
    return {};
  return ring.getBuffers()[getBuffer()];
}

#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.cpp.inc"

void EnigmaDialect::registerPipelineOps() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.cpp.inc"
      >();
}
