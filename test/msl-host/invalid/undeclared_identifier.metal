#include <metal_stdlib>
using namespace metal;
// expect-error: use of undeclared identifier 'tidx'

// `tidx` is never declared.
kernel void enigma_kernel_bad(device float* out [[buffer(0)]],
                              uint tid [[thread_position_in_grid]]) {
  out[tid] = float(tidx);
}
