#include <metal_stdlib>
using namespace metal;

// expect-error: duplicate_buffer_index.metal:6: kernel enigma_kernel_bad: two parameters use [[buffer(0)]]
kernel void enigma_kernel_bad(device float* a [[buffer(0)]],
                              device float* b [[buffer(0)]],
                              uint tid [[thread_position_in_grid]]) {
  a[tid] = b[tid];
}
