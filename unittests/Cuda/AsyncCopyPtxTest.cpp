//===- AsyncCopyPtxTest.cpp - Async copies become cp.async ----------------===//
//
// The CUDA text of a kernel with async copies, compiled by NVRTC to PTX for
// compute_90 (no GPU needed; skipped without NVRTC): device -> threadgroup
// copies are cp.async in 16-byte form where the tile allows it, committed
// in groups and waited for with cp.async.wait_group.
//
//===----------------------------------------------------------------------===//
#include "enigma/Builder/AsyncCopy.h"
#include "enigma/Builder/Control.h"
#include "enigma/Builder/KernelBuilder.h"
#include "enigma/Runtime/CudaBackend.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace enigma;

namespace {

TEST(AsyncCopyPtx, CopiesBecomeCpAsyncGroups) {
  setenv("ENIGMA_DISABLE_CACHE", "1", 1);
  KernelBuilder k("async_tiles");
  Buffer A = k.addBuffer("A", DType::F32);
  Buffer O = k.addBuffer("O", DType::F32);
  ThreadgroupArray tile = threadgroupAlloc(k, DType::F32, 256);
  auto u32 = [&](int64_t v) { return k.constantInt(v, DType::U32); };
  Value base = k.threadQuery(ThreadQuery::ThreadgroupPositionInGrid) * u32(256);
  AsyncCopyEvent first = asyncCopy2d(
      k, AsyncCopyDirection::DeviceToThreadgroup, tile, u32(0), u32(16), A,
      base, u32(64), u32(16), u32(8));
  AsyncCopyEvent second = asyncCopy1d(
      k, AsyncCopyDirection::DeviceToThreadgroup, tile, u32(128), A,
      base + u32(128), u32(128));
  asyncCopyWait(k, {first, second});
  k.barrier();
  AsyncCopyEvent out = asyncCopy1d(k, AsyncCopyDirection::ThreadgroupToDevice,
                                   O, base, tile, u32(0), u32(256));
  asyncCopyWait(k, {out});
  KernelArtifact art = k.compile();
  std::string ptx;
  try {
    ptx = CudaBackend::compileForCheck(art.cudaSource, "compute_90");
  } catch (const BackendUnavailable &e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  }
  EXPECT_NE(ptx.find("cp.async.cg.shared.global"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("cp.async.commit_group"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async.wait_group"), std::string::npos);
}

} // namespace
