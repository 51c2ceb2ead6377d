//===- SharedObject.cpp ---------------------------------------------------===//
#include "SharedObject.h"

#include "enigma/Runtime/Backend.h"
#include "enigma/Support/ProcessLife.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

namespace enigma::cpu {

/// One dlopen of one file, shared by every SharedObject of that file.
struct SharedObject::Loaded {
  void *handle = nullptr;
  int fd = -1;
  dev_t device = 0;
  ino_t inode = 0;
  uintptr_t begin = 0, end = 0;
  unsigned users = 0; // guarded by the registry's mutex
};

namespace {
/// Held while loading and unloading (short: a dlopen or dlclose of a
/// kernel, whose constructors do nothing of note).
ForkSafeMutex &registryMutex() {
  static ForkSafeMutex *mutex = new ForkSafeMutex;
  return *mutex;
}

/// The loaded files, by device and inode. Never destroyed: objects may be
/// released while static destructors run.
std::map<std::pair<dev_t, ino_t>, std::shared_ptr<void>> &registry() {
  static auto *files =
      new std::map<std::pair<dev_t, ino_t>, std::shared_ptr<void>>;
  return *files;
}

struct CodeRange {
  uintptr_t base;
  const char *name;
  uintptr_t begin = UINTPTR_MAX, end = 0;
};

int collectCode(struct dl_phdr_info *info, size_t, void *data) {
  auto &range = *static_cast<CodeRange *>(data);
  if (info->dlpi_addr != range.base || !info->dlpi_name ||
      std::strcmp(info->dlpi_name, range.name) != 0)
    return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr) &segment = info->dlpi_phdr[i];
    if (segment.p_type != PT_LOAD || !(segment.p_flags & PF_X))
      continue;
    uintptr_t start = info->dlpi_addr + segment.p_vaddr;
    range.begin = std::min(range.begin, start);
    range.end = std::max(range.end, start + segment.p_memsz);
  }
  return 1;
}
} // namespace

SharedObject::SharedObject(std::shared_ptr<Loaded> shared)
    : loaded(std::move(shared)), begin(loaded->begin), end(loaded->end) {}

std::shared_ptr<SharedObject> SharedObject::load(int fd,
                                                 const std::string &path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw RuntimeFailure("cannot load the compiled kernel " + path + ": " +
                         std::strerror(errno));
  }
  const auto id = std::make_pair(st.st_dev, st.st_ino);
  std::lock_guard<ForkSafeMutex> lock(registryMutex());
  auto &files = registry();
  if (auto known = files.find(id); known != files.end()) {
    ::close(fd); // the file is loaded already, under its first descriptor
    auto shared = std::static_pointer_cast<Loaded>(known->second);
    ++shared->users;
    return std::shared_ptr<SharedObject>(new SharedObject(shared));
  }
  std::string name = "/proc/self/fd/" + std::to_string(fd);
  void *handle = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::string why = ::dlerror();
    ::close(fd);
    throw RuntimeFailure("cannot load the compiled kernel " + path + ": " +
                         why);
  }
  auto shared = std::make_shared<Loaded>();
  shared->handle = handle;
  shared->fd = fd;
  shared->device = st.st_dev;
  shared->inode = st.st_ino;
  shared->users = 1;
  struct link_map *map = nullptr;
  if (::dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map) {
    CodeRange range{uintptr_t(map->l_addr), map->l_name};
    ::dl_iterate_phdr(&collectCode, &range);
    if (range.begin < range.end) {
      shared->begin = range.begin;
      shared->end = range.end;
    }
  }
  files[id] = shared;
  return std::shared_ptr<SharedObject>(new SharedObject(shared));
}

SharedObject::~SharedObject() {
  std::lock_guard<ForkSafeMutex> lock(registryMutex());
  if (--loaded->users > 0)
    return;
  registry().erase(std::make_pair(loaded->device, loaded->inode));
  // Unloaded before its descriptor (and with it the name the dynamic
  // linker knows it by) is given back.
  ::dlclose(loaded->handle);
  ::close(loaded->fd);
}

void *SharedObject::symbol(const char *name) const {
  return ::dlsym(loaded->handle, name);
}

} // namespace enigma::cpu
