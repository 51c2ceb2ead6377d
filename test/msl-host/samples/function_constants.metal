#include <metal_stdlib>
using namespace metal;

constant bool use_bias [[function_constant(0)]];
constant float bias_value [[function_constant(1)]];

kernel void enigma_kernel_bias(device float* data [[buffer(0)]],
                               uint tid [[thread_position_in_grid]]) {
  if (use_bias)
    data[tid] += bias_value;
}
