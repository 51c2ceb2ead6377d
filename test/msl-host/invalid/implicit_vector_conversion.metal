#include <metal_stdlib>
using namespace metal;
// expect-error: error:

// Metal has no implicit int4 -> float4 conversion.
kernel void enigma_kernel_bad(device float4* out [[buffer(0)]],
                              uint tid [[thread_position_in_grid]]) {
  int4 counts = int4(1, 2, 3, 4);
  float4 value = counts;
  out[tid] = value;
}
