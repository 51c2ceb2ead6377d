//===- SharedLibrary.h - dlopen with a list of candidates -------*- C++ -*-===//
//
// The CUDA driver and NVRTC are optional at run time; both are opened by
// trying a list of names or paths and then looking up symbols one by one.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CUDA_SHAREDLIBRARY_H
#define ENIGMA_LIB_RUNTIME_CUDA_SHAREDLIBRARY_H

#include <string>
#include <vector>

namespace enigma::cuda {

/// A library opened for the life of the process (never closed: its function
/// pointers are cached in process-wide tables).
class SharedLibrary {
public:
  /// Tries each candidate in order; returns an unopened library (and fills
  /// `errors` with one dlerror line per candidate) when none opens.
  static SharedLibrary openFirst(const std::vector<std::string> &candidates,
                                 std::string &errors);

  bool isOpen() const { return handle != nullptr; }
  /// The candidate that opened.
  const std::string &path() const { return openedPath; }
  /// The address of `name`, or nullptr.
  void *symbol(const char *name) const;
  /// The file the library was loaded from (resolved by the loader, so a bare
  /// soname becomes a full path), or "" when unknown.
  std::string loadedFile(const char *anySymbol) const;

private:
  void *handle = nullptr;
  std::string openedPath;
};

/// Stores symbol `name` of `library` in `slot`, or appends `name` to
/// `missing` (comma separated) when the library lacks it.
template <typename Fn>
void bindSymbol(const SharedLibrary &library, Fn &slot, const char *name,
                std::string &missing) {
  slot = reinterpret_cast<Fn>(library.symbol(name));
  if (!slot)
    missing += missing.empty() ? name : std::string(", ") + name;
}

} // namespace enigma::cuda

#endif
