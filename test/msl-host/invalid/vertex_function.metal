#include <metal_stdlib>
using namespace metal;

// expect-error: vertex_function.metal:6: vertex function enigma_vertex is not supported
// expect-error: compute (kernel) functions only
vertex float4 enigma_vertex(device const float4* positions [[buffer(0)]],
                            uint vid [[vertex_id]]) {
  return positions[vid];
}
