//===- MmaPtxTest.cpp - mma kernels become tensor-core PTX ----------------===//
//
// Kernels written with the C++ builder's mma family (enigma/Builder/Mma.h),
// compiled by NVRTC to PTX for compute_90 (no GPU needed; skipped without
// NVRTC): half / bfloat products are ldmatrix + mma.sync m16n8k16, float
// products with TF32 allowed are mma.sync m16n8k8 on truncated tf32 values,
// float products without it are FMA only, and tile copies are cp.async
// groups.
//
//===----------------------------------------------------------------------===//
#include "enigma/Builder/Mma.h"
#include "enigma/Builder/KernelBuilder.h"
#include "enigma/Runtime/CudaBackend.h"

#include <gtest/gtest.h>

#include <cstdlib>

using namespace enigma;

namespace {

/// C (64 x 64 f32) = A (64 x 32) * B (32 x 64) for one simdgroup, tiles
/// copied into swizzled threadgroup memory.
KernelArtifact productKernel(DType dtype, bool tf32) {
  KernelBuilder k("mma_product");
  Buffer A = k.addBuffer("A", dtype);
  Buffer B = k.addBuffer("B", dtype);
  Buffer C = k.addBuffer("C", DType::F32);
  auto u32 = [&](int64_t v) { return k.constantInt(v, DType::U32); };
  ThreadgroupArray as = threadgroupAlloc(k, dtype, 64 * 32);
  ThreadgroupArray bs = threadgroupAlloc(k, dtype, 32 * 64);
  bool half = byteWidth(dtype) == 2;
  MmaSwizzle swA = half ? MmaSwizzle{2, 3, 3} : MmaSwizzle{3, 2, 3};
  MmaSwizzle swB = half ? MmaSwizzle{3, 3, 3} : MmaSwizzle{3, 2, 4};
  copyTileAsync(as, u32(0), A, u32(0), u32(32), u32(64), u32(32), 64, 32, 32,
                swA);
  copyTileAsync(bs, u32(0), B, u32(0), u32(64), u32(32), u32(64), 32, 64, 64,
                swB);
  copyAsyncCommit(k);
  copyAsyncWait(k, 0);
  k.barrier();
  Value acc = mmaFill(k, k.constant(0.0, DType::F32), DType::F32, 64, 64);
  acc = mma(acc, {as, u32(0), u32(0), 32, false, swA},
            {bs, u32(0), u32(0), 64, false, swB}, 32, tf32);
  // An epilogue: scale each row by its maximum.
  Value rowMax = mmaReduceRows(acc, RowReduce::Max);
  acc = mmaBinary(BinaryOp::Div, acc, mmaBroadcastRows(rowMax, 64));
  mmaStore(acc, C, u32(0), u32(64));
  return k.compile();
}

/// C (64 x 128 f32) = A (64 x 32) * B (32 x 128) for one warpgroup of
/// float tiles with TF32 allowed, both K-major (B stored 128 x 32) in rows
/// of 32 floats under the 128-byte swizzle: wgmma's tf32 shape.
KernelArtifact warpgroupTf32Kernel(bool tf32) {
  KernelBuilder k("wgmma_float_product");
  k.requireThreadgroupSize(128);
  Buffer A = k.addBuffer("A", DType::F32);
  Buffer B = k.addBuffer("B", DType::F32);
  Buffer C = k.addBuffer("C", DType::F32);
  auto u32 = [&](int64_t v) { return k.constantInt(v, DType::U32); };
  ThreadgroupArray as = threadgroupAlloc(k, DType::F32, 64 * 32);
  ThreadgroupArray bs = threadgroupAlloc(k, DType::F32, 128 * 32);
  MmaSwizzle sw{3, 2, 3};
  copyTileAsync(as, u32(0), A, u32(0), u32(32), u32(64), u32(32), 64, 32, 32,
                sw);
  copyTileAsync(bs, u32(0), B, u32(0), u32(32), u32(128), u32(32), 128, 32,
                32, sw);
  copyAsyncCommit(k);
  copyAsyncWait(k, 0);
  k.barrier();
  Value acc = mmaFill(k, k.constant(0.0, DType::F32), DType::F32, 16, 128);
  acc = mma(acc, {as, u32(0), u32(0), 32, false, sw},
            {bs, u32(0), u32(0), 32, true, sw}, 32, tf32,
            /*warpgroup=*/true);
  mmaStore(acc, C, u32(0), u32(128));
  return k.compile();
}

std::string ptxOf(const KernelArtifact &art) {
  return CudaBackend::compileForCheck(art.cudaSource, "compute_90");
}

size_t count(const std::string &text, const std::string &what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos;
       at = text.find(what, at + 1))
    ++n;
  return n;
}

TEST(MmaPtx, BfloatProductsAreLdmatrixAndMmaSync) {
  setenv("ENIGMA_DISABLE_CACHE", "1", 1);
  std::string ptx;
  try {
    ptx = ptxOf(productKernel(DType::BF16, false));
  } catch (const BackendUnavailable &e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  }
  // 64 x 64 x 32: 4 x 8 blocks of 16 x 8, two K steps of 16.
  EXPECT_EQ(count(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"),
            64u)
      << ptx;
  EXPECT_GE(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.shared.b16"), 8u);
  EXPECT_GE(count(ptx, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16"), 8u);
  EXPECT_NE(ptx.find("cp.async.cg.shared.global"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async.commit_group"), std::string::npos);
  EXPECT_NE(ptx.find("cp.async.wait_group 0"), std::string::npos);
  // The row reduction: two butterfly steps among the four lanes of a quad.
  EXPECT_NE(ptx.find("shfl.sync.bfly.b32"), std::string::npos);
}

TEST(MmaPtx, HalfProductsUseF16Instructions) {
  std::string ptx;
  try {
    ptx = ptxOf(productKernel(DType::F16, false));
  } catch (const BackendUnavailable &e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  }
  EXPECT_EQ(count(ptx, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"),
            64u);
}

TEST(MmaPtx, FloatProductsUseTf32OnlyWhenAllowed) {
  std::string tf32, fp32;
  try {
    tf32 = ptxOf(productKernel(DType::F32, true));
    fp32 = ptxOf(productKernel(DType::F32, false));
  } catch (const BackendUnavailable &e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  }
  // 64 x 64 x 32: 4 x 8 blocks, four K steps of 8.
  EXPECT_EQ(count(tf32, "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"),
            128u);
  // Operands rounded to TF32 by clearing their 13 low mantissa bits.
  EXPECT_NE(tf32.find("-8192;"), std::string::npos);
  EXPECT_EQ(tf32.find("cvt.rna.tf32.f32"), std::string::npos);
  EXPECT_EQ(fp32.find("mma.sync"), std::string::npos);
  EXPECT_EQ(fp32.find("tf32"), std::string::npos);
  // 128 accumulators per lane, each an fma per k (the k loop may stay
  // rolled in the PTX).
  EXPECT_GE(count(fp32, "fma.rn.f32"), 1024u);
}

TEST(MmaPtx, BuilderMistakesAreEnigmaErrors) {
  KernelBuilder k("mistakes");
  Buffer A = k.addBuffer("A", DType::F32);
  auto u32 = [&](int64_t v) { return k.constantInt(v, DType::U32); };
  Value f = mmaFill(k, k.constant(1.0, DType::F32), DType::F32, 16, 16);
  Value g = mmaFill(k, k.constant(1.0, DType::F32), DType::F32, 16, 32);
  EXPECT_THROW(mmaBinary(BinaryOp::Add, f, g), EnigmaError);
  EXPECT_THROW(mmaBinary(BinaryOp::Xor, f, f), EnigmaError);
  EXPECT_THROW(mmaReduceRows(mmaReduceRows(f, RowReduce::Sum), RowReduce::Max),
               EnigmaError);
  EXPECT_THROW(mma(f, {A, u32(0), u32(0), 16}, {A, u32(0), u32(0), 16}, 16),
               EnigmaError); // operands in device memory
  EXPECT_THROW(mmaLoad(k, A, u32(0), u32(16), 16, 16, false, u32(3)),
               EnigmaError); // one bound without the other
  EXPECT_THROW(mmaUnary("erf", f), EnigmaError);
  EXPECT_THROW(copyAsyncWait(k, 8), EnigmaError);
  FragmentShape s = fragmentShape(mmaReduceRows(g, RowReduce::Max));
  EXPECT_EQ(s.rows, 16);
  EXPECT_EQ(s.cols, 0);
  EXPECT_TRUE(isFragment(f));
  EXPECT_FALSE(isFragment(u32(1)));
}

} // namespace

TEST(MmaPtx, WarpgroupFloatProductsAreTf32Wgmma) {
  std::string tf32, fp32;
  try {
    tf32 = CudaBackend::compileForCheck(warpgroupTf32Kernel(true).cudaSource,
                                        "compute_90a");
    fp32 = CudaBackend::compileForCheck(warpgroupTf32Kernel(false).cudaSource,
                                        "compute_90a");
  } catch (const BackendUnavailable &e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  }
  // K = 32: four instructions of K 8 on the 64 x 128 group product.
  EXPECT_EQ(count(tf32, "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32"),
            4u)
      << tf32;
  EXPECT_NE(tf32.find("wgmma.commit_group"), std::string::npos);
  // Without TF32 the product is fp32 FMA: no tensor-core instruction.
  EXPECT_EQ(fp32.find("wgmma.mma_async"), std::string::npos);
  EXPECT_EQ(fp32.find("tf32"), std::string::npos);
}
