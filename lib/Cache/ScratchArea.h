//===- ScratchArea.h - A process's folder for scratch folders ---*- C++ -*-===//
//
// See include/enigma/Cache/ScratchDirectory.h. An area is a folder
// `<prefix>-<random>` holding a file `lock` on which its process keeps a
// POSIX record lock (released by the kernel when the process ends however
// it ends, and not inherited by fork()ed children). A process that can take
// the lock of another area with its prefix knows its owner is gone and
// removes it.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_CACHE_SCRATCHAREA_H
#define ENIGMA_LIB_CACHE_SCRATCHAREA_H

#include "SafeFiles.h"

#include "enigma/Cache/ScratchDirectory.h"

#include <memory>
#include <string>

namespace enigma::cache {

class ScratchArea : public std::enable_shared_from_this<ScratchArea> {
public:
  /// A new area in the trusted folder `parent` (at `parentPath`), after
  /// removing the areas with the same prefix whose processes are gone.
  /// Throws std::system_error.
  static std::shared_ptr<ScratchArea> create(int parent,
                                             const std::string &parentPath,
                                             const std::string &prefix,
                                             const TrustPolicy &policy);
  /// Removes the area if this process made it.
  ~ScratchArea();
  ScratchArea(const ScratchArea &) = delete;
  ScratchArea &operator=(const ScratchArea &) = delete;

  /// A new scratch folder inside. Throws std::system_error.
  ScratchDirectory makeDirectory(const std::string &prefix);
  /// Made by this process (not inherited through fork()).
  bool ours() const;
  int fd() const { return areaFd.get(); }
  const std::string &path() const { return areaPath; }
  /// Removes the area and everything in it now (at exit).
  void removeNow();

private:
  ScratchArea() = default;

  UniqueFd parentFd, areaFd, lockFd;
  std::string name, areaPath;
  TrustPolicy policy;
  int creator = 0;
  uint64_t generation = 0;
  bool removed = false;
};

/// This process's area in the system temp folder, made on first use (and
/// again in a fork()ed child). Throws std::system_error.
std::shared_ptr<ScratchArea> tempDirectoryArea();

} // namespace enigma::cache

#endif
