//===- BuilderBindings.cpp - KernelBuilder and KernelArtifact -------------===//
//
// Names cross the boundary as strings ("f32", "add", "thread_position_in_grid")
// so the Python layer stays free of enum plumbing.
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/KernelBuilder.h"

#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <map>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {

DType dtypeNamed(const std::string &name) {
  if (auto t = parseDType(name))
    return *t;
  throw EnigmaError("unknown dtype '" + name +
                    "'; use one of f32 f16 bf16 i8 u8 i16 u16 i32 u32 i64 u64 "
                    "b1 (or float, half, bfloat, char, uchar, short, ushort, "
                    "int, uint, long, ulong, bool)");
}

namespace {

template <typename E>
E lookup(const std::map<std::string, E> &table, const std::string &name,
         const char *what) {
  auto it = table.find(name);
  if (it == table.end())
    throw EnigmaError(std::string("unknown ") + what + " '" + name + "'");
  return it->second;
}

const std::map<std::string, ThreadQuery> kQueries = {
    {"thread_position_in_grid", ThreadQuery::ThreadPositionInGrid},
    {"thread_position_in_threadgroup", ThreadQuery::ThreadPositionInThreadgroup},
    {"threadgroup_position_in_grid", ThreadQuery::ThreadgroupPositionInGrid},
    {"threads_per_threadgroup", ThreadQuery::ThreadsPerThreadgroup},
    {"threads_per_grid", ThreadQuery::ThreadsPerGrid},
    {"threadgroups_per_grid", ThreadQuery::ThreadgroupsPerGrid},
    {"thread_index_in_threadgroup", ThreadQuery::ThreadIndexInThreadgroup},
    {"thread_index_in_simdgroup", ThreadQuery::ThreadIndexInSimdgroup},
    {"simdgroup_index_in_threadgroup", ThreadQuery::SimdgroupIndexInThreadgroup},
    {"threads_per_simdgroup", ThreadQuery::ThreadsPerSimdgroup},
    {"simdgroups_per_threadgroup", ThreadQuery::SimdgroupsPerThreadgroup},
};

const std::map<std::string, BinaryOp> kBinary = {
    {"add", BinaryOp::Add}, {"sub", BinaryOp::Sub}, {"mul", BinaryOp::Mul},
    {"div", BinaryOp::Div}, {"floordiv", BinaryOp::FloorDiv},
    {"rem", BinaryOp::Rem}, {"and", BinaryOp::And}, {"or", BinaryOp::Or},
    {"xor", BinaryOp::Xor}, {"shl", BinaryOp::Shl}, {"shr", BinaryOp::Shr},
    {"min", BinaryOp::Min}, {"max", BinaryOp::Max},
};

const std::map<std::string, CompareOp> kCompare = {
    {"eq", CompareOp::EQ}, {"ne", CompareOp::NE}, {"lt", CompareOp::LT},
    {"le", CompareOp::LE}, {"gt", CompareOp::GT}, {"ge", CompareOp::GE},
};

const char *kindName(ParamKind k) {
  return k == ParamKind::Buffer ? "buffer" : "scalar";
}

} // namespace

void bindBuilder(nb::module_ &m) {
  nb::class_<Value>(m, "Value", "A traced SSA value of a kernel")
      .def_prop_ro("dtype", [](const Value &v) { return shortName(v.dtype()); })
      .def_prop_ro("lanes", &Value::lanes);

  nb::class_<Buffer>(m, "Buffer", "A buffer parameter of a kernel")
      .def_prop_ro("dtype", [](const Buffer &b) { return shortName(b.dtype()); })
      .def_prop_ro("index", &Buffer::paramIndex);

  nb::class_<KernelParam>(m, "KernelParam")
      .def_ro("name", &KernelParam::name)
      .def_prop_ro("kind", [](const KernelParam &p) { return kindName(p.kind); })
      .def_prop_ro("dtype", [](const KernelParam &p) { return shortName(p.dtype); })
      .def_ro("vec_width", &KernelParam::vecWidth)
      .def_ro("multiple_of", &KernelParam::multipleOf)
      .def_ro("written", &KernelParam::written);

  nb::class_<KernelArtifact>(m, "KernelArtifact",
                             "A compiled kernel: signature and sources")
      .def_ro("kernel_name", &KernelArtifact::kernelName)
      .def_ro("params", &KernelArtifact::params)
      .def_ro("mlir_source", &KernelArtifact::mlirSource)
      .def_ro("msl_source", &KernelArtifact::mslSource)
      .def_ro("cuda_source", &KernelArtifact::cudaSource)
      .def_ro("cpp_source", &KernelArtifact::cppSource)
      .def_ro("threadgroup_memory_bytes",
              &KernelArtifact::threadgroupMemoryBytes)
      .def_ro("cuda_dynamic_shared_bytes",
              &KernelArtifact::cudaDynamicSharedBytes)
      .def_ro("metal_unsupported", &KernelArtifact::metalUnsupported)
      // Bounds-checked mode: (access, buffer, "file:line") per checked site.
      .def_prop_ro("bounds_check_sites",
                   [](const KernelArtifact &a) {
                     std::vector<std::tuple<std::string, std::string,
                                            std::string>> out;
                     for (const BoundsCheckSite &s : a.boundsCheckSites)
                       out.emplace_back(s.access, s.buffer, s.location);
                     return out;
                   })
      // Accesses checked before dispatch: (parameter, access, "file:line").
      .def_prop_ro("grid_index_bounds", [](const KernelArtifact &a) {
        std::vector<std::tuple<unsigned, std::string, std::string>> out;
        for (const GridIndexBound &g : a.gridIndexBounds)
          out.emplace_back(g.param, g.access, g.location);
        return out;
      })
      .def_prop_ro("constants", [](const KernelArtifact &a) {
        std::vector<std::pair<unsigned, std::string>> out;
        for (const FunctionConstantUse &c : a.constants)
          out.emplace_back(c.index, shortName(c.dtype));
        return out;
      });

  nb::class_<KernelBuilder>(m, "KernelBuilder",
                            "Creates enigma-dialect ops for one kernel")
      .def(nb::init<const std::string &>(), "name"_a)
      .def_prop_ro("name", &KernelBuilder::name)
      .def("add_buffer",
           [](KernelBuilder &b, const std::string &name, const std::string &dtype) {
             return b.addBuffer(name, dtypeNamed(dtype));
           })
      .def("add_scalar",
           [](KernelBuilder &b, const std::string &name,
              const std::string &dtype, uint64_t multipleOf) {
             return b.addScalar(name, dtypeNamed(dtype), multipleOf);
           },
           "name"_a, "dtype"_a, "multiple_of"_a = 1)
      .def("set_location", &KernelBuilder::setLocation)
      .def("constant_float",
           [](KernelBuilder &b, double v, const std::string &dtype) {
             return b.constant(v, dtypeNamed(dtype));
           })
      .def("constant_int",
           [](KernelBuilder &b, int64_t v, const std::string &dtype) {
             return b.constantInt(v, dtypeNamed(dtype));
           })
      .def("thread_query",
           [](KernelBuilder &b, const std::string &name, unsigned dim) {
             return b.threadQuery(lookup(kQueries, name, "thread query"), dim);
           })
      .def("binary",
           [](KernelBuilder &b, const std::string &op, Value x, Value y) {
             return b.binary(lookup(kBinary, op, "binary operation"), x, y);
           })
      .def("compare",
           [](KernelBuilder &b, const std::string &op, Value x, Value y) {
             return b.compare(lookup(kCompare, op, "comparison"), x, y);
           })
      .def("neg", [](KernelBuilder &b, Value x) { return b.unary(UnaryOp::Neg, x); })
      .def("invert",
           [](KernelBuilder &b, Value x) { return b.unary(UnaryOp::Not, x); })
      .def("cast",
           [](KernelBuilder &b, Value x, const std::string &dtype) {
             return b.cast(x, dtypeNamed(dtype));
           })
      .def_static("promote",
                  [](const std::string &a, const std::string &b) {
                    return std::string(shortName(
                        KernelBuilder::promote(dtypeNamed(a), dtypeNamed(b))));
                  })
      .def("load", &KernelBuilder::load)
      .def("store", &KernelBuilder::store)
      .def("barrier", &KernelBuilder::barrier)
      .def("simd_barrier", &KernelBuilder::simdBarrier)
      .def("begin_for", &KernelBuilder::beginFor)
      .def("end_for", &KernelBuilder::endFor)
      .def("begin_if",
           [](KernelBuilder &b, Value cond, const std::vector<std::string> &types,
              bool withElse) {
             std::vector<DType> dtypes;
             for (const std::string &t : types)
               dtypes.push_back(dtypeNamed(t));
             b.beginIf(cond, dtypes, withElse);
           })
      .def("begin_if_carrying", &KernelBuilder::beginIfCarrying)
      .def("begin_else", &KernelBuilder::beginElse)
      .def("end_if", &KernelBuilder::endIf)
      .def("require_threadgroup_size", &KernelBuilder::requireThreadgroupSize,
           "threads"_a)
      .def(
          "require_matrix_extent",
          [](KernelBuilder &b, const Buffer &buffer, const Value &rows,
             const Value &cols, const Value &pitch, const std::string &what,
             uint64_t rowsDivisor, uint64_t rowsScale, uint64_t colsDivisor,
             uint64_t colsScale, uint64_t pitchDivisor, uint64_t pitchScale) {
            b.requireMatrixExtent(buffer, rows, cols, pitch, what,
                                  {rowsDivisor, rowsScale, colsDivisor,
                                   colsScale, pitchDivisor, pitchScale});
          },
          "buffer"_a, "rows"_a, "cols"_a, "pitch"_a, "what"_a,
          "rows_divisor"_a = 1, "rows_scale"_a = 1, "cols_divisor"_a = 1,
          "cols_scale"_a = 1, "pitch_divisor"_a = 1, "pitch_scale"_a = 1)
      .def("mlir_text", &KernelBuilder::mlirText, "locations"_a = false)
      .def(
          "compile",
          [](KernelBuilder &b, bool optimize, bool locations,
             bool boundsCheck, bool cudaTma) {
            CompileOptions options;
            options.optimize = optimize;
            options.mlirLocations = locations;
            options.boundsCheck = boundsCheck;
            options.cudaTma = cudaTma;
            return b.compile(options);
          },
          "optimize"_a = true, "locations"_a = false,
          "bounds_check"_a = false, "cuda_tma"_a = false);

  m.def("dtype_size", [](const std::string &dtype) {
    return byteWidth(dtypeNamed(dtype));
  });
  m.def("canonical_dtype", [](const std::string &dtype) {
    return std::string(shortName(dtypeNamed(dtype)));
  });
  m.def("msl_dtype_name", [](const std::string &dtype) {
    return std::string(mslName(dtypeNamed(dtype)));
  });
}

} // namespace enigma::python
