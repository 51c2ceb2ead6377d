//===- SafeFiles.cpp ------------------------------------------------------===//
#include "SafeFiles.h"

#include "enigma/Support/ProcessLife.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <random>
#include <system_error>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/random.h>
#include <unistd.h>

namespace enigma::cache {
namespace {
constexpr int kMaxLinks = 40;          // as the kernel's own limit
constexpr int kMaxRemovalDepth = 64;   // deeper trees are not ours
constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;

[[noreturn]] void throwErrno(const std::string &what) {
  throw std::system_error(errno, std::generic_category(), what);
}

std::string userName(uid_t uid) {
  std::vector<char> buffer(16384);
  struct passwd entry, *found = nullptr;
  if (::getpwuid_r(uid, &entry, buffer.data(), buffer.size(), &found) == 0 &&
      found)
    return found->pw_name;
  return "";
}

std::string groupName(gid_t gid) {
  std::vector<char> buffer(16384);
  struct group entry, *found = nullptr;
  if (::getgrgid_r(gid, &entry, buffer.data(), buffer.size(), &found) == 0 &&
      found)
    return found->gr_name;
  return std::to_string(gid);
}

std::string describeOwner(uid_t uid) {
  std::string name = userName(uid);
  return "uid " + std::to_string(uid) + (name.empty() ? "" : " (" + name + ")");
}

/// Answers of the user and group databases, which may be slow (NSS, LDAP):
/// asked once per process.
template <typename Compute>
bool remembered(uint64_t question, Compute compute) {
  static ForkSafeMutex &mutex = *new ForkSafeMutex;
  static auto &answers = *new std::map<uint64_t, bool>;
  {
    std::lock_guard<ForkSafeMutex> lock(mutex);
    if (auto known = answers.find(question); known != answers.end())
      return known->second;
  }
  bool answer = compute(); // without the lock: it may take a while
  std::lock_guard<ForkSafeMutex> lock(mutex);
  answers[question] = answer;
  return answer;
}

/// Whether `uid` belongs to `gid`: as its primary group or as a listed
/// member.
bool isMemberUncached(uid_t uid, gid_t gid) {
  std::vector<char> buffer(16384);
  struct passwd user, *foundUser = nullptr;
  if (::getpwuid_r(uid, &user, buffer.data(), buffer.size(), &foundUser) != 0 ||
      !foundUser)
    return false;
  if (foundUser->pw_gid == gid)
    return true;
  std::string name = foundUser->pw_name;
  std::vector<char> groupBuffer(65536);
  struct group entry, *found = nullptr;
  if (::getgrgid_r(gid, &entry, groupBuffer.data(), groupBuffer.size(),
                   &found) != 0 ||
      !found)
    return false;
  for (char **member = found->gr_mem; member && *member; ++member)
    if (name == *member)
      return true;
  return false;
}

bool isMember(uid_t uid, gid_t gid) {
  return remembered(uint64_t(uid) << 32 | gid,
                    [&] { return isMemberUncached(uid, gid); });
}

/// A group no one but `uid` belongs to: the user's primary group with no
/// other listed member (the "user private group" of Debian and others,
/// whose umask 002 makes new folders group-writable).
bool isPrivateGroupOfUncached(gid_t gid, uid_t uid) {
  std::vector<char> buffer(16384);
  struct passwd user, *foundUser = nullptr;
  if (::getpwuid_r(uid, &user, buffer.data(), buffer.size(), &foundUser) != 0 ||
      !foundUser || foundUser->pw_gid != gid)
    return false;
  std::string name = foundUser->pw_name;
  std::vector<char> groupBuffer(65536);
  struct group entry, *found = nullptr;
  if (::getgrgid_r(gid, &entry, groupBuffer.data(), groupBuffer.size(),
                   &found) != 0 ||
      !found)
    return false;
  for (char **member = found->gr_mem; member && *member; ++member)
    if (name != *member)
      return false;
  return true;
}

bool isPrivateGroupOf(gid_t gid, uid_t uid) {
  // Bit 63 tells these questions from isMember's.
  return remembered(uint64_t(1) << 63 | uint64_t(uid) << 32 | gid,
                    [&] { return isPrivateGroupOfUncached(gid, uid); });
}

/// Twelve characters nobody can guess, fresh from the kernel each time (a
/// generator's state would be copied into fork()ed children).
std::string randomSuffix() {
  static const char alphabet[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  unsigned char bytes[12];
  if (::getrandom(bytes, sizeof bytes, 0) != ssize_t(sizeof bytes)) {
    std::random_device device;
    for (unsigned char &b : bytes)
      b = static_cast<unsigned char>(device());
  }
  std::string suffix(sizeof bytes, 'x');
  for (size_t i = 0; i < sizeof bytes; ++i)
    suffix[i] = alphabet[bytes[i] % (sizeof alphabet - 1)];
  return suffix;
}

std::vector<std::string> splitPath(const std::string &path) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos)
      end = path.size();
    if (end > start)
      parts.push_back(path.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

std::string errnoText(int error) { return std::strerror(error); }
} // namespace

UniqueFd &UniqueFd::operator=(UniqueFd &&other) noexcept {
  if (this != &other) {
    if (fd >= 0)
      ::close(fd);
    fd = other.release();
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd >= 0)
    ::close(fd);
}

//===----------------------------------------------------------------------===//
// TrustPolicy
//===----------------------------------------------------------------------===//

TrustPolicy TrustPolicy::fromEnvironment(std::string &problem) {
  TrustPolicy policy;
  policy.user = ::geteuid();
  const char *group = std::getenv("ENIGMA_CACHE_GROUP");
  if (!group || !*group)
    return policy;
  std::vector<char> buffer(65536);
  struct group entry, *found = nullptr;
  char *end = nullptr;
  unsigned long number = std::strtoul(group, &end, 10);
  if (*end == '\0')
    ::getgrgid_r(gid_t(number), &entry, buffer.data(), buffer.size(), &found);
  else
    ::getgrnam_r(group, &entry, buffer.data(), buffer.size(), &found);
  if (!found) {
    problem = "ENIGMA_CACHE_GROUP='" + std::string(group) +
              "' names no group of this system";
    return policy;
  }
  policy.shared = true;
  policy.group = found->gr_gid;
  return policy;
}

bool TrustPolicy::trustsOwner(uid_t owner) const {
  return owner == user || owner == 0 || (shared && isMember(owner, group));
}

std::string TrustPolicy::checkAncestor(const struct stat &st) const {
  if (!(st.st_uid == user || st.st_uid == 0 ||
        (shared && isMember(st.st_uid, group))))
    return "is owned by " + describeOwner(st.st_uid);
  const bool sticky = st.st_mode & S_ISVTX; // others cannot rename entries
  if ((st.st_mode & S_IWOTH) && !sticky)
    return "can be written by every user";
  if ((st.st_mode & S_IWGRP) && !sticky && !(shared && st.st_gid == group) &&
      !isPrivateGroupOf(st.st_gid, user))
    return "can be written by the group " + groupName(st.st_gid);
  return "";
}

namespace {
/// What makes a cache folder or file untrusted besides its type: an owner
/// the policy does not trust, or others who may write it ("" when none).
/// `groupAdvice`: say how to share the cache with the writing group.
std::string cacheEntryProblem(const TrustPolicy &policy,
                              const struct stat &st, bool groupAdvice) {
  if (!policy.trustsOwner(st.st_uid))
    return "is owned by " + describeOwner(st.st_uid);
  if (st.st_mode & S_IWOTH)
    return "can be written by every user";
  if ((st.st_mode & S_IWGRP) &&
      !(policy.shared && st.st_gid == policy.group) &&
      !isPrivateGroupOf(st.st_gid, policy.user)) {
    std::string group = groupName(st.st_gid);
    return "can be written by the group " + group +
           (groupAdvice ? " (to share a cache with a group, set "
                          "ENIGMA_CACHE_GROUP=" + group + ")"
                        : "");
  }
  return "";
}
} // namespace

std::string TrustPolicy::checkCacheFolder(const struct stat &st) const {
  if (!S_ISDIR(st.st_mode))
    return "is not a folder";
  return cacheEntryProblem(*this, st, true);
}

std::string TrustPolicy::checkCacheFile(const struct stat &st) const {
  if (!S_ISREG(st.st_mode))
    return "is not a regular file";
  return cacheEntryProblem(*this, st, false);
}

bool TrustPolicy::applyMode(int fd, bool folder) const {
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return false;
  if (shared && st.st_gid != group && ::fchown(fd, uid_t(-1), group) != 0)
    return false;
  const mode_t mode = folder ? folderMode() : fileMode();
  if ((st.st_mode & 07777) != mode && ::fchmod(fd, mode) != 0)
    return false;
  return true;
}

//===----------------------------------------------------------------------===//
// Walks
//===----------------------------------------------------------------------===//

std::string absolutePath(const std::string &path) {
  if (!path.empty() && path[0] == '/')
    return path;
  std::vector<char> buffer(4096);
  while (!::getcwd(buffer.data(), buffer.size())) {
    if (errno != ERANGE)
      return path;
    buffer.resize(buffer.size() * 2);
  }
  return std::string(buffer.data()) + "/" + path;
}

UniqueFd openTrustedFolder(const std::string &path, const TrustPolicy &policy,
                           bool create, std::string &problem, bool asParent) {
  std::deque<std::string> rest;
  for (std::string &part : splitPath(absolutePath(path)))
    rest.push_back(std::move(part));
  UniqueFd current(::open("/", kDirectoryFlags));
  std::string walked = "/";
  struct stat st;
  if (!current || ::fstat(current.get(), &st) != 0) {
    problem = "cannot open /: " + errnoText(errno);
    return {};
  }
  int links = 0, retries = 0;
  std::string madeHere; // the component this walk created, if any
  while (!rest.empty()) {
    std::string name = rest.front();
    rest.pop_front();
    if (name == ".")
      continue;
    const bool last = rest.empty();
    const std::string shown = walked + name;
    if (::fstatat(current.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT || !create) {
        problem = "'" + shown + "': " + errnoText(errno);
        return {};
      }
      if (::mkdirat(current.get(), name.c_str(), 0700) != 0 && errno != EEXIST) {
        problem = "cannot create '" + shown + "': " + errnoText(errno);
        return {};
      }
      madeHere = shown;
      rest.push_front(name);
      continue;
    }
    if (S_ISLNK(st.st_mode)) {
      if (st.st_uid != 0 && st.st_uid != policy.user) {
        problem = "'" + shown + "' is a link owned by " +
                  describeOwner(st.st_uid);
        return {};
      }
      if (++links > kMaxLinks) {
        problem = "'" + path + "': too many links";
        return {};
      }
      std::vector<char> target(4096);
      ssize_t length = ::readlinkat(current.get(), name.c_str(), target.data(),
                                    target.size() - 1);
      if (length < 0) {
        problem = "'" + shown + "': " + errnoText(errno);
        return {};
      }
      std::string text(target.data(), size_t(length));
      std::vector<std::string> parts = splitPath(text);
      for (auto it = parts.rbegin(); it != parts.rend(); ++it)
        rest.push_front(*it);
      if (!text.empty() && text[0] == '/') {
        current = UniqueFd(::open("/", kDirectoryFlags));
        walked = "/";
      }
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      problem = "'" + shown + "' is not a folder";
      return {};
    }
    UniqueFd next(::openat(current.get(), name.c_str(), kDirectoryFlags));
    if (!next) {
      if ((errno == ELOOP || errno == ENOTDIR) && ++retries < 8) {
        rest.push_front(name); // replaced while we looked: look again
        continue;
      }
      problem = "cannot open '" + shown + "': " + errnoText(errno);
      return {};
    }
    if (madeHere == shown && !policy.applyMode(next.get(), true)) {
      problem = "cannot set the mode of '" + shown + "': " + errnoText(errno);
      return {};
    }
    if (::fstat(next.get(), &st) != 0) {
      problem = "'" + shown + "': " + errnoText(errno);
      return {};
    }
    std::string why =
        last && !asParent ? policy.checkCacheFolder(st)
                          : policy.checkAncestor(st);
    if (!why.empty()) {
      problem = "'" + shown + "' " + why;
      return {};
    }
    current = std::move(next);
    walked = shown + "/";
  }
  return current;
}

UniqueFd openCacheFolderAt(int parent, const std::string &name,
                           const TrustPolicy &policy, std::string &problem) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    struct stat st;
    if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) {
        problem = "'" + name + "': " + errnoText(errno);
        return {};
      }
      if (::mkdirat(parent, name.c_str(), 0700) != 0 && errno != EEXIST) {
        problem = "cannot create '" + name + "': " + errnoText(errno);
        return {};
      }
      continue;
    }
    if (!S_ISDIR(st.st_mode)) {
      // A link or a file where the cache keeps a folder: removed, never
      // followed.
      if (::unlinkat(parent, name.c_str(), 0) != 0 && errno != ENOENT) {
        problem = "cannot replace '" + name + "': " + errnoText(errno);
        return {};
      }
      continue;
    }
    UniqueFd fd(::openat(parent, name.c_str(), kDirectoryFlags));
    if (!fd)
      continue; // replaced since the fstatat: look again
    if (::fstat(fd.get(), &st) != 0) {
      problem = "'" + name + "': " + errnoText(errno);
      return {};
    }
    if (st.st_uid == policy.user) {
      policy.applyMode(fd.get(), true);
      ::fstat(fd.get(), &st);
    }
    std::string why = policy.checkCacheFolder(st);
    if (!why.empty()) {
      problem = "'" + name + "' " + why;
      return {};
    }
    return fd;
  }
  problem = "'" + name + "' keeps changing";
  return {};
}

UniqueFd openCacheFileAt(int folder, const std::string &name,
                         const TrustPolicy &policy, std::string &problem) {
  problem.clear();
  UniqueFd fd(::openat(folder, name.c_str(),
                       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    if (errno != ENOENT)
      problem = errno == ELOOP ? "is a link" : errnoText(errno);
    return {};
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    problem = errnoText(errno);
    return {};
  }
  if (S_ISREG(st.st_mode) && st.st_uid == policy.user &&
      ((st.st_mode & 07777) != policy.fileMode() ||
       (policy.shared && st.st_gid != policy.group))) {
    policy.applyMode(fd.get(), false);
    ::fstat(fd.get(), &st);
  }
  problem = policy.checkCacheFile(st);
  if (!problem.empty())
    return {};
  return fd;
}

std::optional<std::string> readAll(int fd) {
  std::string content;
  struct stat st;
  if (::fstat(fd, &st) == 0 && st.st_size > 0)
    content.reserve(size_t(st.st_size));
  char buffer[65536];
  off_t offset = 0;
  for (;;) {
    ssize_t got = ::pread(fd, buffer, sizeof buffer, offset);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return std::nullopt;
    if (got == 0)
      return content;
    content.append(buffer, size_t(got));
    offset += got;
  }
}

std::string writeNewFileAt(int folder, std::string_view prefix,
                           std::string_view bytes, const TrustPolicy &policy) {
  std::string name;
  UniqueFd fd;
  for (int attempt = 0; !fd; ++attempt) {
    name = std::string(prefix) + "-" + randomSuffix();
    fd = UniqueFd(::openat(folder, name.c_str(),
                           O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                           0600));
    if (!fd && (errno != EEXIST || attempt > 100))
      throwErrno("cannot create a file");
  }
  auto fail = [&](const char *what) {
    int saved = errno;
    ::unlinkat(folder, name.c_str(), 0);
    errno = saved;
    throwErrno(what);
  };
  if (!policy.applyMode(fd.get(), false))
    fail("cannot set a file's mode");
  const char *cursor = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t written = ::write(fd.get(), cursor, left);
    if (written < 0 && errno == EINTR)
      continue;
    if (written <= 0)
      fail("cannot write a file");
    cursor += written;
    left -= size_t(written);
  }
  if (::close(fd.release()) != 0)
    fail("cannot write a file");
  return name;
}

std::string makeUniqueFolderAt(int parent, std::string_view prefix,
                               const TrustPolicy &policy) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = std::string(prefix) + "-" + randomSuffix();
    if (::mkdirat(parent, name.c_str(), 0700) != 0) {
      if (errno == EEXIST)
        continue;
      throwErrno("cannot create a folder");
    }
    UniqueFd fd(::openat(parent, name.c_str(), kDirectoryFlags));
    if (!fd || !policy.applyMode(fd.get(), true)) {
      int saved = errno;
      ::unlinkat(parent, name.c_str(), AT_REMOVEDIR);
      errno = saved;
      throwErrno("cannot set a folder's mode");
    }
    return name;
  }
  errno = EEXIST;
  throwErrno("cannot create a folder");
}

std::optional<std::vector<std::string>> folderEntries(int folder) {
  int listed = ::openat(folder, ".", kDirectoryFlags);
  if (listed < 0)
    return std::nullopt;
  DIR *dir = ::fdopendir(listed);
  if (!dir) {
    ::close(listed);
    return std::nullopt;
  }
  std::vector<std::string> names;
  while (struct dirent *entry = ::readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..")
      names.push_back(std::move(name));
  }
  ::closedir(dir);
  return names;
}

namespace {
bool removeTree(int parent, const std::string &name, int depth) {
  struct stat st;
  if (::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT;
  if (!S_ISDIR(st.st_mode))
    return ::unlinkat(parent, name.c_str(), 0) == 0 || errno == ENOENT;
  if (depth > kMaxRemovalDepth)
    return false;
  UniqueFd fd(::openat(parent, name.c_str(), kDirectoryFlags));
  if (!fd) {
    if (errno == ELOOP || errno == ENOTDIR) // replaced by a link or file
      return ::unlinkat(parent, name.c_str(), 0) == 0 || errno == ENOENT;
    return errno == ENOENT;
  }
  if (::fstat(fd.get(), &st) == 0 && st.st_uid == ::geteuid() &&
      (st.st_mode & S_IRWXU) != S_IRWXU)
    ::fchmod(fd.get(), st.st_mode | S_IRWXU); // entries of a read-only folder
  std::optional<std::vector<std::string>> names = folderEntries(fd.get());
  if (!names)
    return false;
  bool removed = true;
  for (const std::string &child : *names)
    removed &= removeTree(fd.get(), child, depth + 1);
  fd = UniqueFd();
  if (::unlinkat(parent, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT)
    return false;
  return removed;
}
} // namespace

bool removeTreeAt(int parent, const std::string &name) {
  if (name.empty() || name == "." || name == ".." ||
      name.find('/') != std::string::npos)
    return false;
  return removeTree(parent, name, 0);
}

} // namespace enigma::cache
