//===- Pipeline.h - KernelBuilder calls of the pipeline family --*- C++ -*-===//
//
// Pipelines with roles for C++ kernels (docs/reference/pipelines.md,
// docs/design/warp-specialization.md): a ring of stage buffers, and
// pipelines over it whose producer region copies tiles into a stage and
// whose consumer region computes on it.
//
//   enigma::PipelineRing ring = enigma::pipelineRing(k, {aTiles, bTiles}, 4);
//   auto [i, slot] = ... = enigma::beginPipeline(k, ring, zero, steps, {acc});
//   enigma::stageCopy(k, ring, slot, {0, 0, 128, 64}, A, {row, col}, {m, kk, lda});
//   auto args = enigma::beginConsumer(k);          // i, slot, acc
//   ... products on the stage ...
//   auto results = enigma::endPipeline(k, {next});
//
// Mistakes throw EnigmaError; the verifier checks the rest when the kernel
// is compiled (docs/reference/pipelines.md lists what it rejects).
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_BUILDER_PIPELINE_H
#define ENIGMA_BUILDER_PIPELINE_H

#include "enigma/Builder/Cooperation.h"
#include "enigma/Builder/KernelBuilder.h"
#include "enigma/Builder/Mma.h"

#include <optional>
#include <vector>

namespace enigma {

/// A ring of `stages` slots in each of its threadgroup buffers, and the
/// roles of the kernel's CUDA form.
class PipelineRing {
public:
  PipelineRing() = default;
  void *handle() const { return impl; }
  KernelBuilder *builder() const { return owner; }
  int stages() const { return count; }
  const std::vector<ThreadgroupArray> &buffers() const { return arrays; }

private:
  friend PipelineRing pipelineRing(KernelBuilder &,
                                   const std::vector<ThreadgroupArray> &, int,
                                   int, int, int);
  KernelBuilder *owner = nullptr;
  void *impl = nullptr;
  int count = 0;
  std::vector<ThreadgroupArray> arrays;
};

/// The roles of a CUDA kernel with rings: registers per thread of the
/// producer warpgroup and of the consumers (setmaxnreg), and threadgroups
/// per thread-block cluster.
struct PipelineRoles {
  int producerRegisters = 40;
  int consumerRegisters = 232;
  int cluster = 1;
};

/// A ring over `buffers` (each holding `stages` equal slots), at the top
/// of the kernel body.
PipelineRing pipelineRing(KernelBuilder &k,
                          const std::vector<ThreadgroupArray> &buffers,
                          int stages, int producerRegisters = 40,
                          int consumerRegisters = 232, int cluster = 1);

/// Opens `for i in [lower, upper)` on `ring` with carried values `inits`
/// and its producer region; returns (i, slot) as u32 values.
/// `consumerGroups` G > 1: iteration i's consumer runs only in the
/// warpgroups w with w mod G == (i - lower) mod G
/// (docs/design/consumer-groups.md).
std::vector<Value> beginPipeline(KernelBuilder &k, const PipelineRing &ring,
                                 Value lower, Value upper,
                                 const std::vector<Value> &inits,
                                 int consumerGroups = 1);
/// Ends the producer region and opens the consumer region; returns (i,
/// slot, carried values...).
std::vector<Value> beginConsumer(KernelBuilder &k);
/// Ends the consumer region with the next carried values; returns the
/// pipeline's results (the carried values after the last iteration).
std::vector<Value> endPipeline(KernelBuilder &k,
                               const std::vector<Value> &next);

/// Where a stage copy writes: ring buffer `buffer`, element `offset` of the
/// slot, a `boxRows x boxCols` box in column blocks of `blockCols` (0: the
/// whole width) `blockStride` elements apart (0: dense), swizzled.
struct StageBox {
  int buffer = 0;
  int64_t offset = 0;
  int boxRows = 0, boxCols = 0;
  int blockCols = 0;
  int64_t blockStride = 0;
  std::optional<MmaSwizzle> swizzle;
  bool multicast = false;
  /// The stage holds the box's transpose (32-bit elements).
  bool transpose = false;
};

/// In a producer region: the box at (row, col) of the rows x cols matrix
/// `src` with pitch `ld` (elements outside are zeros) into the stage of
/// `slot` (the producer region's slot).
void stageCopy(KernelBuilder &k, const PipelineRing &ring, Value slot,
               const StageBox &box, const Buffer &src, Value row, Value col,
               Value rows, Value cols, Value ld);

/// At the top level of a consumer region: begins (`begin`) or ends a turn
/// of the consumer warpgroups (docs/reference/pipelines.md); a turn that
/// begins waits for the f32 values `after`.
void consumerTurn(KernelBuilder &k, bool begin,
                  const std::vector<Value> &after = {});

} // namespace enigma

#endif
