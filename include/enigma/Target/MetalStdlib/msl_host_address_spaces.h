//===- msl_host_address_spaces.h - Metal's address spaces -------*- C++ -*-===//
//
// Metal's four address spaces as clang address spaces (SYCL device mode):
//
//   device       global (sycl_global)
//   threadgroup  local (sycl_local)
//   constant     private (sycl_private), and const: read-only
//   thread       the default address space
//
// device, threadgroup and constant pointers do not convert into each other;
// each converts to a `thread` pointer (clang's default address space holds
// the others in this mode), which Metal would reject. The headers of this
// library use the ENIGMA_MSL_* spellings; msl_host_keywords.h defines the
// Metal keywords last.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MSL_HOST_ADDRESS_SPACES_H
#define ENIGMA_MSL_HOST_ADDRESS_SPACES_H

#define ENIGMA_MSL_DEVICE __attribute__((opencl_global))
#define ENIGMA_MSL_THREADGROUP __attribute__((opencl_local))
#define ENIGMA_MSL_CONSTANT const __attribute__((opencl_private))

namespace metal {
namespace enigma_detail {
/// T without an address space or cv-qualifiers (deduced through a
/// device/threadgroup pointer, T carries its address space).
template <class T> struct plain { using type = std::remove_cv_t<T>; };
template <class T> struct plain<ENIGMA_MSL_DEVICE T> {
  using type = std::remove_cv_t<T>;
};
template <class T> struct plain<ENIGMA_MSL_THREADGROUP T> {
  using type = std::remove_cv_t<T>;
};
template <class T> struct plain<const __attribute__((opencl_private)) T> {
  using type = std::remove_cv_t<T>;
};
template <class T> using plain_t = typename plain<T>::type;
} // namespace enigma_detail

//===--- half literals (1.0h) ----------------------------------------------===//
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wuser-defined-literals"
inline half operator"" h(long double value) {
  return half(static_cast<float>(value));
}
inline half operator"" H(long double value) {
  return half(static_cast<float>(value));
}
inline half operator"" h(unsigned long long value) {
  return half(static_cast<float>(value));
}
inline half operator"" H(unsigned long long value) {
  return half(static_cast<float>(value));
}
#pragma clang diagnostic pop

} // namespace metal

#endif
