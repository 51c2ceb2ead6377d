//===- EmitFloat8.cpp - The 8-bit floats in C-family source ---------------===//
//
// 8-bit floats (docs/design/fp8.md) are stored as uchar on every target;
// the semantics library's metal_fp8.h converts them (the CPU and CUDA
// preludes include it; MSL that uses 8-bit floats gets its text printed at
// file scope, like metal_total_division.h). So their conversions print as
// calls, and the arithmetic the builder never makes on them (it computes
// in f32) is refused rather than printed as byte arithmetic:
//
//   float v3 = enigma_f8e4m3_to_float(v2);            // arith.extf
//   uchar v5 = enigma_float_to_f8e5m2((float)v4);     // arith.truncf
//   uchar4 v7 = enigma_float_to_f8e4m3_sat(v6);       // enigma.truncf_sat
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaFloat8Ops.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"
#include "enigma/Target/Preludes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace enigma {

// The MSL form of enigma_cpu_mma_fp8.h / enigma_cuda_mma_fp8.cuh's
// enigma_mma_fp8, after the mma helpers (EmitMma.cpp): enigma_mma_sync's
// simdgroup_matrix steps with each 8-bit element decoded to float.
static const char *kMslFp8MmaHelpers = R"msl(// Products of 8-bit float tiles (docs/design/fp8.md)
template <int Fmt, int Ld, bool Trans, int S0, int S1, int S2, int Bs, typename P>
inline float enigma_mma_at8(P p, ulong base, ulong off, ulong r, ulong c) {
  return enigma_fp8_to_float<Fmt>(p[base + enigma_mma_swz<S0, S1, S2>(off + (Trans ? enigma_mma_stored<Ld, Bs>(c, r)
                                                                                : enigma_mma_stored<Ld, Bs>(r, c)))]);
}
template <int AFmt, int BFmt, int K, int ALd, bool ATr, int AS0, int AS1, int AS2, int ABs, int BLd, bool BTr,
          int BS0, int BS1, int BS2, int BBs, bool Tf32, bool Wg, bool Async, bool ZeroAcc = false, typename PA,
          typename PB, int M, int N>
inline enigma_frag<float, M, N> enigma_mma_fp8(enigma_frag<float, M, N> acc, PA a, ulong a_base, ulong a_off,
                                               PB b, ulong b_base, ulong b_off, uint lane) {
  const ulong fm = enigma_mma_fm(lane), fn = enigma_mma_fn(lane);
  for (int kb = 0; kb < K / 8; ++kb) {
    float2 am[M / 8], bm[N / 8];
    for (int bi = 0; bi < M / 8; ++bi)
      am[bi] = float2(enigma_mma_at8<AFmt, ALd, ATr, AS0, AS1, AS2, ABs>(a, a_base, a_off, 8 * bi + fm, 8 * kb + fn),
                      enigma_mma_at8<AFmt, ALd, ATr, AS0, AS1, AS2, ABs>(a, a_base, a_off, 8 * bi + fm, 8 * kb + fn + 1));
    for (int bj = 0; bj < N / 8; ++bj)
      bm[bj] = float2(enigma_mma_at8<BFmt, BLd, BTr, BS0, BS1, BS2, BBs>(b, b_base, b_off, 8 * kb + fm, 8 * bj + fn),
                      enigma_mma_at8<BFmt, BLd, BTr, BS0, BS1, BS2, BBs>(b, b_base, b_off, 8 * kb + fm, 8 * bj + fn + 1));
    for (int bi = 0; bi < M / 8; ++bi)
      for (int bj = 0; bj < N / 8; ++bj)
        enigma_mma_88(&acc.v[2 * (bi * (N / 8) + bj)], am[bi], bm[bj], lane);
  }
  return acc;
}

)msl";

static std::string floatOfLanes(Type type) {
  if (auto vec = llvm::dyn_cast<VectorType>(type))
    return "float" + std::to_string(vec.getNumElements());
  return "float";
}

std::string floatConversionExpr(CFamilyEmitter &e, Type from, Type to,
                                const std::string &x, bool saturate) {
  StringRef fromName = float8Name(from), toName = float8Name(to);
  if (!fromName.empty()) {
    std::string decoded = "enigma_" + fromName.str() + "_to_float(" + x + ")";
    if (getElementTypeOrSelf(to).isF32())
      return decoded;
    if (!toName.empty()) // one 8-bit format to the other: through float
      return floatConversionExpr(e, FloatType::getF32(from.getContext()), to,
                                 decoded, saturate);
    return "(" + e.typeName(to) + ")(" + decoded + ")";
  }
  if (!toName.empty()) {
    // half and bfloat widen to float exactly; one rounding, to 8 bits.
    // (CUDA's half -> float loses a NaN's sign; enigma_fp8_widen keeps it
    // for scalars. Vector lanes still widen with the cast.)
    std::string wide = from.isF32() ? x
                       : from.isF16()
                           ? "enigma_fp8_widen(" + x + ")"
                           : "(" + floatOfLanes(from) + ")" + x;
    if (getElementTypeOrSelf(from).isF32())
      wide = x;
    return "enigma_float_to_" + toName.str() + (saturate ? "_sat(" : "(") +
           wide + ")";
  }
  return "(" + e.typeName(to) + ")" + x;
}

std::string float8Literal(const llvm::APFloat &value) {
  uint64_t bits = value.bitcastToAPInt().getZExtValue() & 0xff;
  // Every NaN the conversions make has all low bits set (metal_fp8.h).
  if (value.isNaN())
    bits |= 0x7f;
  char buf[16];
  std::snprintf(buf, sizeof buf, "(uchar)0x%02x", unsigned(bits));
  return buf;
}

LogicalResult emitFloat8Family(CFamilyEmitter &e, Operation *op,
                               bool &handled) {
  handled = false;
  if (auto sat = dyn_cast<TruncFSatOp>(op)) {
    handled = true;
    e.define(sat.getOut(),
             floatConversionExpr(e, sat.getIn().getType(),
                                 sat.getOut().getType(), e.expr(sat.getIn()),
                                 /*saturate=*/true));
    return success();
  }
  // Arithmetic, comparisons and math on 8-bit floats: the builder computes
  // in f32, so these come only from hand-written IR.
  if (!isa<arith::ExtFOp, arith::TruncFOp, arith::ConstantOp,
           arith::SelectOp, arith::BitcastOp>(op) &&
      isa<arith::ArithDialect>(op->getDialect()) &&
      llvm::any_of(op->getOperandTypes(),
                   [](Type t) { return isFloat8Type(t); })) {
    handled = true;
    return op->emitOpError("computes on 8-bit floats, which are only "
                           "stored and converted; extend them to f32 first");
  }
  return success();
}

bool usesFloat8(KernelOp kernel) {
  auto anyFloat8 = [](TypeRange types) {
    return llvm::any_of(types, [](Type t) {
      if (auto mem = llvm::dyn_cast<MemRefType>(t))
        return isFloat8Type(mem.getElementType());
      return isFloat8Type(t);
    });
  };
  if (anyFloat8(kernel.getArgumentTypes()))
    return true;
  return kernel
      .walk([&](Operation *op) {
        return anyFloat8(op->getOperandTypes()) ||
                       anyFloat8(op->getResultTypes())
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

int float8Format(Type t) { return float8Name(t) == "f8e5m2" ? 1 : 0; }

void emitFloat8MmaDeclarations(CFamilyEmitter &e) {
  bool products = e.getKernel()
                      .walk([](MmaOp op) {
                        return isFloat8Type(op.getA().getType())
                                   ? WalkResult::interrupt()
                                   : WalkResult::advance();
                      })
                      .wasInterrupted();
  if (products)
    e.stream() << kMslFp8MmaHelpers;
}

void emitFloat8Declarations(CFamilyEmitter &e) {
  if (!usesFloat8(e.getKernel()))
    return;
  for (const PreludeFile &file : cpuPreludeFiles()) {
    if (file.name != "metal_fp8.h")
      continue;
    // MSL as well as C++; only the function qualifier differs.
    std::string text(file.text);
    for (size_t at; (at = text.find("METAL_FUNC")) != std::string::npos;)
      text.replace(at, 10, "inline");
    e.stream() << text << "\n";
    return;
  }
}

} // namespace enigma
