#include <metal_stdlib>
using namespace metal;

// expect-error: threadgroup_parameter.metal:6: kernel enigma_kernel_bad, parameter scratch: the MSL host runtime gives threadgroup memory at index 0 only
kernel void enigma_kernel_bad(device float* out [[buffer(0)]],
                              threadgroup float* scratch [[threadgroup(1)]],
                              uint tid [[thread_position_in_grid]]) {
  scratch[0] = 1.0f;
  out[tid] = scratch[0];
}
