//===- CudaTensorMaps.cpp - Tile copies the TMA can do --------------------===//
#include "CudaTensorMaps.h"
#include "CudaSharedMemory.h"

#include "enigma/Dialect/Enigma/IR/EnigmaCooperationOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Dialect/Enigma/IR/EnigmaPipelineOps.h"
#include "enigma/Dialect/Enigma/Transforms/Passes.h"
#include "enigma/Target/Emit.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>

using namespace mlir;

namespace enigma {

namespace {
/// The barriers (a static array) may push the 1024-byte aligned dynamic
/// array by 1 KiB.
constexpr uint64_t kBarrierRoom = 1024;

/// `value` without the casts that keep its value (index casts of unsigned
/// or non-negative integers, zero extensions).
Value uncast(Value value) {
  while (Operation *def = value.getDefiningOp()) {
    if (!isa<arith::IndexCastUIOp, arith::IndexCastOp, arith::ExtUIOp>(def))
      break;
    value = def->getOperand(0);
  }
  return value;
}

/// The kernel parameter `value` is, through casts, or -1.
int paramOf(KernelOp kernel, Value value) {
  value = uncast(value);
  if (value.getDefiningOp())
    return -1;
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &kernel.getBody().front())
    return -1;
  return int(arg.getArgNumber());
}

/// The map `copy` needs, if the TMA can do it.
std::optional<CudaTensorMap> mapFor(KernelOp kernel, CopyTileAsyncOp copy) {
  CudaTensorMap map;
  int src = paramOf(kernel, copy.getSrc());
  if (src < 0 || !kernel.isBufferParam(unsigned(src)))
    return std::nullopt;
  map.param = unsigned(src);
  Type element = getElementTypeOrSelf(copy.getSrc().getType());
  if (!element.isIntOrFloat())
    return std::nullopt;
  map.elementBytes = element.getIntOrFloatBitWidth() / 8;
  if (map.elementBytes == 0 || map.elementBytes > 8 ||
      element.getIntOrFloatBitWidth() % 8)
    return std::nullopt;
  // A box per column block (block_stride: blocks of dst_ld columns).
  int64_t rows = copy.getRows();
  int64_t cols = copy.getBlockStride() ? copy.getDstLd() : copy.getCols();
  if (rows > 256 || cols > 256 || (cols * map.elementBytes) % 16)
    return std::nullopt;
  map.boxRows = unsigned(rows);
  map.boxCols = unsigned(cols);
  // The destination: dense rows, or rows of 128 bytes under the 128-byte
  // swizzle, which is Swizzle<3, log2(16 / element bytes), 3>; blocks
  // start where that swizzle starts (1024 bytes, or 128 without it).
  auto swizzle = copy.getDstSwizzle();
  bool swizzled = swizzle && swizzle->size() == 3 && (*swizzle)[0] != 0;
  if (copy.getDstLd() != cols)
    return std::nullopt;
  if (int64_t stride = copy.getBlockStride().value_or(0);
      stride && (stride * map.elementBytes) % (swizzled ? 1024 : 128))
    return std::nullopt;
  if (swizzled) {
    if ((*swizzle)[0] != 3 || (*swizzle)[1] != int(chunkBits(element)) ||
        (*swizzle)[2] != 3 || cols * map.elementBytes != 128)
      return std::nullopt;
    map.swizzle128 = true;
  }
  // The pitch: a constant or a scalar parameter.
  Value ld = copy.getSrcLd();
  if (auto constant = ld.getDefiningOp<arith::ConstantIndexOp>()) {
    if (constant.value() <= 0)
      return std::nullopt;
    map.pitchConstant = uint64_t(constant.value());
  } else {
    int param = paramOf(kernel, ld);
    if (param < 0 || kernel.isBufferParam(unsigned(param)))
      return std::nullopt;
    map.pitchParam = param;
  }
  return map;
}

/// The terms of a sum of `value` (through casts).
void addTerms(Value value, SmallVectorImpl<Value> &terms) {
  value = uncast(value);
  if (auto add = value.getDefiningOp<arith::AddIOp>()) {
    addTerms(add.getLhs(), terms);
    addTerms(add.getRhs(), terms);
    return;
  }
  terms.push_back(value);
}

/// Whether `a` and `b` are the same value through casts, or equal
/// constants.
bool sameValue(Value a, Value b) {
  a = uncast(a);
  b = uncast(b);
  if (a == b)
    return true;
  APInt x, y;
  return matchPattern(a, m_ConstantInt(&x)) &&
         matchPattern(b, m_ConstantInt(&y)) &&
         x.getZExtValue() == y.getZExtValue();
}

/// The copy's offset as row * pitch + columns, if one term of its sum is a
/// product with the pitch (the kernel checks that the split is exact).
std::optional<CudaTileOrigin> originFor(CopyTileAsyncOp copy) {
  SmallVector<Value, 4> terms;
  addTerms(copy.getSrcOffset(), terms);
  for (size_t i = 0; i < terms.size(); ++i) {
    auto mul = terms[i].getDefiningOp<arith::MulIOp>();
    if (!mul)
      continue;
    Value row;
    if (sameValue(mul.getRhs(), copy.getSrcLd()))
      row = mul.getLhs();
    else if (sameValue(mul.getLhs(), copy.getSrcLd()))
      row = mul.getRhs();
    else
      continue;
    CudaTileOrigin origin;
    origin.row = row;
    for (size_t j = 0; j < terms.size(); ++j)
      if (j != i)
        origin.columnTerms.push_back(terms[j]);
    return origin;
  }
  return std::nullopt;
}

/// A side of a stage copy's matrix: a scalar parameter or a constant.
bool sideFor(KernelOp kernel, Value side, int &param, uint64_t &constant) {
  if (std::optional<int64_t> c = getConstantIntValue(uncast(side))) {
    if (*c <= 0)
      return false;
    constant = uint64_t(*c);
    return true;
  }
  param = paramOf(kernel, side);
  return param >= 0 && !kernel.isBufferParam(unsigned(param));
}

/// The map a pipeline's copy needs, if the TMA can do it.
std::optional<CudaTensorMap> stageMapFor(KernelOp kernel, StageCopyOp copy) {
  if (copy.getTranspose()) // the TMA cannot transpose: producer threads copy
    return std::nullopt;
  CudaTensorMap map;
  int src = paramOf(kernel, copy.getSrc());
  if (src < 0 || !kernel.isBufferParam(unsigned(src)))
    return std::nullopt;
  map.param = unsigned(src);
  Type element = copy.getSrc().getType().getElementType();
  map.elementBytes = element.getIntOrFloatBitWidth() / 8;
  if (map.elementBytes == 0 || map.elementBytes > 8)
    return std::nullopt;
  auto ring = copy.getRing().getDefiningOp<PipelineRingOp>();
  int64_t cluster = ring.getCluster();
  int64_t rows = copy.getMulticast() ? copy.getBoxRows() / cluster
                                     : copy.getBoxRows();
  int64_t bc = copy.getBlockColumns();
  if (rows > 256 || bc > 256 || (bc * map.elementBytes) % 16)
    return std::nullopt;
  map.boxRows = unsigned(rows);
  map.boxCols = unsigned(bc);
  auto swizzle = copy.getSwizzle();
  bool swizzled = swizzle && swizzle->size() == 3 && (*swizzle)[0] != 0;
  if (swizzled) {
    if ((*swizzle)[0] != 3 || (*swizzle)[1] != int(chunkBits(element)) ||
        (*swizzle)[2] != 3 || bc * map.elementBytes != 128)
      return std::nullopt;
    map.swizzle128 = true;
  }
  // Where the boxes land: every stage, block and multicast share on a
  // boundary the TMA allows.
  int64_t align = swizzled ? 1024 : 128;
  int64_t e = map.elementBytes;
  int64_t slot = ring.getSlotElements(unsigned(copy.getBuffer()));
  if ((slot * e) % align || (copy.getOffset() * e) % align ||
      (copy.getBoxCols() > bc && (copy.getBlockElementStride() * e) % align) ||
      (copy.getMulticast() && (rows * bc * e) % align))
    return std::nullopt;
  if (!sideFor(kernel, copy.getLd(), map.pitchParam, map.pitchConstant) ||
      !sideFor(kernel, copy.getRows(), map.rowsParam, map.rowsConstant) ||
      !sideFor(kernel, copy.getCols(), map.colsParam, map.colsConstant))
    return std::nullopt;
  return map;
}

/// Bounds-checked kernels have hidden parameters; they keep cp.async.
bool boundsChecked(KernelOp kernel) {
  for (unsigned i = 0; i < kernel.getNumArguments(); ++i)
    if (isBoundsCheckParam(kernel, i))
      return true;
  return false;
}
} // namespace

CudaTensorMapPlan cudaTensorMapPlan(KernelOp kernel) {
  CudaTensorMapPlan plan;
  auto add = [&](Operation *copy, const CudaTensorMap &map) {
    auto at = std::find(plan.maps.begin(), plan.maps.end(), map);
    if (at == plan.maps.end()) {
      if (plan.maps.size() == kMaxCudaTensorMaps)
        return false;
      at = plan.maps.insert(plan.maps.end(), map);
    }
    plan.mapOf[copy] = unsigned(at - plan.maps.begin());
    return true;
  };
  kernel.walk([&](StageCopyOp copy) {
    if (std::optional<CudaTensorMap> map = stageMapFor(kernel, copy))
      add(copy, *map);
  });
  if (!kernel->hasAttr("enigma.cuda_tma") || boundsChecked(kernel))
    return plan;
  CudaSharedLayout layout = cudaSharedLayout(kernel);
  uint64_t total = layout.dynamic ? layout.bytes
                                  : ThreadgroupAllocOp::totalBytes(kernel);
  if (total + kBarrierRoom > (layout.dynamic ? CudaSharedLayout::kDeviceLimit
                                             : CudaSharedLayout::kStaticLimit))
    return plan;
  kernel.walk([&](CopyTileAsyncOp copy) {
    std::optional<CudaTensorMap> map = mapFor(kernel, copy);
    if (!map || !add(copy, *map))
      return;
    plan.tileCopies = true;
    if (std::optional<CudaTileOrigin> origin = originFor(copy))
      plan.originOf[copy.getOperation()] = *origin;
  });
  return plan;
}

std::vector<CudaTensorMap> cudaTensorMaps(KernelOp kernel) {
  return cudaTensorMapPlan(kernel).maps;
}

} // namespace enigma
