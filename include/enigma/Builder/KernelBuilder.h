//===- KernelBuilder.h - The C++ tracing API --------------------*- C++ -*-===//
//
// Write a kernel in C++ by calling these functions (or the operators on
// Value); each call creates enigma-dialect ops directly. The Python front end
// is a binding over this same class.
//
//   enigma::KernelBuilder k("vector_add");
//   auto A = k.addBuffer("A", enigma::DType::F32);
//   auto B = k.addBuffer("B", enigma::DType::F32);
//   auto C = k.addBuffer("C", enigma::DType::F32);
//   enigma::Value tid = k.threadPositionInGrid();
//   C[tid] = A[tid] + B[tid];
//   enigma::KernelArtifact art = k.compile();
//
// The header has no MLIR types, so C++ users need only the Enigma headers.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_KERNELBUILDER_H
#define ENIGMA_BUILDER_KERNELBUILDER_H

#include "enigma/Runtime/KernelArtifact.h"
#include "enigma/Support/DType.h"
#include "enigma/Support/Error.h"

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace enigma {

class KernelBuilder;

/// The thread and grid queries of Metal (docs/reference/core.md).
enum class ThreadQuery : uint8_t {
  ThreadPositionInGrid,
  ThreadPositionInThreadgroup,
  ThreadgroupPositionInGrid,
  ThreadsPerThreadgroup,
  ThreadsPerGrid,
  ThreadgroupsPerGrid,
  ThreadIndexInThreadgroup,
  ThreadIndexInSimdgroup,
  SimdgroupIndexInThreadgroup,
  ThreadsPerSimdgroup,
  SimdgroupsPerThreadgroup,
};
/// True for the queries that take a dimension (x, y, z).
bool queryHasDim(ThreadQuery q);

enum class BinaryOp : uint8_t {
  Add, Sub, Mul, Div, FloorDiv, Rem, And, Or, Xor, Shl, Shr, Min, Max,
};
enum class CompareOp : uint8_t { EQ, NE, LT, LE, GT, GE };
enum class UnaryOp : uint8_t { Neg, Not };

/// Barrier memory flags (combinable): Metal's mem_flags.
enum MemFlagBits : unsigned {
  MemNone = 0,
  MemDevice = 1,
  MemThreadgroup = 2,
  MemTexture = 4,
};

/// A traced value: an SSA value of the kernel being built, with its Enigma
/// dtype (which, unlike MLIR's signless integers, knows signedness).
class Value {
public:
  Value() = default;
  /// Element type (of each lane, for vectors).
  DType dtype() const { return type; }
  /// 1 for scalars, 2..4 for vectors.
  unsigned lanes() const { return laneCount; }
  KernelBuilder *builder() const { return owner; }
  bool valid() const { return owner != nullptr; }
  /// Opaque handle of the underlying mlir::Value.
  void *handle() const { return impl; }

private:
  friend class KernelBuilder;
  friend struct ValueAccess;
  Value(KernelBuilder *owner, void *impl, DType type, unsigned lanes = 1)
      : owner(owner), impl(impl), type(type), laneCount(lanes) {}
  KernelBuilder *owner = nullptr;
  void *impl = nullptr;
  DType type = DType::F32;
  unsigned laneCount = 1;
};

class Buffer;

/// `buf[index]` in C++: reads as a Value, assigns as a store.
class BufferElement {
public:
  operator Value() const;
  BufferElement &operator=(const Value &v);
  BufferElement &operator=(const BufferElement &other);

private:
  friend class Buffer;
  BufferElement(const Buffer &buf, Value index) : buf(buf), index(index) {}
  const Buffer &buf;
  Value index;
};

/// A buffer parameter of the kernel.
class Buffer {
public:
  Buffer() = default;
  DType dtype() const { return type; }
  /// Elements per buffer entry: 1, or 2..4 for a vector buffer (vec_width).
  unsigned lanes() const { return laneCount; }
  unsigned paramIndex() const { return param; }
  Value load(Value index) const;
  void store(Value index, Value value) const;
  BufferElement operator[](Value index) const { return {*this, index}; }

private:
  friend class KernelBuilder;
  Buffer(KernelBuilder *owner, void *impl, DType type, unsigned param,
         unsigned lanes)
      : owner(owner), impl(impl), type(type), param(param), laneCount(lanes) {}
  KernelBuilder *owner = nullptr;
  void *impl = nullptr;
  DType type = DType::F32;
  unsigned param = 0;
  unsigned laneCount = 1;
};

struct CompileOptions {
  /// Run canonicalize/CSE and the project's cleanup passes.
  bool optimize = true;
  /// Print source locations in CompiledKernel::mlirSource.
  bool mlirLocations = false;
  /// Bounds-checked mode: every buffer and threadgroup access checks its
  /// index; the first violation is reported after the dispatch.
  bool boundsCheck = false;
  /// CUDA: whole tile copies through the Tensor Memory Accelerator on sm_90
  /// (docs/design/tma.md); marks the kernel `enigma.cuda_tma`.
  bool cudaTma = false;
};

class KernelBuilder {
public:
  explicit KernelBuilder(const std::string &name);
  ~KernelBuilder();
  KernelBuilder(const KernelBuilder &) = delete;
  KernelBuilder &operator=(const KernelBuilder &) = delete;

  const std::string &name() const;

  // --- Parameters, in declaration order ---------------------------------
  /// A `device T*` buffer; with `lanes` 2..4 a buffer of T vectors
  /// (`device float4*`), whose loads and stores are vectors.
  Buffer addBuffer(const std::string &name, DType dtype, unsigned lanes = 1);
  /// A by-value scalar. An integer scalar may promise `multipleOf` > 1: the
  /// dispatcher refuses values that are not multiples of it, and offsets
  /// built from the scalar (`row * n`) then count as multiples for vector
  /// accesses (knownPowerOfTwoDivisor).
  Value addScalar(const std::string &name, DType dtype,
                  uint64_t multipleOf = 1);

  /// Source location attached to the ops created from now on.
  void setLocation(const std::string &file, unsigned line);

  /// The kernel runs only in full threadgroups of exactly `threads` threads
  /// (enigma.threadgroup_size): the runtime refuses other launches, and the
  /// targets may treat the size as a constant. Asking twice for different
  /// sizes is an EnigmaError.
  void requireThreadgroupSize(unsigned threads);
  /// The kernel reads or writes `buffer` as a `rows x cols` row-major
  /// matrix with rows `pitch` elements apart (enigma.matrix_extents): the
  /// runtime refuses a launch whose buffer holds fewer than
  /// `(rows - 1) * pitch + cols` elements. Sides are scalar parameters or
  /// constants; a side computed in the kernel cannot be judged before the
  /// launch, and then nothing is recorded; nor inside an if or a loop,
  /// where the part may not run at all. `what` starts the message
  /// ("gemm_block reads A as an m x k matrix (pitch lda)"). `factors`:
  /// each side's divisor and scale (ceil(side / divisor) * scale; rows,
  /// cols, pitch in turn), for sides counted in blocks or multiples.
  void requireMatrixExtent(const Buffer &buffer, const Value &rows,
                           const Value &cols, const Value &pitch,
                           const std::string &what,
                           std::array<uint64_t, 6> factors = {1, 1, 1, 1, 1,
                                                              1});

  // --- Values -------------------------------------------------------------
  Value constant(double value, DType dtype);
  Value constantInt(int64_t value, DType dtype);
  Value threadQuery(ThreadQuery query, unsigned dim = 0);
  Value threadPositionInGrid(unsigned dim = 0) {
    return threadQuery(ThreadQuery::ThreadPositionInGrid, dim);
  }

  /// Operands must have the same dtype (see promote()). Vectors work lane by
  /// lane; a scalar operand with a vector one is broadcast, as in Metal.
  /// Comparisons of vectors give bool vectors.
  Value binary(BinaryOp op, Value a, Value b);
  Value compare(CompareOp op, Value a, Value b);
  Value unary(UnaryOp op, Value a);
  /// Value conversion to `dtype` (Metal's static cast rules), lane by lane
  /// for vectors (the lane count is kept).
  Value cast(Value a, DType dtype);
  /// `scalar` repeated in `lanes` lanes (float4(x)); `lanes` 1 returns it.
  Value broadcast(Value scalar, unsigned lanes);
  /// The common dtype of two operands, by the rules in docs/language.md.
  static DType promote(DType a, DType b);

  Value load(const Buffer &buffer, Value index);
  void store(const Buffer &buffer, Value index, Value value);
  void barrier(unsigned memFlags = MemThreadgroup);
  void simdBarrier(unsigned memFlags = MemThreadgroup);

  // --- Structured control flow ---------------------------------------------
  /// Starts `for (i = lo; i < hi; i += step)` with loop-carried values
  /// `inits`; returns the induction variable followed by the carried values
  /// as seen inside the body.
  std::vector<Value> beginFor(Value lo, Value hi, Value step,
                              const std::vector<Value> &inits = {});
  /// Ends the innermost loop; `next` are the carried values at the end of
  /// the body. Returns the carried values after the loop.
  std::vector<Value> endFor(const std::vector<Value> &next = {});
  /// Starts `if (cond)`; `resultTypes` declares values the branches yield.
  void beginIf(Value cond, const std::vector<DType> &resultTypes = {},
               bool withElse = false);
  /// Starts `if (cond)` with an else branch whose results replace `carried`:
  /// they take its types, lanes included (a float4 stays a float4), and each
  /// branch yields its own versions of them (beginElse / endIf).
  void beginIfCarrying(Value cond, const std::vector<Value> &carried);
  /// Switches to the else branch, yielding `thenValues` from the then branch.
  void beginElse(const std::vector<Value> &thenValues = {});
  /// Ends the innermost if; returns its results.
  std::vector<Value> endIf(const std::vector<Value> &lastValues = {});

  // --- Results ---------------------------------------------------------------
  /// The kernel as MLIR text (verified or not).
  std::string mlirText(bool withLocations = false) const;
  /// Verifies, optimises and prints every target. Throws EnigmaError.
  KernelArtifact compile(const CompileOptions &options = {});

  struct Impl;
  /// For Enigma's own op families (lib/Builder/*.cpp); not a user API.
  Impl &internals();

private:
  std::unique_ptr<Impl> impl;
};

// Operators for C++ kernels. Mixed dtypes are promoted; numbers adopt the
// dtype of the other operand.
Value operator+(Value a, Value b);
Value operator-(Value a, Value b);
Value operator*(Value a, Value b);
Value operator/(Value a, Value b);
Value operator%(Value a, Value b);
Value operator&(Value a, Value b);
Value operator|(Value a, Value b);
Value operator^(Value a, Value b);
Value operator<<(Value a, Value b);
Value operator>>(Value a, Value b);
Value operator<(Value a, Value b);
Value operator<=(Value a, Value b);
Value operator>(Value a, Value b);
Value operator>=(Value a, Value b);
Value operator==(Value a, Value b);
Value operator!=(Value a, Value b);
Value operator-(Value a);
Value operator+(Value a, double b);
Value operator*(Value a, double b);
Value operator+(Value a, int b);
Value operator*(Value a, int b);

} // namespace enigma

#endif
