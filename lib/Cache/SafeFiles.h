//===- SafeFiles.h - Folders and files only the user can write --*- C++ -*-===//
//
// The file operations behind the artifact cache (docs/design/cache.md):
// every folder is reached from an open folder with openat(O_NOFOLLOW) and
// checked on its descriptor (fstat), so nothing is decided about one file
// and done to another; files are created with explicit modes whatever the
// umask; removal walks by descriptor and never follows a link or leaves
// the folder it was given.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_CACHE_SAFEFILES_H
#define ENIGMA_LIB_CACHE_SAFEFILES_H

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/stat.h>
#include <sys/types.h>

namespace enigma::cache {

/// An open file descriptor, closed with the object.
class UniqueFd {
public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd(fd) {}
  UniqueFd(UniqueFd &&other) noexcept : fd(other.release()) {}
  UniqueFd &operator=(UniqueFd &&other) noexcept;
  UniqueFd(const UniqueFd &) = delete;
  UniqueFd &operator=(const UniqueFd &) = delete;
  ~UniqueFd();

  int get() const { return fd; }
  int release() {
    int kept = fd;
    fd = -1;
    return kept;
  }
  explicit operator bool() const { return fd >= 0; }

private:
  int fd = -1;
};

/// Who may own, and who may write, the cache's folders and files.
///
/// Private (the default): folders 0700 and files 0600 owned by the user;
/// nobody else may write anything. Shared by a group (ENIGMA_CACHE_GROUP):
/// folders 2770 and files 0640 of that group; its members (and root) may
/// own entries. Above the cache, folders must be owned by root or the
/// user and writable by nobody else, except sticky folders (/tmp) and the
/// user's own private group.
struct TrustPolicy {
  uid_t user = 0;
  bool shared = false; // a group shares the cache
  gid_t group = 0;     // that group

  /// The policy for this process: private, or shared with the group that
  /// ENIGMA_CACHE_GROUP names. An explanation when the group is unusable.
  static TrustPolicy fromEnvironment(std::string &problem);

  mode_t folderMode() const { return shared ? 02770 : 0700; }
  mode_t fileMode() const { return shared ? 0640 : 0600; }

  bool trustsOwner(uid_t owner) const;
  /// Why a folder above the cache cannot be trusted, or "".
  std::string checkAncestor(const struct stat &st) const;
  /// Why the cache folder itself (or one below it) cannot be trusted, or "".
  std::string checkCacheFolder(const struct stat &st) const;
  /// Why a file in the cache cannot be trusted, or "".
  std::string checkCacheFile(const struct stat &st) const;

  /// Gives a folder or file of the cache the policy's group and mode
  /// (whatever the umask made of it). False when that fails.
  bool applyMode(int fd, bool folder) const;
};

/// Opens the folder at `path` (made, 0700 or the shared mode, where
/// missing when `create`), walking from "/" one component at a time: each
/// folder above it must pass checkAncestor, a link is followed only when
/// root or the user owns it, and the folder itself must pass
/// checkCacheFolder (checkAncestor with `asParent`: a folder such as /tmp
/// that only holds folders of one's own). Nothing, and `problem` says why,
/// otherwise.
UniqueFd openTrustedFolder(const std::string &path, const TrustPolicy &policy,
                           bool create, std::string &problem,
                           bool asParent = false);

/// The folder `name` inside the trusted folder `parent`, made where
/// missing. Something else in its place (a link, a file) is removed first,
/// without following it; a folder of the user's with a wider mode is given
/// the policy's mode. Nothing (with `problem`) for a folder of someone the
/// policy does not trust.
UniqueFd openCacheFolderAt(int parent, const std::string &name,
                           const TrustPolicy &policy, std::string &problem);

/// The regular file `name` in `folder`, opened for reading without
/// following a link, if the policy trusts it (a file of the user's with a
/// wider mode is given the policy's mode). Nothing when it is missing or
/// untrusted; `problem` says which ("" when missing).
UniqueFd openCacheFileAt(int folder, const std::string &name,
                         const TrustPolicy &policy, std::string &problem);

/// The whole content of an open file.
std::optional<std::string> readAll(int fd);

/// Writes `bytes` to a new file with an unpredictable name starting with
/// `prefix` in `folder`, with the policy's mode; returns its name. Throws
/// std::system_error.
std::string writeNewFileAt(int folder, std::string_view prefix,
                           std::string_view bytes, const TrustPolicy &policy);

/// Makes a new empty folder with an unpredictable name starting with
/// `prefix` in `parent`, with the policy's mode; returns its name. Throws
/// std::system_error.
std::string makeUniqueFolderAt(int parent, std::string_view prefix,
                               const TrustPolicy &policy);

/// The names in the folder `folder` but "." and "..", read through a
/// descriptor of their own (`folder` stays as it was); nothing when it
/// cannot be read. Callers act on the names after the listing: changing a
/// folder while it is read may skip or repeat entries.
std::optional<std::vector<std::string>> folderEntries(int folder);

/// Removes `name` in `parent`: a file or link itself (never what a link
/// points to), a folder with everything in it, reached only through
/// descriptors. Best effort; false when something stayed.
bool removeTreeAt(int parent, const std::string &name);

/// The absolute form of `path` (relative paths are taken from the working
/// directory), without resolving links.
std::string absolutePath(const std::string &path);

} // namespace enigma::cache

#endif
