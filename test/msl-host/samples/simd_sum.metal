#include <metal_stdlib>
using namespace metal;

kernel void enigma_kernel_simd(device const float* input [[buffer(0)]],
                               device float* sums [[buffer(1)]],
                               device int* scans [[buffer(2)]],
                               uint tid [[thread_position_in_grid]],
                               uint lane [[thread_index_in_simdgroup]]) {
  const float total = simd_sum(input[tid]);
  const int prefix = simd_prefix_exclusive_sum(int(lane));
  const float neighbour = simd_shuffle_down(total, ushort(1)) + simd_shuffle_xor(total, ushort(16));
  const float first = simd_broadcast(input[tid], ushort(0)) + quad_sum(input[tid]) + quad_shuffle(total, ushort(2));
  simdgroup_barrier(mem_flags::mem_none);
  if (simd_is_first())
    sums[tid / 32] = total + neighbour * 0.0f + first * 0.0f;
  scans[tid] = prefix + simd_max(prefix) + int(simd_all(prefix >= 0));
}
