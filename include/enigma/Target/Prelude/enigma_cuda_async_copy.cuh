/*===- enigma_cuda_async_copy.cuh - Simdgroup async copies for CUDA -------===*
 *
 * Metal's simdgroup async copies (docs/reference/async-copy.md) on a warp:
 * the existing lanes of the warp split the copy between them; device ->
 * threadgroup chunks go through cp.async (sm_80+), 16, 8 or 4 bytes at a
 * time as the addresses, row pitches and row length allow, element by
 * element (plain loads and stores) otherwise; threadgroup -> device copies
 * are plain stores. Every copy commits one cp.async group per thread and
 * returns that group's number; enigma_async_copy_wait waits until the
 * groups of its events are complete (cp.async.wait_group) and then
 * synchronises the warp, so that every lane sees every copied element.
 *
 * The emitter declares `uint enigma_async_groups = 0u;` (the groups this
 * thread committed) at kernel entry and passes it with the kernel's
 * EnigmaLanes. Kernels with async copies use 1-D blocks (enigma_cuda_abi.h),
 * so each simdgroup is one warp.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_ASYNC_COPY_CUH
#define ENIGMA_CUDA_ASYNC_COPY_CUH

/* The number of the cp.async group a copy committed. */
typedef unsigned int enigma_async_event;

namespace enigma_async_detail {

__device__ inline unsigned int lane_id() {
  unsigned int id;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(id));
  return id;
}

/* One chunk of `Bytes` (4, 8 or 16) bytes from global to shared memory. */
template <int Bytes>
__device__ inline void cp_async(void *shared, const void *global) {
  unsigned int dst = (unsigned int)__cvta_generic_to_shared(shared);
  size_t src = __cvta_generic_to_global(global);
  if (Bytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst),
                 "l"(src)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst),
                 "l"(src), "n"(Bytes)
                 : "memory");
}

/* The type of a plain copy of `Bytes` bytes (1, 2, 4, 8 or 16). */
struct __align__(16) Bytes16 {
  unsigned int w[4];
};
template <int Bytes> struct Unit;
template <> struct Unit<1> { typedef unsigned char type; };
template <> struct Unit<2> { typedef unsigned short type; };
template <> struct Unit<4> { typedef unsigned int type; };
template <> struct Unit<8> { typedef unsigned long long type; };
template <> struct Unit<16> { typedef Bytes16 type; };

/* Copies a tile of `rows` rows of `row_bytes` bytes, the rows `dst_pitch` /
 * `src_pitch` bytes apart, in units of `Bytes` bytes (which divide every
 * address, pitch and the row length); this lane takes the units rank,
 * rank + count, ... in row-major order. With `Async`, units go through
 * cp.async (global -> shared); otherwise they are plain loads and stores. */
template <int Bytes, bool Async>
__device__ inline void copy_units(char *dst, unsigned long long dst_pitch,
                                  const char *src,
                                  unsigned long long src_pitch,
                                  unsigned long long row_bytes,
                                  unsigned long long rows, unsigned int rank,
                                  unsigned int count) {
  typedef typename Unit<Bytes>::type U;
  const unsigned long long per_row = row_bytes / Bytes;
  if (per_row == 0 || rows == 0)
    return;
  /* Walk (row, unit) without a division per unit: one step of `count`
   * units moves `jump_rows` rows and `jump_units` units on. */
  const unsigned long long jump_rows = count / per_row;
  const unsigned long long jump_units = count % per_row;
  unsigned long long r = rank / per_row, u = rank % per_row;
  while (r < rows) {
    char *d = dst + r * dst_pitch + u * Bytes;
    const char *s = src + r * src_pitch + u * Bytes;
    if (Async)
      cp_async<Bytes>(d, s);
    else
      *(U *)d = *(const U *)s;
    r += jump_rows;
    u += jump_units;
    if (u >= per_row) {
      u -= per_row;
      ++r;
    }
  }
}

/* The widest unit (16, 8, 4, 2 or 1 bytes) that divides both addresses,
 * the row length and, for more than one row, both pitches. */
__device__ inline unsigned int unit_bytes(const void *dst,
                                          unsigned long long dst_pitch,
                                          const void *src,
                                          unsigned long long src_pitch,
                                          unsigned long long row_bytes,
                                          unsigned long long rows) {
  unsigned long long bits = (unsigned long long)(size_t)dst |
                            (unsigned long long)(size_t)src | row_bytes;
  if (rows > 1)
    bits |= dst_pitch | src_pitch;
  if ((bits & 15u) == 0)
    return 16;
  if ((bits & 7u) == 0)
    return 8;
  if ((bits & 3u) == 0)
    return 4;
  if ((bits & 1u) == 0)
    return 2;
  return 1;
}

/* The whole copy: a tile of `rows` rows of `cols` elements of `size`
 * bytes, split among the existing lanes of the warp. */
__device__ inline void copy_tile(bool to_shared, void *dst,
                                 unsigned long long dst_per_row,
                                 const void *src,
                                 unsigned long long src_per_row,
                                 unsigned long long cols,
                                 unsigned long long rows, unsigned int size,
                                 EnigmaLanes lanes) {
  const unsigned int below = (1u << lane_id()) - 1u;
  const unsigned int rank = __popc(lanes.mask & below);
  const unsigned int count = __popc(lanes.mask);
  const unsigned long long row_bytes = cols * size;
  const unsigned long long dst_pitch = dst_per_row * size;
  const unsigned long long src_pitch = src_per_row * size;
  char *d = (char *)dst;
  const char *s = (const char *)src;
  /* Writes by the lanes before the copy (or reads of the old contents of
   * dst) happen before any lane's share of it. */
  __syncwarp(lanes.mask);
  switch (unit_bytes(dst, dst_pitch, src, src_pitch, row_bytes, rows)) {
  case 16:
    if (to_shared)
      copy_units<16, true>(d, dst_pitch, s, src_pitch, row_bytes, rows, rank,
                           count);
    else
      copy_units<16, false>(d, dst_pitch, s, src_pitch, row_bytes, rows, rank,
                            count);
    break;
  case 8:
    if (to_shared)
      copy_units<8, true>(d, dst_pitch, s, src_pitch, row_bytes, rows, rank,
                          count);
    else
      copy_units<8, false>(d, dst_pitch, s, src_pitch, row_bytes, rows, rank,
                           count);
    break;
  case 4:
    if (to_shared)
      copy_units<4, true>(d, dst_pitch, s, src_pitch, row_bytes, rows, rank,
                          count);
    else
      copy_units<4, false>(d, dst_pitch, s, src_pitch, row_bytes, rows, rank,
                           count);
    break;
  case 2: /* narrow elements: cp.async moves at least 4 bytes */
    copy_units<2, false>(d, dst_pitch, s, src_pitch, row_bytes, rows, rank,
                         count);
    break;
  default:
    copy_units<1, false>(d, dst_pitch, s, src_pitch, row_bytes, rows, rank,
                         count);
    break;
  }
}

__device__ inline enigma_async_event commit(unsigned int &groups) {
  asm volatile("cp.async.commit_group;\n" ::: "memory");
  return groups++;
}

/* How many of this thread's most recent groups may stay pending so that
 * the group of `event` is complete: the smallest over the events. */
__device__ inline unsigned int may_pend(unsigned int groups) { return ~0u; }
template <class... Rest>
__device__ inline unsigned int may_pend(unsigned int groups,
                                        enigma_async_event event,
                                        Rest... rest) {
  unsigned int after = groups - 1u - event; /* groups committed after it */
  unsigned int others = may_pend(groups, rest...);
  return after < others ? after : others;
}

} // namespace enigma_async_detail

__device__ inline enigma_async_event
enigma_async_copy_1d_d2t(unsigned int &groups, void *dst, const void *src,
                         unsigned long long count, unsigned int size,
                         EnigmaLanes lanes) {
  enigma_async_detail::copy_tile(true, dst, count, src, count, count, 1, size,
                                 lanes);
  return enigma_async_detail::commit(groups);
}

__device__ inline enigma_async_event
enigma_async_copy_1d_t2d(unsigned int &groups, void *dst, const void *src,
                         unsigned long long count, unsigned int size,
                         EnigmaLanes lanes) {
  enigma_async_detail::copy_tile(false, dst, count, src, count, count, 1, size,
                                 lanes);
  return enigma_async_detail::commit(groups);
}

__device__ inline enigma_async_event enigma_async_copy_2d_d2t(
    unsigned int &groups, void *dst, unsigned long long dst_per_row,
    const void *src, unsigned long long src_per_row, unsigned long long cols,
    unsigned long long rows, unsigned int size, EnigmaLanes lanes) {
  enigma_async_detail::copy_tile(true, dst, dst_per_row, src, src_per_row,
                                 cols, rows, size, lanes);
  return enigma_async_detail::commit(groups);
}

__device__ inline enigma_async_event enigma_async_copy_2d_t2d(
    unsigned int &groups, void *dst, unsigned long long dst_per_row,
    const void *src, unsigned long long src_per_row, unsigned long long cols,
    unsigned long long rows, unsigned int size, EnigmaLanes lanes) {
  enigma_async_detail::copy_tile(false, dst, dst_per_row, src, src_per_row,
                                 cols, rows, size, lanes);
  return enigma_async_detail::commit(groups);
}

/* Waits for the copies of `events`, then for the warp: each lane waited
 * for its own chunks, and __syncwarp makes them visible to the others. */
template <class... Events>
__device__ inline void enigma_async_copy_wait(unsigned int groups,
                                              EnigmaLanes lanes,
                                              Events... events) {
  switch (enigma_async_detail::may_pend(groups, events...)) {
  case 0: asm volatile("cp.async.wait_group 0;\n" ::: "memory"); break;
  case 1: asm volatile("cp.async.wait_group 1;\n" ::: "memory"); break;
  case 2: asm volatile("cp.async.wait_group 2;\n" ::: "memory"); break;
  case 3: asm volatile("cp.async.wait_group 3;\n" ::: "memory"); break;
  case 4: asm volatile("cp.async.wait_group 4;\n" ::: "memory"); break;
  case 5: asm volatile("cp.async.wait_group 5;\n" ::: "memory"); break;
  case 6: asm volatile("cp.async.wait_group 6;\n" ::: "memory"); break;
  default: asm volatile("cp.async.wait_group 7;\n" ::: "memory"); break;
  }
  __syncwarp(lanes.mask);
}

#endif /* ENIGMA_CUDA_ASYNC_COPY_CUH */
