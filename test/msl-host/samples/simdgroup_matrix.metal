#include <metal_stdlib>
using namespace metal;

kernel void enigma_kernel_mma(device const float* A [[buffer(0)]],
                              device const float* B [[buffer(1)]],
                              device float* C [[buffer(2)]],
                              device float* D [[buffer(3)]],
                              uint tid [[thread_position_in_grid]]) {
  simdgroup_float8x8 a, b;
  simdgroup_matrix<float, 8, 8> c = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
  simdgroup_load(a, A, 8);
  simdgroup_load(b, B, 8, ulong2(0, 0), true);
  simdgroup_multiply_accumulate(c, a, b, c);
  simdgroup_store(c, C, 8);
  float4x4 m = float4x4(2.0f);
  const float4 column = transpose(m) * float4(1.0f);
  D[tid] = column.x + determinant(float3x3(1.0f)) + (m * m)[0][0];
}
