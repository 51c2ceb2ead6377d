#include <metal_stdlib>
using namespace metal;
// expect-error: no matching function for call to 'atomic_fetch_or_explicit'

// atomic_fetch_or is integer-only.
kernel void enigma_kernel_bad(device atomic_float* acc [[buffer(0)]],
                              uint tid [[thread_position_in_grid]]) {
  atomic_fetch_or_explicit(acc, 1.0f, memory_order_relaxed);
}
