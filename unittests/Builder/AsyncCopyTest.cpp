//===- AsyncCopyTest.cpp - Async copies through the C++ API ---------------===//
#include "enigma/Builder/AsyncCopy.h"
#include "enigma/Builder/Control.h"
#include "enigma/Builder/KernelBuilder.h"
#include "enigma/Runtime/CpuBackend.h"
#include "enigma/Runtime/Dispatch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

using namespace enigma;

namespace {

constexpr unsigned kRows = 6, kCols = 11, kPitch = 13, kThreads = 96;

/// One group: simdgroup 1 brings a kRows x kCols block of A (kPitch wide,
/// from row 1, column 2) into a tile, the group doubles it, simdgroup 0
/// writes it back to row-major O with a 2-D copy.
KernelArtifact tileRoundTrip() {
  KernelBuilder k("tile_round_trip");
  Buffer A = k.addBuffer("A", DType::F32);
  Buffer O = k.addBuffer("O", DType::F32);
  ThreadgroupArray tile = threadgroupAlloc(k, DType::F32, kRows * kCols);
  auto u32 = [&](int64_t v) { return k.constantInt(v, DType::U32); };
  Value sg = k.threadQuery(ThreadQuery::SimdgroupIndexInThreadgroup);
  k.beginIf(sg == u32(1));
  AsyncCopyEvent in = asyncCopy2d(
      k, AsyncCopyDirection::DeviceToThreadgroup, tile, u32(0), u32(kCols),
      A, u32(kPitch + 2), u32(kPitch), u32(kCols), u32(kRows));
  asyncCopyWait(k, {in});
  k.endIf();
  k.barrier();
  Value tid = k.threadQuery(ThreadQuery::ThreadIndexInThreadgroup);
  k.beginIf(tid < u32(kRows * kCols));
  tile.store(tid, tile.load(tid) * 2.0);
  k.endIf();
  k.barrier();
  k.beginIf(sg == u32(0));
  AsyncCopyEvent out = asyncCopy2d(
      k, AsyncCopyDirection::ThreadgroupToDevice, O, u32(0), u32(kCols), tile,
      u32(0), u32(kCols), u32(kCols), u32(kRows));
  asyncCopyWait(k, {out});
  k.endIf();
  return k.compile();
}

TEST(AsyncCopy, TileRoundTripRunsOnCpu) {
  KernelArtifact art = tileRoundTrip();
  EXPECT_NE(art.mslSource.find("air.simdgroup_async_copy_2d.p3i8.p1i8"),
            std::string::npos);
  EXPECT_NE(art.mslSource.find("air.simdgroup_async_copy_2d.p1i8.p3i8"),
            std::string::npos);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> a(8 * kPitch);
  for (float &x : a)
    x = dist(rng);
  Dispatcher dispatcher(std::make_shared<CpuBackend>());
  DispatchArgs args;
  args.inputs = {{a.data(), a.size() * 4, DType::F32, a.size()}};
  args.outputSizes = {kRows * kCols * 4};
  auto raw = dispatcher.execute(art, args, {kThreads, 1, 1}, {kThreads, 1, 1});
  std::vector<float> o(kRows * kCols);
  std::memcpy(o.data(), raw[0].data(), raw[0].size());
  for (unsigned r = 0; r < kRows; ++r)
    for (unsigned c = 0; c < kCols; ++c)
      ASSERT_EQ(o[r * kCols + c], 2.0f * a[(r + 1) * kPitch + c + 2])
          << "r=" << r << " c=" << c;
}

TEST(AsyncCopy, DirectionAndTypesAreChecked) {
  KernelBuilder k("bad");
  Buffer A = k.addBuffer("A", DType::F32);
  Buffer H = k.addBuffer("H", DType::F16);
  ThreadgroupArray tile = threadgroupAlloc(k, DType::F32, 16);
  Value zero = k.constantInt(0, DType::U32), n = k.constantInt(16, DType::U32);
  EXPECT_THROW(asyncCopy1d(k, AsyncCopyDirection::DeviceToThreadgroup, A,
                           zero, tile, zero, n),
               EnigmaError);
  EXPECT_THROW(asyncCopy1d(k, AsyncCopyDirection::DeviceToThreadgroup, tile,
                           zero, H, zero, n),
               EnigmaError);
  // 17 elements do not fit a 16-element array.
  EXPECT_THROW(asyncCopy1d(k, AsyncCopyDirection::DeviceToThreadgroup, tile,
                           k.constantInt(1, DType::U32), A, zero, n),
               EnigmaError);
  EXPECT_THROW(asyncCopy1d(k, AsyncCopyDirection::DeviceToThreadgroup, tile,
                           zero, A, zero, k.constant(1.0, DType::F32)),
               EnigmaError);
}

TEST(AsyncCopy, EventWaitedOutsideItsLoopIsAnError) {
  KernelBuilder k("escape");
  Buffer A = k.addBuffer("A", DType::F32);
  ThreadgroupArray tile = threadgroupAlloc(k, DType::F32, 16);
  Value zero = k.constantInt(0, DType::U32), n = k.constantInt(16, DType::U32);
  k.beginFor(zero, k.constantInt(4, DType::U32), k.constantInt(1, DType::U32));
  AsyncCopyEvent e = asyncCopy1d(k, AsyncCopyDirection::DeviceToThreadgroup,
                                 tile, zero, A, zero, n);
  k.endFor();
  try {
    asyncCopyWait(k, {e});
    FAIL() << "expected an EnigmaError";
  } catch (const EnigmaError &err) {
    EXPECT_NE(std::string(err.what()).find("inside a loop that has ended"),
              std::string::npos)
        << err.what();
  }
  // No events: nothing to wait for.
  EXPECT_NO_THROW(asyncCopyWait(k, {}));
}

} // namespace
