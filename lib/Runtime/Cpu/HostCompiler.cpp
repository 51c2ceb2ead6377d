//===- HostCompiler.cpp ---------------------------------------------------===//
#include "HostCompiler.h"

#include "ChildProcess.h"

#include "enigma/Runtime/Backend.h"
#include "enigma/Support/ProcessLife.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>


namespace enigma::cpu {
namespace {
/// Runs the compiler; BackendUnavailable when it cannot be started at all.
ProcessResult runProcess(const std::vector<std::string> &argv) {
  ProcessResult result = runChildProcess(argv);
  if (!result.started)
    throw BackendUnavailable("cannot run the host C++ compiler '" + argv[0] +
                             "': " + result.output +
                             ". CpuRuntime compiles every kernel with a host C++ compiler "
                             "when it first runs it: install one (e.g. "
                             "`apt-get install g++`) or set ENIGMA_CXX to "
                             "the compiler's command");
  return result;
}

std::vector<std::string> splitWords(const std::string &text) {
  std::istringstream words(text);
  std::vector<std::string> result;
  for (std::string word; words >> word;)
    result.push_back(word);
  return result;
}

std::string joinWords(const std::vector<std::string> &words) {
  std::string joined;
  for (const std::string &word : words)
    joined += (joined.empty() ? "" : " ") + word;
  return joined;
}
} // namespace

HostCompiler::HostCompiler(std::vector<std::string> commandWords)
    : command(std::move(commandWords)) {
  if (command.empty())
    throw BackendUnavailable("the host C++ compiler command is empty "
                             "(check ENIGMA_CXX)");
  std::vector<std::string> argv = command;
  argv.push_back("--version");
  ProcessResult version = runProcess(argv);
  if (version.exitCode != 0)
    throw BackendUnavailable("the host C++ compiler '" + joinWords(command) +
                             "' failed to report its version:\n" +
                             version.output);
  std::string firstLine = version.output.substr(0, version.output.find('\n'));
  toolchainIdentity = joinWords(command) + " | " + firstLine;
}

const HostCompiler &HostCompiler::fromEnvironment() {
  const char *configured = std::getenv("ENIGMA_CXX");
  std::string commandText = configured && *configured ? configured : "c++";
  static ForkSafeMutex &mutex = *new ForkSafeMutex;
  static auto &compilers =
      *new std::map<std::string, std::unique_ptr<HostCompiler>>;
  {
    std::lock_guard<ForkSafeMutex> lock(mutex);
    if (auto known = compilers.find(commandText); known != compilers.end())
      return *known->second;
  }
  // Asking the compiler for its version runs it: not under the lock.
  auto made = std::make_unique<HostCompiler>(splitWords(commandText));
  std::lock_guard<ForkSafeMutex> lock(mutex);
  std::unique_ptr<HostCompiler> &compiler = compilers[commandText];
  if (!compiler)
    compiler = std::move(made);
  return *compiler;
}

const std::vector<std::string> &HostCompiler::sharedObjectFlags() {
  static const std::vector<std::string> flags = {
      "-std=c++17",           // the language the emitter writes
      "-O3",                  // kernels are hot loops: inline and vectorise
      "-fPIC", "-shared",     // a shared object for dlopen
      "-fwrapv",              // integer overflow wraps, as on GPUs
      "-fno-strict-aliasing", // kernels reinterpret buffers (as_type, atomics)
      "-fno-math-errno",      // sqrt etc. become instructions; same results
      "-ffp-contract=off",    // each + - * rounded: the same on every host
                              // (C++ defaults to fast, fusing a*b+c)
  };
  return flags;
}

const std::vector<std::vector<std::string>> &HostCompiler::archCandidates() {
  static const std::vector<std::vector<std::string>> candidates = {
#if defined(__x86_64__)
      // glibc's vector math library, where it links, for loops over float
      // exp, log, sin, ... (enigma_cpu_vector_math.h).
      {"-march=native", "-DENIGMA_CPU_LIBMVEC", "-lmvec"},
      {"-march=native", "-mno-avx512fp16", "-DENIGMA_CPU_LIBMVEC", "-lmvec"},
#endif
      {"-march=native"}, // the host's vector ISA (the CPU is in the key)
#if defined(__x86_64__)
      // g++ 12 emits zero-masked vmovsh stores for some half code, which
      // binutils 2.40 rejects ("unsupported masking for `vmovsh'").
      {"-march=native", "-mno-avx512fp16"},
      {"-march=x86-64-v3"}, // AVX2 and FMA: any x86 of the last decade
#endif
      {}, // the compiler's default target
  };
  return candidates;
}

namespace {
/// An assembler that rejected the compiler's output, or a compiler that
/// does not know a flag: problems of the target flags, not of the source.
bool rejectsTargetFlags(const std::string &output) {
  for (const char *sign :
       {"Assembler messages:", "unrecognized command-line option",
        "unrecognized command line option", "bad value", "unknown argument",
        "unknown target CPU", "unsupported option", "cannot find -l"})
    if (output.find(sign) != std::string::npos)
      return true;
  return false;
}
} // namespace

struct HostCompiler::Attempt {
  std::vector<std::string> argv;
  ProcessResult result;
};

HostCompiler::Attempt
HostCompiler::compile(const std::vector<std::string> &arch,
                      const std::string &sourcePath,
                      const std::string &outputPath,
                      const std::string &includeDir,
                      const std::vector<std::string> &defines) const {
  Attempt attempt;
  std::vector<std::string> &argv = attempt.argv;
  argv = command;
  for (const std::string &flag : sharedObjectFlags())
    argv.push_back(flag);
  // Libraries go after the source, where a linker that drops unneeded
  // libraries (--as-needed) still sees what the source needs.
  std::vector<std::string> libraries;
  for (const std::string &flag : arch)
    (flag.rfind("-l", 0) == 0 ? libraries : argv).push_back(flag);
  argv.push_back("-I" + includeDir);
  for (const std::string &define : defines)
    argv.push_back("-D" + define);
  const size_t sourceAt = argv.size();
  argv.push_back(sourcePath);
  argv.push_back("-o");
  argv.push_back(outputPath);
  argv.insert(argv.end(), libraries.begin(), libraries.end());
  attempt.result = runProcess(argv);
  // A crash of the compiler itself is its bug, not the kernel's; they live
  // mostly in the vectoriser (g++ 12 once died on an AVX-512 signbit), so
  // try once more without it before giving up.
  if (attempt.result.exitCode != 0 &&
      attempt.result.output.find("internal compiler error") !=
          std::string::npos) {
    std::vector<std::string> retry = argv;
    retry.insert(retry.begin() + sourceAt, "-fno-tree-vectorize");
    ProcessResult second = runProcess(retry);
    if (second.exitCode == 0)
      attempt.result = second;
    else
      attempt.result.output +=
          "\n(again without vectorisation:)\n" + second.output;
  }
  return attempt;
}

std::vector<std::string>
HostCompiler::chooseArch(const std::string &probeSource,
                         const std::string &outputPath,
                         const std::string &includeDir) const {
  const auto &candidates = archCandidates();
  for (size_t i = 0; i + 1 < candidates.size(); ++i) {
    Attempt attempt =
        compile(candidates[i], probeSource, outputPath, includeDir, {});
    if (attempt.result.exitCode == 0 ||
        !rejectsTargetFlags(attempt.result.output))
      return candidates[i];
  }
  return candidates.back();
}

void HostCompiler::compileSharedObject(
    const std::string &sourcePath, const std::string &outputPath,
    const std::string &includeDir, const std::vector<std::string> &defines,
    const std::vector<std::string> &arch) const {
  Attempt attempt = compile(arch, sourcePath, outputPath, includeDir, defines);
  // The probe passed with `arch`, but this kernel may hit an assembler
  // problem it did not: go down the list from there.
  const auto &candidates = archCandidates();
  auto next = std::find(candidates.begin(), candidates.end(), arch);
  std::string output = attempt.result.output;
  while (attempt.result.exitCode != 0 &&
         rejectsTargetFlags(attempt.result.output) && next != candidates.end() &&
         ++next != candidates.end()) {
    attempt = compile(*next, sourcePath, outputPath, includeDir, defines);
    output += "\n(again with the target flags \"" + joinWords(*next) +
              "\":)\n" + attempt.result.output;
  }
  if (attempt.result.exitCode != 0)
    throw RuntimeFailure("the host C++ compiler failed on " + sourcePath +
                         " (command: " + joinWords(attempt.argv) + "):\n" +
                         output);
}

const std::string &hostCpuIdentity() {
  static const std::string identity = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(cpuinfo, line) && (model.empty() || flags.empty())) {
      auto startsWith = [&](const char *key) {
        return line.rfind(key, 0) == 0;
      };
      if (model.empty() && (startsWith("model name") || startsWith("CPU part")))
        model = line;
      if (flags.empty() && (startsWith("flags") || startsWith("Features")))
        flags = line;
    }
    return model + "\n" + flags;
  }();
  return identity;
}

} // namespace enigma::cpu
