//===- DirectLaunchTest.cpp - Launches on the caller's memory (CPU) -------===//
//
// DirectLauncher (the function-call form's launch) on the CPU backend: the
// caller's host memory is bound in place, scalars are converted and
// checked like a dispatch's, and the shape and grid-affine bounds are
// checked before anything runs.
//
//===----------------------------------------------------------------------===//
#include "enigma/Runtime/Launch.h"

#include "enigma/Cache/ArtifactCache.h"
#include "enigma/Runtime/CpuBackend.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace enigma;

namespace {
/// Y[i] = a * X[i] + Y[i] for i < n, with every thread of every group.
const char *kAxpy = R"(
#include "enigma_cpu_prelude.h"
extern "C" void enigma_kernel_axpy(void *const *args,
                                   const EnigmaCpuLaunch *launch,
                                   uint64_t begin, uint64_t end) {
  const float *X = (const float *)args[0];
  float *Y = (float *)args[1];
  float a = *(const float *)args[2];
  uint32_t n = *(const uint32_t *)args[3];
  for (uint64_t g = begin; g < end; ++g)
    for (uint32_t t = 0; t < launch->threads[0]; ++t) {
      uint64_t i = g * launch->threads[0] + t;
      if (i < n && i < launch->grid[0])
        Y[i] = a * X[i] + Y[i];
    }
}
)";

KernelArtifact axpy() {
  KernelArtifact kernel;
  kernel.kernelName = "enigma_kernel_axpy";
  kernel.params = {{"X", ParamKind::Buffer, DType::F32, 1, 1},
                   {"Y", ParamKind::Buffer, DType::F32, 1, 1},
                   {"a", ParamKind::Scalar, DType::F32, 1, 1},
                   {"n", ParamKind::Scalar, DType::U32, 1, 4}};
  kernel.cppSource = kAxpy;
  // Y[gid] is read by every thread (as the compiler would record it for an
  // unguarded access).
  GridIndexBound bound;
  bound.param = 1;
  bound.coefficient[0] = 1;
  bound.access = "load";
  bound.location = "axpy.py:9";
  kernel.gridIndexBounds = {bound};
  return kernel;
}

uint64_t address(const void *pointer) {
  return uint64_t(reinterpret_cast<uintptr_t>(pointer));
}

class DirectLaunchTest : public testing::Test {
protected:
  DirectLaunchTest() {
    std::string pattern =
        (fs::temp_directory_path() / "enigma-direct-XXXXXX").string();
    cacheDir = ::mkdtemp(pattern.data()) ? pattern : "";
    backend = std::make_shared<CpuBackend>(ArtifactCache::open(cacheDir));
  }
  ~DirectLaunchTest() override {
    std::error_code ignored;
    fs::remove_all(cacheDir, ignored);
  }
  std::string cacheDir;
  std::shared_ptr<CpuBackend> backend;
};

/// axpy's arguments with x and y of 64 floats, a = 1 and the given n.
std::vector<DirectArg> axpyArgs(DirectLauncher &launcher, float *x, float *y,
                                int64_t n) {
  return {{address(x), 64 * sizeof(float)},
          {address(y), 64 * sizeof(float)},
          {launcher.scalarBits(2, HostNumber(1.0)), 0},
          {launcher.scalarBits(3, HostNumber(n)), 0}};
}

/// axpy launched with `matrix` declared on X: with n = `fits` it runs;
/// with n = `past` it is a DispatchError whose message holds `message`,
/// and nothing runs (Y keeps its values).
void expectMatrixJudged(const std::shared_ptr<CpuBackend> &backend,
                        const MatrixExtent &matrix, int64_t fits,
                        int64_t past, const std::string &message) {
  KernelArtifact kernel = axpy();
  kernel.matrixExtents = {matrix};
  DirectLauncher launcher(backend, kernel);
  alignas(16) static float x[64], y[64];
  launcher.launch(axpyArgs(launcher, x, y, fits).data(), {16, 1, 1},
                  {16, 1, 1}, LaunchQueue{});
  for (float &v : y)
    v = 7.0f;
  try {
    launcher.launch(axpyArgs(launcher, x, y, past).data(), {16, 1, 1},
                    {16, 1, 1}, LaunchQueue{});
    FAIL() << "a matrix past X was launched";
  } catch (const DispatchError &e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos)
        << e.what();
  }
  for (float v : y)
    ASSERT_EQ(v, 7.0f); // nothing ran
}
} // namespace

TEST_F(DirectLaunchTest, WritesTheCallersMemoryInPlace) {
  DirectLauncher launcher(backend, axpy());
  const uint32_t n = 1000;
  alignas(16) static float x[1024], y[1024];
  for (uint32_t i = 0; i < 1024; ++i) {
    x[i] = float(i);
    y[i] = -1.0f; // past n: must stay
  }
  DirectArg args[4] = {{address(x), sizeof x},
                       {address(y), sizeof y},
                       {launcher.scalarBits(2, HostNumber(0.5)), 0},
                       {launcher.scalarBits(3, HostNumber(int64_t(n))), 0}};
  launcher.launch(args, {1024, 1, 1}, {256, 1, 1}, LaunchQueue{});
  launcher.launch(args, {1024, 1, 1}, {100, 1, 1}, LaunchQueue{});
  for (uint32_t i = 0; i < 1024; ++i)
    ASSERT_EQ(y[i], i < n ? float(i) - 1.0f : -1.0f) << "at " << i;
  EXPECT_EQ(backend->loadCounts().compiled, 1u);
}

TEST_F(DirectLaunchTest, ScalarsAreCheckedLikeADispatch) {
  DirectLauncher launcher(backend, axpy());
  EXPECT_THROW(launcher.scalarBits(3, HostNumber(int64_t(-4))), DispatchError);
  EXPECT_THROW(launcher.scalarBits(3, HostNumber(1.5)), DispatchError);
  try {
    launcher.scalarBits(3, HostNumber(int64_t(6)));
    FAIL() << "multiple_of was not checked";
  } catch (const DispatchError &e) {
    EXPECT_NE(std::string(e.what()).find("declared a multiple of 4"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(launcher.scalarBits(3, HostNumber(int64_t(8))), 8u);
  EXPECT_EQ(launcher.scalarBits(2, HostNumber(1.0)), 0x3f800000u);
}

TEST_F(DirectLaunchTest, ShapeAndBoundsAreCheckedBeforeRunning) {
  DirectLauncher launcher(backend, axpy());
  alignas(16) static float x[64], y[64];
  for (float &v : y)
    v = 7.0f;
  DirectArg args[4] = {{address(x), sizeof x},
                       {address(y), sizeof y},
                       {launcher.scalarBits(2, HostNumber(1.0)), 0},
                       {launcher.scalarBits(3, HostNumber(int64_t(64))), 0}};
  EXPECT_THROW(launcher.launch(args, {0, 1, 1}, {32, 1, 1}, LaunchQueue{}),
               DispatchError);
  EXPECT_THROW(launcher.launch(args, {64, 1, 1}, {2048, 1, 1}, LaunchQueue{}),
               DispatchError);
  try {
    launcher.launch(args, {65, 1, 1}, {32, 1, 1}, LaunchQueue{});
    FAIL() << "a grid past Y was launched";
  } catch (const DispatchError &e) {
    EXPECT_NE(std::string(e.what()).find("the load of Y at axpy.py:9 reaches "
                                         "index 64"),
              std::string::npos)
        << e.what();
  }
  for (float v : y)
    ASSERT_EQ(v, 7.0f); // nothing ran
}

TEST_F(DirectLaunchTest, DeclaredMatricesAreCheckedBeforeRunning) {
  // As gemm_block records its operands: X read as an n x 2 matrix of
  // pitch 4 needs (n - 1) * 4 + 2 elements; 16 rows: 62, X has 64.
  MatrixExtent matrix;
  matrix.param = 0;
  matrix.rows.param = 3;
  matrix.cols.value = 2;
  matrix.pitch.value = 4;
  matrix.what = "part reads X as an n x 2 matrix (pitch 4)";
  expectMatrixJudged(backend, matrix, 16, 20,
                     "part reads X as an n x 2 matrix (pitch 4), 20 x 2 with "
                     "pitch 4: 78 elements, but X (f32) has 64 (256 bytes)");
}

TEST_F(DirectLaunchTest, SidesCountedInBlocksAreChecked) {
  // A workspace of ceil(n / 16) rows of 3 x 8 elements (split-K partials
  // per block row): n = 32 needs two rows, 48 elements; n = 36 needs
  // 3 x 24 = 72 elements, X has 64.
  MatrixExtent matrix;
  matrix.param = 0;
  matrix.rows.param = 3;
  matrix.rows.divisor = 16;
  matrix.cols.value = 8;
  matrix.cols.scale = 3;
  matrix.pitch.value = 24;
  matrix.what = "part writes its partials into X";
  expectMatrixJudged(backend, matrix, 32, 36,
                     "3 x 24 with pitch 24: 72 elements");
}

TEST_F(DirectLaunchTest, FunctionConstantsAreBoundWhenLoaded) {
  KernelArtifact kernel = axpy();
  kernel.constants = {{0, DType::I32}};
  // A constant the kernel reads needs a value of its dtype, in range.
  EXPECT_THROW(DirectLauncher(backend, kernel), DispatchError);
  EXPECT_THROW(DirectLauncher(backend, kernel,
                              {{0, ConstantArg("f32", HostNumber(1.0))}}),
               DispatchError);
  EXPECT_THROW(
      DirectLauncher(backend, kernel,
                     {{0, ConstantArg("i32", HostNumber(int64_t(1) << 40))}}),
      DispatchError);
  // Given, it loads and runs; constants it does not read are ignored.
  DirectLauncher launcher(backend, kernel,
                          {{0, ConstantArg("i32", HostNumber(int64_t(3)))},
                           {7, ConstantArg("u32", HostNumber(int64_t(1)))}});
  alignas(16) static float x[4] = {1, 2, 3, 4}, y[4] = {};
  std::vector<DirectArg> args = {{address(x), sizeof x},
                                 {address(y), sizeof y},
                                 {launcher.scalarBits(2, HostNumber(2.0)), 0},
                                 {launcher.scalarBits(3, HostNumber(int64_t(4))), 0}};
  launcher.launch(args.data(), {4, 1, 1}, {4, 1, 1}, LaunchQueue{});
  EXPECT_EQ(y[3], 8.0f);
}
