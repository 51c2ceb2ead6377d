//===- metal_matrix.h - Metal's matrix types --------------------*- C++ -*-===//
//
// matrix<T, Cols, Rows>, column-major as in Metal: m[c] is column c (a
// vec<T, Rows>), floatCxR has C columns of R rows. Products follow linear
// algebra: matrix * column vector, row vector * matrix, matrix * matrix.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_METAL_MATRIX_H
#define ENIGMA_METAL_MATRIX_H

#include "metal_vector.h"

namespace metal {

template <class T, int Cols, int Rows> struct matrix {
  static_assert(Cols >= 2 && Cols <= 4 && Rows >= 2 && Rows <= 4,
                "Metal matrices are 2..4 by 2..4");
  vec<T, Rows> columns[Cols];

  matrix() = default;

  // matrix(s): s on the diagonal, zero elsewhere.
  METAL_FUNC explicit matrix(T diagonal) {
    for (int c = 0; c < Cols; ++c)
      for (int r = 0; r < Rows; ++r)
        columns[c][r] = c == r ? diagonal : T(0);
  }

  // matrix(column0, column1, ...).
  template <class... Columns,
            detail::enable_if_t<
                sizeof...(Columns) == Cols &&
                (detail::is_same<Columns, vec<T, Rows>>::value && ...)> = 0>
  METAL_FUNC matrix(const Columns &...cols) : columns{cols...} {}

  METAL_FUNC vec<T, Rows> &operator[](int c) { return columns[c]; }
  METAL_FUNC const vec<T, Rows> &operator[](int c) const { return columns[c]; }
};

#define METAL_MATRIX_ALIASES(T)                                         \
  typedef matrix<T, 2, 2> T##2x2;                                              \
  typedef matrix<T, 2, 3> T##2x3;                                              \
  typedef matrix<T, 2, 4> T##2x4;                                              \
  typedef matrix<T, 3, 2> T##3x2;                                              \
  typedef matrix<T, 3, 3> T##3x3;                                              \
  typedef matrix<T, 3, 4> T##3x4;                                              \
  typedef matrix<T, 4, 2> T##4x2;                                              \
  typedef matrix<T, 4, 3> T##4x3;                                              \
  typedef matrix<T, 4, 4> T##4x4;
METAL_MATRIX_ALIASES(float)
#if METAL_HAS_HALF
METAL_MATRIX_ALIASES(half)
#endif
#undef METAL_MATRIX_ALIASES

// (Rows x Cols) * (Cols): sum of columns weighted by the vector's lanes.
template <class T, int Cols, int Rows>
METAL_FUNC vec<T, Rows> operator*(const matrix<T, Cols, Rows> &m,
                              const vec<T, Cols> &v) {
  vec<T, Rows> result = m[0] * v[0];
  for (int c = 1; c < Cols; ++c)
    result += m[c] * v[c];
  return result;
}

// (Rows) * (Rows x Cols): lane c is the dot of v with column c.
template <class T, int Cols, int Rows>
METAL_FUNC vec<T, Cols> operator*(const vec<T, Rows> &v,
                              const matrix<T, Cols, Rows> &m) {
  vec<T, Cols> result;
  for (int c = 0; c < Cols; ++c) {
    T sum = v[0] * m[c][0];
    for (int r = 1; r < Rows; ++r)
      sum = T(sum + v[r] * m[c][r]);
    result[c] = sum;
  }
  return result;
}

template <class T, int K, int Cols, int Rows>
METAL_FUNC matrix<T, Cols, Rows> operator*(const matrix<T, K, Rows> &a,
                                       const matrix<T, Cols, K> &b) {
  matrix<T, Cols, Rows> result;
  for (int c = 0; c < Cols; ++c)
    result[c] = a * b[c];
  return result;
}

template <class T, int Cols, int Rows, class S,
          detail::enable_if_t<detail::is_metal_scalar<S>::value> = 0>
METAL_FUNC matrix<T, Cols, Rows> operator*(const matrix<T, Cols, Rows> &m,
                                           S s) {
  matrix<T, Cols, Rows> result;
  for (int c = 0; c < Cols; ++c)
    result[c] = m[c] * T(s);
  return result;
}

template <class T, int Cols, int Rows, class S,
          detail::enable_if_t<detail::is_metal_scalar<S>::value> = 0>
METAL_FUNC matrix<T, Cols, Rows> operator*(S s,
                                           const matrix<T, Cols, Rows> &m) {
  return m * s;
}

template <class T, int Cols, int Rows>
METAL_FUNC matrix<T, Cols, Rows> operator+(const matrix<T, Cols, Rows> &a,
                                       const matrix<T, Cols, Rows> &b) {
  matrix<T, Cols, Rows> result;
  for (int c = 0; c < Cols; ++c)
    result[c] = a[c] + b[c];
  return result;
}

template <class T, int Cols, int Rows>
METAL_FUNC matrix<T, Cols, Rows> operator-(const matrix<T, Cols, Rows> &a,
                                       const matrix<T, Cols, Rows> &b) {
  matrix<T, Cols, Rows> result;
  for (int c = 0; c < Cols; ++c)
    result[c] = a[c] - b[c];
  return result;
}

template <class T, int Cols, int Rows>
METAL_FUNC matrix<T, Rows, Cols> transpose(const matrix<T, Cols, Rows> &m) {
  matrix<T, Rows, Cols> result;
  for (int c = 0; c < Cols; ++c)
    for (int r = 0; r < Rows; ++r)
      result[r][c] = m[c][r];
  return result;
}

template <class T> METAL_FUNC T determinant(const matrix<T, 2, 2> &m) {
  return m[0][0] * m[1][1] - m[1][0] * m[0][1];
}

template <class T> METAL_FUNC T determinant(const matrix<T, 3, 3> &m) {
  return m[0][0] * (m[1][1] * m[2][2] - m[2][1] * m[1][2]) -
         m[1][0] * (m[0][1] * m[2][2] - m[2][1] * m[0][2]) +
         m[2][0] * (m[0][1] * m[1][2] - m[1][1] * m[0][2]);
}

// Laplace expansion along column 0 using the 3x3 minors.
template <class T> METAL_FUNC T determinant(const matrix<T, 4, 4> &m) {
  T result = T(0);
  for (int row = 0; row < 4; ++row) {
    matrix<T, 3, 3> minor;
    for (int c = 1; c < 4; ++c)
      for (int r = 0, out = 0; r < 4; ++r)
        if (r != row)
          minor[c - 1][out++] = m[c][r];
    const T term = m[0][row] * determinant(minor);
    result = (row % 2 == 0) ? T(result + term) : T(result - term);
  }
  return result;
}

} // namespace metal

#endif // ENIGMA_METAL_MATRIX_H
