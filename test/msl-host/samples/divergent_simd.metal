#include <metal_stdlib>
using namespace metal;

// Simdgroup functions on divergent paths, votes, quads and shuffles with
// fill (each path takes part with its own lanes).
kernel void enigma_kernel_votes(device const int* values [[buffer(0)]],
                                device int* out [[buffer(1)]],
                                uint gid [[thread_position_in_grid]],
                                uint lane [[thread_index_in_simdgroup]]) {
  const int v = values[gid];
  int r;
  if ((lane & 1) == 0)
    r = simd_sum(v);
  else
    r = simd_min(v) + quad_max(v);
  const simd_vote vote = simd_ballot(v > 0);
  r += int(ulong(vote) & 0xff) + int(vote.any()) + int(simd_all(v != 0));
  r += simd_shuffle_and_fill_down(v, -v, ushort(2)) + quad_shuffle_rotate_up(v, ushort(1));
  if (simd_is_first())
    r += simd_broadcast_first(v);
  simdgroup_barrier(mem_flags::mem_none);
  out[gid] = r;
}
