//===- metal_geometry.h - Metal's geometric functions -----------*- C++ -*-===//
//
// dot, length, distance, normalize, cross, reflect, refract, faceforward
// with the formulas of the Metal specification, evaluated in the vector's
// element type (so half vectors round after every operation).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_GEOMETRY_H
#define ENIGMA_METAL_GEOMETRY_H

#include "metal_elementwise.h"

namespace metal {

template <class T, int N>
METAL_FUNC T dot(const vec<T, N> &a, const vec<T, N> &b) {
  T sum = a[0] * b[0];
  for (int i = 1; i < N; ++i)
    sum = T(sum + a[i] * b[i]);
  return sum;
}

template <class T, int N> METAL_FUNC T length_squared(const vec<T, N> &v) {
  return dot(v, v);
}

template <class T, int N> METAL_FUNC T length(const vec<T, N> &v) {
  return sqrt(dot(v, v));
}

template <class T, int N>
METAL_FUNC T distance_squared(const vec<T, N> &a, const vec<T, N> &b) {
  return length_squared(a - b);
}

template <class T, int N>
METAL_FUNC T distance(const vec<T, N> &a, const vec<T, N> &b) {
  return length(a - b);
}

template <class T, int N> METAL_FUNC vec<T, N> normalize(const vec<T, N> &v) {
  return v * rsqrt(dot(v, v));
}

template <class T>
METAL_FUNC vec<T, 3> cross(const vec<T, 3> &a, const vec<T, 3> &b) {
  return vec<T, 3>(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z,
                   a.x * b.y - a.y * b.x);
}

// Mirror incident i about normal n (n is expected to be normalized).
template <class T, int N>
METAL_FUNC vec<T, N> reflect(const vec<T, N> &i, const vec<T, N> &n) {
  return i - T(2) * dot(n, i) * n;
}

// Refraction of i through a surface with normal n and ratio eta; zero on
// total internal reflection.
template <class T, int N, class E>
METAL_FUNC vec<T, N> refract(const vec<T, N> &i, const vec<T, N> &n, E eta_in) {
  const T eta = T(eta_in);
  const T n_dot_i = dot(n, i);
  const T k = T(1) - eta * eta * (T(1) - n_dot_i * n_dot_i);
  if (k < T(0))
    return vec<T, N>(T(0));
  return eta * i - (eta * n_dot_i + sqrt(k)) * n;
}

// n if nref faces against i, else -n.
template <class T, int N>
METAL_FUNC vec<T, N> faceforward(const vec<T, N> &n, const vec<T, N> &i,
                             const vec<T, N> &nref) {
  return dot(nref, i) < T(0) ? n : -n;
}

} // namespace metal

#endif // ENIGMA_METAL_GEOMETRY_H
