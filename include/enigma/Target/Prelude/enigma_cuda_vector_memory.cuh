/*===- enigma_cuda_vector_memory.cuh - Vector loads/stores in CUDA --------===*
 *
 * CUDA kernels read a vector of a scalar buffer with a plain pointer cast,
 * `*(float4*)(A + i)`, as Metal does (lib/Target/CFamily/EmitVectorMemory.cpp).
 * That gives one 8- or 16-byte load (ld.global.v4.f32) because the prelude's
 * vector types carry the alignment of their size; the caller guarantees
 * that the element index is a multiple of the lane count and every buffer
 * base is at least 256-byte aligned (cuMemAlloc). These checks keep that
 * promise honest should the vector types change.
 *===----------------------------------------------------------------------===*/
#ifndef ENIGMA_CUDA_VECTOR_MEMORY_CUH
#define ENIGMA_CUDA_VECTOR_MEMORY_CUH

static_assert(alignof(float4) == 16 && sizeof(float4) == 16,
              "vector loads need a 16-byte aligned float4");
static_assert(alignof(float2) == 8, "vector loads need an 8-byte float2");
static_assert(alignof(uint4) == 16, "vector loads need a 16-byte uint4");

#endif /* ENIGMA_CUDA_VECTOR_MEMORY_CUH */
