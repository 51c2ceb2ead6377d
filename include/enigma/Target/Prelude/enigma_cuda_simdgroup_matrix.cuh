/*===- enigma_cuda_simdgroup_matrix.cuh - 8x8 simdgroup matrices -*- CUDA -*-===*
 *
 * A simdgroup matrix is held by the 32 lanes of a warp: each lane keeps a
 * pair M (float2 / half2) with elements 2l and 2l+1 of the 8x8 tile in
 * row-major order (row l / 4, columns 2 * (l % 4) and the next), the layout
 * the MSL, CPU and CUDA backends agree on (docs/reference/simd.md). Loads and
 * stores touch each lane's own two elements; the product reads the other
 * lanes' elements with warp shuffles. Every lane of the warp must take part
 * (a full simdgroup: Metal's rule too).
 *
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_SIMDGROUP_MATRIX_CUH
#define ENIGMA_CUDA_SIMDGROUP_MATRIX_CUH

/* Transpose: element (r, c) of the tile is src[c * epr + r]. */
template <class M, bool Transpose = false, class T>
__device__ inline M enigma_simdgroup_matrix_load(const T *src, uint epr) {
  uint l = enigma_thread_index_in_simdgroup();
  unsigned long long row = l / 4u, col = (l % 4u) * 2u;
  M r;
  if (Transpose) {
    r.x = src[col * epr + row];
    r.y = src[(col + 1u) * epr + row];
  } else {
    const T *p = src + row * epr + col;
    r.x = p[0];
    r.y = p[1];
  }
  return r;
}

template <class M, class T>
__device__ inline void enigma_simdgroup_matrix_store(const M &m, T *dst,
                                                     uint epr) {
  uint l = enigma_thread_index_in_simdgroup();
  T *p = dst + (unsigned long long)(l / 4u) * epr + (l % 4u) * 2u;
  p[0] = m.x;
  p[1] = m.y;
}

/* d = a * b + c: lane l computes row i = l / 4, columns j0 = 2 * (l % 4)
 * and j0 + 1. Element (r, c) of a tile lives in lane r * 4 + c / 2,
 * component c % 2. Sums in float, rounded once. */
template <class M>
__device__ inline M enigma_simdgroup_multiply_accumulate(const M &a,
                                                         const M &b,
                                                         const M &c) {
  typedef typename M::value_type T;
  const unsigned full = 0xffffffffu;
  uint l = enigma_thread_index_in_simdgroup();
  uint i = l / 4u, j0 = (l % 4u) * 2u;
  float ax = float(a.x), ay = float(a.y), bx = float(b.x), by = float(b.y);
  float acc0 = 0.0f, acc1 = 0.0f;
#pragma unroll
  for (uint k = 0; k < 8u; ++k) {
    /* A(i, k) from lane i * 4 + k / 2; B(k, j0) and B(k, j0 + 1) from lane
     * k * 4 + j0 / 2. */
    float a0 = __shfl_sync(full, ax, i * 4u + k / 2u);
    float a1 = __shfl_sync(full, ay, i * 4u + k / 2u);
    float aik = (k % 2u) ? a1 : a0;
    float b0 = __shfl_sync(full, bx, k * 4u + j0 / 2u);
    float b1 = __shfl_sync(full, by, k * 4u + j0 / 2u);
    acc0 += aik * b0;
    acc1 += aik * b1;
  }
  M r;
  r.x = T(acc0 + float(c.x));
  r.y = T(acc1 + float(c.y));
  return r;
}

template <class M, class T>
__device__ inline M enigma_make_filled_simdgroup_matrix(T value) {
  typedef typename M::value_type E;
  M r;
  r.x = E(value);
  r.y = E(value);
  return r;
}

#endif /* ENIGMA_CUDA_SIMDGROUP_MATRIX_CUH */
