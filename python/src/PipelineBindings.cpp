//===- PipelineBindings.cpp -----------------------------------------------===//
//
// enigma._core pipeline calls: rings, pipelines and stage copies
// (python/enigma/_pipeline.py wraps them; docs/reference/pipelines.md).
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Pipeline.h"
#include "enigma/Support/RoleRegisters.h"

#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/vector.h>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
void bindPipeline(nb::module_ &m) {
  nb::class_<PipelineRing>(m, "PipelineRing",
                           "A ring of stage buffers of a kernel")
      .def_prop_ro("stages", &PipelineRing::stages);
  m.def("pipeline_ring", &pipelineRing, "builder"_a, "buffers"_a, "stages"_a,
        "producer_registers"_a, "consumer_registers"_a, "cluster"_a,
        "A ring over threadgroup arrays, at the top of the kernel body");
  m.def("begin_pipeline", &beginPipeline, "builder"_a, "ring"_a, "lower"_a,
        "upper"_a, "inits"_a, "consumer_groups"_a = 1,
        "Opens a pipeline and its producer region; returns (index, slot)");
  m.def("begin_consumer", &beginConsumer, "builder"_a,
        "Ends the producer region; returns (index, slot, carried values)");
  m.def("end_pipeline", &endPipeline, "builder"_a, "next"_a,
        "Ends the consumer region; returns the pipeline's results");
  m.def(
      "stage_copy",
      [](KernelBuilder &k, const PipelineRing &ring, Value slot, int buffer,
         int64_t offset, int boxRows, int boxCols, int blockCols,
         int64_t blockStride, std::optional<std::array<int, 3>> swizzle,
         bool multicast, const Buffer &src, Value row, Value col, Value rows,
         Value cols, Value ld, bool transpose) {
        StageBox box;
        box.buffer = buffer;
        box.offset = offset;
        box.boxRows = boxRows;
        box.boxCols = boxCols;
        box.blockCols = blockCols;
        box.blockStride = blockStride;
        box.swizzle = swizzle;
        box.multicast = multicast;
        box.transpose = transpose;
        stageCopy(k, ring, slot, box, src, row, col, rows, cols, ld);
      },
      "builder"_a, "ring"_a, "slot"_a, "buffer"_a, "offset"_a, "box_rows"_a,
      "box_cols"_a, "block_cols"_a, "block_stride"_a, "swizzle"_a,
      "multicast"_a, "src"_a, "row"_a, "col"_a, "rows"_a, "cols"_a, "ld"_a,
      "transpose"_a = false,
      "A box of a device matrix into one stage of a ring buffer");
  m.def("consumer_turn", &consumerTurn, "builder"_a, "begin"_a,
        "after"_a = std::vector<Value>{},
        "Begins or ends a turn of the consumer warpgroups");
  m.def("launch_register_limit", &launchRegisterLimit, "threads"_a,
        "Registers per thread of a CUDA block of `threads` threads with "
        "pipeline roles, from launch on");
  m.def("fitting_consumer_registers", &fittingConsumerRegisters,
        "consumer_threads"_a, "producer_threads"_a, "producer_registers"_a,
        "The most registers the consumers can take (setmaxnreg) beside a "
        "producer warpgroup of `producer_registers`");
}
} // namespace enigma::python
