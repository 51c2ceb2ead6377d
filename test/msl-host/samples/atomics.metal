#include <metal_stdlib>
using namespace metal;

kernel void enigma_kernel_histogram(device const uint* values [[buffer(0)]],
                                    device atomic_uint* bins [[buffer(1)]],
                                    device atomic_int* signed_bins [[buffer(2)]],
                                    device atomic_float* total [[buffer(3)]],
                                    uint tid [[thread_position_in_grid]],
                                    uint lid [[thread_position_in_threadgroup]]) {
  threadgroup atomic_uint local_count[1];
  if (lid == 0)
    atomic_store_explicit(&local_count[0], 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint value = values[tid];
  atomic_fetch_add_explicit(&bins[value % 16], 1u, memory_order_relaxed);
  atomic_fetch_max_explicit(&signed_bins[0], int(value), memory_order_relaxed);
  atomic_fetch_min_explicit(&signed_bins[1], -int(value), memory_order_relaxed);
  atomic_fetch_or_explicit(&bins[16], 1u << (value & 31), memory_order_relaxed);
  atomic_fetch_add_explicit(total, float(value), memory_order_relaxed);
  atomic_fetch_add_explicit(&local_count[0], 1u, memory_order_relaxed);
  uint expected = atomic_load_explicit(&bins[17], memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&bins[17], &expected, expected + value,
                                                memory_order_relaxed, memory_order_relaxed)) {
  }
  const uint old = atomic_exchange_explicit(&bins[18], value, memory_order_relaxed);
  atomic_fetch_sub_explicit(&bins[19], old & 1u, memory_order_relaxed);
}
