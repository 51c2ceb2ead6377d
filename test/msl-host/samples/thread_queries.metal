#include <metal_stdlib>
using namespace metal;

// 2-D copy with a scalar parameter and every thread-query attribute.
kernel void enigma_kernel_queries(device const float4* src [[buffer(0)]],
                                  constant uint& width [[buffer(1)]],
                                  device float4* dst [[buffer(2)]],
                                  device uint* info [[buffer(3)]],
                                  uint3 gid [[thread_position_in_grid]],
                                  uint3 lid [[thread_position_in_threadgroup]],
                                  uint3 group [[threadgroup_position_in_grid]],
                                  uint3 tpg [[threads_per_threadgroup]],
                                  uint3 grid [[threads_per_grid]],
                                  uint3 groups [[threadgroups_per_grid]],
                                  uint flat [[thread_index_in_threadgroup]],
                                  uint lane [[thread_index_in_simdgroup]],
                                  uint simd [[simdgroup_index_in_threadgroup]],
                                  uint simd_width [[threads_per_simdgroup]]) {
  if (gid.x >= width || gid.y >= grid.y)
    return;
  const uint index = gid.y * width + gid.x;
  float4 v = src[index];
  v = float4(float2(v.x, v.y), 0.0f, 1.0f);
  dst[index] = v * 2.0f;
  info[index] = lid.x + group.y * tpg.x + groups.z + flat + lane + simd + simd_width;
}
