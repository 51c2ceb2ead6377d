#include <metal_stdlib>
using namespace metal;

kernel void enigma_kernel_mixed(device const half* h [[buffer(0)]],
                                device const bfloat* b [[buffer(1)]],
                                device half4* out4 [[buffer(2)]],
                                device float* outf [[buffer(3)]],
                                device uint* packed [[buffer(4)]],
                                uint tid [[thread_position_in_grid]]) {
  const half x = h[tid];
  const half y = clamp(x * 2.0h, half(0), half(1));
  const float z = float(b[tid]) + float(fma(bfloat(1.5f), b[tid], bfloat(0.25f)));
  const half4 v = half4(x, y, sqrt(abs(x)), fract(x));
  out4[tid] = mix(v, half4(1.0h), half(0.5f)) + smoothstep(half(0), half(1), v);
  outf[tid] = z + dot(float4(v), float4(1.0f)) + length(float3(1, 2, 3));
  packed[tid] = pack_float_to_unorm4x8(float4(v)) ^ as_type<uint>(z) ^ popcount(tid) ^
                extract_bits(tid, 4u, 4u) ^ uint(isnan(z));
}
