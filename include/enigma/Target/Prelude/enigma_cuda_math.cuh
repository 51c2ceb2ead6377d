/*===- enigma_cuda_math.cuh - Metal math pieces CUDA lacks --------------===*
 *
 * as_type<T>(x), Metal's bit reinterpretation between types of one size
 * (the emitter prints it for arith.bitcast and enigma.as_type).
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_MATH_CUH
#define ENIGMA_CUDA_MATH_CUH

template <class To, class From> __device__ inline To as_type(const From &x) {
  static_assert(sizeof(To) == sizeof(From), "as_type needs equal sizes");
  To out;
  memcpy(&out, &x, sizeof(To)); // a device builtin in NVRTC
  return out;
}

// C's float specials, which NVRTC does not predefine (the emitter prints
// NAN and INFINITY for such constants, as MSL spells them).
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif

#endif /* ENIGMA_CUDA_MATH_CUH */
