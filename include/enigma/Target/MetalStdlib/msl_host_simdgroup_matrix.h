//===- msl_host_simdgroup_matrix.h - 8x8 SIMD-group matrices ----*- C++ -*-===//
//
// On a GPU a simdgroup_matrix is spread over the 32 lanes of a simdgroup and
// every function on it is executed by all lanes together. Here every lane
// holds the whole tile (64 elements, row-major): the lanes of a simdgroup
// call the same functions with the same arguments, so each ends with the
// tile the simdgroup would hold. Products are computed by each lane alone
// (no memory involved); they sum in float in k order and round once to the
// element type (as the CPU backend does). Loads and stores touch memory, so
// they are simdgroup functions done once for the lanes together.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MSL_HOST_SIMDGROUP_MATRIX_H
#define ENIGMA_MSL_HOST_SIMDGROUP_MATRIX_H

namespace metal {

template <class T, int Cols, int Rows> struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "simdgroup matrices are 8x8");
  static_assert(std::is_same<T, float>::value || std::is_same<T, half>::value ||
                    std::is_same<T, bfloat>::value,
                "simdgroup matrices hold float, half or bfloat");
  simdgroup_matrix() = default;
  /// A diagonal matrix with `diagonal` on the diagonal.
  explicit simdgroup_matrix(T diagonal) {
    for (int r = 0; r < Rows; ++r)
      for (int c = 0; c < Cols; ++c)
        enigma_elements[r * Cols + c] = r == c ? diagonal : T(0.0f);
  }
  /// This lane's two elements of the tile, as Enigma's backends spread it:
  /// lane l holds row l / 4, columns 2 * (l % 4) and the next.
  vec<T, 2> thread_elements() const {
    uint32_t lane = enigma_detail::current->index_in_simdgroup;
    const T *row = enigma_elements + (lane / 4) * Cols + (lane % 4) * 2;
    return vec<T, 2>(row[0], row[1]);
  }

  T enigma_elements[Cols * Rows];
};
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<bfloat, 8, 8> simdgroup_bfloat8x8;

template <class T, int Cols, int Rows>
inline simdgroup_matrix<T, Cols, Rows>
make_filled_simdgroup_matrix(const T value) {
  simdgroup_matrix<T, Cols, Rows> m;
  for (int i = 0; i < Cols * Rows; ++i)
    m.enigma_elements[i] = value;
  return m;
}

namespace enigma_detail {
/// Element (r, c) of the tile at `origin` (column, row) of a row-major
/// matrix with `stride` elements per row; transposed: element (c, r).
inline ulong tile_index(int r, int c, ulong stride, ulong2 origin,
                        bool transpose) {
  return transpose ? (origin.y + ulong(c)) * stride + origin.x + ulong(r)
                   : (origin.y + ulong(r)) * stride + origin.x + ulong(c);
}

/// A tile load or store as one lane asks for it.
template <class M, class T> struct tile_access {
  M *matrix;
  T *memory;
  ulong stride;
  ulong2 origin;
  bool transpose;
};

/// Loads and stores are simdgroup functions done once, when the lanes
/// have arrived (as the lanes of a SIMD unit execute them together): no lane
/// can store a tile before every lane has loaded what it overwrites.
template <class M, class T, int Cols, int Rows>
void resolve_tile_load(EnigmaMslThread *const *lanes, uint32_t count) {
  const auto &first = *take<const tile_access<M, T> *>(lanes[0]->in);
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c)
      first.matrix->enigma_elements[r * Cols + c] = first.memory[tile_index(
          r, c, first.stride, first.origin, first.transpose)];
  for (uint32_t i = 1; i < count; ++i)
    *take<const tile_access<M, T> *>(lanes[i]->in)->matrix = *first.matrix;
}

template <class M, class T, int Cols, int Rows>
void resolve_tile_store(EnigmaMslThread *const *lanes, uint32_t) {
  const auto &first = *take<const tile_access<M, T> *>(lanes[0]->in);
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c)
      first.memory[tile_index(r, c, first.stride, first.origin,
                              first.transpose)] =
          first.matrix->enigma_elements[r * Cols + c];
}
} // namespace enigma_detail

#define ENIGMA_MSL_MATRIX_MEMORY(space)                                        \
  template <class T, int Cols, int Rows>                                       \
  inline void simdgroup_load(simdgroup_matrix<T, Cols, Rows> &d,               \
                             const space enigma_detail::exactly<T> *src,       \
                             ulong elements_per_row = Cols,                    \
                             ulong2 matrix_origin = ulong2(0),                 \
                             bool transpose_matrix = false) {                  \
    using M = simdgroup_matrix<T, Cols, Rows>;                                 \
    const enigma_detail::tile_access<M, const T> access{                       \
        &d, (const T *)src, elements_per_row, matrix_origin,                   \
        transpose_matrix};                                                     \
    EnigmaMslThread *me = enigma_detail::current;                              \
    enigma_detail::put(me->in, &access);                                       \
    enigma_detail::arrive(                                                     \
        me, &enigma_detail::resolve_tile_load<M, const T, Cols, Rows>);        \
  }                                                                            \
  template <class T, int Cols, int Rows>                                       \
  inline void simdgroup_store(const simdgroup_matrix<T, Cols, Rows> &a,        \
                              space enigma_detail::exactly<T> *dst,            \
                              ulong elements_per_row = Cols,                   \
                              ulong2 matrix_origin = ulong2(0),                \
                              bool transpose_matrix = false) {                 \
    using M = simdgroup_matrix<T, Cols, Rows>;                                 \
    const enigma_detail::tile_access<const M, T> access{                       \
        &a, (T *)dst, elements_per_row, matrix_origin, transpose_matrix};      \
    EnigmaMslThread *me = enigma_detail::current;                              \
    enigma_detail::put(me->in, &access);                                       \
    enigma_detail::arrive(                                                     \
        me, &enigma_detail::resolve_tile_store<const M, T, Cols, Rows>);       \
  }
ENIGMA_MSL_MATRIX_MEMORY(ENIGMA_MSL_DEVICE)
ENIGMA_MSL_MATRIX_MEMORY(ENIGMA_MSL_THREADGROUP)
#undef ENIGMA_MSL_MATRIX_MEMORY

/// d = a * b + c: (Rows x K) * (K x Cols) + (Rows x Cols).
template <class T, class U, class V, int Cols, int Rows, int K>
inline void simdgroup_multiply_accumulate(
    simdgroup_matrix<T, Cols, Rows> &d, const simdgroup_matrix<U, K, Rows> &a,
    const simdgroup_matrix<V, Cols, K> &b,
    const simdgroup_matrix<T, Cols, Rows> &c) {
  simdgroup_matrix<T, Cols, Rows> result;
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < Cols; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k)
        acc += float(a.enigma_elements[i * K + k]) *
               float(b.enigma_elements[k * Cols + j]);
      result.enigma_elements[i * Cols + j] =
          T(acc + float(c.enigma_elements[i * Cols + j]));
    }
  d = result;
}

template <class T, class U, class V, int Cols, int Rows, int K>
inline void simdgroup_multiply(simdgroup_matrix<T, Cols, Rows> &d,
                               const simdgroup_matrix<U, K, Rows> &a,
                               const simdgroup_matrix<V, Cols, K> &b) {
  simdgroup_multiply_accumulate(d, a, b,
                                make_filled_simdgroup_matrix<T, Cols, Rows>(
                                    T(0.0f)));
}

} // namespace metal

#endif
