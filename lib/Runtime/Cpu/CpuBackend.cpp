//===- CpuBackend.cpp -----------------------------------------------------===//
#include "enigma/Runtime/CpuBackend.h"

#include "FaultGuard.h"
#include "GuardedMemory.h"
#include "HostMemory.h"
#include "HostCompiler.h"
#include "SharedObject.h"
#include "ThreadPool.h"

#include "enigma/Cache/ArtifactCache.h"
#include "enigma/Target/Prelude/enigma_cpu_abi.h"
#include "enigma/Support/ProcessLife.h"
#include "enigma/Target/Preludes.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace fs = std::filesystem;

// Scalars are handed to kernels as the low bytes of a uint64_t.
static_assert(std::endian::native == std::endian::little,
              "the CPU backend assumes a little-endian host");

namespace enigma {
namespace {
//===----------------------------------------------------------------------===//
// Buffers and loaded kernels
//===----------------------------------------------------------------------===//

using CpuBuffer = cpu::HostBuffer<CpuBackend>;

class CpuKernel final : public LoadedKernel {
public:
  CpuKernel(std::shared_ptr<cpu::SharedObject> object, EnigmaCpuKernelFn function)
      : object(std::move(object)), function(function) {}

  EnigmaCpuKernelFn entryPoint() const { return function; }
  const cpu::SharedObject &code() const { return *object; }

private:
  std::shared_ptr<cpu::SharedObject> object;
  EnigmaCpuKernelFn function;
};

const CpuBuffer &asCpuBuffer(const DeviceBuffer &buffer) {
  const auto *cpu = dynamic_cast<const CpuBuffer *>(&buffer);
  if (!cpu)
    throw RuntimeFailure("the CPU backend was given a buffer of another backend");
  return *cpu;
}

/// Loads the kernel from the checked file `object` reads (never by path).
std::shared_ptr<LoadedKernel> openKernel(ArtifactCache::Object &object,
                                         const std::string &symbol) {
  // A duplicate: the object keeps its own, to be evicted by if unusable.
  auto code = cpu::SharedObject::load(::fcntl(object.fd(), F_DUPFD_CLOEXEC, 0),
                                      object.path());
  void *entry = code->symbol(symbol.c_str());
  if (!entry)
    throw RuntimeFailure("the compiled kernel " + object.path() +
                         " does not export the function " + symbol);
  return std::make_shared<CpuKernel>(
      std::move(code), reinterpret_cast<EnigmaCpuKernelFn>(entry));
}

//===----------------------------------------------------------------------===//
// Function constants as macro definitions
//===----------------------------------------------------------------------===//

float halfToFloat(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f;
  int fraction = bits & 0x3ff;
  float magnitude =
      exponent == 0    ? std::ldexp(float(fraction), -24)
      : exponent == 31 ? (fraction ? NAN : INFINITY)
                       : std::ldexp(float(fraction | 0x400), exponent - 25);
  return (bits & 0x8000) ? -magnitude : magnitude;
}

/// A C float literal that is exactly `value` (hex float), or a builtin for
/// the values that have no literal.
std::string floatLiteral(float value) {
  if (std::isnan(value))
    return "__builtin_nanf(\"\")";
  if (std::isinf(value))
    return value < 0 ? "(-__builtin_inff())" : "__builtin_inff()";
  char text[64];
  std::snprintf(text, sizeof text, "%af", double(value));
  return value < 0 || std::signbit(value) ? "(" + std::string(text) + ")"
                                          : std::string(text);
}

/// A literal of the parameter's C type: "1.5f" as hex, "7u", "(-3)",
/// "true". f16/bf16 constants are given as the exact float value.
std::string constantLiteral(const ScalarValue &value) {
  const unsigned width = unsigned(byteWidth(value.dtype)) * 8;
  switch (value.dtype) {
  case DType::Bool:
    return value.bits ? "true" : "false";
  case DType::F32:
    return floatLiteral(std::bit_cast<float>(uint32_t(value.bits)));
  case DType::F16:
    return floatLiteral(halfToFloat(uint16_t(value.bits)));
  case DType::BF16:
    return floatLiteral(std::bit_cast<float>(uint32_t(value.bits << 16)));
  case DType::F8E4M3:
  case DType::F8E5M2: // stored as uchar: the bits
    return "(uchar)" + std::to_string(value.bits & 0xff) + "u";
  default:
    break;
  }
  const char *suffix = value.dtype == DType::I64   ? "LL"
                       : value.dtype == DType::U64 ? "ULL"
                       : isSigned(value.dtype)     ? ""
                                                   : "u";
  if (!isSigned(value.dtype))
    return std::to_string(value.bits) + suffix;
  // Sign-extend from the dtype's width.
  int64_t signedValue = int64_t(value.bits << (64 - width)) >> (64 - width);
  if (signedValue >= 0)
    return std::to_string(signedValue) + suffix;
  int64_t minimum = width == 64 ? INT64_MIN : -(int64_t(1) << (width - 1));
  if (signedValue == minimum) // "-2147483648" would be a negated long
    return "(" + std::to_string(signedValue + 1) + suffix + "-1)";
  return "(" + std::to_string(signedValue) + suffix + ")";
}

std::vector<std::string> constantDefines(const ConstantValues &constants) {
  std::vector<std::string> defines;
  for (const auto &[index, value] : constants)
    defines.push_back("ENIGMA_FC_" + std::to_string(index) + "=" +
                      constantLiteral(value));
  return defines;
}

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

const std::vector<ArtifactCache::NamedText> &preludeFiles() {
  static const std::vector<ArtifactCache::NamedText> files = [] {
    std::vector<ArtifactCache::NamedText> named;
    for (const PreludeFile &file : cpuPreludeFiles())
      named.push_back({file.name, file.text});
    return named;
  }();
  return files;
}

/// Identifies the prelude text in cache keys.
const std::string &preludeDigest() {
  static const std::string digest = [] {
    std::vector<std::string_view> parts;
    for (const auto &file : preludeFiles()) {
      parts.push_back(file.name);
      parts.push_back(file.text);
    }
    return ArtifactCache::makeKey(parts);
  }();
  return digest;
}

std::string joinLines(const std::vector<std::string> &lines) {
  std::string joined;
  for (const std::string &line : lines)
    joined += line + "\n";
  return joined;
}

bool isIdentifier(const std::string &name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])))
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

void writeTextFile(const fs::path &path, std::string_view text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), std::streamsize(text.size()));
  if (!out.flush())
    throw RuntimeFailure("cannot write " + path.string());
}

//===----------------------------------------------------------------------===//
// Target flags: probed once per compiler and CPU
//===----------------------------------------------------------------------===//

/// Kernel code of the kind g++ 12 with AVX512-FP16 turns into a zero-masked
/// `vmovsh` store that binutils 2.40 rejects (fuzz seed 3141545): half
/// values chosen by comparisons and kept across libm calls.
constexpr const char *kArchProbeSource = R"(#include "enigma_cpu_prelude.h"
extern "C" void enigma_arch_probe(void *const *args,
                                  const EnigmaCpuLaunch *launch,
                                  uint64_t begin, uint64_t end) {
  const ushort *in0 = (const ushort *)args[0];
  const half *in1 = (const half *)args[1];
  bool *out0 = (bool *)args[2];
  ushort *out1 = (ushort *)args[3];
  (void)launch;
  for (uint t = uint(begin); t < uint(end); ++t) {
    ushort v0 = in0[t];
    half v1 = in1[t];
    ushort v3 = (ushort)abs((short)v0);
    half v5 = isnan(v1) ? half(0.0f) : v1;
    half v6 = clamp(v5, half(-65504.0f), half(65504.0f));
    half v11 = (half)fmod((half)t, v6);
    half v12 = step(v5, v6);
    half v16 = isnan(v11) ? half(0.0f) : v11;
    half v17 = clamp(v16, half(-128.0f), half(127.0f));
    bool v21 = (ulong)(short)v3 == (ulong)(long)v6 || v17 != half(0.0f);
    half v24 = floor(v12 / (half)(short)v3);
    half v27 = fmax(v11, v24);
    out0[t] = !v21;
    out1[t] = (ushort)!(v16 >= v27);
  }
}
)";

/// The target flags a note holds, if it holds one of the candidates.
std::optional<std::vector<std::string>>
parseTargetFlags(const std::optional<std::string> &note) {
  if (!note)
    return std::nullopt;
  // One flag per line, then "end" (so an empty note is not "no flags").
  std::istringstream in(*note);
  std::vector<std::string> words;
  for (std::string word; std::getline(in, word);)
    words.push_back(word);
  if (words.empty() || words.back() != "end")
    return std::nullopt;
  words.pop_back();
  const auto &known = cpu::HostCompiler::archCandidates();
  if (std::find(known.begin(), known.end(), words) == known.end())
    return std::nullopt; // damaged, or from another version: probe again
  return words;
}

/// The target flags for this compiler on this CPU: the first candidate that
/// builds the probe (docs/design/host-compiler-flags.md). Decided once per
/// machine: kept as a note in the cache (beside the artifacts, not among
/// them) under the compiler's identity and the CPU's, and in memory for the
/// process. The probe compiles without any lock held.
std::vector<std::string> targetFlags(ArtifactCache &cache,
                                     const cpu::HostCompiler &compiler,
                                     const ScratchDirectory &scratch,
                                     const std::string &includeDir) {
  static ForkSafeMutex &mutex = *new ForkSafeMutex;
  static auto &chosen = *new std::map<std::string, std::vector<std::string>>;
  {
    std::lock_guard<ForkSafeMutex> lock(mutex);
    if (auto known = chosen.find(compiler.identity()); known != chosen.end())
      return known->second;
  }
  std::string candidates;
  for (const auto &flags : cpu::HostCompiler::archCandidates())
    candidates += joinLines(flags) + "|";
  std::string note = ArtifactCache::makeKey(
                         {"cpu-target-flags-1", compiler.identity(),
                          cpu::hostCpuIdentity(), candidates,
                          kArchProbeSource}) +
                     ".txt";
  std::optional<std::vector<std::string>> flags =
      parseTargetFlags(cache.readNote("cpu-target-flags", note));
  if (!flags) {
    fs::path probe = fs::path(scratch.path()) / "enigma_arch_probe.cpp";
    writeTextFile(probe, kArchProbeSource);
    flags = compiler.chooseArch(
        probe.string(), (fs::path(scratch.path()) / "enigma_arch_probe.so").string(),
        includeDir);
    cache.writeNote("cpu-target-flags", note, joinLines(*flags) + "end\n");
  }
  std::lock_guard<ForkSafeMutex> lock(mutex);
  chosen[compiler.identity()] = *flags;
  return *flags;
}

/// Builds the shared object in `scratch` and hands it to the cache; returns
/// it, opened (from the cache, or still in `scratch`).
ArtifactCache::Object buildSharedObject(ArtifactCache &cache,
                                        const ScratchDirectory &scratch,
                                        const std::string &key,
                                        const KernelArtifact &kernel,
                                        const std::vector<std::string> &defines,
                                        const cpu::HostCompiler &compiler) {
  fs::path folder = scratch.path();
  fs::path source = folder / (kernel.kernelName + ".cpp");
  writeTextFile(source, kernel.cppSource);

  std::optional<std::string> includeDir = cache.ensureFileSet(preludeFiles());
  if (!includeDir) { // no cache: the headers go beside the source
    fs::create_directory(folder / "include");
    for (const auto &file : preludeFiles())
      writeTextFile(folder / "include" / std::string(file.name), file.text);
    includeDir = (folder / "include").string();
  }

  std::string object = kernel.kernelName + ".so";
  compiler.compileSharedObject(
      source.string(), (folder / object).string(), *includeDir, defines,
      targetFlags(cache, compiler, scratch, *includeDir));
  return cache.storeFile(key, scratch, object, ".so");
}

//===----------------------------------------------------------------------===//
// Launches that survive faults
//===----------------------------------------------------------------------===//

/// One dispatch's groups run under cpu::runGuarded. The first fault is
/// recorded and stops the dispatch: every worker checks `stopped` before
/// each kernel call.
struct GuardedLaunch {
  EnigmaCpuKernelFn entry = nullptr;
  const cpu::SharedObject *code = nullptr; // where the kernel's code is
  void *const *args = nullptr;
  const EnigmaCpuLaunch *shape = nullptr;
  uint64_t groupsPerCall = 1;
  std::atomic<bool> stopped{false};
  // Written by the first faulting worker; read after the pool's job is
  // done (which orders the writes before the read).
  std::atomic<bool> faulted{false};
  cpu::Fault fault;
  uint64_t faultBegin = 0, faultEnd = 0; // the groups of the faulting call

  struct Range {
    GuardedLaunch *launch;
    uint64_t begin, end;
    uint64_t current; // the call in flight; read after a fault
  };

  static void runRange(void *context) {
    Range &range = *static_cast<Range *>(context);
    GuardedLaunch &launch = *range.launch;
    for (uint64_t group = range.begin; group < range.end;) {
      if (launch.stopped.load(std::memory_order_relaxed))
        return;
      uint64_t next = std::min(range.end, group + launch.groupsPerCall);
      range.current = group;
      launch.entry(launch.args, launch.shape, group, next);
      group = next;
    }
  }

  void runGroups(uint64_t begin, uint64_t end) {
    Range range{this, begin, end, begin};
    cpu::Fault caught;
    // An interrupt may abandon the kernel's code (never the runtime's).
    cpu::setStoppableCode(code->codeBegin(), code->codeEnd(), &stopped);
    bool finished = cpu::runGuarded(runRange, &range, caught);
    cpu::clearStoppableCode();
    if (finished || caught.signal == cpu::stopSignal())
      return;
    stopped.store(true, std::memory_order_relaxed);
    if (faulted.exchange(true))
      return; // another worker faulted first
    fault = caught;
    faultBegin = range.current;
    faultEnd = std::min(range.end, range.current + groupsPerCall);
  }
};

std::string groupPosition(const EnigmaCpuLaunch &shape, uint64_t group) {
  uint64_t x = group % shape.groups[0];
  uint64_t y = (group / shape.groups[0]) % shape.groups[1];
  uint64_t z = group / (uint64_t(shape.groups[0]) * shape.groups[1]);
  return "(" + std::to_string(x) + ", " + std::to_string(y) + ", " +
         std::to_string(z) + ")";
}

std::string faultMessage(const KernelArtifact &kernel,
                         const GuardedLaunch &run,
                         const EnigmaCpuLaunch &shape) {
  std::string where =
      run.faultEnd - run.faultBegin <= 1
          ? "threadgroup " + groupPosition(shape, run.faultBegin)
          : "one of threadgroups " + groupPosition(shape, run.faultBegin) +
                " to " + groupPosition(shape, run.faultEnd - 1);
  return "kernel " + kernel.kernelName + " faulted on the CPU: " +
         run.fault.describe() + " in " + where + " of " +
         std::to_string(shape.groups[0]) + " x " +
         std::to_string(shape.groups[1]) + " x " +
         std::to_string(shape.groups[2]) +
         " threadgroups; the dispatch was stopped and its outputs are "
         "incomplete; " +
         (run.fault.stackOverflow
              ? std::string("keep fewer values alive across barriers and "
                            "simdgroup functions (or in register arrays), or "
                            "use threadgroup memory for them")
              : kernelFaultAdvice(kernel));
}
} // namespace

//===----------------------------------------------------------------------===//
// CpuBackend
//===----------------------------------------------------------------------===//

CpuBackend::CpuBackend() : CpuBackend(ArtifactCache::fromEnvironment()) {}

CpuBackend::CpuBackend(std::shared_ptr<ArtifactCache> artifactCache)
    : cache(artifactCache ? std::move(artifactCache)
                          : ArtifactCache::disabled()) {
  cpu::installFaultHandlers();
  cpu::installStopHandler();
}

CpuBackend::~CpuBackend() = default;

std::shared_ptr<LoadedKernel>
CpuBackend::load(const KernelArtifact &kernel,
                 const ConstantValues &constants) {
  if (kernel.cppSource.empty())
    throw RuntimeFailure("kernel " + kernel.kernelName +
                         " has no host C++ source for the CPU backend");
  if (!isIdentifier(kernel.kernelName))
    throw RuntimeFailure("kernel name '" + kernel.kernelName +
                         "' is not a C identifier");

  const cpu::HostCompiler &compiler = cpu::HostCompiler::fromEnvironment();
  std::vector<std::string> defines = constantDefines(constants);
  // The target flags are not in the key: they follow from the compiler and
  // the CPU, which are.
  std::string flags = joinLines(cpu::HostCompiler::sharedObjectFlags());
  for (const auto &candidate : cpu::HostCompiler::archCandidates())
    flags += joinLines(candidate) + "|";
  std::string defineLines = joinLines(defines);
  std::string key = ArtifactCache::makeKey(
      {"cpu-shared-object-2", compiler.identity(), flags,
       cpu::hostCpuIdentity(), preludeDigest(), defineLines,
       kernel.kernelName, kernel.cppSource});

  if (std::optional<ArtifactCache::Object> cached = cache->lookup(key)) {
    try {
      std::shared_ptr<LoadedKernel> loaded =
          openKernel(*cached, kernel.kernelName);
      ++fromCacheCount;
      return loaded;
    } catch (const RuntimeFailure &) {
      // A whole object that is not this kernel (a broken toolchain, a
      // hand-made file): dropped and built again.
      cache->evict(key, *cached);
    }
  }
  ScratchDirectory scratch = cache->makeScratchDirectory();
  std::optional<ArtifactCache::Object> object;
  try {
    object = buildSharedObject(*cache, scratch, key, kernel, defines, compiler);
  } catch (const RuntimeFailure &) {
    // The error names the source: it stays until the process exits.
    scratch.keepUntilExit();
    throw;
  }
  std::shared_ptr<LoadedKernel> loaded = openKernel(*object, kernel.kernelName);
  ++compiledCount;
  return loaded;
}

std::shared_ptr<DeviceBuffer> CpuBackend::allocate(size_t bytes) {
  return std::make_shared<CpuBuffer>(bytes);
}

std::shared_ptr<DeviceBuffer> CpuBackend::wrapDeviceMemory(uint64_t address,
                                                         size_t bytes) {
  return CpuBuffer::wrap(address, bytes);
}

void CpuBackend::upload(DeviceBuffer &dst, const void *src, size_t bytes) {
  asCpuBuffer(dst).upload(src, bytes);
}

void CpuBackend::download(const DeviceBuffer &src, void *dst, size_t bytes) {
  asCpuBuffer(src).download(dst, bytes);
}

void CpuBackend::launch(LoadedKernel &kernel, const KernelArtifact &artifact,
                        const std::vector<LaunchArg> &args, Dim3 grid,
                        Dim3 threads) {
  auto *cpuKernel = dynamic_cast<CpuKernel *>(&kernel);
  if (!cpuKernel)
    throw RuntimeFailure("the CPU backend was given a kernel of another backend");
  cpu::checkHostLaunch(artifact, args, grid, threads);
  cpu::HostArguments arguments(artifact, args, &asCpuBuffer);
  EnigmaCpuLaunch shape;
  uint64_t totalGroups =
      cpu::fillLaunchShape(shape, grid, threads, artifact.kernelName);

  GuardedLaunch run;
  run.entry = cpuKernel->entryPoint();
  run.code = &cpuKernel->code();
  run.args = arguments.pointers.data();
  run.shape = &shape;
  // Groups per kernel call: about 16384 threads, so that the calls cost
  // nothing next to the work (an empty kernel split into calls of 1024
  // threads launched measurably slower) while a fault still stops the
  // other workers soon.
  run.groupsPerCall = std::max<uint64_t>(1, 16384 / threads.volume());
  bool finished = cpu::ThreadPool::shared().parallelFor(
      uint64_t(totalGroups),
      [&run](uint64_t begin, uint64_t end) { run.runGroups(begin, end); },
      run.stopped);
  if (run.faulted)
    throw KernelFault(faultMessage(artifact, run, shape));
  if (!finished)
    throw Interrupted("the launch of kernel " + artifact.kernelName +
                      " was interrupted; its outputs are incomplete");
}

double CpuBackend::launchTimed(LoadedKernel &kernel,
                               const KernelArtifact &artifact,
                               const std::vector<LaunchArg> &args, Dim3 grid,
                               Dim3 threads) {
  auto start = std::chrono::steady_clock::now();
  launch(kernel, artifact, args, grid, threads);
  auto elapsed = std::chrono::steady_clock::now() - start;
  return std::chrono::duration<double, std::micro>(elapsed).count();
}

} // namespace enigma
