#include <metal_stdlib>
using namespace metal;

// [[buffer(n)]] binds memory: a plain uint cannot take it.
// expect-error: buffer_on_position.metal:8:
// expect-error: [[buffer(1)]], which needs a device or constant pointer or reference
kernel void enigma_kernel_bad(device float* out [[buffer(0)]],
                              uint tid [[buffer(1)]]) {
  out[tid] = 1.0f;
}
