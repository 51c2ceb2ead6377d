//===- ArtifactCache.cpp --------------------------------------------------===//
//
// Layout under the root (the "v1" level lets a future format coexist):
//   v1/keys/<key>                 "enigma-cache-entry 1", hash, size, suffix
//   v1/objects/<sha256><suffix>   the artifact, named by its own content
//   v1/files/<sha256>/...         file sets (prelude headers)
//   v1/tmp/                       temporaries and scratch directories
// Objects are immutable once renamed into place; a key file is replaced
// atomically, so a reader always sees a consistent (key -> hash) pair.
// Temporaries older than a day (left by a process that crashed or was
// killed mid-write) are removed when a cache is opened.
//
//===----------------------------------------------------------------------===//
#include "enigma/Cache/ArtifactCache.h"

#include "Sha256.h"

#include <cctype>
#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <system_error>

#include <unistd.h>

namespace fs = std::filesystem;

namespace enigma {
namespace {
constexpr const char *kLayoutVersion = "v1";
constexpr const char *kEntryMagic = "enigma-cache-entry 1";

void warnOnce(const std::string &message) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(message).second)
    std::fprintf(stderr, "enigma: warning: %s\n", message.c_str());
}

/// Keys and suffixes become file names: allow only a safe alphabet.
bool isSafeName(std::string_view name, bool allowEmpty) {
  if (name.empty())
    return allowEmpty;
  if (name.size() > 128 || name == "." || name == "..")
    return false;
  for (char c : name)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
          c == '_' || c == '-'))
      return false;
  return true;
}

void checkName(std::string_view name, bool allowEmpty, const char *what) {
  if (!isSafeName(name, allowEmpty))
    throw std::invalid_argument(std::string("ArtifactCache: invalid ") + what +
                                " '" + std::string(name) + "'");
}

std::optional<std::string> readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::ostringstream content;
  content << in.rdbuf();
  if (in.bad())
    return std::nullopt;
  return std::move(content).str();
}

[[noreturn]] void throwErrno(const std::string &what) {
  throw fs::filesystem_error(what, std::error_code(errno, std::generic_category()));
}

/// Writes `bytes` to a new unique file in `dir`; returns its path.
fs::path writeTempFile(const fs::path &dir, std::string_view bytes) {
  std::string pattern = (dir / "file-XXXXXX").string();
  int fd = ::mkstemp(pattern.data());
  if (fd < 0)
    throwErrno("cannot create a file in " + dir.string());
  const char *cursor = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t written = ::write(fd, cursor, left);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0) {
      int saved = errno;
      ::close(fd);
      ::unlink(pattern.c_str());
      errno = saved;
      throwErrno("cannot write " + pattern);
    }
    cursor += written;
    left -= size_t(written);
  }
  if (::close(fd) != 0)
    throwErrno("cannot write " + pattern);
  return pattern;
}

fs::path makeUniqueDirectory(const fs::path &parent, const char *prefix) {
  std::string pattern = (parent / (std::string(prefix) + "-XXXXXX")).string();
  if (!::mkdtemp(pattern.data()))
    throwErrno("cannot create a directory in " + parent.string());
  return pattern;
}

/// Replaces `target` with `bytes` so that readers see the old or the new
/// content, never a mix. No fsync: a torn write after a crash is caught by
/// the content hash on the next read.
void writeAtomically(const fs::path &tempDir, const fs::path &target,
                     std::string_view bytes) {
  fs::path temp = writeTempFile(tempDir, bytes);
  std::error_code error;
  fs::rename(temp, target, error);
  if (error) {
    fs::remove(temp, error);
    throw fs::filesystem_error("cannot write", target, error);
  }
}

bool directoryHolds(const fs::path &dir,
                    const std::vector<ArtifactCache::NamedText> &files) {
  for (const auto &file : files) {
    std::optional<std::string> content = readFile(dir / std::string(file.name));
    if (!content || *content != file.text)
      return false;
  }
  return true;
}

struct EntryRecord {
  std::string hash;
  uint64_t size = 0;
  std::string suffix;
};

std::string formatEntryRecord(const EntryRecord &entry) {
  return std::string(kEntryMagic) + "\n" + entry.hash + "\n" +
         std::to_string(entry.size) + "\n" + entry.suffix + "\n";
}

std::optional<EntryRecord> parseEntryRecord(const std::string &text) {
  std::istringstream lines(text);
  std::string magic, hash, size, suffix;
  if (!std::getline(lines, magic) || !std::getline(lines, hash) ||
      !std::getline(lines, size) || !std::getline(lines, suffix))
    return std::nullopt;
  if (magic != kEntryMagic || hash.size() != 64 || !isSafeName(hash, false) ||
      !isSafeName(suffix, true) || size.empty() || size.size() > 19 ||
      size.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return EntryRecord{hash, std::stoull(size), suffix};
}

/// Removes what a crashed or killed process left in `tmpDir`: entries not
/// modified for `maxAge`. Best effort: another process may be removing the
/// same entry, and a live writer touches its files far more often.
void removeStaleTemporaries(const fs::path &tmpDir,
                            std::chrono::seconds maxAge) {
  std::error_code error;
  const auto cutoff = fs::file_time_type::clock::now() - maxAge;
  for (fs::directory_iterator it(tmpDir, error), end; !error && it != end;
       it.increment(error)) {
    std::error_code ignored;
    fs::file_time_type modified = fs::last_write_time(it->path(), ignored);
    if (!ignored && modified < cutoff)
      fs::remove_all(it->path(), ignored);
  }
}

bool isTruthy(const char *value) {
  if (!value)
    return false;
  std::string v(value);
  return !(v.empty() || v == "0" || v == "false" || v == "no" || v == "off");
}
} // namespace

ArtifactCache::ArtifactCache(std::string rootDirectory)
    : root(std::move(rootDirectory)) {}

std::string ArtifactCache::defaultDirectory() {
  if (const char *dir = std::getenv("ENIGMA_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "enigma").string();
  if (const char *home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "enigma").string();
  // No home at all (some service accounts): a per-user temp folder.
  return (fs::temp_directory_path() /
          ("enigma-cache-" + std::to_string(::getuid())))
      .string();
}

std::shared_ptr<ArtifactCache> ArtifactCache::fromEnvironment() {
  if (isTruthy(std::getenv("ENIGMA_DISABLE_CACHE")))
    return disabled();
  return open(defaultDirectory());
}

std::shared_ptr<ArtifactCache> ArtifactCache::disabled() {
  return std::make_shared<ArtifactCache>(std::string());
}

std::shared_ptr<ArtifactCache> ArtifactCache::open(const std::string &directory) {
  try {
    fs::path base = fs::path(directory) / kLayoutVersion;
    for (const char *sub : {"keys", "objects", "files", "tmp"})
      fs::create_directories(base / sub);
    // Creating directories may succeed on a read-only mount that already
    // has them; only a real write proves the cache usable.
    fs::remove(writeTempFile(base / "tmp", "probe"));
    removeStaleTemporaries(base / "tmp", std::chrono::hours(24));
  } catch (const std::exception &error) {
    warnOnce("cannot use the cache directory '" + directory + "' (" +
             error.what() + "); compiled kernels will not be cached");
    return disabled();
  }
  return std::make_shared<ArtifactCache>(directory);
}

std::string ArtifactCache::makeKey(const std::vector<std::string_view> &parts) {
  detail::Sha256 hasher;
  for (std::string_view part : parts) {
    hasher.update(std::to_string(part.size()));
    hasher.update(":");
    hasher.update(part);
  }
  return detail::toHex(hasher.finish());
}

std::string ArtifactCache::contentHash(std::string_view data) {
  return detail::sha256Hex(data);
}

std::string ArtifactCache::keyPath(std::string_view key) const {
  return (fs::path(root) / kLayoutVersion / "keys" / std::string(key)).string();
}

std::string ArtifactCache::objectPath(std::string_view hash,
                                      std::string_view suffix) const {
  return (fs::path(root) / kLayoutVersion / "objects" /
          (std::string(hash) + std::string(suffix)))
      .string();
}

std::string ArtifactCache::tempDirectory() const {
  return (fs::path(root) / kLayoutVersion / "tmp").string();
}

std::optional<std::string> ArtifactCache::lookupPath(std::string_view key) {
  checkName(key, false, "key");
  if (!enabled())
    return std::nullopt;
  std::optional<std::string> record = readFile(keyPath(key));
  if (!record)
    return std::nullopt;

  std::optional<EntryRecord> entry = parseEntryRecord(*record);
  std::error_code ignored;
  if (!entry) {
    fs::remove(keyPath(key), ignored);
    return std::nullopt;
  }
  std::string object = objectPath(entry->hash, entry->suffix);
  std::optional<std::string> content = readFile(object);
  if (!content || content->size() != entry->size ||
      contentHash(*content) != entry->hash) {
    // Truncated or damaged (or deleted by hand): drop it so it is rebuilt.
    fs::remove(object, ignored);
    fs::remove(keyPath(key), ignored);
    return std::nullopt;
  }
  return object;
}

std::string ArtifactCache::storeFile(std::string_view key,
                                     const std::string &producedPath,
                                     std::string_view suffix) {
  checkName(key, false, "key");
  checkName(suffix, true, "suffix");
  if (!enabled())
    return producedPath;
  std::string current = producedPath; // where the bytes are right now
  try {
    std::optional<std::string> content = readFile(producedPath);
    if (!content)
      throw std::runtime_error("cannot read " + producedPath);
    std::string hash = contentHash(*content);
    std::string object = objectPath(hash, suffix);
    std::error_code error;
    fs::rename(producedPath, object, error);
    if (error) {
      // Another file system: copy through a temp file in the cache.
      writeAtomically(tempDirectory(), object, *content);
      fs::remove(producedPath, error);
    }
    current = object;
    std::string record = formatEntryRecord(
        EntryRecord{hash, content->size(), std::string(suffix)});
    writeAtomically(tempDirectory(), keyPath(key), record);
    return object;
  } catch (const std::exception &error) {
    warnOnce(std::string("could not store a compiled artifact in the cache (") +
             error.what() + ")");
    return current;
  }
}

std::string ArtifactCache::store(std::string_view key, std::string_view bytes,
                                 std::string_view suffix) {
  checkName(key, false, "key");
  checkName(suffix, true, "suffix");
  if (enabled()) {
    try {
      return storeFile(key, writeTempFile(tempDirectory(), bytes).string(),
                       suffix);
    } catch (const std::exception &error) {
      warnOnce(std::string("could not store an artifact in the cache (") +
               error.what() + ")");
    }
  }
  // No cache: a file of the caller's in a fresh temp directory.
  fs::path dir = makeUniqueDirectory(fs::temp_directory_path(), "enigma");
  fs::path named = dir / ("artifact" + std::string(suffix));
  fs::rename(writeTempFile(dir, bytes), named);
  return named.string();
}

std::string ArtifactCache::makeScratchDirectory() {
  if (enabled()) {
    try {
      return makeUniqueDirectory(tempDirectory(), "work").string();
    } catch (const std::exception &) {
      // Fall through to the system temp directory.
    }
  }
  return makeUniqueDirectory(fs::temp_directory_path(), "enigma").string();
}

std::optional<std::string>
ArtifactCache::ensureFileSet(const std::vector<NamedText> &files) {
  if (!enabled())
    return std::nullopt;
  std::vector<std::string_view> parts{"file-set"};
  for (const NamedText &file : files) {
    checkName(file.name, false, "file name");
    parts.push_back(file.name);
    parts.push_back(file.text);
  }
  fs::path dir = fs::path(root) / kLayoutVersion / "files" / makeKey(parts);
  if (directoryHolds(dir, files))
    return dir.string();
  try {
    fs::path temp = makeUniqueDirectory(tempDirectory(), "files");
    for (const NamedText &file : files)
      fs::rename(writeTempFile(temp, file.text), temp / std::string(file.name));
    // A set directory only ever appears whole (a renamed temp directory),
    // so one in place that does not hold the files is damaged. Processes
    // racing here must not delete a set another one just completed: the
    // damaged one is first moved aside, which only one of them manages.
    for (int attempt = 0; attempt < 4; ++attempt) {
      std::error_code error;
      fs::rename(temp, dir, error);
      if (!error)
        return dir.string();
      if (directoryHolds(dir, files)) { // another process won the race
        fs::remove_all(temp, error);
        return dir.string();
      }
      fs::path aside = makeUniqueDirectory(tempDirectory(), "damaged");
      fs::rename(dir, aside / "set", error);
      fs::remove_all(aside, error);
    }
    std::error_code ignored;
    fs::remove_all(temp, ignored);
    throw std::runtime_error("cannot create " + dir.string());
  } catch (const std::exception &error) {
    warnOnce(std::string("could not write headers into the cache (") +
             error.what() + ")");
    return std::nullopt;
  }
}

} // namespace enigma
