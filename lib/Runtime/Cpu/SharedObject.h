//===- SharedObject.h - Kernels loaded from a checked descriptor -*- C++ -*-===//
//
// A compiled kernel is loaded from the open descriptor of the file the
// artifact cache checked (dlopen of /proc/self/fd/N), never by path, so no
// one can swap the file between the checks and the load. Each file is
// loaded once per process however many kernels use it, and unloaded (its
// descriptor closed after dlclose) when the last user goes. The dynamic
// linker recognises loaded objects by the name they were opened under, so
// the descriptor stays open, and its number taken, for as long as the
// object is loaded: no other object can be opened under the same name.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_LIB_RUNTIME_CPU_SHAREDOBJECT_H
#define ENIGMA_LIB_RUNTIME_CPU_SHAREDOBJECT_H

#include <cstdint>
#include <memory>
#include <string>

namespace enigma::cpu {

class SharedObject {
public:
  /// Loads the object `fd` reads, taking the descriptor over; `path` names
  /// it in messages. Throws RuntimeFailure with the dynamic linker's
  /// message.
  static std::shared_ptr<SharedObject> load(int fd, const std::string &path);
  ~SharedObject();
  SharedObject(const SharedObject &) = delete;
  SharedObject &operator=(const SharedObject &) = delete;

  /// The address of an exported symbol, or null.
  void *symbol(const char *name) const;
  /// Where its machine code is: [codeBegin, codeEnd) spans its executable
  /// segments.
  uintptr_t codeBegin() const { return begin; }
  uintptr_t codeEnd() const { return end; }

private:
  struct Loaded;
  explicit SharedObject(std::shared_ptr<Loaded> loaded);
  std::shared_ptr<Loaded> loaded;
  uintptr_t begin = 0, end = 0;
};

} // namespace enigma::cpu

#endif
