//===- Nvrtc.cpp - Finding, loading and calling NVRTC ---------------------===//
#include "Nvrtc.h"
#include "SharedLibrary.h"

#include "enigma/Runtime/Backend.h"

#include <cstdlib>
#include <filesystem>
#include <mutex>

namespace enigma::cuda {

namespace {
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram *;
constexpr nvrtcResult kNvrtcSuccess = 0;
} // namespace

struct Nvrtc::Api {
  nvrtcResult (*nvrtcVersion)(int *major, int *minor);
  const char *(*nvrtcGetErrorString)(nvrtcResult result);
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int *count);
  nvrtcResult (*nvrtcGetSupportedArchs)(int *archs);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram *program, const char *source,
                                    const char *name, int numHeaders,
                                    const char *const *headers,
                                    const char *const *includeNames);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram *program);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram program, int numOptions,
                                     const char *const *options);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram program, size_t *size);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram program, char *log);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram program, size_t *size);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram program, char *cubin);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram program, size_t *size);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram program, char *ptx);
};

namespace {
namespace fs = std::filesystem;

const char *const kSonames[] = {"libnvrtc.so.13", "libnvrtc.so.12",
                                "libnvrtc.so"};

std::string envOr(const char *name) {
  const char *value = std::getenv(name);
  return value ? value : "";
}

/// Library files to try in `dir`, newest first.
void addLibraryDir(std::vector<std::string> &out, const fs::path &dir) {
  for (const char *soname : kSonames)
    out.push_back((dir / soname).string());
}

/// ENIGMA_NVRTC_PATH may name the library itself, a folder holding it, or a
/// site-packages folder with NVIDIA's pip wheels (nvidia/cu13/lib for CUDA
/// 13, nvidia/cuda_nvrtc/lib for CUDA 12). Then the loader's own search
/// (LD_LIBRARY_PATH, ldconfig), then the toolkit folders.
std::vector<std::string> libraryCandidates() {
  std::vector<std::string> out;
  std::string custom = envOr("ENIGMA_NVRTC_PATH");
  if (!custom.empty()) {
    std::error_code ec;
    if (fs::is_directory(custom, ec)) {
      addLibraryDir(out, custom);
      addLibraryDir(out, fs::path(custom) / "lib");
      addLibraryDir(out, fs::path(custom) / "nvidia/cu13/lib");
      addLibraryDir(out, fs::path(custom) / "nvidia/cuda_nvrtc/lib");
    } else {
      out.push_back(custom);
    }
  }
  for (const char *soname : kSonames)
    out.push_back(soname);
  for (const char *root : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string dir = envOr(root); !dir.empty())
      addLibraryDir(out, fs::path(dir) / "lib64");
  addLibraryDir(out, "/usr/local/cuda/lib64");
  return out;
}

/// NVRTC has no built-in cuda_fp16.h; look beside the library first (the
/// toolkit's lib64/../include, a wheel's lib/../include), then the usual
/// roots. ENIGMA_CUDA_INCLUDE overrides.
std::string findCudaIncludeDir(const std::string &libraryFile) {
  std::vector<fs::path> dirs;
  if (std::string dir = envOr("ENIGMA_CUDA_INCLUDE"); !dir.empty())
    dirs.push_back(dir);
  if (!libraryFile.empty()) {
    std::error_code ec;
    fs::path real = fs::canonical(libraryFile, ec);
    fs::path lib = (ec ? fs::path(libraryFile) : real).parent_path();
    dirs.push_back(lib.parent_path() / "include");
  }
  for (const char *root : {"CUDA_HOME", "CUDA_PATH"})
    if (std::string dir = envOr(root); !dir.empty())
      dirs.push_back(fs::path(dir) / "include");
  dirs.push_back("/usr/local/cuda/include");
  for (const fs::path &dir : dirs) {
    std::error_code ec;
    if (fs::exists(dir / "cuda_fp16.h", ec) &&
        fs::exists(dir / "cuda_bf16.h", ec))
      return dir.string();
  }
  return "";
}

std::string bindNvrtc(const SharedLibrary &lib, Nvrtc::Api &api) {
  std::string missing;
  bindSymbol(lib, api.nvrtcVersion, "nvrtcVersion", missing);
  bindSymbol(lib, api.nvrtcGetErrorString, "nvrtcGetErrorString", missing);
  bindSymbol(lib, api.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs",
             missing);
  bindSymbol(lib, api.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs",
             missing);
  bindSymbol(lib, api.nvrtcCreateProgram, "nvrtcCreateProgram", missing);
  bindSymbol(lib, api.nvrtcDestroyProgram, "nvrtcDestroyProgram", missing);
  bindSymbol(lib, api.nvrtcCompileProgram, "nvrtcCompileProgram", missing);
  bindSymbol(lib, api.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize",
             missing);
  bindSymbol(lib, api.nvrtcGetProgramLog, "nvrtcGetProgramLog", missing);
  bindSymbol(lib, api.nvrtcGetCUBINSize, "nvrtcGetCUBINSize", missing);
  bindSymbol(lib, api.nvrtcGetCUBIN, "nvrtcGetCUBIN", missing);
  bindSymbol(lib, api.nvrtcGetPTXSize, "nvrtcGetPTXSize", missing);
  bindSymbol(lib, api.nvrtcGetPTX, "nvrtcGetPTX", missing);
  return missing;
}

/// Destroys the program however compile() leaves.
struct ProgramGuard {
  const Nvrtc::Api &api;
  nvrtcProgram program = nullptr;
  ~ProgramGuard() {
    if (program)
      api.nvrtcDestroyProgram(&program);
  }
};

} // namespace

const Nvrtc &Nvrtc::get() {
  static std::mutex mutex;
  static Nvrtc *loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded)
    return *loaded;

  std::string errors;
  SharedLibrary lib = SharedLibrary::openFirst(libraryCandidates(), errors);
  if (!lib.isOpen())
    throw BackendUnavailable(
        "NVRTC (libnvrtc.so) not found, so CUDA kernels cannot be compiled; "
        "install the CUDA toolkit or the nvidia-cuda-nvrtc wheel, or point "
        "ENIGMA_NVRTC_PATH at it; enigma.CpuRuntime works without it. "
        "Tried:\n" + errors);
  static Api api;
  std::string missing = bindNvrtc(lib, api);
  if (!missing.empty())
    throw BackendUnavailable("NVRTC at " + lib.path() +
                             " is too old: it lacks " + missing);

  static Nvrtc nvrtc;
  nvrtc.api = &api;
  nvrtc.path = lib.path();
  api.nvrtcVersion(&nvrtc.major, &nvrtc.minor);
  int count = 0;
  api.nvrtcGetNumSupportedArchs(&count);
  nvrtc.archs.resize(count > 0 ? count : 0);
  if (count > 0)
    api.nvrtcGetSupportedArchs(nvrtc.archs.data());
  nvrtc.includeDir = findCudaIncludeDir(lib.loadedFile("nvrtcVersion"));
  loaded = &nvrtc;
  return nvrtc;
}

std::string Nvrtc::version() const {
  return std::to_string(major) + "." + std::to_string(minor);
}

NvrtcOutput Nvrtc::compile(const NvrtcProgramInput &input) const {
  std::vector<const char *> headerTexts, headerNames, options;
  for (const auto &[name, text] : input.headers) {
    headerNames.push_back(name.c_str());
    headerTexts.push_back(text.c_str());
  }
  for (const std::string &option : input.options)
    options.push_back(option.c_str());

  ProgramGuard guard{*api};
  nvrtcResult result = api->nvrtcCreateProgram(
      &guard.program, input.source.c_str(), input.name.c_str(),
      int(headerTexts.size()), headerTexts.data(), headerNames.data());
  if (result != kNvrtcSuccess)
    throw RuntimeFailure(std::string("nvrtcCreateProgram failed: ") +
                         api->nvrtcGetErrorString(result));

  result = api->nvrtcCompileProgram(guard.program, int(options.size()),
                                    options.data());
  NvrtcOutput output;
  size_t logSize = 0;
  api->nvrtcGetProgramLogSize(guard.program, &logSize);
  if (logSize > 1) {
    output.log.resize(logSize);
    api->nvrtcGetProgramLog(guard.program, output.log.data());
    output.log.resize(logSize - 1); // drop the terminating NUL
  }
  if (result != kNvrtcSuccess) {
    std::string optionText;
    for (const std::string &option : input.options)
      optionText += " " + option;
    throw RuntimeFailure("NVRTC " + version() + " could not compile " +
                         input.name + " (" +
                         api->nvrtcGetErrorString(result) + "), options:" +
                         optionText + "\n" + output.log);
  }

  // A real architecture yields a cubin; a virtual one (compute_XX) only PTX.
  size_t cubinSize = 0;
  if (api->nvrtcGetCUBINSize(guard.program, &cubinSize) == kNvrtcSuccess &&
      cubinSize > 0) {
    output.image.resize(cubinSize);
    api->nvrtcGetCUBIN(guard.program, output.image.data());
    output.isCubin = true;
    return output;
  }
  size_t ptxSize = 0;
  api->nvrtcGetPTXSize(guard.program, &ptxSize);
  output.image.resize(ptxSize);
  api->nvrtcGetPTX(guard.program, output.image.data());
  return output;
}

} // namespace enigma::cuda
