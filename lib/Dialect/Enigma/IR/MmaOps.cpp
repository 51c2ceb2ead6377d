//===- MmaOps.cpp - The matrix multiply-accumulate family -----------------===//
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaFloat8Ops.h"
#include "enigma/Dialect/Enigma/IR/Divergence.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/Matchers.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

#include <algorithm>
#include <string>

using namespace mlir;
using namespace enigma;

namespace enigma {

bool isFragmentOp(Operation *op) {
  return isa<MmaFillOp, MmaIotaOp, MmaLoadOp, MmaGatherOp, MmaStoreOp, MmaOp,
             MmaRegOp, MmaWaitOp, MmaReduceRowsOp, MmaBroadcastRowsOp,
             MmaHalvesOp>(op);
}

bool usesFragments(KernelOp kernel) {
  return kernel
      .walk([](Operation *op) {
        return isFragmentOp(op) ? WalkResult::interrupt()
                                : WalkResult::advance();
      })
      .wasInterrupted();
}

bool usesWarpgroupProducts(KernelOp kernel) {
  return kernel
      .walk([](Operation *op) {
        auto mma = dyn_cast<MmaOp>(op);
        auto reg = dyn_cast<MmaRegOp>(op);
        return (mma && mma.getWarpgroup()) || (reg && reg.getWarpgroup())
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

Value asynchronousProductAcc(Operation *op) {
  if (auto mma = dyn_cast<MmaOp>(op); mma && mma.getAsynchronous())
    return mma.getAcc();
  if (auto reg = dyn_cast<MmaRegOp>(op); reg && reg.getAsynchronous())
    return reg.getAcc();
  return Value();
}

namespace {

/// Largest fragment: 256 elements per lane (CUDA registers spill beyond).
constexpr int64_t kMaxFragmentElements = 32 * 256;

unsigned elementBytes(Type t) {
  return t.isInteger(1) ? 1 : (t.getIntOrFloatBitWidth() + 7) / 8;
}

std::string typeText(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << t;
  return s;
}

/// A fragment is `tensor<MxNxT>` with M and N multiples of 16 and at most
/// kMaxFragmentElements elements; a row vector `tensor<MxT>`, M a multiple
/// of 16.
LogicalResult checkShape(Operation *op, Type type, const char *what) {
  auto t = llvm::dyn_cast<RankedTensorType>(type);
  if (!t || !t.hasStaticShape())
    return op->emitOpError() << what << " must have a static shape";
  ArrayRef<int64_t> shape = t.getShape();
  for (int64_t d : shape)
    if (d <= 0 || d % 16 != 0)
      return op->emitOpError()
             << what << " " << typeText(type)
             << ": fragment sides must be positive multiples of 16";
  if (t.getNumElements() > kMaxFragmentElements)
    return op->emitOpError()
           << what << " " << typeText(type) << " has " << t.getNumElements()
           << " elements; a fragment holds at most " << kMaxFragmentElements
           << " (256 per lane)";
  return success();
}

LogicalResult checkSwizzle(Operation *op, std::optional<ArrayRef<int32_t>> sw,
                           Type element, const char *what) {
  if (!sw)
    return success();
  if (sw->size() != 3)
    return op->emitOpError() << what
                             << " must be [bits, base, shift], got "
                             << sw->size() << " values";
  int32_t bits = (*sw)[0], base = (*sw)[1], shift = (*sw)[2];
  if (bits < 0 || bits > 16 || base < 0 || base > 24 ||
      std::abs(shift) < bits || std::abs(shift) > 24)
    return op->emitOpError()
           << what << " Swizzle(" << bits << ", " << base << ", " << shift
           << ") is not valid: need 0 <= bits <= 16, base >= 0 and "
              "|shift| >= bits";
  // A negative shift reads the bits below its base: those must stay above
  // the chunk's too.
  const unsigned chunk = chunkBits(element);
  if (bits > 0 && std::min(base, base + shift) < int32_t(chunk))
    return op->emitOpError()
           << what << " Swizzle(" << bits << ", " << base << ", " << shift
           << ") splits 16-byte chunks of " << typeText(element)
           << "; its base" << (shift < 0 ? " + shift" : "")
           << " must be at least " << chunk;
  return success();
}

/// The value of a constant index, also through the builder's index casts
/// (the verifier runs before the canonicalizer folds them).
std::optional<int64_t> constantIndex(Value v) {
  if (Operation *def = v.getDefiningOp())
    if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(def))
      v = def->getOperand(0);
  APInt value;
  if (matchPattern(v, m_ConstantInt(&value)))
    return value.getZExtValue();
  return std::nullopt;
}

/// Offset of stored element (sr, sc) of a tile with pitch `ld`, in column
/// blocks `blockStride` apart when that is positive (enigma.mma).
int64_t storedOffset(int64_t sr, int64_t sc, int64_t ld, int64_t blockStride) {
  return blockStride > 0 ? (sc / ld) * blockStride + sr * ld + sc % ld
                         : sr * ld + sc;
}

/// One past the largest element of a rows x cols tile at `offset` with
/// pitch `ld` (transposed: columns `ld` apart), swizzled.
int64_t tileExtent(std::optional<ArrayRef<int32_t>> sw, int64_t offset,
                   int64_t rows, int64_t cols, int64_t ld, bool transpose,
                   int64_t blockStride = 0) {
  ArrayRef<int32_t> swizzle = sw ? *sw : ArrayRef<int32_t>();
  int64_t extent = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      int64_t at = offset + (transpose ? storedOffset(c, r, ld, blockStride)
                                       : storedOffset(r, c, ld, blockStride));
      extent = std::max(extent, applyMmaSwizzle(swizzle, at) + 1);
    }
  return extent;
}

/// A threadgroup operand tile of the product: threadgroup memory, the pitch
/// covers the stored row (or its blocks do not overlap) and keeps rows
/// 16-byte aligned, the swizzle keeps chunks, and a constant placement fits
/// the allocation.
LogicalResult checkOperandTile(Operation *op, const char *name, Value memref,
                               Value base, Value offset, int64_t rows,
                               int64_t cols, int64_t ld, bool transpose,
                               std::optional<ArrayRef<int32_t>> sw,
                               int64_t blockStride = 0) {
  auto mem = llvm::cast<MemRefType>(memref.getType());
  Type element = mem.getElementType();
  if (getAddressSpace(mem) != AddressSpace::Threadgroup)
    return op->emitOpError() << "operand " << name
                             << " must be in threadgroup memory";
  int64_t storedRows = transpose ? cols : rows;
  int64_t stored = transpose ? rows : cols;
  if (blockStride > 0 && blockStride < storedRows * ld)
    return op->emitOpError()
           << "operand " << name << ": blocks of " << storedRows << " x "
           << ld << " elements are " << blockStride
           << " apart; they would overlap";
  if (blockStride == 0 && ld < stored)
    return op->emitOpError()
           << "operand " << name << ": its pitch " << ld
           << " is shorter than a stored row of " << stored << " elements";
  if (ld * elementBytes(element) % 16 != 0)
    return op->emitOpError() << "operand " << name << ": its pitch " << ld
                             << " must be a multiple of 16 bytes ("
                             << 16 / elementBytes(element) << " elements)";
  std::string what = std::string("operand ") + name + " swizzle";
  if (failed(checkSwizzle(op, sw, element, what.c_str())))
    return failure();
  for (Value v : {base, offset})
    if (isThreadVarying(v, SyncScope::Simdgroup))
      return op->emitOpError() << "operand " << name
                               << ": its offsets must be the same in every "
                                  "lane of the simdgroup";
  std::optional<int64_t> b = constantIndex(base), o = constantIndex(offset);
  if (b && o && mem.hasStaticShape()) {
    int64_t end = *b + tileExtent(sw, *o, storedRows, stored, ld, false,
                                  blockStride);
    if (*b < 0 || *o < 0 || end > mem.getNumElements())
      return op->emitOpError()
             << "operand " << name << ": the " << rows << " x " << cols
             << " tile reaches element " << end - 1
             << " of a threadgroup array of " << mem.getNumElements();
  }
  return success();
}

/// Every thread of `scope` must reach `op`: an error naming the divergent
/// control flow otherwise.
LogicalResult checkConvergent(Operation *op, SyncScope scope,
                              const char *message) {
  Operation *owner = findDivergentRegionOwner(op, scope);
  if (!owner)
    return success();
  InFlightDiagnostic diag = op->emitOpError(message);
  attachDivergenceNotes(diag, owner, scope);
  return diag;
}

LogicalResult checkUniform(Operation *op, ValueRange values, SyncScope scope,
                           const char *what) {
  for (Value v : values)
    if (v && isThreadVarying(v, scope))
      return op->emitOpError()
             << what << " must be the same in every "
             << (scope == SyncScope::Simdgroup   ? "lane of the simdgroup"
                 : scope == SyncScope::Warpgroup ? "thread of the warpgroup"
                                                 : "thread of the threadgroup");
  return success();
}

LogicalResult checkMemory(Operation *op, Value memref, Type element,
                          bool write) {
  auto mem = llvm::cast<MemRefType>(memref.getType());
  if (mem.getElementType() != element)
    return op->emitOpError()
           << "memory of " << typeText(mem.getElementType())
           << " with a fragment of " << typeText(element)
           << "; convert the fragment first";
  AddressSpace space = getAddressSpace(mem);
  if (space == AddressSpace::Thread || (write && space == AddressSpace::Constant))
    return op->emitOpError() << "needs device or threadgroup memory";
  return success();
}

LogicalResult verifyLoadStore(Operation *op, Type fragment, Value memref,
                              Value offset, Value ld, Value rows, Value cols,
                              bool write) {
  if (failed(checkShape(op, fragment, "the fragment")))
    return failure();
  if (bool(rows) != bool(cols))
    return op->emitOpError("takes both bounds (rows and cols) or neither");
  if (failed(checkMemory(op, memref,
                         llvm::cast<RankedTensorType>(fragment).getElementType(),
                         write)))
    return failure();
  return checkUniform(op, {offset, ld, rows, cols}, SyncScope::Simdgroup,
                      "the offset, pitch and bounds");
}

/// An in-flight accumulator (the result of an asynchronous product) may
/// only reach another asynchronous product's accumulator or an
/// enigma.mma_wait, also through the loop-carried values of scf.for and
/// the results of scf.if (an if that carries it unchanged, as the front
/// end's ifs carry every live value).
LogicalResult checkInFlightUses(Operation *op, Value value) {
  SmallVector<Value> work{value};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!seen.insert(v).second)
      continue;
    for (OpOperand &use : v.getUses()) {
      Operation *user = use.getOwner();
      if (isa<MmaWaitOp>(user))
        continue;
      if (Value acc = asynchronousProductAcc(user); acc && use.get() == acc)
        continue;
      if (auto yield = dyn_cast<scf::YieldOp>(user)) {
        unsigned i = use.getOperandNumber();
        if (auto loop = dyn_cast<scf::ForOp>(yield->getParentOp())) {
          work.push_back(loop.getRegionIterArgs()[i]);
          work.push_back(loop.getResult(i));
          continue;
        }
        if (auto branch = dyn_cast<scf::IfOp>(yield->getParentOp())) {
          work.push_back(branch.getResult(i));
          continue;
        }
      }
      // A pipeline carries it like a loop: its consumer region's argument
      // and the pipeline's result.
      if (auto yield = dyn_cast<PipelineYieldOp>(user))
        if (auto pipeline = dyn_cast<PipelineOp>(yield->getParentOp())) {
          unsigned i = use.getOperandNumber();
          work.push_back(pipeline.getConsumer().getArgument(2 + i));
          work.push_back(pipeline.getResult(i));
          continue;
        }
      if (auto pipeline = dyn_cast<PipelineOp>(user))
        if (use.getOperandNumber() >= 3) {
          unsigned i = use.getOperandNumber() - 3;
          work.push_back(pipeline.getConsumer().getArgument(2 + i));
          work.push_back(pipeline.getResult(i));
          continue;
        }
      if (auto loop = dyn_cast<scf::ForOp>(user))
        if (use.getOperandNumber() >= loop.getNumControlOperands()) {
          unsigned i = use.getOperandNumber() - loop.getNumControlOperands();
          work.push_back(loop.getRegionIterArgs()[i]);
          work.push_back(loop.getResult(i));
          continue;
        }
      InFlightDiagnostic diag = op->emitOpError(
          "is asynchronous: its result may be read only by another "
          "asynchronous product (as the accumulator) or by enigma.mma_wait");
      diag.attachNote(user->getLoc()) << "read here";
      return diag;
    }
  }
  return success();
}

/// A warpgroup product: 16-row accumulators, reached by every thread, and
/// one B for the whole group (wgmma reads a single B tile).
LogicalResult checkWarpgroup(Operation *op, int64_t rows, Value bBase,
                             Value bOffset) {
  if (rows != 16)
    return op->emitOpError()
           << "with 'warpgroup' each simdgroup holds 16 rows of the group's "
              "product; the accumulator has "
           << rows;
  if (failed(checkConvergent(
          op, SyncScope::Warpgroup,
          "with 'warpgroup' is under control flow that depends on the "
          "thread's position within its warpgroup; the four simdgroups of a "
          "group multiply together, so all of them must reach it")))
    return failure();
  return checkUniform(op, {bBase, bOffset}, SyncScope::Warpgroup,
                      "with 'warpgroup', operand B's offsets");
}

/// An asynchronous product (enigma.mma or enigma.mma_reg): a warpgroup
/// product whose in-flight result reaches only what may take it.
LogicalResult checkAsynchronous(Operation *op, bool asynchronous,
                                bool warpgroup, Value result) {
  if (!asynchronous)
    return success();
  if (!warpgroup)
    return op->emitOpError("'asynchronous' applies to warpgroup products "
                           "only");
  return checkInFlightUses(op, result);
}

LogicalResult verifyMma(MmaOp op) {
  auto acc = llvm::cast<RankedTensorType>(op.getAcc().getType());
  if (failed(checkShape(op, acc, "the accumulator")))
    return failure();
  int64_t m = acc.getDimSize(0), n = acc.getDimSize(1), k = op.getK();
  Type ta = op.getA().getType().getElementType();
  Type tb = op.getB().getType().getElementType();
  // 8-bit floats of the two formats multiply together (e4m3 by e5m2).
  bool fp8 = isFloat8Type(ta) && isFloat8Type(tb);
  if (ta != tb && !fp8)
    return op.emitOpError() << "multiplies " << typeText(ta) << " by "
                            << typeText(tb)
                            << "; both operands must have one element type "
                               "(or both be 8-bit floats)";
  int64_t kStep = ta.isF32() ? 8 : fp8 ? 32 : 16;
  if (k % kStep != 0)
    return op.emitOpError() << "K = " << k << " must be a multiple of "
                            << kStep << " for " << typeText(ta)
                            << " operands";
  if (op.getTf32() && !ta.isF32())
    return op.emitOpError("'tf32' applies to f32 operands only");
  if (op.getWarpgroup() &&
      failed(checkWarpgroup(op, m, op.getBBase(), op.getBOffset())))
    return failure();
  if (failed(checkAsynchronous(op, op.getAsynchronous(), op.getWarpgroup(),
                                op.getResult())))
    return failure();
  if (failed(checkOperandTile(op, "A", op.getA(), op.getABase(),
                              op.getAOffset(), m, k, op.getALd(),
                              op.getATranspose(), op.getASwizzle(),
                              op.getABlockStride().value_or(0))))
    return failure();
  return checkOperandTile(op, "B", op.getB(), op.getBBase(), op.getBOffset(),
                          k, n, op.getBLd(), op.getBTranspose(),
                          op.getBSwizzle(), op.getBBlockStride().value_or(0));
}

LogicalResult verifyMmaReg(MmaRegOp op) {
  auto acc = llvm::cast<RankedTensorType>(op.getAcc().getType());
  auto a = llvm::cast<RankedTensorType>(op.getA().getType());
  if (failed(checkShape(op, acc, "the accumulator")) ||
      failed(checkShape(op, a, "operand A")))
    return failure();
  if (a.getDimSize(0) != acc.getDimSize(0))
    return op.emitOpError() << "A has " << a.getDimSize(0)
                            << " rows, the accumulator " << acc.getDimSize(0);
  Type tb = op.getB().getType().getElementType();
  if (a.getElementType() != tb)
    return op.emitOpError() << "multiplies " << typeText(a.getElementType())
                            << " by " << typeText(tb)
                            << "; both operands must have one element type";
  if (op.getWarpgroup() && failed(checkWarpgroup(op, acc.getDimSize(0),
                                                 op.getBBase(),
                                                 op.getBOffset())))
    return failure();
  if (failed(checkAsynchronous(op, op.getAsynchronous(), op.getWarpgroup(),
                                op.getResult())))
    return failure();
  return checkOperandTile(op, "B", op.getB(), op.getBBase(), op.getBOffset(),
                          a.getDimSize(1), acc.getDimSize(1), op.getBLd(),
                          op.getBTranspose(), op.getBSwizzle(),
                          op.getBBlockStride().value_or(0));
}

LogicalResult verifyCopyTile(CopyTileAsyncOp op) {
  if (failed(checkConvergent(
          op, SyncScope::Threadgroup,
          "is under control flow that depends on the thread's position; the "
          "threads of the threadgroup share the copy, so every thread must "
          "reach it")))
    return failure();
  auto dst = op.getDst().getType(), src = op.getSrc().getType();
  Type element = dst.getElementType();
  if (src.getElementType() != element)
    return op.emitOpError() << "copies " << typeText(src.getElementType())
                            << " into " << typeText(element)
                            << "; both must have one element type";
  if (getAddressSpace(dst) != AddressSpace::Threadgroup)
    return op.emitOpError("copies into threadgroup memory only");
  if (getAddressSpace(src) == AddressSpace::Threadgroup ||
      getAddressSpace(src) == AddressSpace::Thread)
    return op.emitOpError("copies from a device buffer only");
  unsigned bytes = elementBytes(element);
  if (op.getCols() * bytes % 16 != 0 || op.getDstLd() * bytes % 16 != 0)
    return op.emitOpError()
           << "copies rows of " << op.getCols() << " elements with pitch "
           << op.getDstLd() << "; both must be multiples of 16 bytes ("
           << 16 / bytes << " elements of " << typeText(element) << ")";
  int64_t blockStride = op.getBlockStride().value_or(0);
  int64_t blockCols = blockStride ? op.getDstLd() : op.getCols();
  if (blockStride && op.getCols() % op.getDstLd() != 0)
    return op.emitOpError() << "stores " << op.getCols()
                            << " columns in blocks of " << op.getDstLd()
                            << "; the pitch must divide them";
  if (blockStride && blockStride < op.getRows() * op.getDstLd())
    return op.emitOpError() << "blocks of " << op.getRows() << " x "
                            << op.getDstLd() << " elements are "
                            << blockStride << " apart; they would overlap";
  if (blockStride && blockStride * bytes % 16 != 0)
    return op.emitOpError() << "blocks " << blockStride
                            << " elements apart must start at multiples of "
                               "16 bytes";
  if (!blockStride && op.getDstLd() < op.getCols())
    return op.emitOpError() << "pitch " << op.getDstLd()
                            << " is shorter than a row of " << op.getCols();
  if (failed(checkSwizzle(op, op.getDstSwizzle(), element, "the swizzle")))
    return failure();
  if (failed(checkUniform(op,
                          {op.getDstBase(), op.getSrcOffset(), op.getSrcLd(),
                           op.getValidRows(), op.getValidCols()},
                          SyncScope::Threadgroup, "the copy's operands")))
    return failure();
  std::optional<int64_t> base = constantIndex(op.getDstBase());
  if (base && dst.hasStaticShape()) {
    int64_t lastBlock = op.getCols() / blockCols - 1;
    int64_t end = *base + lastBlock * blockStride +
                  tileExtent(op.getDstSwizzle(), 0, op.getRows(), blockCols,
                             op.getDstLd(), false);
    if (*base < 0 || end > dst.getNumElements())
      return op.emitOpError()
             << "the " << op.getRows() << " x " << op.getCols()
             << " tile reaches element " << end - 1
             << " of a threadgroup array of " << dst.getNumElements();
  }
  return success();
}

} // namespace

unsigned chunkBits(Type element) {
  unsigned bits = 0;
  for (unsigned bytes = elementBytes(element); bytes < 16; bytes *= 2)
    ++bits;
  return bits;
}

/// A wait that leaves `pending` products in flight: at least that many
/// asynchronous products run at the top level of its block before it, and
/// after the product of its accumulator when that is in the same block.
/// (Products under an scf.if may not run; a loop's carried accumulator
/// comes from an earlier iteration, before every product of this one.)
LogicalResult verifyMmaWait(MmaWaitOp wait) {
  int64_t pending = wait.getPending();
  if (pending == 0)
    return success();
  Operation *source = wait.getAcc().getDefiningOp();
  int64_t issued = 0;
  for (Operation *op = wait->getPrevNode(); op && op != source;
       op = op->getPrevNode())
    if (asynchronousProductAcc(op))
      ++issued;
  if (issued >= pending)
    return success();
  return wait.emitOpError()
         << "leaves " << pending << " asynchronous product"
         << (pending == 1 ? "" : "s") << " in flight, but only " << issued
         << " run" << (issued == 1 ? "s" : "") << " after its accumulator's "
         << "product in this block: the accumulator may still be in flight "
            "(wait with pending = " << issued << ")";
}

LogicalResult verifyMmaOp(Operation *op) {
  if (!op->getParentOfType<KernelOp>())
    return op->emitOpError("must be inside an enigma.kernel");
  if (isa<CopyTileAsyncOp>(op))
    return verifyCopyTile(cast<CopyTileAsyncOp>(op));
  if (isa<CopyAsyncCommitOp, CopyAsyncWaitOp>(op))
    return success();
  if (failed(checkConvergent(
          op, SyncScope::Simdgroup,
          "is under control flow that depends on the thread's lane; a "
          "fragment is held by the whole simdgroup, so every lane must reach "
          "it")))
    return failure();
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](MmaFillOp fill) -> LogicalResult {
        auto t = llvm::cast<RankedTensorType>(fill.getType());
        if (failed(checkShape(op, t, "the result")))
          return failure();
        if (t.getElementType() != fill.getValue().getType())
          return op->emitOpError("fills a fragment of ")
                 << typeText(t.getElementType()) << " with a "
                 << typeText(fill.getValue().getType());
        return checkUniform(op, fill.getValue(), SyncScope::Simdgroup,
                            "the fill value");
      })
      .Case([&](MmaIotaOp iota) {
        return checkShape(op, iota.getType(), "the result");
      })
      .Case([&](MmaLoadOp load) {
        return verifyLoadStore(op, load.getType(), load.getMemref(),
                               load.getOffset(), load.getLd(), load.getRows(),
                               load.getCols(), false);
      })
      .Case([&](MmaGatherOp gather) -> LogicalResult {
        auto t = llvm::cast<RankedTensorType>(gather.getType());
        if (failed(checkShape(op, t, "the result")) ||
            failed(checkMemory(op, gather.getMemref(), t.getElementType(),
                               false)))
          return failure();
        if (llvm::cast<RankedTensorType>(gather.getIndex().getType())
                .getShape() != t.getShape())
          return op->emitOpError("gathers a ")
                 << typeText(t) << " with indices of another shape, "
                 << typeText(gather.getIndex().getType());
        return checkUniform(op, {gather.getOffset()}, SyncScope::Simdgroup,
                            "the offset");
      })
      .Case([&](MmaStoreOp store) {
        return verifyLoadStore(op, store.getValue().getType(),
                               store.getMemref(), store.getOffset(),
                               store.getLd(), store.getRows(), store.getCols(),
                               true);
      })
      .Case([&](MmaOp mma) { return verifyMma(mma); })
      .Case([&](MmaRegOp mma) { return verifyMmaReg(mma); })
      .Case([&](MmaWaitOp wait) { return verifyMmaWait(wait); })
      .Case([&](MmaReduceRowsOp reduce) -> LogicalResult {
        auto in = llvm::cast<RankedTensorType>(reduce.getValue().getType());
        auto out = llvm::cast<RankedTensorType>(reduce.getType());
        if (failed(checkShape(op, in, "the fragment")))
          return failure();
        if (out.getDimSize(0) != in.getDimSize(0) ||
            out.getElementType() != in.getElementType())
          return op->emitOpError("gives a row vector of ")
                 << typeText(out) << " for " << typeText(in);
        return success();
      })
      .Case([&](MmaHalvesOp halves) -> LogicalResult {
        auto in = llvm::cast<RankedTensorType>(halves.getValue().getType());
        auto out = llvm::cast<RankedTensorType>(halves.getType());
        if (failed(checkShape(op, in, "the words")) ||
            failed(checkShape(op, out, "the result")))
          return failure();
        if (out.getDimSize(0) != in.getDimSize(0) ||
            out.getDimSize(1) != 2 * in.getDimSize(1))
          return op->emitOpError("gives ")
                 << typeText(out) << " for " << typeText(in)
                 << "; the halves of M x N words are M x 2N";
        return success();
      })
      .Case([&](MmaBroadcastRowsOp broadcast) -> LogicalResult {
        auto in = llvm::cast<RankedTensorType>(broadcast.getValue().getType());
        auto out = llvm::cast<RankedTensorType>(broadcast.getType());
        if (failed(checkShape(op, out, "the result")) ||
            failed(checkShape(op, in, "the row vector")))
          return failure();
        if (out.getDimSize(0) != in.getDimSize(0) ||
            out.getElementType() != in.getElementType())
          return op->emitOpError("broadcasts ")
                 << typeText(in) << " to " << typeText(out);
        return success();
      })
      .Default([](Operation *) { return success(); });
}

} // namespace enigma

#include "enigma/Dialect/Enigma/IR/EnigmaMmaEnums.cpp.inc"
#define GET_ATTRDEF_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaMmaAttributes.cpp.inc"
#define GET_OP_CLASSES
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.cpp.inc"

void EnigmaDialect::registerMmaOps() {
  addOperations<
#define GET_OP_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "enigma/Dialect/Enigma/IR/EnigmaMmaAttributes.cpp.inc"
      >();
}
