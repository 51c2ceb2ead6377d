//===- enigma_cpu_async_copy.h - Simdgroup async copies on the CPU -*- C++ -*-===//
//
// Metal's simdgroup async copies (docs/reference/async-copy.md) as plain
// copies. Each lane of the simdgroup copies its share, a contiguous run of
// the tile's elements in row-major order, where the emitter prints the copy
// inside its thread loop; enigma.async_copy_wait splits the thread loops
// (CppEmitter), so every lane's share is done before any lane goes on.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_CPU_ASYNC_COPY_H
#define ENIGMA_CPU_ASYNC_COPY_H

#include <stdint.h>
#include <string.h>

// Copies complete at once, so an event carries nothing (the emitter prints
// it as 0u; variables of the type exist only where IR carries an event
// through an if or a loop).
typedef uint32_t enigma_async_event;

// Lane `lane` of a simdgroup of `lanes` existing lanes copies elements
// [lane * n / lanes, (lane + 1) * n / lanes) of the rows * cols tile, each
// `size` bytes, rows `dst_per_row` / `src_per_row` elements apart.
static inline void
enigma_cpu_async_copy_2d(void *dst, uint64_t dst_per_row, const void *src,
                         uint64_t src_per_row, uint64_t cols, uint64_t rows,
                         uint64_t size, uint32_t lane, uint32_t lanes) {
  const uint64_t n = cols * rows;
  if (n == 0 || lanes == 0)
    return;
  // 128-bit products: n * lane cannot overflow.
  uint64_t begin = (uint64_t)((unsigned __int128)n * lane / lanes);
  const uint64_t end = (uint64_t)((unsigned __int128)n * (lane + 1) / lanes);
  while (begin < end) {
    const uint64_t r = begin / cols, c = begin % cols;
    const uint64_t run = (cols - c < end - begin) ? cols - c : end - begin;
    memcpy((char *)dst + (r * dst_per_row + c) * size,
           (const char *)src + (r * src_per_row + c) * size, run * size);
    begin += run;
  }
}

static inline void
enigma_cpu_async_copy_1d(void *dst, const void *src, uint64_t count,
                         uint64_t size, uint32_t lane, uint32_t lanes) {
  enigma_cpu_async_copy_2d(dst, count, src, count, count, 1, size, lane,
                                  lanes);
}

// The lane of the thread with linear index `linear` in its threadgroup of
// `threads` threads, and the number of lanes its simdgroup has (fewer than
// 32 at the end of a partial threadgroup).
static inline uint32_t enigma_cpu_simd_lane(uint32_t linear) {
  return linear & 31u;
}
static inline uint32_t enigma_cpu_simd_lanes(uint32_t linear,
                                             uint32_t threads) {
  const uint32_t first = linear & ~31u;
  return threads - first < 32u ? threads - first : 32u;
}

#endif // ENIGMA_CPU_ASYNC_COPY_H
