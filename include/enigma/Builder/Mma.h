//===- Mma.h - KernelBuilder calls of the mma family ------------*- C++ -*-===//
//
// Matrix multiply-accumulate on simdgroup fragments for C++ kernels
// (docs/reference/mma.md, docs/design/mma.md). A fragment is an M x N
// matrix held by the 32 lanes of one simdgroup in the target's register
// layout; it is a Value whose dtype is its element type (isFragment() tells
// it from a scalar). A row vector holds one value per row of an M-row
// fragment (cols == 0 in fragmentShape()).
//
//   // acc (64 x 64 f32) += A (64 x 32 bf16, threadgroup) * B (32 x 64)
//   enigma::Value acc = enigma::mmaFill(k, k.constant(0, DType::F32), 64, 64);
//   acc = enigma::mma(acc, {As, zero, offA, 32}, {Bs, zero, offB, 64}, 32);
//   enigma::mmaStore(acc, C, offC, ldc);
//
// Mistakes (shapes, dtypes, memory) throw EnigmaError with the reason.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_MMA_H
#define ENIGMA_BUILDER_MMA_H

#include "enigma/Builder/Cooperation.h"
#include "enigma/Builder/KernelBuilder.h"

#include <array>
#include <optional>
#include <string>

namespace enigma {

/// Rows and columns of a fragment (cols == 0 for a row vector).
struct FragmentShape {
  int rows = 0;
  int cols = 0;
};

/// True when `v` is a fragment or row vector.
bool isFragment(const Value &v);
/// Its shape; throws EnigmaError for other values.
FragmentShape fragmentShape(const Value &v);

/// Memory a fragment is loaded from / stored to, or an operand tile lives
/// in: a buffer parameter or a threadgroup array.
class MmaMemory {
public:
  MmaMemory(const Buffer &b) : buffer(&b) {}
  MmaMemory(const ThreadgroupArray &a) : array(&a) {}
  const Buffer *buffer = nullptr;
  const ThreadgroupArray *array = nullptr;
};

/// CuTe's Swizzle<bits, base, shift> of element offsets (enigma.Swizzle).
using MmaSwizzle = std::array<int, 3>;

/// An operand tile of a product in threadgroup memory: element (r, c) is
/// `memory[base + swizzle(offset + r * ld + c)]`, or with `transpose`
/// `memory[base + swizzle(offset + c * ld + r)]`. With a positive
/// `blockStride` the stored columns come in blocks of `ld`, block j at
/// offset j * blockStride (`r * ld + c` becomes `(c / ld) * blockStride +
/// r * ld + c % ld`).
struct MmaOperand {
  MmaMemory memory;
  Value base;
  Value offset;
  int64_t ld = 0;
  bool transpose = false;
  std::optional<MmaSwizzle> swizzle;
  int64_t blockStride = 0;
};

/// A fragment (cols > 0) or row vector (cols == 0) of `dtype` with every
/// element `value` (converted to dtype).
Value mmaFill(KernelBuilder &k, Value value, DType dtype, int rows, int cols);
/// An int fragment whose elements are their row (dim 0) or column index.
Value mmaIota(KernelBuilder &k, int dim, int rows, int cols);
/// A rows x cols fragment of the memory's dtype: element (r, c) is
/// mem[offset + r * ld + c] (transpose: mem[offset + c * ld + r]). With
/// bounds, elements at r >= boundRows or c >= boundCols are 0.
Value mmaLoad(KernelBuilder &k, MmaMemory mem, Value offset, Value ld,
              int rows, int cols, bool transpose = false,
              Value boundRows = {}, Value boundCols = {});
/// A fragment of the memory's dtype, shaped like `index` (an int fragment):
/// element (r, c) is mem[offset + index(r, c)].
Value mmaGather(KernelBuilder &k, MmaMemory mem, Value offset, Value index);
/// Writes `fragment`, converted to the memory's dtype, to the same places.
void mmaStore(Value fragment, MmaMemory mem, Value offset, Value ld,
              bool transpose = false, Value boundRows = {},
              Value boundCols = {});
/// acc + A * B: acc is M x N float, A an M x k tile, B a k x N tile, both
/// half or both bfloat, or both float (TF32 tensor cores only with
/// allowTf32). With `warpgroup`, A is the 64 x k tile of each group of four
/// simdgroups and simdgroup i of the group (index % 4) multiplies its rows
/// 16 i .. 16 i + 15 into a 16-row acc; B is shared (one wgmma on sm_90a).
/// With `asynchronous` (warpgroup products only) the product may still be
/// in flight: its result may only be the acc of another asynchronous
/// product or go to mmaWait.
Value mma(Value acc, const MmaOperand &a, const MmaOperand &b, int k,
          bool allowTf32 = false, bool warpgroup = false,
          bool asynchronous = false);
/// `acc` once the group's asynchronous products are complete; with
/// `pending` = N, all but the N most recent (acc older than those).
Value mmaWait(Value acc, int pending = 0);
/// acc + A * B with A an M x K fragment (converted to B's dtype, half or
/// bfloat). With `warpgroup`, each simdgroup of a group of four brings its
/// own 16-row A and B is shared (one wgmma reading A from registers on
/// sm_90a). `asynchronous` (with `warpgroup`): as mma's.
Value mmaReg(Value acc, Value a, const MmaOperand &b, bool warpgroup = false,
             bool asynchronous = false);

enum class RowReduce : uint8_t { Sum, Max, Min };
/// A row vector: the sum / max / min of each row.
Value mmaReduceRows(Value fragment, RowReduce kind);
/// An M x cols fragment whose row r is element r of the row vector.
Value mmaBroadcastRows(Value row, int cols);
/// The 16-bit halves (f16 or bf16) of an M x N fragment of 32-bit words,
/// an M x 2N fragment (enigma.mma_halves says where each half goes).
Value mmaHalves(Value words, DType dtype);

/// Element-wise arithmetic: fragments of one shape, or a fragment and a
/// scalar (converted to the fragment's dtype). Comparisons give bool
/// fragments.
Value mmaBinary(BinaryOp op, Value a, Value b);
Value mmaCompare(CompareOp op, Value a, Value b);
/// cond ? a : b element by element (cond a bool fragment or scalar).
Value mmaSelect(Value cond, Value a, Value b);
/// Element-wise conversion.
Value mmaCast(Value a, DType to);
/// Element-wise conversion to an 8-bit float that clamps magnitudes beyond
/// its largest finite value to it (saturatingCast, Float8.h).
Value mmaSaturatingCast(Value a, DType to);
/// Element-wise a * b + c rounded once; scalars are filled.
Value mmaFma(Value a, Value b, Value c);
/// Element-wise math function by Metal name: "exp", "exp2", "log", "log2",
/// "sqrt", "rsqrt", "tanh", "abs", "neg", "sin", "cos", "floor", "ceil".
Value mmaUnary(const std::string &fn, Value a);

/// The whole threadgroup copies a rows x cols tile into threadgroup memory:
/// dst[dstBase + swizzle(r * dstLd + c)] = src[srcOffset + r * srcLd + c]
/// where r < validRows and c < validCols, else 0. Asynchronous: the data is
/// there after copyAsyncCommit, copyAsyncWait and a threadgroup barrier.
/// blockStride > 0 stores the columns in blocks of dstLd, blockStride
/// elements apart, each swizzled inside itself.
void copyTileAsync(const ThreadgroupArray &dst, Value dstBase,
                   const Buffer &src, Value srcOffset, Value srcLd,
                   Value validRows, Value validCols, int rows, int cols,
                   int dstLd, std::optional<MmaSwizzle> swizzle = {},
                   int blockStride = 0);
/// Closes the group of this thread's copies issued so far.
void copyAsyncCommit(KernelBuilder &k);
/// Waits until at most `pending` (0..7) of the latest groups are open.
void copyAsyncWait(KernelBuilder &k, int pending);

} // namespace enigma

#endif
