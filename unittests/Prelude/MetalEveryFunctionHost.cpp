//===- MetalEveryFunctionHost.cpp - MetalEveryFunction.inc on the host ----===//
//
// Compiled as generated host C++ is: the semantics library alone, no
// standard header (whose ::abs and friends would make calls ambiguous), and
// `using namespace metal;`. MetalHostTest calls the entry point below.
//
//===----------------------------------------------------------------------===//

#include "metal_semantics.h"

using namespace metal;

#include "MetalEveryFunction.inc"

void metal_every_function_on_host(float *F, half *H, bfloat *BF, char *I8,
                                  uchar *U8, short *I16, ushort *U16, int *I32,
                                  uint *U32, long *I64, ulong *U64, int i) {
  metal_every_function(F, H, BF, I8, U8, I16, U16, I32, U32, I64, U64, i);
}
