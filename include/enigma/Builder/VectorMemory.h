//===- VectorMemory.h - Vector loads and stores on scalar memory -*- C++ -*-===//
//
// Reads or writes 2 or 4 consecutive elements of a scalar buffer (or
// threadgroup array) as one vector, starting at an element index:
//
//   enigma::Value v = enigma::vectorLoad(k, A, i, 4);   // float4 from A[i..i+3]
//   enigma::vectorStore(k, C, i, v * 2.0);
//
// The targets print one wide access (MSL `*(device float4*)(A + i)`, CUDA the
// same with its 16-byte-aligned float4, host C++ a memcpy the compiler turns
// into one vector move). The caller promises that `index` is a multiple of
// `lanes` (so the address is aligned to the vector's size, given the buffer
// base is at least 16-byte aligned, which every runtime guarantees); the
// Tensor layer (python/enigma/_tensor.py) emits these only when it can prove
// that. A misaligned index is undefined on GPUs, as in Metal and CUDA.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_VECTORMEMORY_H
#define ENIGMA_BUILDER_VECTORMEMORY_H

#include "enigma/Builder/Cooperation.h"
#include "enigma/Builder/KernelBuilder.h"

namespace enigma {

/// The scalar memory a vector access works on: a buffer parameter (not a
/// vec_width vector buffer) or a threadgroup array.
class VectorMemoryTarget {
public:
  VectorMemoryTarget(const Buffer &b) : buffer(&b) {}
  VectorMemoryTarget(const ThreadgroupArray &a) : array(&a) {}
  const Buffer *buffer = nullptr;
  const ThreadgroupArray *array = nullptr;
};

/// Elements index .. index+lanes-1 of `mem` as one `lanes`-wide vector
/// (lanes 2 or 4). Throws EnigmaError for other widths, bool memory, vector
/// buffers and non-integer indices.
Value vectorLoad(KernelBuilder &k, VectorMemoryTarget mem, Value index,
                 unsigned lanes);
/// Writes the lanes of `value` (2 or 4 lanes, converted to the memory's
/// dtype) to elements index .. index+lanes-1 of `mem`.
void vectorStore(KernelBuilder &k, VectorMemoryTarget mem, Value index,
                 Value value);

/// The largest power of two that `v` (an integer scalar) is known to be a
/// multiple of, from how it was built: constants, `x * c`, `x << c`, sums
/// and differences of multiples, `x & mask`, integer casts. 1 when nothing
/// is known (e.g. a thread position); capped at 2^31 (0 itself gives the
/// cap). The Tensor layer asks this before choosing a vector access, so an
/// offset such as `block * 512 + thread * 4` allows float4 accesses.
uint64_t knownPowerOfTwoDivisor(KernelBuilder &k, Value v);

} // namespace enigma

#endif
