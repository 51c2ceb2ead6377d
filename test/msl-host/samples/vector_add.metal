#include <metal_stdlib>
using namespace metal;

kernel void enigma_kernel_vector_add(device const float* A [[buffer(0)]],
                                     device const float* B [[buffer(1)]],
                                     device float* C [[buffer(2)]],
                                     uint tid [[thread_position_in_grid]]) {
  C[tid] = A[tid] + B[tid];
}
