#include <metal_stdlib>
using namespace metal;

// Metal has simd_sum, not simd_reduce_add.
// expect-error: use of undeclared identifier 'simd_reduce_add'
kernel void enigma_kernel_bad(device float* out [[buffer(0)]],
                              uint tid [[thread_position_in_grid]]) {
  out[tid] = simd_reduce_add(out[tid]);
}
