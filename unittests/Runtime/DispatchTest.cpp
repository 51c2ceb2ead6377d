//===- DispatchTest.cpp - Binding and validation over a fake backend ------===//
#include "enigma/Runtime/Dispatch.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>

using namespace enigma;

namespace {
//===----------------------------------------------------------------------===//
// An in-memory backend whose "kernel" is a test-provided function
//===----------------------------------------------------------------------===//

struct FakeBuffer : DeviceBuffer {
  explicit FakeBuffer(size_t bytes) : bytes(bytes, 0) {}
  size_t size() const override { return bytes.size(); }
  std::vector<uint8_t> bytes;
};

struct FakeKernel : LoadedKernel {
  ConstantValues constants;
};

class FakeBackend : public Backend {
public:
  using KernelBody = std::function<void(const std::vector<LaunchArg> &,
                                        const ConstantValues &)>;

  explicit FakeBackend(uint64_t maxThreads = 1024) : maxThreads(maxThreads) {}
  std::string name() const override { return "fake"; }
  uint64_t maxThreadsPerThreadgroup() const override { return maxThreads; }
  std::shared_ptr<LoadedKernel> load(const KernelArtifact &,
                                     const ConstantValues &constants) override {
    ++loads;
    auto kernel = std::make_shared<FakeKernel>();
    kernel->constants = constants;
    return kernel;
  }
  std::shared_ptr<DeviceBuffer> allocate(size_t bytes) override {
    return std::make_shared<FakeBuffer>(bytes);
  }
  void upload(DeviceBuffer &dst, const void *src, size_t bytes) override {
    std::memcpy(static_cast<FakeBuffer &>(dst).bytes.data(), src, bytes);
  }
  void download(const DeviceBuffer &src, void *dst, size_t bytes) override {
    std::memcpy(dst, static_cast<const FakeBuffer &>(src).bytes.data(), bytes);
  }
  void launch(LoadedKernel &kernel, const KernelArtifact &,
              const std::vector<LaunchArg> &args, Dim3 grid,
              Dim3 threads) override {
    ++launches;
    lastGrid = grid;
    lastThreads = threads;
    if (body)
      body(args, static_cast<FakeKernel &>(kernel).constants);
  }
  double launchTimed(LoadedKernel &kernel, const KernelArtifact &artifact,
                     const std::vector<LaunchArg> &args, Dim3 grid,
                     Dim3 threads) override {
    launch(kernel, artifact, args, grid, threads);
    return 1.5;
  }

  uint64_t maxThreads;
  int loads = 0, launches = 0;
  Dim3 lastGrid, lastThreads;
  KernelBody body;
};

std::vector<uint8_t> &bytesOf(const LaunchArg &arg) {
  return static_cast<FakeBuffer *>(arg.buffer)->bytes;
}

KernelParam buffer(std::string name, DType dtype, unsigned vecWidth = 1) {
  return KernelParam{std::move(name), ParamKind::Buffer, dtype, vecWidth};
}
KernelParam scalar(std::string name, DType dtype) {
  return KernelParam{std::move(name), ParamKind::Scalar, dtype, 1};
}

KernelArtifact makeKernel(std::vector<KernelParam> params) {
  KernelArtifact kernel;
  kernel.kernelName = "enigma_kernel_test";
  kernel.params = std::move(params);
  kernel.cppSource = "// fake";
  return kernel;
}

template <typename T> ArrayArg hostArray(const std::vector<T> &values, DType dtype) {
  return ArrayArg{values.data(), values.size() * sizeof(T), dtype,
                   values.size()};
}

/// Runs `action` and returns the DispatchError message ("" if none).
template <typename Action> std::string dispatchError(Action action) {
  try {
    action();
  } catch (const DispatchError &error) {
    return error.what();
  }
  return "";
}

class DispatchTest : public testing::Test {
protected:
  std::shared_ptr<FakeBackend> backend = std::make_shared<FakeBackend>();
  Dispatcher dispatcher{backend};
  std::vector<float> a{1, 2, 3, 4}, b{10, 20, 30, 40};

  std::vector<std::vector<uint8_t>> run(const KernelArtifact &kernel,
                                        const DispatchArgs &args,
                                        Dim3 grid = {4, 1, 1},
                                        Dim3 threads = {4, 1, 1}) {
    return dispatcher.execute(kernel, args, grid, threads);
  }
};
} // namespace

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

TEST_F(DispatchTest, BindsInputsScalarsAndTrailingOutputsInOrder) {
  KernelArtifact kernel = makeKernel(
      {buffer("A", DType::F32), scalar("n", DType::U32),
       buffer("B", DType::F32), scalar("alpha", DType::F32),
       buffer("C", DType::F32)});
  backend->body = [](const std::vector<LaunchArg> &args, const ConstantValues &) {
    ASSERT_EQ(args.size(), 5u);
    EXPECT_EQ(args[1].scalar.dtype, DType::U32);
    EXPECT_EQ(args[1].scalar.bits, 4u);
    EXPECT_EQ(args[3].scalar.bits, 0x40000000u); // 2.0f
    auto *A = reinterpret_cast<float *>(bytesOf(args[0]).data());
    auto *B = reinterpret_cast<float *>(bytesOf(args[2]).data());
    auto *C = reinterpret_cast<float *>(bytesOf(args[4]).data());
    for (unsigned i = 0; i < args[1].scalar.bits; ++i)
      C[i] = A[i] + 2.0f * B[i];
  };
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32), hostArray(b, DType::F32)};
  args.scalars = {int64_t(4), 2.0};
  args.outputSizes = {16};
  auto outputs = run(kernel, args, {4, 1, 1}, {2, 1, 1});
  ASSERT_EQ(outputs.size(), 1u);
  ASSERT_EQ(outputs[0].size(), 16u);
  const auto *C = reinterpret_cast<const float *>(outputs[0].data());
  EXPECT_EQ(C[0], 21.f);
  EXPECT_EQ(C[3], 84.f);
  EXPECT_EQ(backend->lastGrid.x, 4u);
  EXPECT_EQ(backend->lastThreads.x, 2u);
}

TEST_F(DispatchTest, OutputsStartZeroedAndInputsAreNeverWritten) {
  KernelArtifact kernel = makeKernel(
      {buffer("A", DType::F32), buffer("Out", DType::F32)});
  std::vector<uint8_t> outputSeen;
  backend->body = [&](const std::vector<LaunchArg> &args,
                      const ConstantValues &) {
    outputSeen = bytesOf(args[1]);
    std::fill(bytesOf(args[0]).begin(), bytesOf(args[0]).end(), 0xff);
  };
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  args.outputSizes = {32};
  run(kernel, args);
  EXPECT_EQ(outputSeen, std::vector<uint8_t>(32, 0));
  EXPECT_EQ(a, (std::vector<float>{1, 2, 3, 4}));
}

TEST_F(DispatchTest, EachOutputTakesItsOwnSize) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32),
                                      buffer("X", DType::F32),
                                      buffer("Y", DType::U8)});
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  args.outputSizes = {8, 3};
  auto outputs = run(kernel, args);
  ASSERT_EQ(outputs.size(), 2u);
  EXPECT_EQ(outputs[0].size(), 8u);
  EXPECT_EQ(outputs[1].size(), 3u);

  // One size is one output, never a size for every output.
  args.outputSizes = {8};
  std::string one = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(one.find("1 input + 0 scalars + 1 output = 2"), std::string::npos)
      << one;
  EXPECT_NE(one.find("X <- output 0, Y <- nothing"), std::string::npos)
      << one;
}

TEST_F(DispatchTest, MissingInputIsNeverAnExtraOutput) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32),
                                      scalar("n", DType::U32),
                                      buffer("B", DType::F32),
                                      buffer("C", DType::F32)});
  int launches = 0;
  backend->body = [&](const std::vector<LaunchArg> &, const ConstantValues &) {
    ++launches;
  };
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  args.scalars = {int64_t(4)};
  args.outputSizes = {16};
  std::string message = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(message.find("has 4 parameters (A (f32), n (u32), B (f32), "
                         "C (f32)) but 1 input + 1 scalar + 1 output = 3"),
            std::string::npos) << message;
  EXPECT_NE(message.find("A <- input 0, n <- scalar 0, B <- output 0, "
                         "C <- nothing"),
            std::string::npos) << message;
  EXPECT_EQ(launches, 0);
  EXPECT_THROW(dispatcher.prepare(kernel, args), DispatchError);
}

TEST_F(DispatchTest, KernelWithoutOutputsReturnsNothing) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32)});
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  EXPECT_TRUE(run(kernel, args).empty());
}

TEST_F(DispatchTest, LoadsEachKernelOncePerConstants) {
  KernelArtifact kernel = makeKernel({buffer("Out", DType::I32)});
  kernel.constants = {{0, DType::I32}};
  DispatchArgs args;
  args.outputSizes = {4};
  args.constants[0] = ConstantArg("int", int64_t(7));
  run(kernel, args);
  run(kernel, args);
  EXPECT_EQ(backend->loads, 1);
  args.constants[0] = ConstantArg(DType::I32, int64_t(8));
  run(kernel, args);
  EXPECT_EQ(backend->loads, 2);
  kernel.cppSource += " changed";
  run(kernel, args);
  EXPECT_EQ(backend->loads, 3);
}

TEST_F(DispatchTest, ConstantsReachTheBackendConverted) {
  KernelArtifact kernel = makeKernel({buffer("Out", DType::F32)});
  kernel.constants = {{2, DType::F32}, {5, DType::Bool}};
  ConstantValues seen;
  backend->body = [&](const std::vector<LaunchArg> &,
                      const ConstantValues &constants) { seen = constants; };
  DispatchArgs args;
  args.outputSizes = {4};
  args.constants[2] = ConstantArg("float", 0.5);
  args.constants[5] = ConstantArg("bool", true);
  args.constants[9] = ConstantArg("int", int64_t(1)); // unused: ignored
  run(kernel, args);
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[2].bits, 0x3f000000u);
  EXPECT_EQ(seen[5].bits, 1u);
}

//===----------------------------------------------------------------------===//
// Validation errors
//===----------------------------------------------------------------------===//

TEST_F(DispatchTest, TooManyInputs) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32),
                                      buffer("B", DType::F32)});
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32), hostArray(a, DType::F32),
                 hostArray(b, DType::F32)};
  std::string message = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(message.find("2 parameters (A (f32), B (f32))"),
            std::string::npos) << message;
  EXPECT_NE(message.find("3 inputs"), std::string::npos) << message;
  EXPECT_NE(message.find("left over: input 2"), std::string::npos) << message;
}

TEST_F(DispatchTest, ScalarCountMustMatch) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32),
                                      scalar("n", DType::U32)});
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  std::string tooFew = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(tooFew.find("1 scalar (n (u32)) but 0 were given"),
            std::string::npos) << tooFew;
  args.scalars = {int64_t(1), int64_t(2)};
  EXPECT_NE(dispatchError([&] { run(kernel, args); }).find("but 2 were given"),
            std::string::npos);
}

TEST_F(DispatchTest, ScalarOutOfRangeNamesTheParameter) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32),
                                      scalar("count", DType::U32)});
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  args.scalars = {int64_t(-1)};
  std::string message = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(message.find("count (u32)"), std::string::npos) << message;
  args.scalars = {1.5};
  EXPECT_NE(dispatchError([&] { run(kernel, args); }), "");
}

TEST_F(DispatchTest, OutputSizesMustMatchTheOutputs) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32),
                                      buffer("X", DType::F32),
                                      buffer("Y", DType::F32)});
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  std::string missing = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(missing.find("1 input + 0 scalars + 0 outputs = 1"),
            std::string::npos) << missing;
  EXPECT_NE(missing.find("X <- nothing, Y <- nothing"), std::string::npos)
      << missing;

  args.outputSizes = {4, 4, 4};
  std::string mismatch = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(mismatch.find("1 input + 0 scalars + 3 outputs = 4"),
            std::string::npos) << mismatch;
  EXPECT_NE(mismatch.find("left over: output 2"), std::string::npos)
      << mismatch;

  args.inputs = {hostArray(a, DType::F32), hostArray(a, DType::F32),
                 hostArray(a, DType::F32)};
  args.outputSizes = {4};
  std::string noOutputs = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(noOutputs.find("left over: output 0"), std::string::npos)
      << noOutputs;
}

TEST_F(DispatchTest, OutputSizeMustBeWholeNonZeroElements) {
  KernelArtifact kernel = makeKernel({buffer("V", DType::F32, 4)});
  DispatchArgs args;
  args.outputSizes = {0};
  std::string zero = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(zero.find("V (f32x4) has size 0"), std::string::npos) << zero;
  args.outputSizes = {20};
  std::string ragged = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(ragged.find("not a multiple of its 16-byte element"),
            std::string::npos) << ragged;
  args.outputSizes = {32};
  EXPECT_EQ(dispatchError([&] { run(kernel, args); }), "");
}

TEST_F(DispatchTest, InputDtypeMustMatchTheParameter) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32),
                                      buffer("B", DType::F32)});
  std::vector<int32_t> ints{1, 2, 3, 4};
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32), hostArray(ints, DType::I32)};
  EXPECT_EQ(dispatchError([&] { run(kernel, args); }),
            "kernel enigma_kernel_test: input 1 (B) has dtype int32 but "
            "parameter B is f32");
}

TEST_F(DispatchTest, InputMustDescribeItsBytes) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32, 4)});
  DispatchArgs args;
  args.inputs = {ArrayArg{a.data(), 12, DType::F32, 4}};
  EXPECT_NE(dispatchError([&] { run(kernel, args); }).find("holds 12 bytes"),
            std::string::npos);
  std::vector<float> three{1, 2, 3};
  args.inputs = {hostArray(three, DType::F32)};
  EXPECT_NE(dispatchError([&] { run(kernel, args); }).find("16-byte entries"),
            std::string::npos);
  args.inputs = {ArrayArg{nullptr, 0, DType::F32, 0}}; // empty is fine
  EXPECT_EQ(dispatchError([&] { run(kernel, args); }), "");
}

TEST_F(DispatchTest, GridAndThreadsAreChecked) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32)});
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  EXPECT_NE(dispatchError([&] { run(kernel, args, {0, 1, 1}, {1, 1, 1}); })
                .find("grid (0, 1, 1) has a zero dimension"),
            std::string::npos);
  EXPECT_NE(dispatchError([&] { run(kernel, args, {4, 1, 1}, {4, 0, 1}); })
                .find("threads (4, 0, 1)"),
            std::string::npos);
  EXPECT_NE(dispatchError([&] { run(kernel, args, {4, 1, 1}, {32, 32, 2}); })
                .find("2048 threads per threadgroup, more than the maximum "
                      "of 1024"),
            std::string::npos);
  EXPECT_EQ(dispatchError([&] { run(kernel, args, {4, 1, 1}, {32, 32, 1}); }),
            "");
  EXPECT_EQ(backend->launches, 1);
}

TEST_F(DispatchTest, ThreadLimitIsTheSmallerOfBackendAnd1024) {
  auto big = std::make_shared<FakeBackend>(4096);
  EXPECT_EQ(Dispatcher(big).maxThreadsPerThreadgroup(), 1024u);
  auto small = std::make_shared<FakeBackend>(256);
  Dispatcher limited(small);
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32)});
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  EXPECT_NE(dispatchError([&] {
              limited.execute(kernel, args, {512, 1, 1}, {512, 1, 1});
            }).find("maximum of 256"),
            std::string::npos);
}

TEST_F(DispatchTest, FunctionConstantsAreRequiredAndTyped) {
  KernelArtifact kernel = makeKernel({buffer("Out", DType::F32)});
  kernel.constants = {{3, DType::I32}};
  DispatchArgs args;
  args.outputSizes = {4};
  std::string missing = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(missing.find("function constant 3 (i32) but no value"),
            std::string::npos) << missing;
  args.constants[3] = ConstantArg("float", 1.0);
  std::string wrongType = dispatchError([&] { run(kernel, args); });
  EXPECT_NE(wrongType.find("given as f32"), std::string::npos) << wrongType;
  args.constants[3] = ConstantArg("quaternion", 1.0);
  EXPECT_NE(dispatchError([&] { run(kernel, args); }).find("unknown dtype"),
            std::string::npos);
  args.constants[3] = ConstantArg("int", int64_t(1) << 40);
  EXPECT_NE(dispatchError([&] { run(kernel, args); }).find("out of range"),
            std::string::npos);
  args.constants[3] = ConstantArg("Int32", int64_t(-5));
  EXPECT_EQ(dispatchError([&] { run(kernel, args); }), "");
  EXPECT_EQ(backend->loads, 1) << "no load before the arguments are valid";
}

//===----------------------------------------------------------------------===//
// PreparedKernel
//===----------------------------------------------------------------------===//

TEST_F(DispatchTest, PreparedKernelKeepsBuffersAcrossDispatches) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32),
                                      buffer("Count", DType::U32),
                                      buffer("Other", DType::U32)});
  backend->body = [](const std::vector<LaunchArg> &args,
                     const ConstantValues &) {
    auto *count = reinterpret_cast<uint32_t *>(bytesOf(args[1]).data());
    ++count[0];
  };
  DispatchArgs args;
  args.inputs = {hostArray(a, DType::F32)};
  args.outputSizes = {4, 4};
  PreparedKernel prepared = dispatcher.prepare(kernel, args);
  prepared.dispatch({4, 1, 1}, {4, 1, 1});
  EXPECT_EQ(prepared.dispatchTimed({4, 1, 1}, {4, 1, 1}), 1.5);
  std::vector<uint8_t> first = prepared.readOutput();
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(*reinterpret_cast<uint32_t *>(first.data()), 2u);
  EXPECT_EQ(prepared.readOutputs().size(), 2u);

  EXPECT_NE(dispatchError([&] { prepared.dispatch({4, 1, 1}, {2048, 1, 1}); }),
            "");
  prepared.release();
  EXPECT_TRUE(prepared.released());
  EXPECT_THROW(prepared.dispatch({4, 1, 1}, {4, 1, 1}), RuntimeFailure);
  EXPECT_THROW(prepared.readOutput(), RuntimeFailure);
  prepared.release(); // twice is harmless
}

TEST_F(DispatchTest, PreparedKernelValidatesLikeExecute) {
  KernelArtifact kernel = makeKernel({buffer("A", DType::F32)});
  DispatchArgs args;
  EXPECT_NE(dispatchError([&] { dispatcher.prepare(kernel, args); }),
            "");
  args.inputs = {hostArray(a, DType::F32)};
  PreparedKernel prepared = dispatcher.prepare(kernel, args);
  EXPECT_THROW(prepared.readOutput(), DispatchError); // no outputs
}
