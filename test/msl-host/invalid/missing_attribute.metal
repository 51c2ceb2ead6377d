#include <metal_stdlib>
using namespace metal;

// Every kernel parameter needs an attribute.
// expect-error: missing_attribute.metal:7: kernel enigma_kernel_bad, parameter n has no attribute
kernel void enigma_kernel_bad(device float* out [[buffer(0)]],
                              uint n) {
  out[0] = float(n);
}
