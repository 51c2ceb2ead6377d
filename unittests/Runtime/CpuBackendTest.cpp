//===- CpuBackendTest.cpp - CPU backend end to end ------------------------===//
//
// Kernels here are hand-written host C++ that follows enigma_cpu_abi.h, as
// the emitter's output does, so the backend is tested on its own.
//
//===----------------------------------------------------------------------===//
#include "enigma/Runtime/CpuBackend.h"

#include "enigma/Cache/ArtifactCache.h"
#include "enigma/Runtime/Dispatch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

namespace fs = std::filesystem;
using namespace enigma;

namespace {
class TempDir {
public:
  TempDir() {
    std::string pattern =
        (fs::temp_directory_path() / "enigma-cpu-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string path;
};

/// Decodes the launch shape of group `g` and calls body(x, y, z) for each
/// thread of it that lies inside the grid: what emitted code does.
const char *kHelpers = R"(
#include "enigma_cpu_prelude.h"
#define FOR_EACH_THREAD(launch, g, BODY)                                      \
  {                                                                           \
    uint32_t gx = (uint32_t)((g) % (launch)->groups[0]);                      \
    uint32_t gy = (uint32_t)(((g) / (launch)->groups[0]) % (launch)->groups[1]); \
    uint32_t gz = (uint32_t)((g) / ((uint64_t)(launch)->groups[0] * (launch)->groups[1])); \
    for (uint32_t tz = 0; tz < (launch)->threads[2]; ++tz)                    \
      for (uint32_t ty = 0; ty < (launch)->threads[1]; ++ty)                  \
        for (uint32_t tx = 0; tx < (launch)->threads[0]; ++tx) {              \
          uint32_t x = gx * (launch)->threads[0] + tx;                        \
          uint32_t y = gy * (launch)->threads[1] + ty;                        \
          uint32_t z = gz * (launch)->threads[2] + tz;                        \
          if (x < (launch)->grid[0] && y < (launch)->grid[1] &&               \
              z < (launch)->grid[2]) { BODY }                                 \
        }                                                                     \
  }
#define KERNEL(name)                                                          \
  extern "C" void name(void *const *args, const EnigmaCpuLaunch *launch,      \
                       uint64_t group_begin, uint64_t group_end)
)";

KernelParam buffer(std::string name, DType dtype) {
  return KernelParam{std::move(name), ParamKind::Buffer, dtype, 1};
}
KernelParam scalar(std::string name, DType dtype) {
  return KernelParam{std::move(name), ParamKind::Scalar, dtype, 1};
}

KernelArtifact makeKernel(const std::string &name,
                          std::vector<KernelParam> params,
                          const std::string &body) {
  KernelArtifact kernel;
  kernel.kernelName = name;
  kernel.params = std::move(params);
  kernel.cppSource = std::string(kHelpers) + body;
  return kernel;
}

KernelArtifact vectorAdd() {
  return makeKernel("enigma_kernel_vadd",
                    {buffer("A", DType::F32), buffer("B", DType::F32),
                     buffer("C", DType::F32)},
                    R"(
KERNEL(enigma_kernel_vadd) {
  const float *A = (const float *)args[0];
  const float *B = (const float *)args[1];
  float *C = (float *)args[2];
  for (uint64_t g = group_begin; g < group_end; ++g)
    FOR_EACH_THREAD(launch, g, { C[x] = A[x] + B[x]; })
}
)");
}

template <typename T> ArrayArg hostArray(const std::vector<T> &values, DType dtype) {
  return ArrayArg{values.data(), values.size() * sizeof(T), dtype,
                   values.size()};
}

template <typename T> std::vector<T> as(const std::vector<uint8_t> &bytes) {
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

class CpuBackendTest : public testing::Test {
protected:
  TempDir cacheDir;
  std::shared_ptr<CpuBackend> backend =
      std::make_shared<CpuBackend>(ArtifactCache::open(cacheDir.path));
  Dispatcher dispatcher{backend};
};
} // namespace

TEST_F(CpuBackendTest, VectorAddWithPartialLastGroup) {
  const size_t n = 1000; // 4 groups of 256, the last one partial
  std::vector<float> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = float(i) * 0.5f;
    b[i] = 1000.0f - float(i);
  }
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32), hostArray(b, DType::F32)};
  args.outputSizes = {n * 4};
  auto outputs = dispatcher.execute(vectorAdd(), args, {unsigned(n), 1, 1},
                                    {256, 1, 1});
  ASSERT_EQ(outputs.size(), 1u);
  std::vector<float> c = as<float>(outputs[0]);
  ASSERT_EQ(c.size(), n);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(c[i], a[i] + b[i]) << "at " << i;
}

TEST_F(CpuBackendTest, ManyGroupsAcrossThePool) {
  const size_t n = size_t(1) << 20;
  std::vector<float> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = float(i % 977);
    b[i] = float(i % 13);
  }
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32), hostArray(b, DType::F32)};
  args.outputSizes = {n * 4};
  std::vector<float> c = as<float>(
      dispatcher.execute(vectorAdd(), args, {unsigned(n), 1, 1}, {64, 1, 1})[0]);
  for (size_t i = 0; i < n; ++i)
    ASSERT_EQ(c[i], a[i] + b[i]) << "at " << i;
}

TEST_F(CpuBackendTest, GridInThreeDimensions) {
  // Each in-grid thread writes its coordinates and counts itself; the
  // launch shape is recorded too.
  KernelArtifact kernel = makeKernel(
      "enigma_kernel_coords",
      {buffer("Coords", DType::U32), buffer("Shape", DType::U32)}, R"(
KERNEL(enigma_kernel_coords) {
  uint32_t *out = (uint32_t *)args[0];
  uint32_t *shape = (uint32_t *)args[1];
  for (uint64_t g = group_begin; g < group_end; ++g)
    FOR_EACH_THREAD(launch, g, {
      uint32_t i = (z * launch->grid[1] + y) * launch->grid[0] + x;
      out[i] = x + 100 * y + 10000 * z;
      __atomic_fetch_add(&shape[3], 1u, __ATOMIC_RELAXED);
    })
  if (group_begin == 0)
    for (int d = 0; d < 3; ++d) shape[d] = launch->groups[d];
}
)");
  const Dim3 grid{5, 3, 7}, threads{2, 2, 3};
  DispatchArgs args;
  args.outputSizes = {grid.volume() * 4, 16};
  auto outputs = dispatcher.execute(kernel, args, grid, threads);
  std::vector<uint32_t> coords = as<uint32_t>(outputs[0]);
  for (uint32_t z = 0; z < grid.z; ++z)
    for (uint32_t y = 0; y < grid.y; ++y)
      for (uint32_t x = 0; x < grid.x; ++x)
        ASSERT_EQ(coords[(z * grid.y + y) * grid.x + x], x + 100 * y + 10000 * z);
  std::vector<uint32_t> shape = as<uint32_t>(outputs[1]);
  EXPECT_EQ(shape[0], 3u); // ceil(5 / 2)
  EXPECT_EQ(shape[1], 2u); // ceil(3 / 2)
  EXPECT_EQ(shape[2], 3u); // ceil(7 / 3)
  EXPECT_EQ(shape[3], grid.volume()) << "every thread runs exactly once";
}

TEST_F(CpuBackendTest, ScalarsAndFunctionConstants) {
  KernelArtifact kernel = makeKernel(
      "enigma_kernel_affine",
      {buffer("A", DType::F32), scalar("scale", DType::F32),
       scalar("shift", DType::U8), scalar("bias", DType::I64),
       buffer("Out", DType::F32)},
      R"(
KERNEL(enigma_kernel_affine) {
  const float *A = (const float *)args[0];
  float scale = *(const float *)args[1];
  uint8_t shift = *(const uint8_t *)args[2];
  int64_t bias = *(const int64_t *)args[3];
  float *Out = (float *)args[4];
  for (uint64_t g = group_begin; g < group_end; ++g)
    FOR_EACH_THREAD(launch, g, {
      Out[x] = A[x] * scale + (float)shift + (float)bias +
               (float)ENIGMA_FC_0 + (ENIGMA_FC_1 ? ENIGMA_FC_2 : 0.0f);
    })
}
)");
  kernel.constants = {{0, DType::I32}, {1, DType::Bool}, {2, DType::F32}};
  std::vector<float> a{1, 2, 3, 4, 5};
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  args.scalars = {2.5, int64_t(200), int64_t(-1000)};
  args.outputSizes = {a.size() * 4};
  args.constants = {{0, {"int", int64_t(-2147483647 - 1)}},
                    {1, {"bool", true}},
                    {2, {"float", 0.25}}};
  std::vector<float> out =
      as<float>(dispatcher.execute(kernel, args, {5, 1, 1}, {4, 1, 1})[0]);
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_EQ(out[i], a[i] * 2.5f + 200.0f - 1000.0f + float(-2147483648.0) +
                          0.25f);

  args.constants[0] = {"int", int64_t(7)};
  args.constants[1] = {"bool", false};
  out = as<float>(dispatcher.execute(kernel, args, {5, 1, 1}, {4, 1, 1})[0]);
  EXPECT_EQ(out[1], 2 * 2.5f + 200.0f - 1000.0f + 7.0f);
  EXPECT_EQ(backend->loadCounts().compiled, 2u);
}

TEST_F(CpuBackendTest, OutputsStartZeroedAndInputsStayUntouched) {
  // Writes only even indices of Out, accumulates a count with atomics, and
  // scribbles over its input buffer.
  KernelArtifact kernel = makeKernel(
      "enigma_kernel_sparse",
      {buffer("In", DType::I32), buffer("Out", DType::I32),
       buffer("Count", DType::U32)},
      R"(
KERNEL(enigma_kernel_sparse) {
  int32_t *In = (int32_t *)args[0];
  int32_t *Out = (int32_t *)args[1];
  uint32_t *Count = (uint32_t *)args[2];
  for (uint64_t g = group_begin; g < group_end; ++g)
    FOR_EACH_THREAD(launch, g, {
      if (x % 2 == 0) Out[x] = In[x] + 1;
      In[x] = -1;
      __atomic_fetch_add(Count, 1u, __ATOMIC_RELAXED);
    })
}
)");
  std::vector<int32_t> in(64);
  for (int i = 0; i < 64; ++i)
    in[i] = 10 * i;
  const std::vector<int32_t> original = in;
  DispatchArgs args;
  args.inputs = {hostArray(in, DType::I32)};
  args.outputSizes = {64 * 4, 4};
  for (int round = 0; round < 2; ++round) { // fresh zeroed outputs each time
    auto outputs = dispatcher.execute(kernel, args, {64, 1, 1}, {8, 1, 1});
    std::vector<int32_t> out = as<int32_t>(outputs[0]);
    for (int i = 0; i < 64; ++i)
      ASSERT_EQ(out[i], i % 2 == 0 ? 10 * i + 1 : 0) << "at " << i;
    EXPECT_EQ(as<uint32_t>(outputs[1])[0], 64u);
  }
  EXPECT_EQ(in, original);

  // A prepared kernel keeps its buffers: the count accumulates.
  PreparedKernel prepared = dispatcher.prepare(kernel, args);
  prepared.dispatch({64, 1, 1}, {8, 1, 1});
  prepared.dispatch({64, 1, 1}, {8, 1, 1});
  EXPECT_EQ(as<uint32_t>(prepared.readOutputs()[1])[0], 128u);
  EXPECT_GE(prepared.dispatchTimed({64, 1, 1}, {8, 1, 1}), 0.0);
  prepared.release();
}

TEST_F(CpuBackendTest, EveryAllocationStartsZeroed) {
  // Buffers freed and allocated again (memory the runtime may reuse) still
  // start as zeros, at sizes below and above a page.
  for (int round = 0; round < 3; ++round)
    for (size_t bytes : {size_t(1), size_t(100), size_t(4096), size_t(60000),
                         size_t(200000)}) {
      std::shared_ptr<DeviceBuffer> buffer = backend->allocate(bytes);
      std::vector<uint8_t> got(bytes, 0xEE);
      backend->download(*buffer, got.data(), bytes);
      ASSERT_TRUE(std::all_of(got.begin(), got.end(),
                              [](uint8_t b) { return b == 0; }))
          << bytes << " bytes, round " << round;
      std::vector<uint8_t> junk(bytes, 0xAB);
      backend->upload(*buffer, junk.data(), bytes);
    }
}

TEST_F(CpuBackendTest, ZeroByteBuffersCanBeBound) {
  std::shared_ptr<DeviceBuffer> empty = backend->allocate(0);
  EXPECT_EQ(empty->size(), 0u);
  KernelArtifact kernel = makeKernel(
      "enigma_kernel_touch", {buffer("Empty", DType::F32), buffer("Out", DType::U32)},
      R"(
KERNEL(enigma_kernel_touch) {
  if (args[0] != 0 && group_begin == 0) *(uint32_t *)args[1] = 42;
}
)");
  DispatchArgs args;
  args.inputs = {ArrayArg{nullptr, 0, DType::F32, 0}};
  args.outputSizes = {4};
  auto outputs = dispatcher.execute(kernel, args, {1, 1, 1}, {1, 1, 1});
  EXPECT_EQ(as<uint32_t>(outputs[0])[0], 42u);
}

TEST_F(CpuBackendTest, CompilerErrorsCarryTheMessageAndTheSource) {
  KernelArtifact kernel = makeKernel("enigma_kernel_broken",
                                     {buffer("A", DType::F32)},
                                     "KERNEL(enigma_kernel_broken) { not C++ }");
  DispatchArgs args;
  args.outputSizes = {4};
  try {
    dispatcher.execute(kernel, args, {1, 1, 1}, {1, 1, 1});
    FAIL() << "expected a compiler failure";
  } catch (const RuntimeFailure &error) {
    std::string message = error.what();
    EXPECT_NE(message.find("error"), std::string::npos) << message;
    size_t end = message.find(".cpp");
    ASSERT_NE(end, std::string::npos) << message;
    size_t begin = message.rfind(' ', end) + 1;
    std::string source = message.substr(begin, end + 4 - begin);
    EXPECT_TRUE(fs::exists(source)) << "source kept at " << source;
  }
}

TEST_F(CpuBackendTest, MissingEntryPointIsReported) {
  KernelArtifact kernel = makeKernel("enigma_kernel_named",
                                     {buffer("A", DType::F32)},
                                     "KERNEL(enigma_kernel_other) {}");
  DispatchArgs args;
  args.outputSizes = {4};
  try {
    dispatcher.execute(kernel, args, {1, 1, 1}, {1, 1, 1});
    FAIL() << "expected a load failure";
  } catch (const RuntimeFailure &error) {
    EXPECT_NE(std::string(error.what()).find("does not export the function "
                                             "enigma_kernel_named"),
              std::string::npos)
        << error.what();
  }
}

TEST_F(CpuBackendTest, SecondBackendReusesTheCompiledObject) {
  std::vector<float> a{1, 2}, b{3, 4};
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32), hostArray(b, DType::F32)};
  args.outputSizes = {8};
  dispatcher.execute(vectorAdd(), args, {2, 1, 1}, {2, 1, 1});
  EXPECT_EQ(backend->loadCounts().compiled, 1u);

  // As another process would: a new backend over the same directory.
  auto second = std::make_shared<CpuBackend>(ArtifactCache::open(cacheDir.path));
  Dispatcher other(second);
  auto outputs = other.execute(vectorAdd(), args, {2, 1, 1}, {2, 1, 1});
  EXPECT_EQ(as<float>(outputs[0]), (std::vector<float>{4, 6}));
  EXPECT_EQ(second->loadCounts().compiled, 0u);
  EXPECT_EQ(second->loadCounts().fromCache, 1u);
  // Nothing is left behind in the cache's scratch area.
  EXPECT_TRUE(fs::is_empty(cacheDir.path + "/v1/tmp"));
}

TEST_F(CpuBackendTest, WorksWithTheCacheDisabled) {
  auto uncached = std::make_shared<CpuBackend>(ArtifactCache::disabled());
  Dispatcher plain(uncached);
  std::vector<float> a{1}, b{2};
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32), hostArray(b, DType::F32)};
  args.outputSizes = {4};
  EXPECT_EQ(as<float>(plain.execute(vectorAdd(), args, {1, 1, 1}, {1, 1, 1})[0]),
            std::vector<float>{3});
  EXPECT_EQ(uncached->loadCounts().compiled, 1u);
}

TEST_F(CpuBackendTest, TwoThreadsCompileTheSameKernelAtOnce) {
  std::vector<float> a{1, 2, 3}, b{4, 5, 6};
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32), hostArray(b, DType::F32)};
  args.outputSizes = {12};
  std::vector<std::vector<float>> results(2);
  std::vector<std::string> failures(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      try {
        // Separate backends, as separate processes would have.
        auto own = std::make_shared<CpuBackend>(ArtifactCache::open(cacheDir.path));
        Dispatcher d(own);
        results[t] = as<float>(d.execute(vectorAdd(), args, {3, 1, 1}, {2, 1, 1})[0]);
      } catch (const std::exception &error) {
        failures[t] = error.what();
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < 2; ++t) {
    EXPECT_EQ(failures[t], "");
    EXPECT_EQ(results[t], (std::vector<float>{5, 7, 9}));
  }
  auto later = std::make_shared<CpuBackend>(ArtifactCache::open(cacheDir.path));
  Dispatcher d(later);
  d.execute(vectorAdd(), args, {3, 1, 1}, {2, 1, 1});
  EXPECT_EQ(later->loadCounts().fromCache, 1u);
}

TEST_F(CpuBackendTest, LaunchOverheadOfAnEmptyKernel) {
  KernelArtifact kernel = makeKernel("enigma_kernel_empty",
                                     {buffer("A", DType::F32)},
                                     "KERNEL(enigma_kernel_empty) {}");
  std::vector<float> a{0};
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  PreparedKernel prepared = dispatcher.prepare(kernel, args);
  for (uint32_t groups : {1u, 4u, 64u, 4096u}) {
    const Dim3 grid{groups * 32, 1, 1}, threads{32, 1, 1};
    for (int i = 0; i < 50; ++i) // warm-up
      prepared.dispatch(grid, threads);
    const int repeats = 2000;
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < repeats; ++i)
      prepared.dispatch(grid, threads);
    double micros = std::chrono::duration<double, std::micro>(
                        std::chrono::steady_clock::now() - start)
                        .count() /
                    repeats;
    std::printf("[ overhead ] empty kernel, %u groups: %.2f us per launch\n",
                groups, micros);
    EXPECT_LT(micros, 1000.0) << "a launch should cost microseconds";
  }
}
