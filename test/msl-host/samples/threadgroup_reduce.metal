#include <metal_stdlib>
using namespace metal;

// Tree reduction of one threadgroup's values in threadgroup memory.
kernel void enigma_kernel_reduce(device const float* input [[buffer(0)]],
                                 device float* partial [[buffer(1)]],
                                 uint tid [[thread_position_in_grid]],
                                 uint lid [[thread_position_in_threadgroup]],
                                 uint group [[threadgroup_position_in_grid]],
                                 uint threads [[threads_per_threadgroup]]) {
  threadgroup float scratch[256];
  scratch[lid] = input[tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = threads / 2; stride > 0; stride >>= 1) {
    if (lid < stride)
      scratch[lid] += scratch[lid + stride];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0)
    partial[group] = scratch[0];
  threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
}
