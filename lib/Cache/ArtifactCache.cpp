//===- ArtifactCache.cpp --------------------------------------------------===//
//
// Layout under the root (the "v1" level lets a future format coexist):
//   v1/keys/<key>                 "enigma-cache-entry 1", hash, size, suffix
//   v1/objects/<sha256><suffix>   the artifact, named by its own content
//   v1/files/<sha256>/...         file sets (prelude headers)
//   v1/tmp/                       temporaries; proc-* scratch areas
//   <folder>/<name>               notes beside the artifacts (the probed
//                                 target flags: cpu-target-flags/)
// Objects are immutable once renamed into place; a key record is replaced
// atomically, so a reader always sees a consistent (key -> hash) pair.
// Every folder is held open from the moment the root passed its checks, and
// every operation below it goes through those descriptors (docs/design/
// cache.md has the threat model).
//
//===----------------------------------------------------------------------===//
#include "enigma/Cache/ArtifactCache.h"

#include "SafeFiles.h"
#include "ScratchArea.h"
#include "Sha256.h"

#include "enigma/Support/ProcessLife.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace enigma {
namespace cache {
/// The cache's folders, open, and the policy they were checked under.
struct CacheFolders {
  TrustPolicy policy;
  std::string rootPath;
  UniqueFd root, version, keys, objects, files, tmp;
  ForkSafeMutex areaMutex;
  // This process's, made when a scratch folder is needed and removed when
  // the last one goes (tmp/ is empty between compiles).
  std::weak_ptr<ScratchArea> area;
};
} // namespace cache

namespace {
using namespace cache;

constexpr const char *kLayoutVersion = "v1";
constexpr const char *kEntryMagic = "enigma-cache-entry 1";
constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
/// Temporaries older than this were left by a process that died mid-write.
constexpr auto kStaleAge = std::chrono::hours(24);
/// Scratch areas of processes (swept by their locks, never by age).
constexpr const char *kAreaPrefix = "proc";

void warnOnce(const std::string &message) {
  static ForkSafeMutex &mutex = *new ForkSafeMutex;
  static std::set<std::string> &warned = *new std::set<std::string>;
  std::lock_guard<ForkSafeMutex> lock(mutex);
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

[[noreturn]] void throwErrno(const std::string &what) {
  throw std::system_error(errno, std::generic_category(), what);
}

void renameOrThrow(int fromFolder, const std::string &from, int toFolder,
                   const std::string &to) {
  if (::renameat(fromFolder, from.c_str(), toFolder, to.c_str()) != 0) {
    int saved = errno;
    ::unlinkat(fromFolder, from.c_str(), 0);
    errno = saved;
    throwErrno("cannot move a file into the cache");
  }
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

/// Removes what crashed or killed processes left in tmp/: entries not
/// modified for a day. Never follows a link; scratch areas are left to
/// their locks (a process may run for more than a day).
void removeStaleTemporaries(int tmp) {
  const auto cutoff = std::chrono::system_clock::now() - kStaleAge;
  for (const std::string &name :
       folderEntries(tmp).value_or(std::vector<std::string>())) {
    if (name.rfind(std::string(kAreaPrefix) + "-", 0) == 0)
      continue;
    struct stat st;
    if (::fstatat(tmp, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    if (std::chrono::system_clock::from_time_t(st.st_mtime) < cutoff)
      removeTreeAt(tmp, name);
  }
}

/// Whether the folder `name` in `parent` holds exactly `files`: no other
/// entry, each a trusted regular file with exactly that content.
bool setHoldsExactly(int parent, const std::string &name,
                     const std::vector<ArtifactCache::NamedText> &files,
                     const TrustPolicy &policy) {
  std::string problem;
  struct stat st;
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      !S_ISDIR(st.st_mode))
    return false;
  UniqueFd folder = openCacheFolderAt(parent, name, policy, problem);
  if (!folder)
    return false;
  std::vector<std::string> present =
      folderEntries(folder.get()).value_or(std::vector<std::string>());
  if (present.size() != files.size())
    return false;
  for (const auto &file : files) {
    UniqueFd fd =
        openCacheFileAt(folder.get(), std::string(file.name), policy, problem);
    if (!fd)
      return false;
    std::optional<std::string> content = readAll(fd.get());
    if (!content || *content != file.text)
      return false;
  }
  return true;
}

bool isTruthy(const char *value) {
  if (!value)
    return false;
  std::string v(value);
  return !(v.empty() || v == "0" || v == "false" || v == "no" || v == "off");
}

std::string noCacheAdvice() {
  return "; compiled kernels will not be cached (use a folder only you can "
         "write, e.g. with ENIGMA_CACHE_DIR, or ENIGMA_CACHE_GROUP for a "
         "cache shared by a group; ENIGMA_DISABLE_CACHE=1 silences this)";
}
} // namespace

//===----------------------------------------------------------------------===//
// Objects
//===----------------------------------------------------------------------===//

ArtifactCache::Object::Object(int fd, std::string path, std::string bytes)
    : descriptor(fd), where(std::move(path)), content(std::move(bytes)) {}

ArtifactCache::Object::Object(Object &&other) noexcept
    : descriptor(other.releaseFd()), where(std::move(other.where)),
      content(std::move(other.content)) {}

ArtifactCache::Object &ArtifactCache::Object::operator=(Object &&other) noexcept {
  if (this != &other) {
    if (descriptor >= 0)
      ::close(descriptor);
    descriptor = other.releaseFd();
    where = std::move(other.where);
    content = std::move(other.content);
  }
  return *this;
}

ArtifactCache::Object::~Object() {
  if (descriptor >= 0)
    ::close(descriptor);
}

int ArtifactCache::Object::releaseFd() {
  int fd = descriptor;
  descriptor = -1;
  return fd;
}

//===----------------------------------------------------------------------===//
// Opening
//===----------------------------------------------------------------------===//

ArtifactCache::ArtifactCache(std::string rootDirectory,
                             std::shared_ptr<CacheFolders> cacheFolders)
    : root(std::move(rootDirectory)), folders(std::move(cacheFolders)) {
  if (!folders)
    root.clear();
}

ArtifactCache::~ArtifactCache() = default;

std::string ArtifactCache::defaultDirectory() {
  if (const char *dir = std::getenv("ENIGMA_CACHE_DIR"); dir && *dir)
    return dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return (fs::path(xdg) / "enigma").string();
  if (const char *home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "enigma").string();
  // No home at all (some service accounts): a per-user folder in the temp
  // folder, used only while it is the user's own (anyone can create the
  // name first; open() then refuses it).
  std::error_code error;
  fs::path temp = fs::temp_directory_path(error);
  if (error)
    temp = "/tmp";
  return (temp / ("enigma-cache-" + std::to_string(::geteuid()))).string();
}

std::shared_ptr<ArtifactCache> ArtifactCache::fromEnvironment() {
  if (isTruthy(std::getenv("ENIGMA_DISABLE_CACHE")))
    return disabled();
  std::string directory = defaultDirectory();
  const char *group = std::getenv("ENIGMA_CACHE_GROUP");
  std::string id = directory + '\0' + (group ? group : "");
  static ForkSafeMutex &mutex = *new ForkSafeMutex;
  static auto &opened = *new std::map<std::string, std::weak_ptr<ArtifactCache>>;
  {
    std::lock_guard<ForkSafeMutex> lock(mutex);
    if (auto known = opened[id].lock())
      return known;
  }
  std::shared_ptr<ArtifactCache> cache = open(directory); // without the lock
  std::lock_guard<ForkSafeMutex> lock(mutex);
  if (auto known = opened[id].lock())
    return known;
  opened[id] = cache;
  return cache;
}

std::shared_ptr<ArtifactCache> ArtifactCache::disabled() {
  return std::make_shared<ArtifactCache>(std::string(), nullptr);
}

std::shared_ptr<ArtifactCache> ArtifactCache::open(const std::string &directory) {
  std::string problem;
  auto folders = std::make_shared<CacheFolders>();
  folders->policy = TrustPolicy::fromEnvironment(problem);
  if (!problem.empty()) {
    warnOnce(problem + noCacheAdvice());
    return disabled();
  }
  const TrustPolicy &policy = folders->policy;
  folders->rootPath = absolutePath(directory);
  folders->root = openTrustedFolder(directory, policy, true, problem);
  auto sub = [&](const UniqueFd &parent, const char *name) {
    if (!problem.empty() || !parent)
      return UniqueFd();
    return openCacheFolderAt(parent.get(), name, policy, problem);
  };
  folders->version = sub(folders->root, kLayoutVersion);
  folders->keys = sub(folders->version, "keys");
  folders->objects = sub(folders->version, "objects");
  folders->files = sub(folders->version, "files");
  folders->tmp = sub(folders->version, "tmp");
  if (problem.empty()) {
    try {
      // Folders can be opened on a read-only mount that already has them;
      // only a real write proves the cache usable.
      std::string probe = writeNewFileAt(folders->tmp.get(), "probe", "probe",
                                         policy);
      ::unlinkat(folders->tmp.get(), probe.c_str(), 0);
    } catch (const std::exception &error) {
      problem = error.what();
    }
  }
  if (!problem.empty()) {
    warnOnce("cannot use the kernel cache folder '" + directory + "': " +
             problem + noCacheAdvice());
    return disabled();
  }
  removeStaleTemporaries(folders->tmp.get());
  return std::make_shared<ArtifactCache>(directory, std::move(folders));
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

//===----------------------------------------------------------------------===//
// Entries
//===----------------------------------------------------------------------===//

std::optional<ArtifactCache::Object>
ArtifactCache::openObject(const std::string &name, std::string &problem) {
  UniqueFd fd =
      openCacheFileAt(folders->objects.get(), name, folders->policy, problem);
  if (!fd)
    return std::nullopt;
  std::optional<std::string> content = readAll(fd.get());
  if (!content) {
    problem = std::strerror(errno);
    return std::nullopt;
  }
  return Object(fd.release(),
                (fs::path(root) / kLayoutVersion / "objects" / name).string(),
                std::move(*content));
}

std::optional<ArtifactCache::Object> ArtifactCache::lookup(std::string_view key) {
  checkName(key, false, "key");
  if (!enabled())
    return std::nullopt;
  const std::string keyName(key);
  const int keys = folders->keys.get(), objects = folders->objects.get();
  auto drop = [&](const std::string &object, const std::string &problem) {
    if (!problem.empty())
      warnOnce("removed an entry of the kernel cache '" + root + "' that " +
               problem + "; it will be built again");
    if (!object.empty())
      ::unlinkat(objects, object.c_str(), 0);
    ::unlinkat(keys, keyName.c_str(), 0);
    return std::nullopt;
  };
  std::string problem;
  UniqueFd recordFd = openCacheFileAt(keys, keyName, folders->policy, problem);
  if (!recordFd) {
    if (problem.empty())
      return std::nullopt;
    // An untrusted record: the object it names goes too, if that is not
    // trusted either (a trusted object may serve other keys).
    UniqueFd raw(::openat(keys, keyName.c_str(),
                          O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    std::optional<std::string> text = raw ? readAll(raw.get()) : std::nullopt;
    std::optional<EntryRecord> named =
        text ? parseEntryRecord(*text) : std::nullopt;
    std::string untrustedObject;
    if (named) {
      std::string objectProblem;
      std::string name = named->hash + named->suffix;
      if (!openCacheFileAt(objects, name, folders->policy, objectProblem) &&
          !objectProblem.empty())
        untrustedObject = name;
    }
    return drop(untrustedObject, problem);
  }
  std::optional<std::string> record = readAll(recordFd.get());
  std::optional<EntryRecord> entry =
      record ? parseEntryRecord(*record) : std::nullopt;
  if (!entry)
    return drop("", "");
  std::string name = entry->hash + entry->suffix;
  std::optional<Object> object = openObject(name, problem);
  if (!object)
    return drop(problem.empty() ? "" : name, problem);
  if (object->bytes().size() != entry->size ||
      contentHash(object->bytes()) != entry->hash)
    // Truncated or damaged (or deleted by hand): drop it so it is rebuilt.
    return drop(name, "");
  return object;
}

void ArtifactCache::evict(std::string_view key, const Object &object) {
  checkName(key, false, "key");
  if (!enabled())
    return;
  ::unlinkat(folders->keys.get(), std::string(key).c_str(), 0);
  std::string name = fs::path(object.path()).filename().string();
  struct stat held, there;
  // Only the very file the object was read from.
  if (object.fd() >= 0 && ::fstat(object.fd(), &held) == 0 &&
      ::fstatat(folders->objects.get(), name.c_str(), &there,
                AT_SYMLINK_NOFOLLOW) == 0 &&
      held.st_dev == there.st_dev && held.st_ino == there.st_ino)
    ::unlinkat(folders->objects.get(), name.c_str(), 0);
}

void ArtifactCache::evict(std::string_view key) {
  checkName(key, false, "key");
  if (!enabled())
    return;
  std::string problem;
  UniqueFd record = openCacheFileAt(folders->keys.get(), std::string(key),
                                    folders->policy, problem);
  std::optional<std::string> text =
      record ? readAll(record.get()) : std::nullopt;
  std::optional<EntryRecord> entry =
      text ? parseEntryRecord(*text) : std::nullopt;
  if (entry)
    ::unlinkat(folders->objects.get(),
               (entry->hash + entry->suffix).c_str(), 0);
  ::unlinkat(folders->keys.get(), std::string(key).c_str(), 0);
}

ArtifactCache::Object ArtifactCache::storeFile(std::string_view key,
                                               const ScratchDirectory &scratch,
                                               const std::string &fileName,
                                               std::string_view suffix) {
  checkName(key, false, "key");
  checkName(suffix, true, "suffix");
  checkName(fileName, false, "file name");
  UniqueFd produced(::openat(scratch.fd(), fileName.c_str(),
                             O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  struct stat st;
  if (!produced || ::fstat(produced.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_uid != ::geteuid())
    throw std::runtime_error("the compiler's output " + scratch.path() + "/" +
                             fileName + " is missing or not a file of yours");
  std::optional<std::string> content = readAll(produced.get());
  if (!content)
    throwErrno("cannot read " + scratch.path() + "/" + fileName);
  std::string where = scratch.path() + "/" + fileName;
  if (!enabled())
    return Object(produced.release(), where, std::move(*content));
  try {
    const TrustPolicy &policy = folders->policy;
    std::string hash = contentHash(*content);
    std::string name = hash + std::string(suffix);
    if (!policy.applyMode(produced.get(), false))
      throwErrno("cannot set the mode of " + where);
    if (::renameat(scratch.fd(), fileName.c_str(), folders->objects.get(),
                   name.c_str()) != 0) {
      if (errno != EXDEV)
        throwErrno("cannot move " + where + " into the cache");
      // Another file system: a copy through the cache's tmp/.
      std::string temp =
          writeNewFileAt(folders->tmp.get(), "file", *content, policy);
      renameOrThrow(folders->tmp.get(), temp, folders->objects.get(), name);
    } else {
      where = (fs::path(root) / kLayoutVersion / "objects" / name).string();
    }
    std::string record = formatEntryRecord(
        EntryRecord{hash, content->size(), std::string(suffix)});
    std::string temp = writeNewFileAt(folders->tmp.get(), "file", record, policy);
    renameOrThrow(folders->tmp.get(), temp, folders->keys.get(),
                  std::string(key));
  } catch (const std::exception &error) {
    warnOnce(std::string("could not store a compiled artifact in the cache (") +
             error.what() + ")");
  }
  return Object(produced.release(), where, std::move(*content));
}

void ArtifactCache::store(std::string_view key, std::string_view bytes,
                          std::string_view suffix) {
  checkName(key, false, "key");
  checkName(suffix, true, "suffix");
  if (!enabled())
    return;
  try {
    const TrustPolicy &policy = folders->policy;
    std::string name = contentHash(bytes) + std::string(suffix);
    std::string temp = writeNewFileAt(folders->tmp.get(), "file", bytes, policy);
    renameOrThrow(folders->tmp.get(), temp, folders->objects.get(), name);
    std::string record = formatEntryRecord(
        EntryRecord{contentHash(bytes), bytes.size(), std::string(suffix)});
    temp = writeNewFileAt(folders->tmp.get(), "file", record, policy);
    renameOrThrow(folders->tmp.get(), temp, folders->keys.get(),
                  std::string(key));
  } catch (const std::exception &error) {
    warnOnce(std::string("could not store an artifact in the cache (") +
             error.what() + ")");
  }
}

ScratchDirectory ArtifactCache::makeScratchDirectory() {
  if (enabled()) {
    try {
      std::shared_ptr<ScratchArea> area;
      {
        std::lock_guard<ForkSafeMutex> lock(folders->areaMutex);
        area = folders->area.lock();
        if (area && !area->ours())
          area.reset();
      }
      if (!area) {
        // Made without the lock (making one takes the areas' registry).
        area = ScratchArea::create(
            folders->tmp.get(),
            (fs::path(root) / kLayoutVersion / "tmp").string(), kAreaPrefix,
            folders->policy);
        std::lock_guard<ForkSafeMutex> lock(folders->areaMutex);
        std::shared_ptr<ScratchArea> other = folders->area.lock();
        if (other && other->ours())
          area = other; // another thread's won
        else
          folders->area = area;
      }
      return area->makeDirectory("work");
    } catch (const std::exception &) {
      // Fall through to the system temp folder.
    }
  }
  return ScratchDirectory::inTempDirectory("work");
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
  const std::string key = makeKey(parts);
  const std::string path =
      (fs::path(root) / kLayoutVersion / "files" / key).string();
  const TrustPolicy &policy = folders->policy;
  const int setsFolder = folders->files.get(), tmp = folders->tmp.get();
  if (setHoldsExactly(setsFolder, key, files, policy))
    return path;
  try {
    std::string temp = makeUniqueFolderAt(tmp, "files", policy);
    UniqueFd tempFd(::openat(tmp, temp.c_str(), kDirectoryFlags));
    if (!tempFd)
      throwErrno("cannot open a new folder");
    for (const NamedText &file : files)
      renameOrThrow(tempFd.get(),
                    writeNewFileAt(tempFd.get(), "file", file.text, policy),
                    tempFd.get(), std::string(file.name));
    // A set folder only ever appears whole (a renamed temp folder), so one
    // in place that does not hold exactly the files is damaged (or has
    // something in it that does not belong there). Processes racing here
    // must not delete a set another one just completed: the damaged one
    // is first moved aside, which only one of them manages.
    for (int attempt = 0; attempt < 4; ++attempt) {
      if (::renameat(tmp, temp.c_str(), setsFolder, key.c_str()) == 0)
        return path;
      if (setHoldsExactly(setsFolder, key, files, policy)) {
        removeTreeAt(tmp, temp); // another process won the race
        return path;
      }
      std::string aside = makeUniqueFolderAt(tmp, "damaged", policy);
      UniqueFd asideFd(::openat(tmp, aside.c_str(), kDirectoryFlags));
      if (asideFd)
        ::renameat(setsFolder, key.c_str(), asideFd.get(), "set");
      removeTreeAt(tmp, aside);
    }
    removeTreeAt(tmp, temp);
    throw std::runtime_error("cannot create " + path);
  } catch (const std::exception &error) {
    warnOnce(std::string("could not write headers into the cache (") +
             error.what() + ")");
    return std::nullopt;
  }
}

std::optional<std::string> ArtifactCache::readNote(std::string_view folder,
                                                   std::string_view name) {
  checkName(folder, false, "note folder");
  checkName(name, false, "note name");
  if (!enabled())
    return std::nullopt;
  std::string problem;
  UniqueFd notes = openCacheFolderAt(folders->root.get(), std::string(folder),
                                     folders->policy, problem);
  if (!notes)
    return std::nullopt;
  UniqueFd fd = openCacheFileAt(notes.get(), std::string(name),
                                folders->policy, problem);
  if (!fd) {
    if (!problem.empty()) // not trusted: gone, and probed again
      ::unlinkat(notes.get(), std::string(name).c_str(), 0);
    return std::nullopt;
  }
  return readAll(fd.get());
}

void ArtifactCache::writeNote(std::string_view folder, std::string_view name,
                              std::string_view text) {
  checkName(folder, false, "note folder");
  checkName(name, false, "note name");
  if (!enabled())
    return;
  try {
    std::string problem;
    UniqueFd notes = openCacheFolderAt(folders->root.get(), std::string(folder),
                                       folders->policy, problem);
    if (!notes)
      return;
    std::string temp =
        writeNewFileAt(folders->tmp.get(), "file", text, folders->policy);
    renameOrThrow(folders->tmp.get(), temp, notes.get(), std::string(name));
  } catch (const std::exception &) {
    // Best effort: a note is only a shortcut.
  }
}

} // namespace enigma
