#include <metal_stdlib>
using namespace metal;

// A thread position is a number, not a pointer.
// expect-error: position_on_pointer.metal:8:
// expect-error: [[thread_position_in_grid]], which needs uint, uint2 or uint3
kernel void enigma_kernel_bad(device float* out [[buffer(0)]],
                              device uint* tid [[thread_position_in_grid]]) {
  out[0] = 1.0f;
}
