#include <metal_stdlib>
using namespace metal;

// The constant address space is read-only.
// expect-error: read-only variable is not assignable
kernel void enigma_kernel_bad(constant float* table [[buffer(0)]],
                              uint tid [[thread_position_in_grid]]) {
  table[tid] = 1.0f;
}
