/*===- enigma_cuda_vectors.cuh - Metal's vector types for CUDA kernels ----===*
 *
 * The emitter prints vectors with Metal's spelling in every target:
 * float4(x) broadcasts, float4(a, b, c, d) builds, v.x reads a lane, a + b
 * and a < b work lane by lane (comparisons give bool vectors), (int4)v
 * converts. CUDA's own float4 is a plain struct with none of that, so this
 * header defines enigma_metal::vec<T, N> with Metal's layout (a 3-vector is
 * sized and aligned like a 4-vector) and maps the Metal names onto it with
 * macros, which must come after CUDA's headers (they use CUDA's float2).
 *
 * Included at the end of enigma_cuda_prelude.cuh.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_VECTORS_CUH
#define ENIGMA_CUDA_VECTORS_CUH

namespace enigma_metal {

template <class T, int N> struct vec;

/* Lane storage: an array and named members in one union (NVCC, like GCC
 * and Clang, defines reading one union member through another). */
template <class T, int N> struct vec_lanes;
template <class T> struct __align__(2 * sizeof(T)) vec_lanes<T, 2> {
  union { T elements[2]; struct { T x, y; }; struct { T r, g; }; };
};
template <class T> struct __align__(4 * sizeof(T)) vec_lanes<T, 3> {
  union { T elements[3]; struct { T x, y, z; }; struct { T r, g, b; }; };
};
template <class T> struct __align__(4 * sizeof(T)) vec_lanes<T, 4> {
  union {
    T elements[4];
    struct { T x, y, z, w; };
    struct { T r, g, b, a; };
  };
};

template <class T> struct is_vec { static constexpr bool value = false; };
template <class T, int N> struct is_vec<vec<T, N>> {
  static constexpr bool value = true;
};

/* Lanes an argument of a component constructor fills. */
template <class A> struct lanes_of { static constexpr int value = 1; };
template <class T, int N> struct lanes_of<vec<T, N>> {
  static constexpr int value = N;
};
template <class... A> struct total_lanes { static constexpr int value = 0; };
template <class H, class... R> struct total_lanes<H, R...> {
  static constexpr int value = lanes_of<H>::value + total_lanes<R...>::value;
};

template <bool B, class T = int> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };

template <class T, int N> struct vec : vec_lanes<T, N> {
  typedef T value_type;
  static constexpr int lanes = N;

  vec() = default;

  /* float4(x): every lane x. */
  template <class U, typename enable_if<!is_vec<U>::value>::type = 0>
  __host__ __device__ vec(U scalar) {
    for (int i = 0; i < N; ++i)
      this->elements[i] = T(scalar);
  }

  /* float4(a, b, c, d), float4(v2, z, w), ...: the lanes must add up. */
  template <class... P,
            typename enable_if<(sizeof...(P) >= 2) &&
                               total_lanes<P...>::value == N>::type = 0>
  __host__ __device__ vec(const P &...parts) {
    int next = 0;
    int dummy[] = {(fill(next, parts), 0)...};
    (void)dummy;
  }

  /* Element type conversion is explicit, as in Metal: (int4)v, float4(i). */
  template <class U>
  __host__ __device__ explicit vec(const vec<U, N> &other) {
    for (int i = 0; i < N; ++i)
      this->elements[i] = T(other.elements[i]);
  }

  __host__ __device__ T &operator[](int i) { return this->elements[i]; }
  __host__ __device__ const T &operator[](int i) const {
    return this->elements[i];
  }

private:
  template <class U> __host__ __device__ void fill(int &next, const U &s) {
    this->elements[next++] = T(s);
  }
  template <class U, int M>
  __host__ __device__ void fill(int &next, const vec<U, M> &v) {
    for (int i = 0; i < M; ++i)
      this->elements[next++] = T(v.elements[i]);
  }
};

/* Lane arithmetic. Narrow unsigned types are multiplied as unsigned int so
 * that C's promotion to int cannot overflow; shift counts are taken modulo
 * the width, as Metal does. */
template <class T> __device__ inline T lane_add(T a, T b) { return T(a + b); }
template <class T> __device__ inline T lane_sub(T a, T b) { return T(a - b); }
template <class T> __device__ inline T lane_mul(T a, T b) { return T(a * b); }
template <class T> __device__ inline T lane_neg(T a) { return T(-a); }
__device__ inline unsigned char lane_mul(unsigned char a, unsigned char b) {
  return (unsigned char)((unsigned)a * (unsigned)b);
}
/* 16-bit lanes compute + - * and negation through enigma_opaque_u32, as
 * the emitter does for scalars (NVRTC's neg.s16 sign-extends -32768
 * wrongly on sm_90). */
#define ENIGMA_LANES_16(T)                                                     \
  __device__ inline T lane_add(T a, T b) {                                     \
    return (T)enigma_opaque_u32((unsigned)a + (unsigned)b);                    \
  }                                                                            \
  __device__ inline T lane_sub(T a, T b) {                                     \
    return (T)enigma_opaque_u32((unsigned)a - (unsigned)b);                    \
  }                                                                            \
  __device__ inline T lane_mul(T a, T b) {                                     \
    return (T)enigma_opaque_u32((unsigned)a * (unsigned)b);                    \
  }                                                                            \
  __device__ inline T lane_neg(T a) {                                          \
    return (T)enigma_opaque_u32(0u - (unsigned)a);                             \
  }
ENIGMA_LANES_16(short)
ENIGMA_LANES_16(unsigned short)
#undef ENIGMA_LANES_16
template <class T> __device__ inline T lane_shl(T a, T b) {
  return T(a << (unsigned(b) % (8 * sizeof(T))));
}
template <class T> __device__ inline T lane_shr(T a, T b) {
  return T(a >> (unsigned(b) % (8 * sizeof(T))));
}

#define ENIGMA_VEC_BINARY(op, lane_expr)                                       \
  template <class T, int N>                                                    \
  __device__ inline vec<T, N> operator op(const vec<T, N> &a,                  \
                                          const vec<T, N> &b) {                \
    vec<T, N> r;                                                               \
    for (int i = 0; i < N; ++i) {                                              \
      T x = a.elements[i], y = b.elements[i];                                  \
      r.elements[i] = lane_expr;                                               \
    }                                                                          \
    return r;                                                                  \
  }                                                                            \
  template <class T, int N, class S,                                           \
            typename enable_if<!is_vec<S>::value>::type = 0>                   \
  __device__ inline vec<T, N> operator op(const vec<T, N> &a, S b) {           \
    return a op vec<T, N>(b);                                                  \
  }                                                                            \
  template <class T, int N, class S,                                           \
            typename enable_if<!is_vec<S>::value>::type = 0>                   \
  __device__ inline vec<T, N> operator op(S a, const vec<T, N> &b) {           \
    return vec<T, N>(a) op b;                                                  \
  }
ENIGMA_VEC_BINARY(+, lane_add(x, y))
ENIGMA_VEC_BINARY(-, lane_sub(x, y))
ENIGMA_VEC_BINARY(*, lane_mul(x, y))
ENIGMA_VEC_BINARY(/, T(x / y))
ENIGMA_VEC_BINARY(%, T(x % y))
ENIGMA_VEC_BINARY(&, T(x & y))
ENIGMA_VEC_BINARY(|, T(x | y))
ENIGMA_VEC_BINARY(^, T(x ^ y))
ENIGMA_VEC_BINARY(<<, lane_shl(x, y))
ENIGMA_VEC_BINARY(>>, lane_shr(x, y))
#undef ENIGMA_VEC_BINARY

#define ENIGMA_VEC_COMPARE(op)                                                 \
  template <class T, int N>                                                    \
  __device__ inline vec<bool, N> operator op(const vec<T, N> &a,               \
                                             const vec<T, N> &b) {             \
    vec<bool, N> r;                                                            \
    for (int i = 0; i < N; ++i)                                                \
      r.elements[i] = a.elements[i] op b.elements[i];                          \
    return r;                                                                  \
  }                                                                            \
  template <class T, int N, class S,                                           \
            typename enable_if<!is_vec<S>::value>::type = 0>                   \
  __device__ inline vec<bool, N> operator op(const vec<T, N> &a, S b) {        \
    return a op vec<T, N>(b);                                                  \
  }                                                                            \
  template <class T, int N, class S,                                           \
            typename enable_if<!is_vec<S>::value>::type = 0>                   \
  __device__ inline vec<bool, N> operator op(S a, const vec<T, N> &b) {        \
    return vec<T, N>(a) op b;                                                  \
  }
ENIGMA_VEC_COMPARE(==)
ENIGMA_VEC_COMPARE(!=)
ENIGMA_VEC_COMPARE(<)
ENIGMA_VEC_COMPARE(<=)
ENIGMA_VEC_COMPARE(>)
ENIGMA_VEC_COMPARE(>=)
#undef ENIGMA_VEC_COMPARE

template <class T, int N>
__device__ inline vec<T, N> operator-(const vec<T, N> &a) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i)
    r.elements[i] = lane_neg(a.elements[i]);
  return r;
}
template <class T, int N>
__device__ inline vec<T, N> operator~(const vec<T, N> &a) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i)
    r.elements[i] = T(~a.elements[i]);
  return r;
}
template <class T, int N>
__device__ inline vec<bool, N> operator!(const vec<T, N> &a) {
  vec<bool, N> r;
  for (int i = 0; i < N; ++i)
    r.elements[i] = !a.elements[i];
  return r;
}

} // namespace enigma_metal

/*===--- Element-wise math on vectors (Metal applies these per lane) -------===*/

#define ENIGMA_VEC_MAP1(f)                                                     \
  template <class T, int N>                                                    \
  __device__ inline enigma_metal::vec<T, N> f(                                 \
      const enigma_metal::vec<T, N> &a) {                                      \
    enigma_metal::vec<T, N> r;                                                 \
    for (int i = 0; i < N; ++i)                                                \
      r.elements[i] = f(a.elements[i]);                                        \
    return r;                                                                  \
  }
#define ENIGMA_VEC_MAP2(f)                                                     \
  template <class T, int N>                                                    \
  __device__ inline enigma_metal::vec<T, N> f(                                 \
      const enigma_metal::vec<T, N> &a, const enigma_metal::vec<T, N> &b) {    \
    enigma_metal::vec<T, N> r;                                                 \
    for (int i = 0; i < N; ++i)                                                \
      r.elements[i] = f(a.elements[i], b.elements[i]);                         \
    return r;                                                                  \
  }                                                                            \
  template <class T, int N>                                                    \
  __device__ inline enigma_metal::vec<T, N> f(                                 \
      const enigma_metal::vec<T, N> &a, T b) {                                 \
    return f(a, enigma_metal::vec<T, N>(b));                                   \
  }
#define ENIGMA_VEC_MAP3(f)                                                     \
  template <class T, int N>                                                    \
  __device__ inline enigma_metal::vec<T, N> f(                                 \
      const enigma_metal::vec<T, N> &a, const enigma_metal::vec<T, N> &b,      \
      const enigma_metal::vec<T, N> &c) {                                      \
    enigma_metal::vec<T, N> r;                                                 \
    for (int i = 0; i < N; ++i)                                                \
      r.elements[i] = f(a.elements[i], b.elements[i], c.elements[i]);          \
    return r;                                                                  \
  }
ENIGMA_VEC_MAP1(sqrt) ENIGMA_VEC_MAP1(rsqrt) ENIGMA_VEC_MAP1(abs)
ENIGMA_VEC_MAP1(enigma_abs)
ENIGMA_VEC_MAP1(ceil) ENIGMA_VEC_MAP1(floor) ENIGMA_VEC_MAP1(round)
ENIGMA_VEC_MAP1(trunc) ENIGMA_VEC_MAP1(rint) ENIGMA_VEC_MAP1(exp)
ENIGMA_VEC_MAP1(exp2) ENIGMA_VEC_MAP1(log) ENIGMA_VEC_MAP1(log2)
ENIGMA_VEC_MAP1(log10) ENIGMA_VEC_MAP1(sin) ENIGMA_VEC_MAP1(cos)
ENIGMA_VEC_MAP1(tan) ENIGMA_VEC_MAP1(asin) ENIGMA_VEC_MAP1(acos)
ENIGMA_VEC_MAP1(atan) ENIGMA_VEC_MAP1(sinh) ENIGMA_VEC_MAP1(cosh)
ENIGMA_VEC_MAP1(tanh) ENIGMA_VEC_MAP1(sign) ENIGMA_VEC_MAP1(saturate)
ENIGMA_VEC_MAP1(fract)
ENIGMA_VEC_MAP2(fmin) ENIGMA_VEC_MAP2(fmax) ENIGMA_VEC_MAP2(min)
ENIGMA_VEC_MAP2(max) ENIGMA_VEC_MAP2(pow) ENIGMA_VEC_MAP2(fmod)
ENIGMA_VEC_MAP2(atan2) ENIGMA_VEC_MAP2(copysign) ENIGMA_VEC_MAP2(step)
ENIGMA_VEC_MAP3(clamp) ENIGMA_VEC_MAP3(fma) ENIGMA_VEC_MAP3(mix)
ENIGMA_VEC_MAP3(smoothstep)
#undef ENIGMA_VEC_MAP1
#undef ENIGMA_VEC_MAP2
#undef ENIGMA_VEC_MAP3

/* Predicates give a bool vector. */
#define ENIGMA_VEC_PREDICATE(f)                                                \
  template <class T, int N>                                                    \
  __device__ inline enigma_metal::vec<bool, N> f(                              \
      const enigma_metal::vec<T, N> &a) {                                      \
    enigma_metal::vec<bool, N> r;                                              \
    for (int i = 0; i < N; ++i)                                                \
      r.elements[i] = f(a.elements[i]);                                        \
    return r;                                                                  \
  }
ENIGMA_VEC_PREDICATE(isnan) ENIGMA_VEC_PREDICATE(isinf)
ENIGMA_VEC_PREDICATE(isfinite) ENIGMA_VEC_PREDICATE(signbit)
#undef ENIGMA_VEC_PREDICATE

/* select(a, b, c): c ? b : a, per lane for a bool-vector c. */
template <class T, int N>
__device__ inline enigma_metal::vec<T, N>
select(const enigma_metal::vec<T, N> &a, const enigma_metal::vec<T, N> &b,
       const enigma_metal::vec<bool, N> &c) {
  enigma_metal::vec<T, N> r;
  for (int i = 0; i < N; ++i)
    r.elements[i] = c.elements[i] ? b.elements[i] : a.elements[i];
  return r;
}
template <int N> __device__ inline bool all(const enigma_metal::vec<bool, N> &v) {
  for (int i = 0; i < N; ++i)
    if (!v.elements[i]) return false;
  return true;
}
template <int N> __device__ inline bool any(const enigma_metal::vec<bool, N> &v) {
  for (int i = 0; i < N; ++i)
    if (v.elements[i]) return true;
  return false;
}

/*===--- Geometry, with the formulas of the Metal specification ------------===*/

template <class T, int N>
__device__ inline T dot(const enigma_metal::vec<T, N> &a,
                        const enigma_metal::vec<T, N> &b) {
  T sum = a.elements[0] * b.elements[0];
  for (int i = 1; i < N; ++i)
    sum = T(sum + a.elements[i] * b.elements[i]);
  return sum;
}
template <class T, int N>
__device__ inline T length(const enigma_metal::vec<T, N> &v) {
  return sqrt(dot(v, v));
}
template <class T, int N>
__device__ inline T distance(const enigma_metal::vec<T, N> &a,
                             const enigma_metal::vec<T, N> &b) {
  return length(a - b);
}
template <class T, int N>
__device__ inline enigma_metal::vec<T, N>
normalize(const enigma_metal::vec<T, N> &v) {
  return v * rsqrt(dot(v, v));
}
template <class T>
__device__ inline enigma_metal::vec<T, 3>
cross(const enigma_metal::vec<T, 3> &a, const enigma_metal::vec<T, 3> &b) {
  return enigma_metal::vec<T, 3>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z,
                                 a.x * b.y - a.y * b.x);
}
template <class T, int N>
__device__ inline enigma_metal::vec<T, N>
reflect(const enigma_metal::vec<T, N> &i, const enigma_metal::vec<T, N> &n) {
  return i - T(2) * dot(n, i) * n;
}
template <class T, int N, class E>
__device__ inline enigma_metal::vec<T, N>
refract(const enigma_metal::vec<T, N> &i, const enigma_metal::vec<T, N> &n,
        E eta_in) {
  const T eta = T(eta_in), d = dot(n, i);
  const T k = T(1) - eta * eta * (T(1) - d * d);
  if (k < T(0))
    return enigma_metal::vec<T, N>(T(0));
  return eta * i - (eta * d + sqrt(k)) * n;
}
template <class T, int N>
__device__ inline enigma_metal::vec<T, N>
faceforward(const enigma_metal::vec<T, N> &n, const enigma_metal::vec<T, N> &i,
            const enigma_metal::vec<T, N> &nref) {
  return dot(nref, i) < T(0) ? n : -n;
}

/*===--- Metal's names ------------------------------------------------------===*/

#define ENIGMA_VEC_NAMES(T, name)                                              \
  typedef enigma_metal::vec<T, 2> enigma_##name##2;                            \
  typedef enigma_metal::vec<T, 3> enigma_##name##3;                            \
  typedef enigma_metal::vec<T, 4> enigma_##name##4;
ENIGMA_VEC_NAMES(float, float)
ENIGMA_VEC_NAMES(bool, bool)
ENIGMA_VEC_NAMES(signed char, char)
ENIGMA_VEC_NAMES(unsigned char, uchar)
ENIGMA_VEC_NAMES(short, short)
ENIGMA_VEC_NAMES(unsigned short, ushort)
ENIGMA_VEC_NAMES(int, int)
ENIGMA_VEC_NAMES(unsigned int, uint)
ENIGMA_VEC_NAMES(long, long)
ENIGMA_VEC_NAMES(unsigned long, ulong)
#if ENIGMA_USE_HALF
ENIGMA_VEC_NAMES(half, half)
#endif
#if ENIGMA_USE_BFLOAT
ENIGMA_VEC_NAMES(bfloat, bfloat)
#endif
#undef ENIGMA_VEC_NAMES

/* CUDA predefines float2 ... as plain structs; the kernels mean Metal's. */
#define float2 enigma_float2
#define float3 enigma_float3
#define float4 enigma_float4
#define bool2 enigma_bool2
#define bool3 enigma_bool3
#define bool4 enigma_bool4
#define char2 enigma_char2
#define char3 enigma_char3
#define char4 enigma_char4
#define uchar2 enigma_uchar2
#define uchar3 enigma_uchar3
#define uchar4 enigma_uchar4
#define short2 enigma_short2
#define short3 enigma_short3
#define short4 enigma_short4
#define ushort2 enigma_ushort2
#define ushort3 enigma_ushort3
#define ushort4 enigma_ushort4
#define int2 enigma_int2
#define int3 enigma_int3
#define int4 enigma_int4
#define uint2 enigma_uint2
#define uint3 enigma_uint3
#define uint4 enigma_uint4
#define long2 enigma_long2
#define long3 enigma_long3
#define long4 enigma_long4
#define ulong2 enigma_ulong2
#define ulong3 enigma_ulong3
#define ulong4 enigma_ulong4
#if ENIGMA_USE_HALF
#define half2 enigma_half2
#define half3 enigma_half3
#define half4 enigma_half4
#endif
#if ENIGMA_USE_BFLOAT
#define bfloat2 enigma_bfloat2
#define bfloat3 enigma_bfloat3
#define bfloat4 enigma_bfloat4
#endif

#endif /* ENIGMA_CUDA_VECTORS_CUH */
