#include <metal_stdlib>
using namespace metal;

// Atomics live in device or threadgroup memory only.
// expect-error: no matching function for call to 'atomic_fetch_add_explicit'
kernel void enigma_kernel_bad(device uint* out [[buffer(0)]],
                              uint tid [[thread_position_in_grid]]) {
  atomic_uint counter;
  atomic_fetch_add_explicit(&counter, 1u, memory_order_relaxed);
  out[tid] = 0;
}
