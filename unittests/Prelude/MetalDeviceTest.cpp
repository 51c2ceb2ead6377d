//===- MetalDeviceTest.cpp - The Metal semantics library through NVRTC ----===//
//
// The semantics library compiled for the GPU as the CUDA backend compiles
// kernels (CudaBackend::compileForCheck: NVRTC only, no GPU needed), and the
// instructions its functions lower to: the CUDA math library's for float
// math, the hardware's for half arithmetic and vector memory. Skipped where
// NVRTC is missing.
//
//===----------------------------------------------------------------------===//

#include "enigma/Runtime/CudaBackend.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using namespace enigma;

namespace {

#define COMPILE_OR_SKIP(call)                                                  \
  try {                                                                        \
    call;                                                                      \
  } catch (const BackendUnavailable &e) {                                      \
    GTEST_SKIP() << "no NVRTC here: " << e.what();                             \
  }

class MetalDeviceTest : public ::testing::Test {
protected:
  // Each check must reach NVRTC, not an artifact cached by an earlier run.
  void SetUp() override { setenv("ENIGMA_DISABLE_CACHE", "1", 1); }
};

std::string everyFunctionSource() {
  std::ifstream in(ENIGMA_PRELUDE_TEST_DIR "/MetalEveryFunction.inc");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// `body` inside a kernel with buffers of every scalar type, after the CUDA
/// prelude; returns its compute_90 PTX.
std::string ptxOf(const std::string &body) {
  const std::string source =
      "#include \"enigma_cuda_prelude.cuh\"\n"
      "extern \"C\" __global__ void enigma_kernel_probe(\n"
      "    float *F, half *H, bfloat *BF, float4 *F4, half4 *H4, int *I,\n"
      "    uint *U, ulong *UL, ushort2 *S2) {\n"
      "  const uint i = threadIdx.x, j = i + 1u;\n" +
      body + "\n}\n";
  return CudaBackend::compileForCheck(source, "compute_90");
}

TEST_F(MetalDeviceTest, EveryFunctionCompiles) {
  const std::string source =
      "#include \"enigma_cuda_prelude.cuh\"\n" + everyFunctionSource() +
      "\nextern \"C\" __global__ void enigma_kernel_every(\n"
      "    float *F, half *H, bfloat *BF, char *I8, uchar *U8, short *I16,\n"
      "    ushort *U16, int *I32, uint *U32, long *I64, ulong *U64) {\n"
      "  metal_every_function(F, H, BF, I8, U8, I16, U16, I32, U32, I64, U64,\n"
      "                       int(threadIdx.x));\n"
      "}\n";
  ASSERT_NE(source.find("metal_every_function("), std::string::npos);
  // PTX only: a cubin of this kernel would add ptxas minutes.
  std::string ptx;
  COMPILE_OR_SKIP(ptx = CudaBackend::compileForCheck(source, "compute_90"));
  EXPECT_NE(ptx.find(".entry enigma_kernel_every"), std::string::npos);
}

TEST_F(MetalDeviceTest, LibraryCompilesWithoutCudaHeaders) {
  // Without cuda_fp16.h the library has no half, and needs no header at all.
  const std::string source = R"(#include "metal_semantics.h"
extern "C" __global__ void enigma_kernel_alone(metal::float4 *V,
                                               metal::uint *U) {
  using namespace metal;
  const uint i = threadIdx.x;
  V[i] = clamp(normalize(V[i]) * 2.0f, 0.0f, 1.0f) + fract(V[i + 1]);
  U[i] = clz(U[i]) + addsat(U[i], 7u) + extract_bits(U[i], 3u, 5u);
  static_assert(!METAL_HAS_HALF && !METAL_HAS_BFLOAT, "no CUDA headers");
})";
  std::string ptx;
  COMPILE_OR_SKIP(ptx = CudaBackend::compileForCheck(source, "compute_90"));
  EXPECT_NE(ptx.find(".entry enigma_kernel_alone"), std::string::npos);
}

TEST_F(MetalDeviceTest, FloatMathIsCudasOwn) {
  std::string ptx;
  COMPILE_OR_SKIP(
      ptx = ptxOf("F[i] = exp(F[i]) + rsqrt(F[j]) + sqrt(F[i + 2u]);"));
  EXPECT_NE(ptx.find("ex2.approx.ftz.f32"), std::string::npos) << ptx; // expf
  EXPECT_NE(ptx.find("rsqrt.approx.f32"), std::string::npos) << ptx;   // rsqrtf
  EXPECT_NE(ptx.find("sqrt.rn.f32"), std::string::npos) << ptx;        // sqrtf
}

TEST_F(MetalDeviceTest, HalfArithmeticIsHardwareHalf) {
  std::string ptx;
  COMPILE_OR_SKIP(ptx = ptxOf("H[i] = H[i] + H[j];\n"
                              "H[j] = H[i] * H[j];\n"
                              "H4[i] = H4[i] - H4[j];"));
  EXPECT_NE(ptx.find("add.f16"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("mul.f16"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("sub.f16"), std::string::npos) << ptx; // half4 lanes
  EXPECT_EQ(ptx.find("cvt.f32.f16"), std::string::npos) << ptx; // no detour
}

TEST_F(MetalDeviceTest, VectorsMoveWhole) {
  std::string ptx;
  // As generated code reads a vector: into a variable first.
  COMPILE_OR_SKIP(ptx = ptxOf("const float4 a = F4[i], b = F4[j];\n"
                              "F4[i] = a * 2.0f + b;"));
  EXPECT_NE(ptx.find("ld.global.v4.f32"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("st.global.v4."), std::string::npos) << ptx; // as bits
  // Trait constants are enumerators: nothing but the kernel in the module.
  EXPECT_EQ(ptx.find(".global .align"), std::string::npos) << ptx;
}

TEST_F(MetalDeviceTest, IntegerFunctionsUseBitInstructions) {
  std::string ptx;
  COMPILE_OR_SKIP(ptx = ptxOf("U[i] = clz(U[i]) + reverse_bits(U[j]);\n"
                              "UL[i] = popcount(UL[i]) + mulhi(UL[i], UL[j]);\n"
                              "I[i] = mulhi(I[i], I[j]);"));
  EXPECT_NE(ptx.find("clz.b32"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("brev.b32"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("popc.b64"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("mul.hi.u64"), std::string::npos) << ptx;
  EXPECT_NE(ptx.find("mul.wide.s32"), std::string::npos) << ptx; // 32-bit mulhi
}

TEST_F(MetalDeviceTest, SixteenBitLanesNarrowFromAnOpaqueValue) {
  // -32768 - 1 and 0 - (-32768) must wrap, so 16-bit lanes are computed in
  // 32 bits and narrowed through an inline-PTX move (opaque_u32).
  std::string ptx;
  COMPILE_OR_SKIP(ptx = ptxOf("S2[i] = S2[i] - S2[j];"));
  EXPECT_NE(ptx.find("mov.b32"), std::string::npos) << ptx;
  EXPECT_EQ(ptx.find("sub.s16"), std::string::npos) << ptx;
}

} // namespace
