#include <metal_stdlib>
using namespace metal;

// Apple's AIR async-copy intrinsics, declared by their LLVM names as
// Enigma's MSL does.
struct _simdgroup_event_t;
typedef thread _simdgroup_event_t *enigma_async_event;
thread _simdgroup_event_t *enigma_async_copy_1d_d2t(ulong, ulong, threadgroup void *,
    const device void *, ulong) __asm("air.simdgroup_async_copy_1d.p3i8.p1i8");
thread _simdgroup_event_t *enigma_async_copy_2d_t2d(ulong, ulong, device void *, ulong,
    ulong, ulong2, const threadgroup void *, ulong, ulong, ulong2, long2, int)
    __asm("air.simdgroup_async_copy_2d.p1i8.p3i8");
void enigma_async_copy_wait(int, thread _simdgroup_event_t **)
    __asm("air.wait_simdgroup_events");

kernel void enigma_kernel_staged(device const float* src [[buffer(0)]],
                                 device float* dst [[buffer(1)]]) {
  threadgroup float tile[64];
  enigma_async_event in = enigma_async_copy_1d_d2t(sizeof(float), alignof(float),
      (threadgroup void *)tile, (const device void *)src, 64ul);
  { enigma_async_event events[] = {in}; enigma_async_copy_wait(1, events); }
  enigma_async_event out = enigma_async_copy_2d_t2d(sizeof(float), alignof(float),
      (device void *)dst, 8ul, 1ul, ulong2(8, 8), (const threadgroup void *)tile,
      8ul, 1ul, ulong2(8, 8), long2(0, 0), 0);
  { enigma_async_event events[] = {out}; enigma_async_copy_wait(1, events); }
}
