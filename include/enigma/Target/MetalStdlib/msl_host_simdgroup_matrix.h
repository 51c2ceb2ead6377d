//===- msl_host_simdgroup_matrix.h - 8x8 SIMD-group matrices ----*- C++ -*-===//
//
// On a GPU a simdgroup_matrix is spread over the 32 lanes of a simdgroup:
// lane l holds two elements, row fm(l), columns fn(l) and fn(l) + 1 (the
// layout MLX relies on, and Enigma's MSL; not confirmed on Apple hardware),
// which thread_elements() reads and writes. Every function on the matrix is
// executed by the lanes together.
//
// Here every lane keeps a whole 8x8 tile (row-major) and thread_elements()
// is its own pair inside it. Loads, stores and products are simdgroup
// functions done once when the lanes have arrived: they take each element
// from the lane that holds it (so pairs written through thread_elements()
// count, and a lane's later store can never overwrite what another lane
// had still to load), and loads and products give every lane the whole
// result. Products sum in float in k order and round once to the element
// type (as the CPU backend does). An element whose lane does not exist (a
// partial simdgroup) is taken from the first lane's tile.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MSL_HOST_SIMDGROUP_MATRIX_H
#define ENIGMA_MSL_HOST_SIMDGROUP_MATRIX_H

namespace metal {

namespace enigma_detail {
/// Row and first column of the pair lane `lane` holds.
constexpr uint32_t pair_row(uint32_t lane) {
  return ((lane >> 2) & 4u) + ((lane >> 1) & 3u);
}
constexpr uint32_t pair_column(uint32_t lane) {
  return ((lane >> 2) & 2u) * 2u + (lane & 1u) * 2u;
}
} // namespace enigma_detail

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
  /// The calling lane's two elements (see the file comment).
  vec<T, 2> &thread_elements() { return pair(); }
  const vec<T, 2> &thread_elements() const {
    return const_cast<simdgroup_matrix *>(this)->pair();
  }

  alignas(2 * sizeof(T)) T enigma_elements[Cols * Rows];

private:
  vec<T, 2> &pair() {
    const uint32_t lane = enigma_detail::current->index_in_simdgroup;
    return *reinterpret_cast<vec<T, 2> *>(
        &enigma_elements[enigma_detail::pair_row(lane) * Cols +
                         enigma_detail::pair_column(lane)]);
  }
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

/// The tile the lanes hold together: each pair from the lane that holds
/// it; `tile(lane)` is that lane's whole tile.
template <class T, class TileOf>
void gather(EnigmaMslThread *const *lanes, uint32_t count, TileOf tile,
            T *out) {
  const T *from[32];
  for (uint32_t l = 0; l < 32; ++l)
    from[l] = tile(0);
  for (uint32_t i = 0; i < count; ++i)
    from[lanes[i]->index_in_simdgroup] = tile(i);
  for (uint32_t l = 0; l < 32; ++l) {
    const uint32_t at = pair_row(l) * 8 + pair_column(l);
    out[at] = from[l][at];
    out[at + 1] = from[l][at + 1];
  }
}

/// A tile load or store as one lane asks for it.
template <class M, class T> struct tile_access {
  M *matrix;
  T *memory;
  ulong stride;
  ulong2 origin;
  bool transpose;
};

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
void resolve_tile_store(EnigmaMslThread *const *lanes, uint32_t count) {
  using E = std::remove_cv_t<T>;
  E tile[Cols * Rows];
  gather<E>(lanes, count,
            [&](uint32_t i) {
              return take<const tile_access<M, T> *>(lanes[i]->in)
                  ->matrix->enigma_elements;
            },
            tile);
  const auto &first = *take<const tile_access<M, T> *>(lanes[0]->in);
  for (int r = 0; r < Rows; ++r)
    for (int c = 0; c < Cols; ++c)
      first.memory[tile_index(r, c, first.stride, first.origin,
                              first.transpose)] = tile[r * Cols + c];
}

/// d = a * b + c as one lane asks for it.
template <class D, class A, class B> struct tile_product {
  D *d;
  const A *a;
  const B *b;
  const D *c;
};

template <class D, class A, class B, int Cols, int Rows, int K>
void resolve_tile_product(EnigmaMslThread *const *lanes, uint32_t count) {
  auto lane = [&](uint32_t i) {
    return take<const tile_product<D, A, B> *>(lanes[i]->in);
  };
  using TD = std::remove_cv_t<std::remove_reference_t<decltype(
      lane(0)->d->enigma_elements[0])>>;
  using TA = std::remove_cv_t<std::remove_reference_t<decltype(
      lane(0)->a->enigma_elements[0])>>;
  using TB = std::remove_cv_t<std::remove_reference_t<decltype(
      lane(0)->b->enigma_elements[0])>>;
  TA a[Rows * K];
  TB b[K * Cols];
  TD c[Rows * Cols];
  gather<TA>(lanes, count, [&](uint32_t i) { return lane(i)->a->enigma_elements; }, a);
  gather<TB>(lanes, count, [&](uint32_t i) { return lane(i)->b->enigma_elements; }, b);
  gather<TD>(lanes, count, [&](uint32_t i) { return lane(i)->c->enigma_elements; }, c);
  D result;
  for (int i = 0; i < Rows; ++i)
    for (int j = 0; j < Cols; ++j) {
      float acc = 0.0f;
      for (int k = 0; k < K; ++k)
        acc += float(a[i * K + k]) * float(b[k * Cols + j]);
      result.enigma_elements[i * Cols + j] = TD(acc + float(c[i * Cols + j]));
    }
  for (uint32_t i = 0; i < count; ++i)
    *lane(i)->d = result;
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
  using D = simdgroup_matrix<T, Cols, Rows>;
  using A = simdgroup_matrix<U, K, Rows>;
  using B = simdgroup_matrix<V, Cols, K>;
  const enigma_detail::tile_product<D, A, B> product{&d, &a, &b, &c};
  EnigmaMslThread *me = enigma_detail::current;
  enigma_detail::put(me->in, &product);
  enigma_detail::arrive(
      me, &enigma_detail::resolve_tile_product<D, A, B, Cols, Rows, K>);
}

template <class T, class U, class V, int Cols, int Rows, int K>
inline void simdgroup_multiply(simdgroup_matrix<T, Cols, Rows> &d,
                               const simdgroup_matrix<U, K, Rows> &a,
                               const simdgroup_matrix<V, Cols, K> &b) {
  const auto zero = make_filled_simdgroup_matrix<T, Cols, Rows>(T(0.0f));
  simdgroup_multiply_accumulate(d, a, b, zero);
}

} // namespace metal

#endif
