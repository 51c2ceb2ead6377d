#include <metal_stdlib>
using namespace metal;

// thread_index_in_simdgroup is one number.
// expect-error: scalar_only_attribute_as_vector.metal:8:
// expect-error: which needs uint or ushort
kernel void enigma_kernel_bad(device float* out [[buffer(0)]],
                              uint2 lane [[thread_index_in_simdgroup]]) {
  out[lane.x] = 1.0f;
}
