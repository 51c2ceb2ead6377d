//===- ScratchArea.cpp ----------------------------------------------------===//
#include "ScratchArea.h"

#include "enigma/Support/ProcessLife.h"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <system_error>
#include <vector>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

namespace enigma::cache {
namespace {
constexpr int kDirectoryFlags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
/// An area without its lock file is being made, unless it is this old.
constexpr auto kUnlockedAreaAge = std::chrono::minutes(1);

[[noreturn]] void throwErrno(const std::string &what) {
  throw std::system_error(errno, std::generic_category(), what);
}

/// The areas of this process that are still there, for the exit handler
/// and so that a sweep never takes its own process's areas.
struct Registry {
  ForkSafeMutex mutex;
  std::vector<std::weak_ptr<ScratchArea>> areas;
};

Registry &registry() {
  static Registry *instance = new Registry; // used by the exit handler
  return *instance;
}

void removeAreasAtExit() {
  std::vector<std::shared_ptr<ScratchArea>> live;
  {
    std::lock_guard<ForkSafeMutex> lock(registry().mutex);
    for (const auto &weak : registry().areas)
      if (auto area = weak.lock())
        live.push_back(std::move(area));
  }
  for (const auto &area : live)
    if (area->ours())
      area->removeNow();
}

bool isOwnArea(int parentFd, const std::string &name) {
  struct stat wanted;
  if (::fstatat(parentFd, name.c_str(), &wanted, AT_SYMLINK_NOFOLLOW) != 0)
    return false;
  std::lock_guard<ForkSafeMutex> lock(registry().mutex);
  for (const auto &weak : registry().areas) {
    auto area = weak.lock();
    struct stat st;
    if (area && area->ours() && ::fstat(area->fd(), &st) == 0 &&
        st.st_dev == wanted.st_dev && st.st_ino == wanted.st_ino)
      return true;
  }
  return false;
}

/// Removes the areas named `prefix`-... in `parent` whose processes are
/// gone (their lock can be taken).
void sweepAbandoned(int parent, const std::string &prefix,
                    const TrustPolicy &policy) {
  std::optional<std::vector<std::string>> names = folderEntries(parent);
  if (!names)
    return;
  for (const std::string &name : *names) {
    struct stat st;
    if (name.rfind(prefix + "-", 0) != 0 ||
        ::fstatat(parent, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
        !S_ISDIR(st.st_mode) || st.st_uid != policy.user ||
        isOwnArea(parent, name))
      continue;
    UniqueFd area(::openat(parent, name.c_str(), kDirectoryFlags));
    if (!area)
      continue;
    UniqueFd lock(::openat(area.get(), "lock",
                           O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    bool abandoned = false;
    if (lock) {
      // flock, not fcntl: an fcntl lock belongs to the whole process, so
      // another thread's probe would take it (and its close drop it).
      abandoned = ::flock(lock.get(), LOCK_EX | LOCK_NB) == 0;
    } else if (errno == ENOENT) {
      auto age = std::chrono::system_clock::now() -
                 std::chrono::system_clock::from_time_t(st.st_mtime);
      abandoned = age > kUnlockedAreaAge;
    }
    lock = UniqueFd();
    if (abandoned)
      removeTreeAt(parent, name);
  }
}
} // namespace

std::shared_ptr<ScratchArea> ScratchArea::create(int parent,
                                                 const std::string &parentPath,
                                                 const std::string &prefix,
                                                 const TrustPolicy &policy) {
  sweepAbandoned(parent, prefix, policy);
  std::shared_ptr<ScratchArea> area(new ScratchArea);
  area->policy = policy;
  area->parentFd = UniqueFd(::fcntl(parent, F_DUPFD_CLOEXEC, 0));
  if (!area->parentFd)
    throwErrno("cannot keep a folder open");
  area->name = makeUniqueFolderAt(parent, prefix, policy);
  area->areaPath = parentPath + "/" + area->name;
  area->areaFd = UniqueFd(::openat(parent, area->name.c_str(), kDirectoryFlags));
  area->creator = ::getpid();
  area->generation = forkGeneration();
  if (!area->areaFd)
    throwErrno("cannot open " + area->areaPath);
  // The lock file is locked under another name and then renamed: a sweep
  // that finds "lock" always finds it held (one that finds none waits for
  // the area to age).
  area->lockFd = UniqueFd(::openat(area->areaFd.get(), "lock.new",
                                   O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
                                       O_CLOEXEC,
                                   0600));
  if (!area->lockFd || ::flock(area->lockFd.get(), LOCK_EX | LOCK_NB) != 0 ||
      ::renameat(area->areaFd.get(), "lock.new", area->areaFd.get(),
                 "lock") != 0)
    throwErrno("cannot lock " + area->areaPath);
  static std::once_flag atExit;
  std::call_once(atExit, [] { std::atexit(&removeAreasAtExit); });
  std::lock_guard<ForkSafeMutex> lock(registry().mutex);
  auto &areas = registry().areas;
  std::erase_if(areas, [](const auto &weak) { return weak.expired(); });
  areas.push_back(area);
  return area;
}

ScratchArea::~ScratchArea() {
  if (ours())
    removeNow();
}

bool ScratchArea::ours() const {
  return creator == ::getpid() && generation == forkGeneration();
}

void ScratchArea::removeNow() {
  if (removed || !parentFd)
    return;
  removed = true;
  removeTreeAt(parentFd.get(), name);
  lockFd = UniqueFd();
}

ScratchDirectory ScratchArea::makeDirectory(const std::string &prefix) {
  std::string folder = makeUniqueFolderAt(areaFd.get(), prefix, policy);
  int fd = ::openat(areaFd.get(), folder.c_str(), kDirectoryFlags);
  if (fd < 0)
    throwErrno("cannot open a scratch folder");
  return ScratchDirectory(shared_from_this(), folder, fd);
}

std::shared_ptr<ScratchArea> tempDirectoryArea() {
  std::error_code error;
  std::string temp = std::filesystem::temp_directory_path(error).string();
  if (error)
    temp = "/tmp";
  static ForkSafeMutex &mutex = *new ForkSafeMutex;
  // Weak: an area lives while a scratch folder of it does.
  static auto &areas = *new std::map<std::string, std::weak_ptr<ScratchArea>>;
  {
    std::lock_guard<ForkSafeMutex> lock(mutex);
    if (auto area = areas[temp].lock(); area && area->ours())
      return area;
  }
  // Made without the lock held (creating takes the registry's).
  std::string problem;
  TrustPolicy policy;
  policy.user = ::geteuid();
  UniqueFd parent = openTrustedFolder(temp, policy, false, problem,
                                      /*asParent=*/true);
  if (!parent)
    throw std::system_error(EACCES, std::generic_category(),
                            "cannot use the temp folder: " + problem);
  std::shared_ptr<ScratchArea> made = ScratchArea::create(
      parent.get(), temp, "enigma-" + std::to_string(policy.user), policy);
  std::lock_guard<ForkSafeMutex> lock(mutex);
  if (auto area = areas[temp].lock(); area && area->ours())
    return area; // another thread won; ours is removed when it goes
  areas[temp] = made;
  return made;
}

} // namespace enigma::cache

//===----------------------------------------------------------------------===//
// ScratchDirectory
//===----------------------------------------------------------------------===//

namespace enigma {

ScratchDirectory::ScratchDirectory(std::shared_ptr<cache::ScratchArea> area,
                                   std::string name, int fd)
    : area(std::move(area)), name(std::move(name)), folderFd(fd) {
  fullPath = this->area->path() + "/" + this->name;
}

ScratchDirectory::ScratchDirectory(ScratchDirectory &&other) noexcept
    : area(std::move(other.area)), name(std::move(other.name)),
      fullPath(std::move(other.fullPath)), folderFd(other.folderFd) {
  other.folderFd = -1;
}

ScratchDirectory &ScratchDirectory::operator=(ScratchDirectory &&other) noexcept {
  if (this != &other) {
    remove();
    area = std::move(other.area);
    name = std::move(other.name);
    fullPath = std::move(other.fullPath);
    folderFd = other.folderFd;
    other.folderFd = -1;
  }
  return *this;
}

ScratchDirectory::~ScratchDirectory() { remove(); }

void ScratchDirectory::remove() {
  if (folderFd >= 0)
    ::close(folderFd);
  folderFd = -1;
  if (area && area->ours())
    cache::removeTreeAt(area->fd(), name);
  area.reset();
}

ScratchDirectory ScratchDirectory::inTempDirectory(const std::string &prefix) {
  return cache::tempDirectoryArea()->makeDirectory(prefix);
}

void ScratchDirectory::keepUntilExit() {
  // Held by a list that lives for the process; the folder then goes with
  // its area when the process exits.
  static ForkSafeMutex &mutex = *new ForkSafeMutex;
  static auto &kept = *new std::vector<ScratchDirectory>;
  std::lock_guard<ForkSafeMutex> lock(mutex);
  kept.push_back(std::move(*this));
}

} // namespace enigma
