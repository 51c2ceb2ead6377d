#include <metal_stdlib>
using namespace metal;

// A threadgroup pointer where a device pointer is expected.
// expect-error: no matching function for call to 'scale'
// expect-error: no known conversion from 'threadgroup float[64]' to 'device float *'
static void scale(device float* data, uint i) { data[i] *= 2.0f; }

kernel void enigma_kernel_bad(device float* out [[buffer(0)]],
                              uint lid [[thread_position_in_threadgroup]]) {
  threadgroup float tile[64];
  tile[lid] = out[lid];
  scale(tile, lid);
}
