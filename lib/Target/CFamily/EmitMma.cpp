//===- EmitMma.cpp - Fragments, products and tile copies ------------------===//
//
// The mma family (docs/design/mma.md) prints one call per op into helpers
// every target defines with the same names and template parameters:
// enigma_cuda_mma.cuh (CUDA), enigma_cpu_mma.h (host C++), and for MSL the
// text of kMslHelpers below, printed at file scope (Metal kernels include
// nothing of ours). A fragment `tensor<MxNxT>` prints as enigma_frag<T, M, N>
// and a row vector `tensor<MxT>` as enigma_row<T, M>; their layouts are the
// targets' own. Element-wise arith / math on fragments prints as a loop over
// the lane's elements:
//
//   enigma_frag<float, 16, 64> v9;
//   for (int enigma_i = 0; enigma_i < enigma_frag<float, 16, 64>::size;
//        ++enigma_i) v9.v[enigma_i] = v7.v[enigma_i] * v8;
//
//===----------------------------------------------------------------------===//
#include "Families.h"

#include "enigma/Dialect/Enigma/IR/EnigmaFloat8Ops.h"
#include "enigma/Dialect/Enigma/IR/EnigmaMmaOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>
#include <cstdio>

using namespace mlir;

namespace enigma {
namespace {

// The MSL helpers. The lane layout of an 8x8 simdgroup_matrix's
// thread_elements() (lane l holds row fm, columns fn and fn + 1) is the one
// MLX relies on; not run on Apple hardware.
const char *kMslHelpers = R"msl(// Enigma fragments (docs/design/mma.md)
#ifndef ENIGMA_MMA_HELPERS
#define ENIGMA_MMA_HELPERS
template <typename T, int M, int N> struct enigma_frag {
  typedef T value_type;
  enum : int { size = M * N / 32, rows = M, cols = N };
  T v[size];
};
template <typename T, int M> struct enigma_row {
  typedef T value_type;
  enum : int { size = M / 8, rows = M };
  T v[size];
};
inline uint enigma_mma_fm(uint lane) { return ((lane >> 2) & 4u) + ((lane >> 1) & 3u); }
inline uint enigma_mma_fn(uint lane) { return ((lane >> 2) & 2u) * 2u + (lane & 1u) * 2u; }
template <int N> inline ulong enigma_mma_row(int i, uint lane) {
  return 8ul * ulong((i >> 1) / (N / 8)) + enigma_mma_fm(lane);
}
template <int N> inline ulong enigma_mma_col(int i, uint lane) {
  return 8ul * ulong((i >> 1) % (N / 8)) + enigma_mma_fn(lane) + ulong(i & 1);
}
template <int N> inline int enigma_mma_slot(int i) { return (i >> 1) / (N / 8); }
template <int B, int Base, int S> inline ulong enigma_mma_swz(ulong x) {
  if (B == 0) return x;
  const ulong mask = ((1ul << B) - 1ul) << Base;
  return S >= 0 ? x ^ ((x >> (S >= 0 ? S : 0)) & mask) : x ^ ((x << (S < 0 ? -S : 0)) & mask);
}
template <typename F, typename V> inline F enigma_mma_fill(V value) {
  F f;
  for (int i = 0; i < F::size; ++i) f.v[i] = typename F::value_type(value);
  return f;
}
template <typename F, int Dim> inline F enigma_mma_iota(uint lane) {
  F f;
  for (int i = 0; i < F::size; ++i)
    f.v[i] = uint(Dim == 0 ? enigma_mma_row<F::cols>(i, lane) : enigma_mma_col<F::cols>(i, lane));
  return f;
}
template <typename F, typename P, typename I>
inline F enigma_mma_gather(P p, ulong off, thread const I &index, uint lane) {
  F f;
  for (int i = 0; i < F::size; ++i) f.v[i] = p[off + uint(index.v[i])];
  return f;
}
template <typename F, bool Trans, bool Bounded, typename P>
inline F enigma_mma_load(P p, ulong off, ulong ld, ulong rows, ulong cols, uint lane) {
  F f;
  for (int i = 0; i < F::size; ++i) {
    const ulong r = enigma_mma_row<F::cols>(i, lane), c = enigma_mma_col<F::cols>(i, lane);
    if (Bounded && (r >= rows || c >= cols)) f.v[i] = typename F::value_type(0);
    else f.v[i] = p[Trans ? off + c * ld + r : off + r * ld + c];
  }
  return f;
}
template <bool Trans, bool Bounded, typename F, typename P>
inline void enigma_mma_store(thread const F &f, P p, ulong off, ulong ld, ulong rows, ulong cols, uint lane) {
  for (int i = 0; i < F::size; ++i) {
    const ulong r = enigma_mma_row<F::cols>(i, lane), c = enigma_mma_col<F::cols>(i, lane);
    if (!Bounded || (r < rows && c < cols)) p[Trans ? off + c * ld + r : off + r * ld + c] = f.v[i];
  }
}
template <int Kind, typename T, int M, int N>
inline enigma_row<T, M> enigma_mma_reduce_rows(thread const enigma_frag<T, M, N> &f) {
  enigma_row<T, M> out;
  for (int s = 0; s < M / 8; ++s) {
    float x = float(f.v[2 * s * (N / 8)]);
    for (int i = 2 * s * (N / 8) + 1; i < 2 * (s + 1) * (N / 8); ++i) {
      const float y = float(f.v[i]);
      x = Kind == 0 ? x + y : Kind == 1 ? fmax(x, y) : fmin(x, y);
    }
    for (ushort m = 1; m <= 8; m <<= 3) {
      const float y = simd_shuffle_xor(x, m);
      x = Kind == 0 ? x + y : Kind == 1 ? fmax(x, y) : fmin(x, y);
    }
    out.v[s] = T(x);
  }
  return out;
}
template <typename F, typename T, int M>
inline F enigma_mma_broadcast_rows(thread const enigma_row<T, M> &r) {
  F f;
  for (int i = 0; i < F::size; ++i) f.v[i] = r.v[enigma_mma_slot<F::cols>(i)];
  return f;
}
// enigma.mma_halves: a lane's word (row fm, column 8 b + fn + e) of each
// 8x8 tile holds its elements (fm, 16 b + 8 e + fn) and the next.
template <typename F, typename W, int M, int N>
inline F enigma_mma_halves(thread const enigma_frag<W, M, N> &w) {
  typedef typename F::value_type T;
  F f;
  for (int i = 0; i < enigma_frag<W, M, N>::size; ++i) {
    const uint word = as_type<uint>(w.v[i]);
    const int tile = i >> 1, rt = tile / (N / 8), ct = tile % (N / 8);
    const int out = rt * (N / 4) + 2 * ct + (i & 1);
    f.v[2 * out] = as_type<T>(ushort(word & 0xFFFFu));
    f.v[2 * out + 1] = as_type<T>(ushort(word >> 16));
  }
  return f;
}
template <int Ld, int Bs> inline ulong enigma_mma_stored(ulong sr, ulong sc) {
  return Bs > 0 ? (sc / Ld) * ulong(Bs) + sr * Ld + sc % Ld : sr * Ld + sc;
}
template <int Ld, bool Trans, int S0, int S1, int S2, int Bs = 0, typename P>
inline float enigma_mma_at(P p, ulong base, ulong off, ulong r, ulong c) {
  return float(p[base + enigma_mma_swz<S0, S1, S2>(off + (Trans ? enigma_mma_stored<Ld, Bs>(c, r)
                                                                : enigma_mma_stored<Ld, Bs>(r, c)))]);
}
// One 8x8 step, c += a * b, each argument a lane's pair of its 8x8 tile.
inline void enigma_mma_88(thread float *c, float2 a, float2 b, uint lane) {
  simdgroup_matrix<float, 8, 8> am, bm, cm;
  reinterpret_cast<thread float2 &>(am.thread_elements()) = a;
  reinterpret_cast<thread float2 &>(bm.thread_elements()) = b;
  reinterpret_cast<thread float2 &>(cm.thread_elements()) = float2(c[0], c[1]);
  simdgroup_multiply_accumulate(cm, am, bm, cm);
  const float2 d = reinterpret_cast<thread float2 &>(cm.thread_elements());
  c[0] = d.x;
  c[1] = d.y;
}
template <typename F> inline F enigma_mma_wait(F acc) { return acc; }
template <int Pending, typename F> inline F enigma_mma_wait_pending(F acc) { return acc; }
// A pair of TF32 operands (docs/design/tf32.md): the 13 low mantissa bits cleared.
inline float2 enigma_mma_tf32(float2 x) {
  return float2(as_type<float>(as_type<uint>(x.x) & 0xffffe000u),
                as_type<float>(as_type<uint>(x.y) & 0xffffe000u));
}
template <int K, int ALd, bool ATr, int AS0, int AS1, int AS2, int ABs, int BLd, bool BTr, int BS0,
          int BS1, int BS2, int BBs, bool Tf32, bool Wg, bool Async, bool ZeroAcc = false, typename PA, typename PB, int M,
          int N>
inline enigma_frag<float, M, N> enigma_mma_sync(enigma_frag<float, M, N> acc, PA a, ulong a_base,
                                                ulong a_off, PB b, ulong b_base, ulong b_off, uint lane) {
  const ulong fm = enigma_mma_fm(lane), fn = enigma_mma_fn(lane);
  for (int kb = 0; kb < K / 8; ++kb) {
    float2 am[M / 8], bm[N / 8];
    for (int bi = 0; bi < M / 8; ++bi)
      am[bi] = float2(enigma_mma_at<ALd, ATr, AS0, AS1, AS2, ABs>(a, a_base, a_off, 8 * bi + fm, 8 * kb + fn),
                      enigma_mma_at<ALd, ATr, AS0, AS1, AS2, ABs>(a, a_base, a_off, 8 * bi + fm, 8 * kb + fn + 1));
    for (int bj = 0; bj < N / 8; ++bj)
      bm[bj] = float2(enigma_mma_at<BLd, BTr, BS0, BS1, BS2, BBs>(b, b_base, b_off, 8 * kb + fm, 8 * bj + fn),
                      enigma_mma_at<BLd, BTr, BS0, BS1, BS2, BBs>(b, b_base, b_off, 8 * kb + fm, 8 * bj + fn + 1));
    if (Tf32) {
      for (int bi = 0; bi < M / 8; ++bi) am[bi] = enigma_mma_tf32(am[bi]);
      for (int bj = 0; bj < N / 8; ++bj) bm[bj] = enigma_mma_tf32(bm[bj]);
    }
    for (int bi = 0; bi < M / 8; ++bi)
      for (int bj = 0; bj < N / 8; ++bj)
        enigma_mma_88(&acc.v[2 * (bi * (N / 8) + bj)], am[bi], bm[bj], lane);
  }
  return acc;
}
template <int BLd, bool BTr, int BS0, int BS1, int BS2, int BBs, bool Wg, bool Async, typename T, int M, int N,
          int K, typename PB>
inline enigma_frag<float, M, N> enigma_mma_reg(enigma_frag<float, M, N> acc, thread const enigma_frag<T, M, K> &a,
                                               PB b, ulong b_base, ulong b_off, uint lane) {
  const ulong fm = enigma_mma_fm(lane), fn = enigma_mma_fn(lane);
  for (int kb = 0; kb < K / 8; ++kb) {
    float2 bm[N / 8];
    for (int bj = 0; bj < N / 8; ++bj)
      bm[bj] = float2(enigma_mma_at<BLd, BTr, BS0, BS1, BS2, BBs>(b, b_base, b_off, 8 * kb + fm, 8 * bj + fn),
                      enigma_mma_at<BLd, BTr, BS0, BS1, BS2, BBs>(b, b_base, b_off, 8 * kb + fm, 8 * bj + fn + 1));
    for (int bi = 0; bi < M / 8; ++bi) {
      const int ai = 2 * (bi * (K / 8) + kb);
      const float2 am = float2(float(a.v[ai]), float(a.v[ai + 1]));
      for (int bj = 0; bj < N / 8; ++bj)
        enigma_mma_88(&acc.v[2 * (bi * (N / 8) + bj)], am, bm[bj], lane);
    }
  }
  return acc;
}
template <int Rows, int Cols, int DstLd, int S0, int S1, int S2, int Bs, typename PD, typename PS>
inline void enigma_copy_tile_async(PD dst, ulong dst_base, PS src, ulong src_off, ulong src_ld,
                                   ulong valid_rows, ulong valid_cols, uint tid, uint nthreads) {
  const int E = 16 / int(sizeof(src[0]));
  for (uint i = tid; i < uint(Rows * (Cols / E)); i += nthreads) {
    const ulong r = i / (Cols / E), c0 = ulong(i % (Cols / E)) * E;
    for (int e = 0; e < E; ++e) {
      const ulong c = c0 + e;
      const ulong block = Bs > 0 ? c / DstLd : 0;  // column blocks Bs apart
      const ulong at = dst_base + block * Bs + enigma_mma_swz<S0, S1, S2>(r * DstLd + c - block * DstLd);
      if (r < valid_rows && c < valid_cols) dst[at] = src[src_off + r * src_ld + c];
      else dst[at] = 0;
    }
  }
}
inline void enigma_copy_async_commit() {}
template <int Pending> inline void enigma_copy_async_wait() {}
#endif // ENIGMA_MMA_HELPERS

)msl";

/// Whether `value` changes from one iteration of `loop` to the next: it
/// depends on a block argument inside the loop (the induction variable,
/// carried values) or on an op there that reads memory. Arithmetic on
/// values from outside does not: the host compiler may hoist it out. Other
/// ops count as their operands do (erring towards invariant, where the
/// caller is safe).
bool variesIn(Operation *loop, Value value) {
  if (!loop->isAncestor(value.getParentRegion()->getParentOp()))
    return false;
  Operation *def = value.getDefiningOp();
  if (!def || hasEffect<MemoryEffects::Read>(def))
    return true;
  return llvm::any_of(def->getOperands(),
                      [&](Value operand) { return variesIn(loop, operand); });
}

/// Whether `value` is the same in every iteration of the innermost loop
/// that holds `user` (false when no loop holds it).
bool invariantInInnermostLoop(Operation *user, Value value) {
  for (Operation *op = user->getParentOp(); op; op = op->getParentOp())
    if (isa<LoopLikeOpInterface>(op))
      return !variesIn(op, value);
  return false;
}

/// Thread queries the helpers need, made once per emitter as detached ops
/// so that each target prints them its own way.
class Queries {
public:
  explicit Queries(MLIRContext *ctx) : builder(ctx) {}
  ~Queries() {
    for (Operation *op : ops)
      op->destroy();
  }
  template <class OpT, class... Args> Operation *make(Args... args) {
    auto op = builder.create<OpT>(builder.getUnknownLoc(), args...);
    ops.push_back(op);
    return op;
  }

private:
  OpBuilder builder;
  std::vector<Operation *> ops;
};

std::string laneExpr(CFamilyEmitter &e) {
  Queries q(e.getKernel().getContext());
  return "(uint)" + e.queryExpr(q.make<ThreadIndexInSimdgroupOp>());
}

std::string threadIndexExpr(CFamilyEmitter &e) {
  Queries q(e.getKernel().getContext());
  return "(uint)" + e.queryExpr(q.make<ThreadIndexInThreadgroupOp>());
}

std::string groupSizeExpr(CFamilyEmitter &e) {
  // A required size is a constant: the copies then unroll for it.
  if (std::optional<uint64_t> threads =
          e.getKernel().getRequiredThreadgroupSize())
    return std::to_string(*threads) + "u";
  Queries q(e.getKernel().getContext());
  std::string out;
  for (Dim d : {Dim::X, Dim::Y, Dim::Z})
    out += (out.empty() ? "(uint)(" : " * ") +
           e.queryExpr(q.make<ThreadsPerThreadgroupOp>(d));
  return out + ")";
}

std::string boolText(bool b) { return b ? "true" : "false"; }

std::string swizzleArgs(std::optional<ArrayRef<int32_t>> sw) {
  if (!sw || sw->size() != 3)
    return "0, 0, 0";
  return std::to_string((*sw)[0]) + ", " + std::to_string((*sw)[1]) + ", " +
         std::to_string((*sw)[2]);
}

/// A scalar literal of an element type (for splat tensor constants).
std::string literal(CFamilyEmitter &e, Attribute value, Type type) {
  if (auto f = llvm::dyn_cast<FloatAttr>(value)) {
    if (isFloat8Type(type))
      return float8Literal(f.getValue());
    double d = f.getValueAsDouble();
    std::string text;
    if (std::isnan(d))
      text = "NAN";
    else if (std::isinf(d))
      text = d < 0 ? "(-INFINITY)" : "INFINITY";
    else {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", d);
      text = buf;
      if (text.find_first_of(".e") == std::string::npos)
        text += ".0";
      text += "f";
    }
    return type.isF32() ? text : e.typeName(type) + "(" + text + ")";
  }
  auto i = llvm::cast<IntegerAttr>(value);
  if (type.isInteger(1))
    return i.getValue().isZero() ? "false" : "true";
  return std::to_string(i.getValue().getZExtValue()) + "u";
}

/// The per-element C expression of an element-wise arith / math op, with
/// `el(v)` the element expression of operand v; empty when unsupported.
std::string elementExpr(CFamilyEmitter &e, Operation *op,
                        const std::function<std::string(Value)> &el) {
  auto elemType = [](Value v) { return getElementTypeOrSelf(v.getType()); };
  auto S = [&](Value v) {
    Type t = elemType(v);
    if (t.isInteger(1))
      return "(-(int)" + el(v) + ")";
    return "(" + e.typeName(t, true) + ")" + el(v);
  };
  Value r = op->getResult(0);
  std::string rt = e.typeName(elemType(r));
  auto a = [&]() { return op->getOperand(0); };
  auto b = [&]() { return op->getOperand(1); };
  auto bin = [&](const char *sym) { return el(a()) + " " + sym + " " + el(b()); };
  auto sbin = [&](const char *sym) {
    return "(" + rt + ")(" + S(a()) + " " + sym + " " + S(b()) + ")";
  };
  auto call = [&](const char *fn) {
    std::string args;
    for (Value v : op->getOperands())
      args += (args.empty() ? "" : ", ") + el(v);
    return std::string(fn) + "(" + args + ")";
  };
  return llvm::TypeSwitch<Operation *, std::string>(op)
      .Case([&](arith::AddFOp) { return bin("+"); })
      .Case([&](arith::SubFOp) { return bin("-"); })
      .Case([&](arith::MulFOp) { return bin("*"); })
      .Case([&](arith::DivFOp) { return bin("/"); })
      .Case([&](arith::RemFOp) { return call("fmod"); })
      .Case([&](arith::MaxNumFOp) { return call("fmax"); })
      .Case([&](arith::MinNumFOp) { return call("fmin"); })
      .Case([&](arith::NegFOp) { return "-(" + el(a()) + ")"; })
      .Case([&](arith::AddIOp) { return "(" + rt + ")(" + bin("+") + ")"; })
      .Case([&](arith::SubIOp) { return "(" + rt + ")(" + bin("-") + ")"; })
      .Case([&](arith::MulIOp) { return "(" + rt + ")(" + bin("*") + ")"; })
      .Case([&](arith::AndIOp) { return "(" + rt + ")(" + bin("&") + ")"; })
      .Case([&](arith::OrIOp) { return "(" + rt + ")(" + bin("|") + ")"; })
      .Case([&](arith::XOrIOp) { return "(" + rt + ")(" + bin("^") + ")"; })
      .Case([&](arith::ShLIOp) { return "(" + rt + ")(" + bin("<<") + ")"; })
      .Case([&](arith::ShRUIOp) { return "(" + rt + ")(" + bin(">>") + ")"; })
      .Case([&](arith::ShRSIOp) { return sbin(">>"); })
      .Case([&](arith::DivUIOp) { return "(" + rt + ")(" + bin("/") + ")"; })
      .Case([&](arith::RemUIOp) { return "(" + rt + ")(" + bin("%") + ")"; })
      .Case([&](arith::DivSIOp) { return sbin("/"); })
      .Case([&](arith::RemSIOp) { return sbin("%"); })
      .Case([&](arith::MaxSIOp) {
        return "(" + rt + ")max(" + S(a()) + ", " + S(b()) + ")";
      })
      .Case([&](arith::MinSIOp) {
        return "(" + rt + ")min(" + S(a()) + ", " + S(b()) + ")";
      })
      .Case([&](arith::MaxUIOp) { return "(" + rt + ")" + call("max"); })
      .Case([&](arith::MinUIOp) { return "(" + rt + ")" + call("min"); })
      .Case([&](arith::CmpFOp c) {
        using P = arith::CmpFPredicate;
        std::string x = el(c.getLhs()), y = el(c.getRhs());
        switch (c.getPredicate()) {
        case P::AlwaysFalse: return std::string("false");
        case P::AlwaysTrue: return std::string("true");
        case P::OEQ: return x + " == " + y;
        case P::OGT: return x + " > " + y;
        case P::OGE: return x + " >= " + y;
        case P::OLT: return x + " < " + y;
        case P::OLE: return x + " <= " + y;
        case P::ONE: return "(" + x + " < " + y + " || " + x + " > " + y + ")";
        case P::ORD: return "(!isnan(" + x + ") && !isnan(" + y + "))";
        case P::UEQ: return "!(" + x + " < " + y + " || " + x + " > " + y + ")";
        case P::UGT: return "!(" + x + " <= " + y + ")";
        case P::UGE: return "!(" + x + " < " + y + ")";
        case P::ULT: return "!(" + x + " >= " + y + ")";
        case P::ULE: return "!(" + x + " > " + y + ")";
        case P::UNE: return x + " != " + y;
        case P::UNO: return "(isnan(" + x + ") || isnan(" + y + "))";
        }
        return std::string();
      })
      .Case([&](arith::CmpIOp c) {
        using P = arith::CmpIPredicate;
        static const std::pair<P, const char *> ops[] = {
            {P::eq, "=="}, {P::ne, "!="}, {P::slt, "<"}, {P::sle, "<="},
            {P::sgt, ">"}, {P::sge, ">="}, {P::ult, "<"}, {P::ule, "<="},
            {P::ugt, ">"}, {P::uge, ">="}};
        bool isSigned = llvm::is_contained({P::slt, P::sle, P::sgt, P::sge},
                                           c.getPredicate());
        const char *sym = "==";
        for (auto [p, s] : ops)
          if (p == c.getPredicate())
            sym = s;
        std::string x = isSigned ? S(c.getLhs()) : el(c.getLhs());
        std::string y = isSigned ? S(c.getRhs()) : el(c.getRhs());
        return x + " " + sym + " " + y;
      })
      .Case([&](arith::SelectOp s) {
        return el(s.getCondition()) + " ? " + el(s.getTrueValue()) + " : " +
               el(s.getFalseValue());
      })
      .Case([&](arith::ExtFOp) {
        return floatConversionExpr(e, elemType(a()), elemType(r), el(a()));
      })
      .Case([&](arith::TruncFOp) {
        return floatConversionExpr(e, elemType(a()), elemType(r), el(a()));
      })
      .Case([&](TruncFSatOp) {
        return floatConversionExpr(e, elemType(a()), elemType(r), el(a()),
                                   /*saturate=*/true);
      })
      .Case([&](arith::BitcastOp) {
        return "as_type<" + rt + ">(" + el(a()) + ")";
      })
      .Case([&](arith::UIToFPOp) { return "(" + rt + ")" + el(a()); })
      .Case([&](arith::SIToFPOp) { return "(" + rt + ")" + S(a()); })
      // NaN and values past the range defined: metal_float_to_int.h.
      .Case([&](arith::FPToUIOp) {
        return "(" + rt + ")enigma_float_to_int<" + rt + ", " + rt +
               ">((float)" + el(a()) + ")";
      })
      .Case([&](arith::FPToSIOp) {
        std::string st = e.typeName(elemType(r), true);
        return "(" + rt + ")enigma_float_to_int<" + st + ", " + st +
               ">((float)" + el(a()) + ")";
      })
      .Case([&](arith::ExtUIOp) { return "(" + rt + ")" + el(a()); })
      .Case([&](arith::ExtSIOp) { return "(" + rt + ")" + S(a()); })
      .Case([&](arith::TruncIOp t) {
        if (elemType(t.getResult()).isInteger(1))
          return "(bool)(" + el(a()) + " & 1)";
        return "(" + rt + ")" + el(a());
      })
      .Case([&](math::ExpOp) { return call("exp"); })
      .Case([&](math::Exp2Op) { return call("exp2"); })
      .Case([&](math::LogOp) { return call("log"); })
      .Case([&](math::Log2Op) { return call("log2"); })
      .Case([&](math::SqrtOp) { return call("sqrt"); })
      .Case([&](math::RsqrtOp) { return call("rsqrt"); })
      .Case([&](math::TanhOp) { return call("tanh"); })
      .Case([&](math::AbsFOp) { return call("abs"); })
      .Case([&](math::SinOp) { return call("sin"); })
      .Case([&](math::CosOp) { return call("cos"); })
      .Case([&](math::FloorOp) { return call("floor"); })
      .Case([&](math::CeilOp) { return call("ceil"); })
      .Case([&](math::FmaOp) { return call("fma"); })
      .Case([&](math::AbsIOp absi) {
        StringRef fn = mathFunctionName(e, absi->getName().getStringRef());
        return "(" + rt + ")" + fn.str() + "(" + S(a()) + ")";
      })
      .Default([](Operation *) { return std::string(); });
}

/// An element-wise op on fragments as a loop over the lane's elements.
LogicalResult emitElementwise(CFamilyEmitter &e, Operation *op) {
  if (op->getNumResults() != 1)
    return op->emitOpError("cannot be printed for fragments");
  Value result = op->getResult(0);
  if (auto c = dyn_cast<arith::ConstantOp>(op)) {
    auto dense = llvm::dyn_cast<DenseElementsAttr>(c.getValue());
    if (!dense || !dense.isSplat())
      return op->emitOpError("a fragment constant must be a splat");
    Type element = getElementTypeOrSelf(result.getType());
    e.alias(result, "enigma_mma_fill<" + e.typeName(result.getType()) + ">(" +
                        literal(e, dense.getSplatValue<Attribute>(), element) +
                        ")");
    return success();
  }
  // A splat constant operand reads as its scalar literal.
  auto el = [&](Value v) {
    if (auto c = v.getDefiningOp<arith::ConstantOp>())
      if (auto dense = llvm::dyn_cast<DenseElementsAttr>(c.getValue()))
        if (dense.isSplat())
          return literal(e, dense.getSplatValue<Attribute>(),
                         getElementTypeOrSelf(v.getType()));
    if (isFragmentType(v.getType()))
      return e.expr(v) + ".v[enigma_i]";
    return e.expr(v);
  };
  std::string rhs = elementExpr(e, op, el);
  if (rhs.empty())
    return op->emitOpError("cannot be printed for fragments");
  std::string type = e.typeName(result.getType());
  e.declareVariable(result, "");
  if (e.spellings().unrollPragma)
    e.line() << "#pragma unroll\n";
  e.line() << "for (int enigma_i = 0; enigma_i < " << type
           << "::size; ++enigma_i) " << e.expr(result) << ".v[enigma_i] = "
           << rhs << ";\n";
  return success();
}

bool touchesFragments(Operation *op) {
  for (Type t : op->getResultTypes())
    if (isFragmentType(t))
      return true;
  for (Type t : op->getOperandTypes())
    if (isFragmentType(t))
      return true;
  return false;
}

} // namespace

std::string fragmentTypeName(CFamilyEmitter &e, RankedTensorType type) {
  std::string elem = e.typeName(type.getElementType());
  if (type.getRank() == 1)
    return "enigma_row<" + elem + ", " + std::to_string(type.getDimSize(0)) +
           ">";
  return "enigma_frag<" + elem + ", " + std::to_string(type.getDimSize(0)) +
         ", " + std::to_string(type.getDimSize(1)) + ">";
}

bool usesMma(KernelOp kernel) {
  return kernel
      .walk([](Operation *op) {
        if (isFragmentOp(op) ||
            isa<CopyTileAsyncOp, CopyAsyncCommitOp, CopyAsyncWaitOp>(op) ||
            touchesFragments(op))
          return WalkResult::interrupt();
        return WalkResult::advance();
      })
      .wasInterrupted();
}

std::vector<std::pair<llvm::StringRef, bool>> mmaMetalQueries(KernelOp kernel) {
  std::vector<std::pair<llvm::StringRef, bool>> out;
  bool fragments = false, copies = false;
  kernel.walk([&](Operation *op) {
    if (isa<CopyTileAsyncOp>(op))
      copies = true;
    else if (isFragmentOp(op))
      fragments = true;
  });
  if (fragments)
    out.push_back({"thread_index_in_simdgroup", false});
  if (copies) {
    out.push_back({"thread_index_in_threadgroup", false});
    out.push_back({"threads_per_threadgroup", true});
  }
  return out;
}

// Whether `acc` is a fragment of +0 (enigma.mma_zeros): a warpgroup product
// into it starts from zero itself on sm_90a (wgmma's scale-d operand), so
// the registers need not be zeroed before every K tile's or key block's
// product. The other paths and targets read the zeros as before.
static bool zeroAccumulator(Value acc) {
  auto fill = acc.getDefiningOp<MmaFillOp>();
  return fill && matchPattern(fill.getValue(), m_PosZeroFloat());
}

void emitMmaDeclarations(CFamilyEmitter &e) {
  if (usesMma(e.getKernel()))
    e.stream() << kMslHelpers;
}

LogicalResult emitMmaFamily(CFamilyEmitter &e, Operation *op, bool &handled) {
  handled = true;
  auto T = [&](Value v) { return e.typeName(v.getType()); };
  auto idx = [&](Value v) { return v ? e.expr(v) : std::string("0"); };
  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case([&](MmaFillOp fill) {
        e.define(fill.getResult(), "enigma_mma_fill<" + T(fill.getResult()) +
                                       ">(" + e.expr(fill.getValue()) + ")");
        return success();
      })
      .Case([&](MmaIotaOp iota) {
        e.define(iota.getResult(),
                 "enigma_mma_iota<" + T(iota.getResult()) + ", " +
                     std::to_string(iota.getDim()) + ">(" + laneExpr(e) + ")");
        return success();
      })
      .Case([&](MmaLoadOp load) {
        bool bounded = bool(load.getRows());
        e.define(load.getResult(),
                 "enigma_mma_load<" + T(load.getResult()) + ", " +
                     boolText(load.getTranspose()) + ", " + boolText(bounded) +
                     ">(" + e.expr(load.getMemref()) + ", " +
                     e.expr(load.getOffset()) + ", " + e.expr(load.getLd()) +
                     ", " + idx(load.getRows()) + ", " + idx(load.getCols()) +
                     ", " + laneExpr(e) + ")");
        return success();
      })
      .Case([&](MmaGatherOp gather) {
        e.define(gather.getResult(),
                 "enigma_mma_gather<" + T(gather.getResult()) + ">(" +
                     e.expr(gather.getMemref()) + ", " +
                     e.expr(gather.getOffset()) + ", " +
                     e.expr(gather.getIndex()) + ", " + laneExpr(e) + ")");
        return success();
      })
      .Case([&](MmaStoreOp store) {
        bool bounded = bool(store.getRows());
        e.line() << "enigma_mma_store<" << boolText(store.getTranspose())
                 << ", " << boolText(bounded) << ">("
                 << e.expr(store.getValue()) << ", "
                 << e.expr(store.getMemref()) << ", "
                 << e.expr(store.getOffset()) << ", " << e.expr(store.getLd())
                 << ", " << idx(store.getRows()) << ", "
                 << idx(store.getCols()) << ", " << laneExpr(e) << ");\n";
        return success();
      })
      .Case([&](MmaOp mma) {
        std::string targs =
            std::to_string(mma.getK()) + ", " + std::to_string(mma.getALd()) +
            ", " + boolText(mma.getATranspose()) + ", " +
            swizzleArgs(mma.getASwizzle()) + ", " +
            std::to_string(mma.getABlockStride().value_or(0)) + ", " +
            std::to_string(mma.getBLd()) + ", " +
            boolText(mma.getBTranspose()) + ", " +
            swizzleArgs(mma.getBSwizzle()) + ", " +
            std::to_string(mma.getBBlockStride().value_or(0)) + ", " +
            boolText(mma.getTf32()) + ", " + boolText(mma.getWarpgroup()) +
            ", " + boolText(mma.getAsynchronous());
        if (mma.getWarpgroup() && zeroAccumulator(mma.getAcc()))
          targs += ", true"; // ZeroAcc
        // 8-bit float tiles: enigma_mma_fp8 takes their formats first.
        std::string callee = "enigma_mma_sync<";
        if (isFloat8Type(mma.getA().getType()))
          callee = "enigma_mma_fp8<" +
                   std::to_string(float8Format(mma.getA().getType())) +
                   ", " +
                   std::to_string(float8Format(mma.getB().getType())) + ", ";
        e.define(mma.getResult(),
                 callee + targs + ">(" + e.expr(mma.getAcc()) +
                     ", " + e.expr(mma.getA()) + ", " +
                     e.expr(mma.getABase()) + ", " + e.expr(mma.getAOffset()) +
                     ", " + e.expr(mma.getB()) + ", " +
                     e.expr(mma.getBBase()) + ", " + e.expr(mma.getBOffset()) +
                     ", " + laneExpr(e) + ")");
        return success();
      })
      .Case([&](MmaWaitOp wait) {
        // Pending products only mean something where products run
        // asynchronously (sm_90a); elsewhere both forms return acc.
        std::string callee =
            wait.getPending() == 0
                ? std::string("enigma_mma_wait(")
                : "enigma_mma_wait_pending<" +
                      std::to_string(wait.getPending()) + ">(";
        e.define(wait.getResult(), callee + e.expr(wait.getAcc()) + ")");
        return success();
      })
      .Case([&](MmaRegOp mma) {
        // The Wg flag lets sm_90a run the product as one wgmma reading A
        // from registers. Only when A changes between iterations of the
        // innermost loop around the product: ptxas (CUDA 13) gave a
        // loop-invariant A (flash attention's Q) and another such
        // product's A the same registers without restoring them, so later
        // iterations multiplied the wrong A. Elsewhere the product runs as
        // mma.sync.
        std::string targs =
            std::to_string(mma.getBLd()) + ", " +
            boolText(mma.getBTranspose()) + ", " +
            swizzleArgs(mma.getBSwizzle()) + ", " +
            std::to_string(mma.getBBlockStride().value_or(0)) + ", " +
            boolText(mma.getWarpgroup() &&
                     !invariantInInnermostLoop(mma, mma.getA())) +
            ", " + boolText(mma.getAsynchronous());
        e.define(mma.getResult(),
                 "enigma_mma_reg<" + targs + ">(" + e.expr(mma.getAcc()) +
                     ", " + e.expr(mma.getA()) + ", " +
                     e.expr(mma.getB()) + ", " + e.expr(mma.getBBase()) +
                     ", " + e.expr(mma.getBOffset()) + ", " + laneExpr(e) +
                     ")");
        return success();
      })
      .Case([&](MmaReduceRowsOp reduce) {
        e.define(reduce.getResult(),
                 "enigma_mma_reduce_rows<" +
                     std::to_string(static_cast<int>(reduce.getKind())) +
                     ">(" + e.expr(reduce.getValue()) + ")");
        return success();
      })
      .Case([&](MmaHalvesOp halves) {
        e.define(halves.getResult(),
                 "enigma_mma_halves<" + T(halves.getResult()) + ">(" +
                     e.expr(halves.getValue()) + ")");
        return success();
      })
      .Case([&](MmaBroadcastRowsOp broadcast) {
        e.define(broadcast.getResult(),
                 "enigma_mma_broadcast_rows<" + T(broadcast.getResult()) +
                     ">(" + e.expr(broadcast.getValue()) + ")");
        return success();
      })
      .Case([&](CopyTileAsyncOp copy) {
        // CUDA: through the TMA where the copy has a tensor map.
        auto tma = e.tmaCopyArgs(copy);
        e.line() << (tma ? "enigma_copy_tile_tma<" : "enigma_copy_tile_async<")
                 << copy.getRows() << ", " << copy.getCols() << ", "
                 << copy.getDstLd() << ", "
                 << swizzleArgs(copy.getDstSwizzle()) << ", "
                 << copy.getBlockStride().value_or(0) << ">("
                 << (tma ? tma->leading : std::string())
                 << e.expr(copy.getDst()) << ", "
                 << e.expr(copy.getDstBase()) << ", "
                 << e.expr(copy.getSrc()) << ", "
                 << e.expr(copy.getSrcOffset()) << ", "
                 << e.expr(copy.getSrcLd()) << ", "
                 << e.expr(copy.getValidRows()) << ", "
                 << e.expr(copy.getValidCols()) << ", " << threadIndexExpr(e)
                 << ", " << groupSizeExpr(e)
                 << (tma ? tma->trailing : std::string()) << ");\n";
        return success();
      })
      .Case([&](CopyAsyncCommitOp) {
        if (e.hasTensorMaps())
          e.line() << "enigma_tma_commit(enigma_tma, " << threadIndexExpr(e)
                   << ");\n";
        else
          e.line() << "enigma_copy_async_commit();\n";
        return success();
      })
      .Case([&](CopyAsyncWaitOp wait) {
        e.line() << (e.hasTensorMaps() ? "enigma_tma_wait<"
                                       : "enigma_copy_async_wait<")
                 << wait.getPending()
                 << (e.hasTensorMaps() ? ">(enigma_tma);\n" : ">();\n");
        return success();
      })
      .Default([&](Operation *other) {
        // Element-wise arith / math on fragments; everything else is not
        // this family's.
        if (!touchesFragments(other) ||
            !(llvm::isa<arith::ArithDialect, math::MathDialect>(
                  other->getDialect()) ||
              isa<TruncFSatOp>(other))) {
          handled = false;
          return success();
        }
        return emitElementwise(e, other);
      });
}

} // namespace enigma
