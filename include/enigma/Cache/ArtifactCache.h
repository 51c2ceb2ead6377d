//===- ArtifactCache.h - On-disk cache of compiled artifacts ----*- C++ -*-===//
//
// Compiled artifacts (shared objects, cubins, metallibs) stored under a
// directory shared by every process of the user. Content addressed: a key
// file names the SHA-256 of its object, and every read checks that hash, so a
// truncated or corrupted entry is noticed, removed and rebuilt. Every write
// goes to a temporary file in the cache and is renamed into place, so
// concurrent processes never see half-written entries. Temporaries older
// than a day (left by crashed processes) are removed when a cache is opened.
//
// Location: $ENIGMA_CACHE_DIR, else $XDG_CACHE_HOME/enigma, else
// ~/.cache/enigma. ENIGMA_DISABLE_CACHE=1 turns the cache off; so does a
// directory that cannot be written (with one warning on stderr).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CACHE_ARTIFACTCACHE_H
#define ENIGMA_CACHE_ARTIFACTCACHE_H

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace enigma {

class [[gnu::visibility("default")]] ArtifactCache {
public:
  /// The cache the environment asks for (see the file comment).
  static std::shared_ptr<ArtifactCache> fromEnvironment();
  /// A cache rooted at `directory`, created if missing. A directory that
  /// cannot be written gives a disabled cache and one warning on stderr.
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

  bool enabled() const { return !root.empty(); }
  /// The cache root ("" when disabled).
  const std::string &directory() const { return root; }

  /// Path of the verified object stored under `key`, or nothing. A corrupted
  /// entry is deleted and reported as missing.
  std::optional<std::string> lookupPath(std::string_view key);
  /// Stores `bytes` under `key`; returns the object's path. Disabled: writes
  /// a file in a fresh temporary directory and returns that path.
  std::string store(std::string_view key, std::string_view bytes,
                    std::string_view suffix = "");
  /// Moves the file at `producedPath` (best made inside makeScratchDirectory()
  /// so the move is a rename) into the cache under `key`; returns the
  /// object's path. Disabled, or when the cache cannot be written: returns
  /// `producedPath` unchanged.
  std::string storeFile(std::string_view key, const std::string &producedPath,
                        std::string_view suffix = "");

  /// A new empty directory for producing an artifact: inside the cache (same
  /// file system, so storeFile renames) or, disabled, in the system's temp
  /// directory. The caller removes it when done.
  std::string makeScratchDirectory();

  struct NamedText {
    std::string_view name; // a plain file name, no directories
    std::string_view text;
  };
  /// A directory holding exactly these files, shared by all processes and
  /// named by the hash of their content (e.g. headers for a compiler's -I).
  /// Nothing when the cache is disabled.
  std::optional<std::string> ensureFileSet(const std::vector<NamedText> &files);

  explicit ArtifactCache(std::string rootDirectory);

private:
  std::string keyPath(std::string_view key) const;
  std::string objectPath(std::string_view hash, std::string_view suffix) const;
  std::string tempDirectory() const;

  std::string root; // the cache directory; empty when disabled
};

} // namespace enigma

#endif
