//===- CudaBackendTest.cpp - The CUDA backend on a real device ------------===//
//
// Without a GPU (or driver) the constructor must refuse with
// BackendUnavailable naming CpuRuntime; with one, kernels must run with
// Metal's dispatchThreads semantics (a partial last threadgroup).
//
//===----------------------------------------------------------------------===//
#include "TestKernels.h"

#include "enigma/Runtime/CudaBackend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <vector>

using namespace enigma;

namespace {

/// The backend for device 0, or nullptr with `why` when this machine has
/// no usable CUDA device.
std::unique_ptr<CudaBackend> openDevice(std::string &why) {
  try {
    return std::make_unique<CudaBackend>(0);
  } catch (const BackendUnavailable &e) {
    why = e.what();
    return nullptr;
  }
}

KernelArtifact vectorAddArtifact() {
  KernelArtifact artifact;
  artifact.kernelName = "enigma_kernel_vector_add";
  artifact.cudaSource = test::kVectorAddSource;
  artifact.params = {{"A", ParamKind::Buffer, DType::F32, 1},
                     {"B", ParamKind::Buffer, DType::F32, 1},
                     {"C", ParamKind::Buffer, DType::F32, 1}};
  return artifact;
}

TEST(CudaBackendTest, UnavailableWithoutAGpuNamesCpuRuntime) {
  std::string why;
  std::unique_ptr<CudaBackend> backend = openDevice(why);
  if (backend)
    GTEST_SKIP() << "a CUDA device is present (" << backend->deviceName()
                 << "); the no-GPU path cannot be checked here";
  EXPECT_NE(why.find("CpuRuntime"), std::string::npos) << why;
}

TEST(CudaBackendTest, VectorAddWithPartialLastThreadgroup) {
  std::string why;
  std::unique_ptr<CudaBackend> backend = openDevice(why);
  if (!backend)
    GTEST_SKIP() << why;
  EXPECT_EQ(backend->name(), "cuda");
  EXPECT_EQ(backend->maxThreadsPerThreadgroup(), 1024u);

  const uint32_t n = 1000; // 4 groups of 256, the last one 232 threads
  std::vector<float> a(n), b(n), c(n + 24, -1.0f);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = float(i);
    b[i] = 0.5f * float(i);
  }
  KernelArtifact artifact = vectorAddArtifact();
  auto kernel = backend->load(artifact, {});
  std::printf("[ loaded   ] %s\n",
              CudaBackend::describeLoadedCode(*kernel).c_str());

  auto bufA = backend->allocate(n * 4), bufB = backend->allocate(n * 4);
  // One spare element past the grid shows no thread beyond it writes.
  auto bufC = backend->allocate((n + 24) * 4);
  backend->upload(*bufA, a.data(), n * 4);
  backend->upload(*bufB, b.data(), n * 4);
  std::vector<LaunchArg> args(3);
  args[0].buffer = bufA.get();
  args[1].buffer = bufB.get();
  args[2].buffer = bufC.get();
  backend->launch(*kernel, artifact, args, {n, 1, 1}, {256, 1, 1});
  backend->download(*bufC, c.data(), (n + 24) * 4);
  for (uint32_t i = 0; i < n; ++i)
    ASSERT_EQ(c[i], 1.5f * float(i)) << "at " << i;
  for (uint32_t i = n; i < n + 24; ++i)
    ASSERT_EQ(c[i], 0.0f) << "buffers start zeroed; thread " << i
                          << " is outside the grid";

  double us = backend->launchTimed(*kernel, artifact, args, {n, 1, 1},
                                   {256, 1, 1});
  EXPECT_GT(us, 0.0);

  // The async path, on the backend's stream, then read back.
  std::fill(c.begin(), c.end(), 0.0f);
  backend->upload(*bufC, c.data(), n * 4);
  backend->launchAsync(*kernel, artifact, args, {n, 1, 1}, {128, 1, 1});
  backend->synchronize();
  backend->download(*bufC, c.data(), n * 4);
  EXPECT_EQ(c[n - 1], 1.5f * float(n - 1));
}

TEST(CudaBackendTest, ScalarsFunctionConstantsAndExternalBuffers) {
  std::string why;
  std::unique_ptr<CudaBackend> backend = openDevice(why);
  if (!backend)
    GTEST_SKIP() << why;
  KernelArtifact artifact;
  artifact.kernelName = "enigma_kernel_scale";
  artifact.cudaSource = test::kScaleSource;
  artifact.params = {{"A", ParamKind::Buffer, DType::F32, 1},
                     {"factor", ParamKind::Scalar, DType::F32, 1},
                     {"offset", ParamKind::Scalar, DType::I16, 1},
                     {"big", ParamKind::Scalar, DType::U64, 1},
                     {"C", ParamKind::Buffer, DType::F32, 1}};
  artifact.constants = {{0, DType::I32}};
  EXPECT_THROW(backend->load(artifact, {}), DispatchError);
  auto kernel =
      backend->load(artifact, {{0, ScalarValue{DType::I32, uint32_t(-7)}}});

  const uint32_t n = 70;
  std::vector<float> a(n, 2.0f), c(n);
  auto bufA = backend->allocate(n * 4), bufC = backend->allocate(n * 4);
  backend->upload(*bufA, a.data(), n * 4);
  // The output goes through a wrapped (not owned) view of bufC.
  auto view = backend->wrapDeviceMemory(CudaBackend::devicePointer(*bufC), n * 4);
  // An address that is not device memory is refused before any launch.
  EXPECT_THROW(backend->wrapDeviceMemory(0x1000, 4), DispatchError);
  float factor = 3.0f;
  uint32_t factorBits;
  std::memcpy(&factorBits, &factor, 4);
  std::vector<LaunchArg> args(5);
  args[0].buffer = bufA.get();
  args[1].scalar = {DType::F32, factorBits};
  args[2].scalar = {DType::I16, uint16_t(-2)};
  args[3].scalar = {DType::U64, uint64_t(5) << 32};
  args[4].buffer = view.get();
  backend->launch(*kernel, artifact, args, {n, 1, 1}, {32, 1, 1});
  backend->download(*bufC, c.data(), n * 4);
  for (uint32_t i = 0; i < n; ++i) // 2*3 - 2 + 5 - 7
    ASSERT_EQ(c[i], 2.0f) << "at " << i;
}

} // namespace
