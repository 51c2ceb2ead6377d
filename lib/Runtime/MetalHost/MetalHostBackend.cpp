//===- MetalHostBackend.cpp -----------------------------------------------===//
#include "enigma/Runtime/MetalHostBackend.h"

#include "DivisionTrap.h"
#include "GroupRunner.h"
#include "Harness.h"
#include "MslCompiler.h"
#include "MslSource.h"

#include "../Cpu/FaultGuard.h"
#include "../Cpu/GuardedMemory.h"
#include "../Cpu/HostMemory.h"
#include "../Cpu/SharedObject.h"
#include "../Cpu/ThreadPool.h"

#include "enigma/Cache/ArtifactCache.h"
#include "enigma/Support/ProcessLife.h"

#include <algorithm>
#include <bit>
#include <csignal>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fcntl.h>
#include <fstream>
#include <mutex>
#include <optional>


namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little,
              "scalars are handed to kernels as the low bytes of a uint64_t");

namespace enigma {
namespace {
using namespace metalhost;

//===----------------------------------------------------------------------===//
// Buffers and loaded kernels
//===----------------------------------------------------------------------===//

using HostBuffer = cpu::HostBuffer<MetalHostBackend>;

const HostBuffer &asHostBuffer(const DeviceBuffer &buffer) {
  const auto *host = dynamic_cast<const HostBuffer *>(&buffer);
  if (!host)
    throw RuntimeFailure(
        "the MSL host backend was given a buffer of another backend");
  return *host;
}

class MslKernelObject final : public LoadedKernel {
public:
  MslKernelObject(std::shared_ptr<cpu::SharedObject> object,
                  EnigmaMslThreadMainFn main)
      : object(std::move(object)), main(main) {}

  EnigmaMslThreadMainFn threadMain() const { return main; }
  const cpu::SharedObject &code() const { return *object; }

private:
  std::shared_ptr<cpu::SharedObject> object;
  EnigmaMslThreadMainFn main;
};

/// Loads the kernel from the checked file `object` reads (never by path).
std::shared_ptr<LoadedKernel> openKernel(ArtifactCache::Object &object) {
  // A duplicate: the object keeps its own, to be evicted by if unusable.
  auto code = cpu::SharedObject::load(::fcntl(object.fd(), F_DUPFD_CLOEXEC, 0),
                                      object.path());
  auto version = reinterpret_cast<EnigmaMslAbiVersionFn>(
      code->symbol("enigma_msl_abi_version"));
  auto main = reinterpret_cast<EnigmaMslThreadMainFn>(
      code->symbol("enigma_msl_thread_main"));
  if (!version || !main || version() != ENIGMA_MSL_ABI_VERSION)
    throw RuntimeFailure("the compiled MSL kernel " + object.path() +
                         " does not have the runtime's interface");
  return std::make_shared<MslKernelObject>(std::move(code), main);
}

void writeTextFile(const fs::path &path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), std::streamsize(text.size()));
  if (!out.flush())
    throw RuntimeFailure("cannot write " + path.string());
}

//===----------------------------------------------------------------------===//
// Launches
//===----------------------------------------------------------------------===//

/// What the groups of one launch share.
struct Launch {
  DispatchShape shape;
  EnigmaMslThreadMainFn main;
  const cpu::SharedObject *code; // where the kernel's code is
  void *const *args;
  std::atomic<bool> stopped{false};
  std::mutex failureMutex;
  std::string failure; // the first fault or error, if any
  bool faulted = false;  // the failure is the kernel's fault
  const KernelArtifact *artifact;

  void fail(const std::string &message, bool fault) {
    std::lock_guard<std::mutex> lock(failureMutex);
    if (failure.empty()) {
      failure = message;
      faulted = fault;
    }
    stopped = true;
  }
};

struct Chunk {
  Launch *launch;
  uint64_t begin, end;
};

/// Runs under cpu::runGuarded, which must not be left by an exception.
void runChunk(void *context) {
  auto &chunk = *static_cast<Chunk *>(context);
  GroupRunner &runner = GroupRunner::forThisThread();
  try {
    for (uint64_t g = chunk.begin; g < chunk.end; ++g) {
      if (chunk.launch->stopped.load(std::memory_order_relaxed))
        return;
      runner.run(chunk.launch->shape, g, chunk.launch->main,
                 chunk.launch->args);
    }
  } catch (const std::exception &e) {
    chunk.launch->fail(e.what(), false);
    runner.reset();
  }
}

std::string triple(const uint32_t v[3]) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " +
         std::to_string(v[2]) + ")";
}

/// Where and why the kernel faulted.
std::string describeFault(const Launch &launch, const GroupRunner &runner,
                          const cpu::Fault &fault) {
  std::string where;
  if (const EnigmaMslThread *t = runner.runningThread())
    where = " in thread " + triple(t->position_in_grid) + " (threadgroup " +
            triple(runner.currentGroup().threadgroup_position_in_grid) +
            ", thread " + triple(t->position_in_threadgroup) + " of it)";
  std::string why = fault.describe();
  if ((fault.signal == SIGSEGV || fault.signal == SIGBUS) &&
      runner.isGuardPage(reinterpret_cast<const void *>(fault.address)))
    why = "stack overflow: a thread used more than " +
          std::to_string(runner.stackBytes() / 1024) +
          " KiB of stack (set ENIGMA_MSL_STACK_KB for more)";
  // Enigma kernels can be run again in bounds-checked mode; hand-written
  // Metal (no host C++ flavour) cannot.
  std::string advice =
      launch.artifact->cppSource.empty()
          ? "on a GPU this is undefined behaviour, typically an out-of-bounds "
            "access"
          : kernelFaultAdvice(*launch.artifact);
  return "kernel " + launch.artifact->kernelName +
         " faulted on the MSL host runtime: " + why + where +
         "; the dispatch was stopped and its outputs are incomplete; " +
         advice;
}

void runGuardedChunk(Launch &launch, uint64_t begin, uint64_t end) {
  Chunk chunk{&launch, begin, end};
  GroupRunner &runner = GroupRunner::forThisThread();
  cpu::Fault fault;
  setRunningKernelCode(true);
  // An interrupt may abandon the kernel's code (never the runtime's).
  cpu::setStoppableCode(launch.code->codeBegin(), launch.code->codeEnd(),
                        &launch.stopped);
  bool finished = cpu::runGuarded(&runChunk, &chunk, fault);
  cpu::clearStoppableCode();
  setRunningKernelCode(false);
  if (!finished) {
    if (fault.signal != cpu::stopSignal())
      launch.fail(describeFault(launch, runner, fault), true);
    runner.reset();
  }
}
} // namespace

//===----------------------------------------------------------------------===//
// MetalHostBackend
//===----------------------------------------------------------------------===//

MetalHostBackend::MetalHostBackend()
    : MetalHostBackend(ArtifactCache::fromEnvironment()) {}

MetalHostBackend::MetalHostBackend(std::shared_ptr<ArtifactCache> artifactCache)
    : cache(artifactCache ? std::move(artifactCache)
                          : ArtifactCache::disabled()) {
  MslCompiler::instance(); // fails here when there is no usable clang++
}

MetalHostBackend::~MetalHostBackend() = default;

std::shared_ptr<LoadedKernel>
MetalHostBackend::load(const KernelArtifact &kernel,
                       const ConstantValues &constants) {
  if (kernel.mslSource.empty())
    throw RuntimeFailure("kernel " + kernel.kernelName +
                         " has no Metal source for the MSL host backend");
  MslSource source =
      MslSource::parse(kernel.mslSource, kernel.kernelName + ".metal");
  const MslKernel &msl = source.kernel(kernel.kernelName);
  if (msl.takesThreadgroupMemory() && !kernel.dynamicThreadgroupMemory)
    throw RuntimeFailure(
        "kernel " + kernel.kernelName + " takes [[threadgroup(0)]] memory, "
        "which the MSL host runtime sizes for kernels made by enigma.compile "
        "with enigma.dynamic_threadgroup_alloc (threadgroup_memory= at "
        "launch); declare a threadgroup array in the kernel body instead");
  if (msl.bindings().size() != kernel.params.size())
    throw RuntimeFailure("kernel " + kernel.kernelName + " declares " +
                         std::to_string(msl.bindings().size()) +
                         " buffer parameters in its Metal source but has " +
                         std::to_string(kernel.params.size()) + " parameters");
  std::string text = source.adapted(constants) + generateHarness(msl);

  MslCompiler &compiler = MslCompiler::instance();
  std::string key = ArtifactCache::makeKey(
      {"msl-host-object-1", compiler.identity(), kernel.kernelName, text});
  if (std::optional<ArtifactCache::Object> cached = cache->lookup(key)) {
    try {
      std::shared_ptr<LoadedKernel> loaded = openKernel(*cached);
      ++fromCacheCount;
      return loaded;
    } catch (const RuntimeFailure &) {
      // A whole object that is not a kernel of this runtime (a broken
      // toolchain, a hand-made file): dropped and built again.
      cache->evict(key, *cached);
    }
  }
  // The scratch folder goes when this returns or throws (the compiler's
  // messages name the source by its file name only).
  ScratchDirectory scratch = cache->makeScratchDirectory();
  fs::path sourcePath = fs::path(scratch.path()) / (kernel.kernelName + ".metal");
  writeTextFile(sourcePath, text);
  std::string objectName = kernel.kernelName + ".so";
  compiler.compileSharedObject(
      *cache, sourcePath.string(),
      (fs::path(scratch.path()) / objectName).string());
  ArtifactCache::Object object =
      cache->storeFile(key, scratch, objectName, ".so");
  std::shared_ptr<LoadedKernel> loaded = openKernel(object);
  ++compiledCount;
  return loaded;
}

std::shared_ptr<DeviceBuffer> MetalHostBackend::allocate(size_t bytes) {
  return std::make_shared<HostBuffer>(bytes);
}

std::shared_ptr<DeviceBuffer>
MetalHostBackend::wrapDeviceMemory(uint64_t address, size_t bytes) {
  return HostBuffer::wrap(address, bytes);
}

void MetalHostBackend::upload(DeviceBuffer &dst, const void *src,
                              size_t bytes) {
  asHostBuffer(dst).upload(src, bytes);
}

void MetalHostBackend::download(const DeviceBuffer &src, void *dst,
                                size_t bytes) {
  asHostBuffer(src).download(dst, bytes);
}

void MetalHostBackend::launch(LoadedKernel &kernel,
                              const KernelArtifact &artifact,
                              const std::vector<LaunchArg> &args, Dim3 grid,
                              Dim3 threads) {
  auto *object = dynamic_cast<MslKernelObject *>(&kernel);
  if (!object)
    throw RuntimeFailure(
        "the MSL host backend was given a kernel of another backend");
  cpu::checkHostLaunch(artifact, args, grid, threads);
  if (threads.volume() > GroupRunner::kMaxThreads)
    throw RuntimeFailure("kernel " + artifact.kernelName +
                         ": more than 1024 threads in a threadgroup");

  cpu::HostArguments arguments(artifact, args, &asHostBuffer);
  Launch launch;
  launch.main = object->threadMain();
  launch.code = &object->code();
  launch.args = arguments.pointers.data();
  launch.artifact = &artifact;
  if (artifact.dynamicThreadgroupMemory)
    launch.shape.threadgroupMemory =
        (args[dynamicThreadgroupArg(artifact)].scalar.bits + 15) / 16 * 16;
  uint64_t totalGroups =
      cpu::fillLaunchShape(launch.shape, grid, threads, artifact.kernelName);

  cpu::installFaultHandlers();
  installDivisionTrapHandler(); // in front of the fault guard
  bool finished = cpu::ThreadPool::shared().parallelFor(
      uint64_t(totalGroups),
      [&](uint64_t begin, uint64_t end) { runGuardedChunk(launch, begin, end); },
      launch.stopped);
  if (launch.faulted)
    throw KernelFault(launch.failure);
  if (!launch.failure.empty())
    throw RuntimeFailure(launch.failure);
  if (!finished)
    throw Interrupted("the launch of kernel " + artifact.kernelName +
                      " was interrupted; its outputs are incomplete");
}

double MetalHostBackend::launchTimed(LoadedKernel &kernel,
                                     const KernelArtifact &artifact,
                                     const std::vector<LaunchArg> &args,
                                     Dim3 grid, Dim3 threads) {
  auto start = std::chrono::steady_clock::now();
  launch(kernel, artifact, args, grid, threads);
  auto elapsed = std::chrono::steady_clock::now() - start;
  return std::chrono::duration<double, std::micro>(elapsed).count();
}

KernelArtifact
MetalHostBackend::artifactForSource(const std::string &text,
                                    const std::string &kernelName,
                                    const std::vector<unsigned> &defined,
                                    std::vector<bool> *bytesParams) {
  MslSource source = MslSource::parse(text, kernelName + ".metal");
  const MslKernel &msl = source.kernel(kernelName);
  KernelArtifact artifact;
  artifact.kernelName = kernelName;
  artifact.mslSource = text;
  for (const MslParam *p : msl.bindings()) {
    KernelParam param;
    param.name = p->name;
    param.kind = p->kind == MslParam::Kind::Scalar ? ParamKind::Scalar
                                                   : ParamKind::Buffer;
    unsigned width = 1;
    std::string element = p->elementType;
    // Atomic buffers hold their plain values.
    if (element == "atomic_int" || element == "atomic<int>")
      element = "int";
    else if (element == "atomic_uint" || element == "atomic<uint>")
      element = "uint";
    else if (element == "atomic_float" || element == "atomic<float>")
      element = "float";
    else if (element == "atomic_ulong" || element == "atomic<ulong>")
      element = "ulong";
    else if (element == "atomic_bool" || element == "atomic<bool>")
      element = "bool";
    std::optional<DType> dtype = dtypeOfMslType(element, width);
    param.dtype = dtype ? *dtype : DType::U8;
    param.vecWidth = dtype ? width : 1;
    artifact.params.push_back(param);
    if (bytesParams)
      bytesParams->push_back(!dtype);
  }
  for (const MslFunctionConstant &c : source.functionConstants()) {
    if (std::find(defined.begin(), defined.end(), c.index) == defined.end())
      continue;
    unsigned width = 1;
    std::string type = c.type;
    type.erase(std::remove(type.begin(), type.end(), ' '), type.end());
    if (type.rfind("metal::", 0) == 0)
      type = type.substr(7);
    std::optional<DType> dtype = dtypeOfMslType(type, width);
    if (!dtype || width != 1)
      throw MslSourceError(source.fileName() + ":" + std::to_string(c.line) +
                           ": function constant " + c.name + " has type " +
                           c.type + "; the MSL host runtime takes scalar "
                           "function constants");
    artifact.constants.push_back({c.index, *dtype});
  }
  return artifact;
}

void MetalHostBackend::checkSource(const std::string &text,
                                   const std::string &fileName) {
  MslSource source = MslSource::parse(text, fileName);
  std::string full = source.adapted({});
  for (size_t i = 0; i < source.kernels().size(); ++i)
    full += generateHarness(source.kernels()[i],
                            "enigma_msl_check_" + std::to_string(i));
  ScratchDirectory scratch = cache->makeScratchDirectory();
  fs::path path = fs::path(scratch.path()) / fs::path(fileName).filename();
  writeTextFile(path, full);
  MslCompiler::instance().checkSyntax(*cache, path.string());
}

} // namespace enigma
