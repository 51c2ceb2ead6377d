//===- KernelBuilderTest.cpp - The C++ tracing API end to end -------------===//
#include "enigma/Builder/Control.h"
#include "enigma/Builder/KernelBuilder.h"
#include "enigma/Runtime/CpuBackend.h"
#include "enigma/Runtime/Dispatch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace enigma;

namespace {

KernelArtifact vectorAdd() {
  KernelBuilder k("vector_add");
  Buffer A = k.addBuffer("A", DType::F32);
  Buffer B = k.addBuffer("B", DType::F32);
  Buffer C = k.addBuffer("C", DType::F32);
  Value tid = k.threadPositionInGrid();
  C[tid] = A[tid] + B[tid];
  return k.compile();
}

std::vector<float> run(const KernelArtifact &art, const std::vector<float> &a,
                       const std::vector<float> &b, uint32_t threads) {
  Dispatcher dispatcher(std::make_shared<CpuBackend>());
  DispatchArgs args;
  args.inputs = {{a.data(), a.size() * 4, DType::F32, a.size()},
                 {b.data(), b.size() * 4, DType::F32, b.size()}};
  args.outputSizes = {a.size() * 4};
  auto out = dispatcher.execute(art, args, {uint32_t(a.size()), 1, 1},
                                {threads, 1, 1});
  std::vector<float> c(a.size());
  std::memcpy(c.data(), out[0].data(), out[0].size());
  return c;
}

TEST(KernelBuilder, SignatureAndSources) {
  KernelArtifact art = vectorAdd();
  EXPECT_EQ(art.kernelName, "enigma_kernel_vector_add");
  ASSERT_EQ(art.params.size(), 3u);
  EXPECT_EQ(art.params[2].name, "C");
  EXPECT_EQ(art.params[2].kind, ParamKind::Buffer);
  EXPECT_NE(art.mslSource.find("kernel void enigma_kernel_vector_add("),
            std::string::npos);
  EXPECT_NE(art.mslSource.find("device float* A [[buffer(0)]]"),
            std::string::npos);
  EXPECT_NE(art.mlirSource.find("enigma.kernel @vector_add"), std::string::npos);
}

TEST(KernelBuilder, ParamsSayWhichBuffersTheKernelWrites) {
  // C is stored into; A and B are only read; scalars are never "written".
  KernelArtifact art = vectorAdd();
  EXPECT_FALSE(art.params[0].written);
  EXPECT_FALSE(art.params[1].written);
  EXPECT_TRUE(art.params[2].written);

  // A store under a branch still counts; a buffer read there does not.
  KernelBuilder k("guarded");
  Buffer in = k.addBuffer("in", DType::F32);
  Buffer out = k.addBuffer("out", DType::F32);
  Value n = k.addScalar("n", DType::U32);
  Value tid = k.threadPositionInGrid();
  k.beginIf(tid < n, {});
  out[tid] = in[tid];
  k.endIf({});
  KernelArtifact guarded = k.compile();
  ASSERT_EQ(guarded.params.size(), 3u);
  EXPECT_FALSE(guarded.params[0].written);
  EXPECT_TRUE(guarded.params[1].written);
  EXPECT_FALSE(guarded.params[2].written);
}

TEST(KernelBuilder, VectorAddRunsOnCpuWithPartialGroup) {
  KernelArtifact art = vectorAdd();
  for (size_t n : {1u, 255u, 257u, 100000u}) {
    std::mt19937 rng(n);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = dist(rng);
      b[i] = dist(rng);
    }
    std::vector<float> c = run(art, a, b, 256);
    for (size_t i = 0; i < n; ++i)
      ASSERT_EQ(c[i], a[i] + b[i]) << "n=" << n << " i=" << i;
  }
}

TEST(KernelBuilder, RejectsMixedTypesInBinary) {
  KernelBuilder k("mixed");
  Buffer A = k.addBuffer("A", DType::F32);
  Value tid = k.threadPositionInGrid();
  EXPECT_THROW(k.binary(BinaryOp::Add, A[tid], tid), EnigmaError);
  // The operators promote instead.
  EXPECT_EQ((Value(A[tid]) + tid).dtype(), DType::F32);
}

TEST(KernelBuilder, RejectsFloatIndexAndDuplicateNames) {
  KernelBuilder k("bad");
  Buffer A = k.addBuffer("A", DType::F32);
  EXPECT_THROW(k.addBuffer("A", DType::F32), EnigmaError);
  Value f = k.constant(1.5, DType::F32);
  EXPECT_THROW(A.load(f), EnigmaError);
  EXPECT_THROW(k.threadQuery(ThreadQuery::ThreadPositionInGrid, 3),
               EnigmaError);
  EXPECT_THROW(k.constantInt(300, DType::U8), EnigmaError);
}

TEST(KernelBuilder, LoopWithCarriedValue) {
  // out[tid] = sum_{i < tid} i, through a loop-carried accumulator.
  KernelBuilder k("prefix");
  Buffer out = k.addBuffer("out", DType::U32);
  Value tid = k.threadPositionInGrid();
  Value zero = k.constantInt(0, DType::U32);
  Value one = k.constantInt(1, DType::U32);
  std::vector<Value> body = k.beginFor(zero, tid, one, {zero});
  std::vector<Value> after = k.endFor({body[1] + body[0]});
  out[tid] = after[0];
  KernelArtifact art = k.compile();
  Dispatcher dispatcher(std::make_shared<CpuBackend>());
  DispatchArgs args;
  args.outputSizes = {100 * 4};
  auto res = dispatcher.execute(art, args, {100, 1, 1}, {32, 1, 1});
  const uint32_t *v = reinterpret_cast<const uint32_t *>(res[0].data());
  for (uint32_t i = 0; i < 100; ++i)
    ASSERT_EQ(v[i], i * (i - 1) / 2 + (i == 0 ? 0 : 0)) << i;
}

TEST(KernelBuilder, ValueUsedOutsideItsLoopIsAnError) {
  // A value computed in a loop body exists only there: using it after the
  // loop is refused at the use, naming the loop, not left to the verifier.
  KernelBuilder k("escape");
  Buffer out = k.addBuffer("out", DType::U32);
  k.setLocation("escape.py", 3);
  Value tid = k.threadPositionInGrid();
  Value one = k.constantInt(1, DType::U32);
  k.setLocation("escape.py", 5);
  std::vector<Value> body = k.beginFor(k.constantInt(0, DType::U32), tid, one,
                                       {tid});
  k.setLocation("escape.py", 6);
  Value inside = body[1] + one;
  std::vector<Value> after = k.endFor({inside});
  k.setLocation("escape.py", 8);
  try {
    out[tid] = inside;
    FAIL() << "expected an EnigmaError";
  } catch (const EnigmaError &e) {
    EXPECT_NE(std::string(e.what()).find(
                  "computed inside the loop at escape.py:5 (line 6)"),
              std::string::npos)
        << e.what();
  }
  out[tid] = after[0]; // the carried result is the way out
  EXPECT_NO_THROW(k.compile());
}

TEST(KernelBuilder, IfCarryingAVectorKeepsItsLanes) {
  // v = A[t] (a float4); if (t % 2 == 0) v = v * 2; C[t] = v.
  KernelBuilder k("if_vector");
  Buffer A = k.addBuffer("A", DType::F32, 4);
  Buffer C = k.addBuffer("C", DType::F32, 4);
  Value tid = k.threadPositionInGrid();
  Value v = A[tid];
  k.beginIfCarrying(tid % k.constantInt(2, DType::U32) ==
                        k.constantInt(0, DType::U32),
                    {v});
  k.beginElse({v * 2.0});
  std::vector<Value> result = k.endIf({v});
  ASSERT_EQ(result.size(), 1u);
  EXPECT_EQ(result[0].lanes(), 4u);
  C[tid] = result[0];
  KernelArtifact art = k.compile();
  const uint32_t vectors = 5;
  std::vector<float> a(4 * vectors);
  for (size_t i = 0; i < a.size(); ++i)
    a[i] = float(i) + 0.5f;
  Dispatcher dispatcher(std::make_shared<CpuBackend>());
  DispatchArgs args;
  args.inputs = {{a.data(), a.size() * 4, DType::F32, a.size()}};
  args.outputSizes = {a.size() * 4};
  auto out = dispatcher.execute(art, args, {vectors, 1, 1}, {4, 1, 1});
  std::vector<float> c(a.size());
  std::memcpy(c.data(), out[0].data(), out[0].size());
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(c[i], (i / 4) % 2 == 0 ? 2 * a[i] : a[i]) << i;
}

TEST(KernelBuilder, IfYieldingWrongLanesIsAnError) {
  KernelBuilder k("if_lanes");
  Buffer A = k.addBuffer("A", DType::F32, 4);
  Value tid = k.threadPositionInGrid();
  Value v = A[tid];
  k.beginIfCarrying(tid < k.constantInt(4, DType::U32), {v});
  try {
    k.beginElse({k.constant(1.0, DType::F32)});
    FAIL() << "expected an EnigmaError";
  } catch (const EnigmaError &e) {
    EXPECT_NE(std::string(e.what()).find("has 1 lane(s), the construct "
                                         "carries 4"),
              std::string::npos)
        << e.what();
  }
}

TEST(KernelBuilder, SelectOfDifferentLanesNamesThem) {
  KernelBuilder k("select_lanes");
  Buffer A = k.addBuffer("A", DType::F32, 4);
  Value tid = k.threadPositionInGrid();
  Value v = A[tid];
  try {
    select(k, tid < k.constantInt(2, DType::U32), v,
           k.constant(0.0, DType::F32));
    FAIL() << "expected an EnigmaError";
  } catch (const EnigmaError &e) {
    EXPECT_NE(std::string(e.what()).find("(4-lane f32 and f32)"),
              std::string::npos)
        << e.what();
  }
}

TEST(KernelBuilder, BarrierUnderDivergentIfIsRejected) {
  KernelBuilder k("divergent");
  k.addBuffer("A", DType::F32);
  Value tid = k.threadPositionInGrid();
  k.setLocation("user.py", 42);
  k.beginIf(tid < k.constantInt(4, DType::U32));
  k.barrier();
  k.endIf();
  try {
    k.compile();
    FAIL() << "expected an EnigmaError";
  } catch (const EnigmaError &e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("user.py:42"), std::string::npos) << msg;
    EXPECT_NE(msg.find("depends on the thread's position"), std::string::npos)
        << msg;
  }
}

} // namespace

namespace {

std::vector<uint32_t> runU32(const KernelArtifact &art, uint32_t n,
                             std::vector<uint32_t> input) {
  Dispatcher dispatcher(std::make_shared<CpuBackend>());
  DispatchArgs args;
  args.inputs = {{input.data(), input.size() * 4, DType::U32, input.size()}};
  args.outputSizes = {n * 4};
  auto out = dispatcher.execute(art, args, {n, 1, 1}, {32, 1, 1});
  std::vector<uint32_t> v(n);
  std::memcpy(v.data(), out[0].data(), out[0].size());
  return v;
}

} // namespace

TEST(KernelBuilder, LateValuesOfAnIf) {
  // r is first given inside both arms (then: a + 1; else: 7, an i32
  // constant converted to u32); z only in the then arm: a zero elsewhere.
  KernelBuilder k("late_if");
  Buffer A = k.addBuffer("A", DType::U32);
  Buffer out = k.addBuffer("out", DType::U32);
  Value tid = k.threadPositionInGrid();
  Value a = A[tid];
  Value odd = (a & k.constantInt(1, DType::U32)) == k.constantInt(1,
                                                                  DType::U32);
  k.beginIfCarrying(odd, {});
  Value thenR = a + k.constantInt(1, DType::U32);
  Value thenZ = a * k.constantInt(3, DType::U32);
  k.beginElse({});
  Value elseR = k.constantInt(7, DType::I32);
  std::vector<Value> r = endIfLate(k, {}, {thenR, thenZ}, {elseR, Value()},
                                   {{DType::U32, 1}, {DType::U32, 1}});
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].dtype(), DType::U32);
  out[tid] = r[0] * k.constantInt(1000, DType::U32) + r[1];
  KernelArtifact art = k.compile();
  std::vector<uint32_t> in(64);
  for (uint32_t i = 0; i < 64; ++i)
    in[i] = i * 7 + 3;
  std::vector<uint32_t> got = runU32(art, 64, in);
  for (uint32_t i = 0; i < 64; ++i) {
    uint32_t want = in[i] & 1 ? (in[i] + 1) * 1000 + in[i] * 3 : 7000;
    ASSERT_EQ(got[i], want) << i;
  }
}

TEST(KernelBuilder, LateValuesOfLoops) {
  // A value first given in the body of a for loop and of a while loop is
  // carried from a zero: out = last i with A[i] odd (for), and the count
  // of halvings of A[t] (while, given in the body).
  KernelBuilder k("late_loops");
  Buffer A = k.addBuffer("A", DType::U32);
  Buffer out = k.addBuffer("out", DType::U32);
  Value tid = k.threadPositionInGrid();
  Value zero = k.constantInt(0, DType::U32);
  Value one = k.constantInt(1, DType::U32);
  std::vector<Value> body =
      k.beginFor(zero, k.constantInt(8, DType::U32), one, {});
  Value inBody = body[0] * k.constantInt(2, DType::U32);
  std::vector<Value> forResults = endForLate(k, {}, {inBody},
                                             {{DType::U32, 1}});
  ASSERT_EQ(forResults.size(), 1u); // 7 * 2 after the loop
  std::vector<Value> cond = beginWhile(k, {Value(A[tid])});
  std::vector<Value> loopBody =
      whileCondition(k, cond[0] > one, {cond[0]});
  Value halved = loopBody[0] >> one;
  Value marker = halved + k.constantInt(100, DType::U32);
  std::vector<Value> whileResults =
      endWhileLate(k, {halved}, {Value()}, {marker}, {{DType::U32, 1}});
  ASSERT_EQ(whileResults.size(), 2u);
  out[tid] = forResults[0] * k.constantInt(10000, DType::U32) +
             whileResults[1];
  KernelArtifact art = k.compile();
  std::vector<uint32_t> in = {1, 2, 3, 8, 100, 1000};
  std::vector<uint32_t> got = runU32(art, uint32_t(in.size()), in);
  for (size_t i = 0; i < in.size(); ++i) {
    uint32_t x = in[i], last = 0; // zero when the body never ran
    while (x > 1) {
      x >>= 1;
      last = x + 100;
    }
    ASSERT_EQ(got[i], 14u * 10000 + last) << i;
  }
}
