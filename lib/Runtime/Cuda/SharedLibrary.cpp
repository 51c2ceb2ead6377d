//===- SharedLibrary.cpp --------------------------------------------------===//
#include "SharedLibrary.h"

#include <dlfcn.h>

namespace enigma::cuda {

SharedLibrary SharedLibrary::openFirst(const std::vector<std::string> &candidates,
                                       std::string &errors) {
  SharedLibrary library;
  for (const std::string &candidate : candidates) {
    if (void *handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      library.handle = handle;
      library.openedPath = candidate;
      return library;
    }
    const char *why = dlerror();
    // dlerror() already names the file.
    errors += "  " + (why ? std::string(why) : candidate + ": cannot open") +
              "\n";
  }
  return library;
}

void *SharedLibrary::symbol(const char *name) const {
  return handle ? dlsym(handle, name) : nullptr;
}

std::string SharedLibrary::loadedFile(const char *anySymbol) const {
  Dl_info info{};
  void *address = symbol(anySymbol);
  if (address && dladdr(address, &info) && info.dli_fname)
    return info.dli_fname;
  return "";
}

} // namespace enigma::cuda
