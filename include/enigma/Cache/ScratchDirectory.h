//===- ScratchDirectory.h - Private folders for building artifacts -*- C++ -*-===//
//
// Compilers need real folders: for the source they read, the objects they
// write, headers and precompiled headers. Each process keeps its scratch
// folders inside one folder of its own (a "scratch area": in the cache's
// tmp/, or in the system temp folder when there is no cache) that holds a
// lock for as long as the process lives. The area is removed when the
// process exits normally; one left by a process that could not clean up
// (os._exit, a kill) is removed by the next process that makes an area
// there, which can take its lock. Nothing is ever removed through a link.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CACHE_SCRATCHDIRECTORY_H
#define ENIGMA_CACHE_SCRATCHDIRECTORY_H

#include <memory>
#include <string>

namespace enigma {

namespace cache {
class ScratchArea;
}

/// A new empty folder, private to the user (mode 0700), removed with
/// everything in it when the object goes. Move-only.
class [[gnu::visibility("default")]] ScratchDirectory {
public:
  ScratchDirectory(std::shared_ptr<cache::ScratchArea> area, std::string name,
                   int fd);
  ScratchDirectory(ScratchDirectory &&other) noexcept;
  ScratchDirectory &operator=(ScratchDirectory &&other) noexcept;
  ScratchDirectory(const ScratchDirectory &) = delete;
  ScratchDirectory &operator=(const ScratchDirectory &) = delete;
  ~ScratchDirectory();

  /// Where it is, for compilers' command lines.
  const std::string &path() const { return fullPath; }
  /// The folder, open (for openat and friends).
  int fd() const { return folderFd; }
  /// Removes it now (idempotent).
  void remove();
  /// Keeps it (and what is in it, e.g. a source a compiler rejected, for
  /// the error message to point at) until the process exits; this object
  /// is left empty.
  void keepUntilExit();

  /// A scratch folder of this process in the system temp folder (TMPDIR,
  /// else /tmp), for work that has no cache to go to.
  static ScratchDirectory inTempDirectory(const std::string &prefix);

private:
  std::shared_ptr<cache::ScratchArea> area;
  std::string name;
  std::string fullPath;
  int folderFd = -1;
};

} // namespace enigma

#endif
