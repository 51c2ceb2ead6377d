#include <metal_stdlib>
using namespace metal;

// expect-error: texture_parameter.metal:5: kernel enigma_kernel_bad, parameter image: textures are not supported by the MSL host runtime (texture2d)
kernel void enigma_kernel_bad(texture2d<float, access::read> image [[texture(0)]],
                              device float* out [[buffer(0)]],
                              uint2 gid [[thread_position_in_grid]]) {
  out[gid.x] = image.read(gid).x;
}
