//===- CpuFaultTest.cpp - Kernels that fault on the CPU backend -----------===//
//
// Hand-written kernels (enigma_cpu_abi.h) that raise each fault signal, on
// the calling thread and on the pool's workers: the launch throws
// KernelFault naming the kernel and the signal, the other workers stop, and
// the backend keeps working (docs/design/cpu-faults.md).
//
//===----------------------------------------------------------------------===//
#include "enigma/Runtime/CpuBackend.h"

#include "enigma/Cache/ArtifactCache.h"
#include "enigma/Runtime/Dispatch.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace fs = std::filesystem;
using namespace enigma;

namespace {
class TempDir {
public:
  TempDir() {
    std::string pattern =
        (fs::temp_directory_path() / "enigma-fault-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data()) ? pattern : "";
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
  std::string path;
};

/// A kernel whose group `g` runs BODY once (with `out` its u32 buffer).
KernelArtifact perGroupKernel(const std::string &name,
                              const std::string &body) {
  KernelArtifact kernel;
  kernel.kernelName = name;
  kernel.params = {KernelParam{"Out", ParamKind::Buffer, DType::U32, 1}};
  kernel.cppSource = R"(
#include "enigma_cpu_prelude.h"
#include <signal.h>
#include <unistd.h>
static int deeper(volatile int *sink, int n) {
  volatile char frame[4096];
  frame[0] = (char)n;
  *sink += frame[0];
  return deeper(sink, n + 1) + frame[n & 4095];
}
extern "C" void )" + name +
                     R"((void *const *args, const EnigmaCpuLaunch *launch,
                          uint64_t group_begin, uint64_t group_end) {
  uint32_t *out = (uint32_t *)args[0];
  (void)launch;
  for (uint64_t g = group_begin; g < group_end; ++g) {
)" + body + R"(
  }
}
)";
  return kernel;
}

/// Every group counts itself; group 0 does `fault` first.
KernelArtifact faultingKernel(const std::string &name,
                              const std::string &fault) {
  return perGroupKernel(name, "    if (g == 0) { " + fault + " }\n"
                              "    __atomic_fetch_add(&out[0], 1u, "
                              "__ATOMIC_RELAXED);");
}

size_t threadCount() {
  size_t count = 0;
  for (const auto &entry : fs::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++count;
  }
  return count;
}

class CpuFaultTest : public testing::Test {
protected:
  TempDir cacheDir;
  std::shared_ptr<CpuBackend> backend =
      std::make_shared<CpuBackend>(ArtifactCache::open(cacheDir.path));
  Dispatcher dispatcher{backend};

  /// Runs `kernel` over `groups` groups of `threads` threads; returns the
  /// KernelFault's message, or "" when it ran without one.
  std::string faultOf(const KernelArtifact &kernel, unsigned groups,
                      unsigned threads = 1024) {
    DispatchArgs args;
    args.outputSizes = {4};
    try {
      dispatcher.execute(kernel, args, {groups * threads, 1, 1},
                         {threads, 1, 1});
    } catch (const KernelFault &fault) {
      return fault.what();
    }
    return "";
  }

  void expectAWorkingBackend() {
    KernelArtifact count =
        perGroupKernel("enigma_kernel_count",
                       "    __atomic_fetch_add(&out[0], 1u, __ATOMIC_RELAXED);");
    DispatchArgs args;
    args.outputSizes = {4};
    auto outputs = dispatcher.execute(count, args, {4096, 1, 1}, {4, 1, 1});
    uint32_t groups = 0;
    std::memcpy(&groups, outputs[0].data(), 4);
    EXPECT_EQ(groups, 1024u);
  }
};
} // namespace

TEST_F(CpuFaultTest, InvalidReadOnAWorkerAndOnTheCaller) {
  KernelArtifact kernel = faultingKernel(
      "enigma_kernel_bad_read",
      "out[1] = *(volatile uint32_t *)(uintptr_t)16;");
  for (unsigned groups : {1u, 5000u}) { // inline on the caller; the pool
    std::string message = faultOf(kernel, groups);
    EXPECT_NE(message.find("kernel enigma_kernel_bad_read faulted on the "
                           "CPU: SIGSEGV (invalid memory access at 0x10"),
              std::string::npos)
        << message;
    // One kernel call covers several groups of the pool's chunk.
    EXPECT_NE(message.find(groups == 1 ? "in threadgroup (0, 0, 0) of 1 x 1 x 1"
                                       : "in one of threadgroups (0, 0, 0) to"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("bounds_check=True"), std::string::npos);
    expectAWorkingBackend();
  }
}

TEST_F(CpuFaultTest, IntegerDivisionTrap) {
  std::string message = faultOf(
      faultingKernel("enigma_kernel_divide",
                     "volatile int zero = 0; out[1] = 7 / zero;"),
      300);
  EXPECT_NE(message.find("SIGFPE (integer division by zero"),
            std::string::npos)
      << message;
  expectAWorkingBackend();
}

TEST_F(CpuFaultTest, IllegalInstructionAndBusError) {
  std::string trap =
      faultOf(faultingKernel("enigma_kernel_trap", "__builtin_trap();"), 300);
  EXPECT_NE(trap.find("SIGILL (illegal instruction"), std::string::npos)
      << trap;
  std::string bus = faultOf(
      faultingKernel("enigma_kernel_bus", "raise(SIGBUS);"), 300);
  EXPECT_NE(bus.find("enigma_kernel_bus faulted on the CPU: SIGBUS"),
            std::string::npos)
      << bus;
  expectAWorkingBackend();
}

TEST_F(CpuFaultTest, StackOverflowIsCaughtOnTheAlternateStack) {
  KernelArtifact kernel = faultingKernel(
      "enigma_kernel_recurse",
      "volatile int sink = 0; out[1] = deeper(&sink, 0);");
  for (unsigned groups : {1u, 300u}) {
    std::string message = faultOf(kernel, groups);
    EXPECT_NE(message.find("SIGSEGV"), std::string::npos) << message;
  }
  expectAWorkingBackend();
}

TEST_F(CpuFaultTest, AFaultStopsTheOtherWorkers) {
  // 2000 groups that sleep 1 ms: group 0 faults at once, the other
  // workers stop after the call they are in (a few groups each).
  KernelArtifact kernel = faultingKernel(
      "enigma_kernel_slow", "*(volatile int *)(uintptr_t)8 = 1;\n"
                            "    } else { usleep(1000);");
  DispatchArgs args;
  args.outputSizes = {4};
  PreparedKernel prepared = dispatcher.prepare(kernel, args);
  EXPECT_THROW(prepared.dispatch({2000 * 1024, 1, 1}, {1024, 1, 1}),
               KernelFault);
  uint32_t ran = 0;
  std::memcpy(&ran, prepared.readOutput().data(), 4);
  EXPECT_LT(ran, 1000u) << "groups that ran after the fault";
}

TEST_F(CpuFaultTest, ManyFaultsLeakNoThreadsAndNoLocks) {
  KernelArtifact kernel = faultingKernel(
      "enigma_kernel_every_group",
      "out[1] = *(volatile uint32_t *)(uintptr_t)(64 + g);");
  // Every group faults: the workers race to report.
  kernel.cppSource = kernel.cppSource.replace(
      kernel.cppSource.find("if (g == 0)"), 11, "if (true)");
  faultOf(kernel, 64); // the pool exists from here on
  size_t threadsBefore = threadCount();
  for (int i = 0; i < 200; ++i)
    ASSERT_NE(faultOf(kernel, 64 + unsigned(i)), "") << "dispatch " << i;
  EXPECT_EQ(threadCount(), threadsBefore);
  expectAWorkingBackend();
}
