//===- msl_host_async_copy.h - Simdgroup async copies -----------*- C++ -*-===//
//
// Metal has no public function for simdgroup async copies; kernels declare
// Apple's AIR intrinsics by their LLVM names, e.g.
//   thread _simdgroup_event_t *copy(ulong, ulong, threadgroup void *,
//       const device void *, ulong) __asm("air.simdgroup_async_copy_1d.p3i8.p1i8");
// The definitions below carry the same symbol names, so such declarations
// bind to them. A copy is a simdgroup function: the lanes that reach it
// together (with the same arguments, as Metal requires) copy once, when all
// have arrived, so a lane can never redo a copy after another lane has
// already used or overwritten the destination. The copy is complete when
// the call returns; waiting does nothing.
//
// 2-D copies: element (r, c) of the destination tile, c < tile.x and
// r < tile.y, comes from element (r + offset.y, c + offset.x) of the source
// tile, or is zero where that lies outside the source tile (clamp mode 0).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MSL_HOST_ASYNC_COPY_H
#define ENIGMA_MSL_HOST_ASYNC_COPY_H

struct _simdgroup_event_t;

namespace metal {
namespace enigma_detail {

struct async_copy {
  ulong element_size;
  char *dst;
  ulong dst_per_row, dst_stride;
  ulong dst_cols, dst_rows;
  const char *src;
  ulong src_per_row, src_stride;
  ulong src_cols, src_rows;
  long offset_x, offset_y;
  int clamp;
};

inline void resolve_async_copy(EnigmaMslThread *const *lanes, uint32_t) {
  // Every lane passed the same copy: do it once, from the first.
  const async_copy &copy = *take<const async_copy *>(lanes[0]->in);
  const ulong size = copy.element_size;
  for (ulong r = 0; r < copy.dst_rows; ++r)
    for (ulong c = 0; c < copy.dst_cols; ++c) {
      char *to = copy.dst + (r * copy.dst_per_row + c * copy.dst_stride) * size;
      long sr = long(r) + copy.offset_y, sc = long(c) + copy.offset_x;
      if (sr >= 0 && sc >= 0 && ulong(sr) < copy.src_rows &&
          ulong(sc) < copy.src_cols)
        __builtin_memcpy(to,
                         copy.src + (ulong(sr) * copy.src_per_row +
                                     ulong(sc) * copy.src_stride) *
                                        size,
                         size);
      else
        __builtin_memset(to, 0, size);
    }
}

/// The event a copy returns: any non-null pointer.
inline _simdgroup_event_t *async_event() {
  static char token;
  return reinterpret_cast<_simdgroup_event_t *>(&token);
}

inline _simdgroup_event_t *run_async_copy(const async_copy &copy) {
  EnigmaMslThread *me = current;
  put(me->in, &copy);
  arrive(me, &resolve_async_copy);
  return async_event();
}

inline async_copy copy_1d(ulong size, void *dst, const void *src, ulong n) {
  return async_copy{size, (char *)dst, n, 1, n, 1, (const char *)src, n, 1, n,
                    1, 0, 0, 0};
}

inline async_copy copy_2d(ulong size, void *dst, ulong dst_per_row,
                          ulong dst_stride, ulong2 dst_tile, const void *src,
                          ulong src_per_row, ulong src_stride,
                          ulong2 src_tile, long2 offset, int clamp) {
  return async_copy{size, (char *)dst, dst_per_row, dst_stride, dst_tile.x,
                    dst_tile.y, (const char *)src, src_per_row, src_stride,
                    src_tile.x, src_tile.y, offset.x, offset.y, clamp};
}

// Device -> threadgroup and threadgroup -> device, 1-D and 2-D.
__attribute__((used)) inline _simdgroup_event_t *
async_copy_1d_d2t(ulong size, ulong, ENIGMA_MSL_THREADGROUP void *dst,
                  const ENIGMA_MSL_DEVICE void *src, ulong n)
    __asm("air.simdgroup_async_copy_1d.p3i8.p1i8");
inline _simdgroup_event_t *
async_copy_1d_d2t(ulong size, ulong, ENIGMA_MSL_THREADGROUP void *dst,
                  const ENIGMA_MSL_DEVICE void *src, ulong n) {
  return run_async_copy(copy_1d(size, (void *)dst, (const void *)src, n));
}

__attribute__((used)) inline _simdgroup_event_t *
async_copy_1d_t2d(ulong size, ulong, ENIGMA_MSL_DEVICE void *dst,
                  const ENIGMA_MSL_THREADGROUP void *src, ulong n)
    __asm("air.simdgroup_async_copy_1d.p1i8.p3i8");
inline _simdgroup_event_t *
async_copy_1d_t2d(ulong size, ulong, ENIGMA_MSL_DEVICE void *dst,
                  const ENIGMA_MSL_THREADGROUP void *src, ulong n) {
  return run_async_copy(copy_1d(size, (void *)dst, (const void *)src, n));
}

__attribute__((used)) inline _simdgroup_event_t *async_copy_2d_d2t(
    ulong size, ulong, ENIGMA_MSL_THREADGROUP void *dst, ulong dst_per_row,
    ulong dst_stride, ulong2 dst_tile, const ENIGMA_MSL_DEVICE void *src,
    ulong src_per_row, ulong src_stride, ulong2 src_tile, long2 offset,
    int clamp) __asm("air.simdgroup_async_copy_2d.p3i8.p1i8");
inline _simdgroup_event_t *async_copy_2d_d2t(
    ulong size, ulong, ENIGMA_MSL_THREADGROUP void *dst, ulong dst_per_row,
    ulong dst_stride, ulong2 dst_tile, const ENIGMA_MSL_DEVICE void *src,
    ulong src_per_row, ulong src_stride, ulong2 src_tile, long2 offset,
    int clamp) {
  return run_async_copy(copy_2d(size, (void *)dst, dst_per_row, dst_stride,
                                dst_tile, (const void *)src, src_per_row,
                                src_stride, src_tile, offset, clamp));
}

__attribute__((used)) inline _simdgroup_event_t *async_copy_2d_t2d(
    ulong size, ulong, ENIGMA_MSL_DEVICE void *dst, ulong dst_per_row,
    ulong dst_stride, ulong2 dst_tile, const ENIGMA_MSL_THREADGROUP void *src,
    ulong src_per_row, ulong src_stride, ulong2 src_tile, long2 offset,
    int clamp) __asm("air.simdgroup_async_copy_2d.p1i8.p3i8");
inline _simdgroup_event_t *async_copy_2d_t2d(
    ulong size, ulong, ENIGMA_MSL_DEVICE void *dst, ulong dst_per_row,
    ulong dst_stride, ulong2 dst_tile, const ENIGMA_MSL_THREADGROUP void *src,
    ulong src_per_row, ulong src_stride, ulong2 src_tile, long2 offset,
    int clamp) {
  return run_async_copy(copy_2d(size, (void *)dst, dst_per_row, dst_stride,
                                dst_tile, (const void *)src, src_per_row,
                                src_stride, src_tile, offset, clamp));
}

__attribute__((used)) inline void wait_simdgroup_events(int,
                                                        _simdgroup_event_t **)
    __asm("air.wait_simdgroup_events");
inline void wait_simdgroup_events(int, _simdgroup_event_t **) {}

} // namespace enigma_detail
} // namespace metal

#endif
