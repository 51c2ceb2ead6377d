#include <metal_stdlib>
using namespace metal;

// A constant buffer handed on as device memory.
// expect-error: cannot initialize a variable of type 'device float *'
kernel void enigma_kernel_bad(constant float* in [[buffer(0)]],
                              device float* out [[buffer(1)]],
                              uint tid [[thread_position_in_grid]]) {
  device float* alias = in;
  out[tid] = alias[tid];
}
