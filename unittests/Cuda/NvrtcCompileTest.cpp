//===- NvrtcCompileTest.cpp - CUDA sources compile without a GPU ----------===//
//
// Runs NVRTC only (CudaBackend::compileForCheck), so it needs the CUDA
// toolkit's NVRTC but no driver or device. Skipped where NVRTC is missing.
//
//===----------------------------------------------------------------------===//
#include "TestKernels.h"

#include "enigma/Runtime/CudaBackend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace enigma;

namespace {

/// Compiles, skipping the test when this machine has no NVRTC.
#define COMPILE_OR_SKIP(call)                                                  \
  try {                                                                        \
    call;                                                                      \
  } catch (const BackendUnavailable &e) {                                      \
    GTEST_SKIP() << "no NVRTC here: " << e.what();                             \
  }

ScalarValue scalar(DType dtype, uint64_t bits) { return {dtype, bits}; }

class NvrtcCompileTest : public ::testing::Test {
protected:
  // Compile checks must hit NVRTC, not a cubin cached by an earlier run.
  void SetUp() override { setenv("ENIGMA_DISABLE_CACHE", "1", 1); }
};

TEST_F(NvrtcCompileTest, VectorAddBecomesACubin) {
  std::string cubin;
  COMPILE_OR_SKIP(cubin = CudaBackend::compileForCheck(test::kVectorAddSource,
                                                       "sm_90"));
  ASSERT_GT(cubin.size(), 4u);
  EXPECT_EQ(0, std::memcmp(cubin.data(), "\x7f" "ELF", 4)); // cubins are ELF
}

TEST_F(NvrtcCompileTest, VirtualArchitectureGivesPtx) {
  std::string ptx;
  COMPILE_OR_SKIP(ptx = CudaBackend::compileForCheck(test::kVectorAddSource,
                                                     "compute_90"));
  EXPECT_NE(ptx.find(".entry enigma_kernel_vector_add"), std::string::npos);
}

TEST_F(NvrtcCompileTest, ScalarsAndFunctionConstantCompile) {
  ConstantValues constants = {{0, scalar(DType::I32, uint32_t(-7))}};
  std::string ptx;
  COMPILE_OR_SKIP(ptx = CudaBackend::compileForCheck(test::kScaleSource,
                                                     "compute_90", constants));
  // The constant is folded into the code as an immediate.
  EXPECT_NE(ptx.find("0fC0E00000"), std::string::npos) << ptx; // -7.0f
}

TEST_F(NvrtcCompileTest, EveryPreludeHelperCompiles) {
  ConstantValues constants = {
      {1, scalar(DType::I32, 41)},
      {2, scalar(DType::F32, 0x7fc00000)}, // NaN takes the bit-pattern path
      {3, scalar(DType::F16, 0x3c00)},     // 1.0 in binary16
  };
  std::string cubin;
  COMPILE_OR_SKIP(cubin = CudaBackend::compileForCheck(
                      test::kEveryHelperSource, "sm_90", constants));
  EXPECT_FALSE(cubin.empty());
}

TEST_F(NvrtcCompileTest, MissingFunctionConstantIsACompileError) {
  try {
    CudaBackend::compileForCheck(test::kScaleSource, "sm_90", {});
    FAIL() << "expected a compile error";
  } catch (const BackendUnavailable &e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  } catch (const RuntimeFailure &e) {
    EXPECT_NE(std::string(e.what()).find("ENIGMA_FC_0"), std::string::npos)
        << e.what();
  }
}

TEST_F(NvrtcCompileTest, SyntaxErrorReportsTheNvrtcLog) {
  try {
    CudaBackend::compileForCheck(test::kSyntaxErrorSource, "sm_90");
    FAIL() << "expected a compile error";
  } catch (const BackendUnavailable &e) {
    GTEST_SKIP() << "no NVRTC here: " << e.what();
  } catch (const RuntimeFailure &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("undeclared_name"), std::string::npos) << message;
    EXPECT_NE(message.find("expected an expression"), std::string::npos)
        << message;
  }
}

// Not a correctness test: prints how long the smallest kernel takes, the
// fixed cost every uncached CUDA kernel pays.
TEST_F(NvrtcCompileTest, VectorAddCompileTime) {
  COMPILE_OR_SKIP(CudaBackend::compileForCheck(test::kVectorAddSource,
                                               "sm_90")); // warm up NVRTC
  const int runs = 5;
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < runs; ++i)
    CudaBackend::compileForCheck(test::kVectorAddSource, "sm_90");
  double ms = std::chrono::duration<double, std::milli>(
                  std::chrono::steady_clock::now() - start)
                  .count() /
              runs;
  std::printf("[ timing   ] NVRTC vector_add -> sm_90 cubin: %.1f ms\n", ms);
  SUCCEED();
}

} // namespace
