//===- ArtifactCache.h - On-disk cache of compiled artifacts ----*- C++ -*-===//
//
// Compiled artifacts (shared objects, cubins, metallibs) stored under a
// folder shared by every process of the user. Content addressed: a key
// record names the SHA-256 of its object, and every read checks that hash,
// so a truncated or corrupted entry is noticed, removed and rebuilt. Every
// write goes to a temporary file in the cache and is renamed into place, so
// concurrent processes never see half-written entries.
//
// Compiled kernels are native code, so the cache is a trust boundary
// (docs/design/cache.md): it is used only when nobody but the user (or, by
// opt-in, a named group) can write it. The folder is reached without
// following links that others own; every folder and file is checked on its
// open descriptor (owner, mode, not a link) and made with explicit modes
// (0700 / 0600) whatever the umask; objects are handed out as open
// descriptors of the checked file; clean-up never follows a link or leaves
// the cache's own folders. A folder that fails the checks gives a disabled
// cache and one warning on stderr.
//
// Location: $ENIGMA_CACHE_DIR, else $XDG_CACHE_HOME/enigma, else
// ~/.cache/enigma, else <temp folder>/enigma-cache-<uid> (used only if it is
// the user's own). ENIGMA_DISABLE_CACHE=1 turns the cache off.
// ENIGMA_CACHE_GROUP=<group> shares it with a group (folders 2770, files
// 0640 of that group).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CACHE_ARTIFACTCACHE_H
#define ENIGMA_CACHE_ARTIFACTCACHE_H

#include "enigma/Cache/ScratchDirectory.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace enigma {

namespace cache {
struct CacheFolders;
}

class [[gnu::visibility("default")]] ArtifactCache {
public:
  /// The cache the environment asks for (see the file comment). One
  /// instance per folder per process.
  static std::shared_ptr<ArtifactCache> fromEnvironment();
  /// A cache rooted at `directory`, created if missing. A folder that
  /// cannot be trusted or written gives a disabled cache and one warning on
  /// stderr.
  static std::shared_ptr<ArtifactCache> open(const std::string &directory);
  /// A cache that stores nothing across processes.
  static std::shared_ptr<ArtifactCache> disabled();
  /// Where the environment places the cache, ignoring ENIGMA_DISABLE_CACHE.
  static std::string defaultDirectory();

  /// A key: the hex SHA-256 of the parts, each length-prefixed so that no
  /// two different part lists give the same byte stream. Put everything that
  /// changes the artifact in the parts: kind, source, toolchain, options.
  static std::string makeKey(const std::vector<std::string_view> &parts);
  /// Hex SHA-256 of `data`.
  static std::string contentHash(std::string_view data);

  bool enabled() const { return folders != nullptr; }
  /// The cache root ("" when disabled).
  const std::string &directory() const { return root; }

  /// An artifact, open for reading: the file that was checked (owner, mode,
  /// content hash) is the one `fd` reads, whatever happens to its path.
  class Object {
  public:
    Object() = default;
    Object(int fd, std::string path, std::string bytes);
    Object(Object &&other) noexcept;
    Object &operator=(Object &&other) noexcept;
    Object(const Object &) = delete;
    Object &operator=(const Object &) = delete;
    ~Object();

    int fd() const { return descriptor; }
    /// Where it is, for messages and for tools that take paths.
    const std::string &path() const { return where; }
    /// Its content.
    const std::string &bytes() const { return content; }
    /// Keeps the descriptor from being closed with the object.
    int releaseFd();

  private:
    int descriptor = -1;
    std::string where;
    std::string content;
  };

  /// The verified object stored under `key`, or nothing. A damaged entry,
  /// or one that does not pass the trust checks, is removed and reported
  /// as missing (with one warning for an untrusted one).
  std::optional<Object> lookup(std::string_view key);
  /// Removes the entry `key` and the object `object` came from: for an
  /// artifact the runtime could not use, so that it is built again.
  void evict(std::string_view key, const Object &object);
  /// Removes the entry `key` and the object its record names.
  void evict(std::string_view key);

  /// Moves the file `fileName` of `scratch` into the cache under `key` and
  /// returns it, opened. Disabled, or when the cache cannot be written:
  /// returns the file where it is, opened.
  Object storeFile(std::string_view key, const ScratchDirectory &scratch,
                   const std::string &fileName, std::string_view suffix = "");
  /// Stores `bytes` under `key` (best effort: a cache that cannot be
  /// written warns once). Nothing happens when disabled.
  void store(std::string_view key, std::string_view bytes,
             std::string_view suffix = "");

  /// A new empty folder for producing an artifact: in this process's
  /// scratch area inside the cache (same file system, so storeFile renames)
  /// or, disabled, in the system's temp folder. Removed when it goes.
  ScratchDirectory makeScratchDirectory();

  struct NamedText {
    std::string_view name; // a plain file name, no directories
    std::string_view text;
  };
  /// A folder holding exactly these files and nothing else, shared by all
  /// processes and named by the hash of their content (e.g. headers for a
  /// compiler's -I). A set that holds anything else is replaced. Nothing
  /// when the cache is disabled.
  std::optional<std::string> ensureFileSet(const std::vector<NamedText> &files);

  /// A small record kept beside the artifacts, in the folder `folder` of
  /// the root (e.g. which target flags a compiler accepts), or nothing.
  /// Both must be safe file names.
  std::optional<std::string> readNote(std::string_view folder,
                                      std::string_view name);
  /// Replaces a note atomically; best effort.
  void writeNote(std::string_view folder, std::string_view name,
                 std::string_view text);

  ArtifactCache(std::string rootDirectory,
                std::shared_ptr<cache::CacheFolders> folders);
  ~ArtifactCache();

private:
  std::optional<Object> openObject(const std::string &name,
                                   std::string &problem);

  std::string root; // the cache directory; empty when disabled
  std::shared_ptr<cache::CacheFolders> folders;
};

} // namespace enigma

#endif
