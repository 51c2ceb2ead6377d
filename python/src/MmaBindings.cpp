//===- MmaBindings.cpp ----------------------------------------------------===//
//
// enigma._core.mma_*: fragments, products, row reductions, element-wise
// fragment arithmetic and the threadgroup tile copies (python/enigma/_mma.py
// wraps them; docs/reference/mma.md).
//
//===----------------------------------------------------------------------===//
#include "Bindings.h"

#include "enigma/Builder/Mma.h"

#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/variant.h>

#include <map>
#include <variant>

namespace nb = nanobind;
using namespace nb::literals;

namespace enigma::python {
namespace {

using Memory = std::variant<Buffer, ThreadgroupArray>;
using Swizzle = std::optional<std::array<int, 3>>;

void checkBuilder(KernelBuilder &b, const Value &v, const char *what) {
  if (!v.valid() || v.builder() != &b)
    throw EnigmaError(std::string(what) + ": the value belongs to another "
                                          "kernel");
}

MmaMemory memoryOf(const Memory &m) {
  if (const Buffer *b = std::get_if<Buffer>(&m))
    return MmaMemory(*b);
  return MmaMemory(std::get<ThreadgroupArray>(m));
}

template <class T>
T lookup(const std::map<std::string, T> &table, const std::string &key,
         const char *what) {
  auto it = table.find(key);
  if (it == table.end())
    throw EnigmaError(std::string("unknown ") + what + " '" + key + "'");
  return it->second;
}

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
const std::map<std::string, RowReduce> kReduce = {
    {"sum", RowReduce::Sum}, {"max", RowReduce::Max}, {"min", RowReduce::Min}};

} // namespace

void bindMma(nb::module_ &m) {
  m.def(
      "mma_shape",
      [](const Value &v) -> std::optional<std::tuple<int, int>> {
        if (!isFragment(v))
          return std::nullopt;
        FragmentShape s = fragmentShape(v);
        return std::make_tuple(s.rows, s.cols);
      },
      "value"_a, "(rows, cols) of a fragment (cols 0: a row vector), or None");
  m.def(
      "mma_fill",
      [](KernelBuilder &b, Value v, const std::string &dtype, int rows,
         int cols) { return mmaFill(b, v, dtypeNamed(dtype), rows, cols); },
      "builder"_a, "value"_a, "dtype"_a, "rows"_a, "cols"_a);
  m.def(
      "mma_iota",
      [](KernelBuilder &b, int dim, int rows, int cols) {
        return mmaIota(b, dim, rows, cols);
      },
      "builder"_a, "dim"_a, "rows"_a, "cols"_a);
  m.def(
      "mma_load",
      [](KernelBuilder &b, const Memory &mem, Value offset, Value ld, int rows,
         int cols, bool transpose, std::optional<Value> boundRows,
         std::optional<Value> boundCols) {
        return mmaLoad(b, memoryOf(mem), offset, ld, rows, cols, transpose,
                       boundRows.value_or(Value()),
                       boundCols.value_or(Value()));
      },
      "builder"_a, "mem"_a, "offset"_a, "ld"_a, "rows"_a, "cols"_a,
      "transpose"_a, "bound_rows"_a.none(), "bound_cols"_a.none());
  m.def(
      "mma_gather",
      [](KernelBuilder &b, const Memory &mem, Value offset, Value index) {
        checkBuilder(b, index, "mma_gather");
        return mmaGather(b, memoryOf(mem), offset, index);
      },
      "builder"_a, "mem"_a, "offset"_a, "index"_a);
  m.def(
      "mma_store",
      [](KernelBuilder &b, Value frag, const Memory &mem, Value offset,
         Value ld, bool transpose, std::optional<Value> boundRows,
         std::optional<Value> boundCols) {
        checkBuilder(b, frag, "mma_store");
        mmaStore(frag, memoryOf(mem), offset, ld, transpose,
                 boundRows.value_or(Value()), boundCols.value_or(Value()));
      },
      "builder"_a, "value"_a, "mem"_a, "offset"_a, "ld"_a, "transpose"_a,
      "bound_rows"_a.none(), "bound_cols"_a.none());
  m.def(
      "mma",
      [](KernelBuilder &b, Value acc, const ThreadgroupArray &a, Value aBase,
         Value aOffset, int64_t aLd, bool aTranspose, Swizzle aSwizzle,
         const ThreadgroupArray &bm, Value bBase, Value bOffset, int64_t bLd,
         bool bTranspose, Swizzle bSwizzle, int k, bool tf32,
         int64_t aBlockStride, int64_t bBlockStride, bool warpgroup,
         bool asynchronous) {
        checkBuilder(b, acc, "mma");
        return mma(acc,
                   {a, aBase, aOffset, aLd, aTranspose, aSwizzle, aBlockStride},
                   {bm, bBase, bOffset, bLd, bTranspose, bSwizzle, bBlockStride},
                   k, tf32, warpgroup, asynchronous);
      },
      "builder"_a, "acc"_a, "a"_a, "a_base"_a, "a_offset"_a, "a_ld"_a,
      "a_transpose"_a, "a_swizzle"_a.none(), "b"_a, "b_base"_a, "b_offset"_a,
      "b_ld"_a, "b_transpose"_a, "b_swizzle"_a.none(), "k"_a, "tf32"_a,
      "a_block_stride"_a = 0, "b_block_stride"_a = 0, "warpgroup"_a = false,
      "asynchronous"_a = false);
  m.def(
      "mma_wait",
      [](KernelBuilder &b, Value acc, int pending) {
        checkBuilder(b, acc, "mma_wait");
        return mmaWait(acc, pending);
      },
      "builder"_a, "acc"_a, "pending"_a = 0);
  m.def(
      "mma_reg",
      [](KernelBuilder &b, Value acc, Value a, const ThreadgroupArray &bm,
         Value bBase, Value bOffset, int64_t bLd, bool bTranspose,
         Swizzle bSwizzle, int64_t bBlockStride, bool warpgroup,
         bool asynchronous) {
        checkBuilder(b, acc, "mma");
        checkBuilder(b, a, "mma");
        return mmaReg(acc, a,
                      {bm, bBase, bOffset, bLd, bTranspose, bSwizzle,
                       bBlockStride},
                      warpgroup, asynchronous);
      },
      "builder"_a, "acc"_a, "a"_a, "b"_a, "b_base"_a, "b_offset"_a, "b_ld"_a,
      "b_transpose"_a, "b_swizzle"_a.none(), "b_block_stride"_a = 0,
      "warpgroup"_a = false, "asynchronous"_a = false);
  m.def(
      "mma_reduce_rows",
      [](KernelBuilder &b, Value v, const std::string &kind) {
        checkBuilder(b, v, "reduce_rows");
        return mmaReduceRows(v, lookup(kReduce, kind, "row reduction"));
      },
      "builder"_a, "value"_a, "kind"_a);
  m.def(
      "mma_broadcast_rows",
      [](KernelBuilder &b, Value v, int cols) {
        checkBuilder(b, v, "broadcast_rows");
        return mmaBroadcastRows(v, cols);
      },
      "builder"_a, "value"_a, "cols"_a);
  m.def(
      "mma_halves",
      [](KernelBuilder &b, Value v, const std::string &dtype) {
        checkBuilder(b, v, "mma_halves");
        return mmaHalves(v, dtypeNamed(dtype));
      },
      "builder"_a, "value"_a, "dtype"_a);
  m.def(
      "mma_binary",
      [](KernelBuilder &b, const std::string &op, Value x, Value y) {
        checkBuilder(b, x, "fragment arithmetic");
        checkBuilder(b, y, "fragment arithmetic");
        return mmaBinary(lookup(kBinary, op, "binary operation"), x, y);
      },
      "builder"_a, "op"_a, "a"_a, "b"_a);
  m.def(
      "mma_compare",
      [](KernelBuilder &b, const std::string &op, Value x, Value y) {
        checkBuilder(b, x, "fragment comparison");
        checkBuilder(b, y, "fragment comparison");
        return mmaCompare(lookup(kCompare, op, "comparison"), x, y);
      },
      "builder"_a, "op"_a, "a"_a, "b"_a);
  m.def(
      "mma_select",
      [](KernelBuilder &b, Value c, Value x, Value y) {
        for (const Value *v : {&c, &x, &y})
          checkBuilder(b, *v, "fragment select");
        return mmaSelect(c, x, y);
      },
      "builder"_a, "cond"_a, "a"_a, "b"_a);
  m.def(
      "mma_cast",
      [](KernelBuilder &b, Value x, const std::string &dtype) {
        checkBuilder(b, x, "fragment conversion");
        return mmaCast(x, dtypeNamed(dtype));
      },
      "builder"_a, "value"_a, "dtype"_a);
  m.def(
      "mma_fma",
      [](KernelBuilder &b, Value x, Value y, Value z) {
        for (const Value *v : {&x, &y, &z})
          checkBuilder(b, *v, "fma");
        return mmaFma(x, y, z);
      },
      "builder"_a, "a"_a, "b"_a, "c"_a);
  m.def(
      "mma_saturating_cast",
      [](KernelBuilder &b, Value x, const std::string &dtype) {
        checkBuilder(b, x, "saturating_cast");
        return mmaSaturatingCast(x, dtypeNamed(dtype));
      },
      "builder"_a, "value"_a, "dtype"_a);
  m.def(
      "mma_unary",
      [](KernelBuilder &b, const std::string &fn, Value x) {
        checkBuilder(b, x, fn.c_str());
        return mmaUnary(fn, x);
      },
      "builder"_a, "fn"_a, "value"_a);
  m.def(
      "copy_tile_async",
      [](KernelBuilder &b, const ThreadgroupArray &dst, Value dstBase,
         const Buffer &src, Value srcOffset, Value srcLd, Value validRows,
         Value validCols, int rows, int cols, int dstLd, Swizzle swizzle,
         int blockStride) {
        if (dst.builder() != &b)
          throw EnigmaError("copy_tile: the threadgroup array belongs to "
                            "another kernel");
        copyTileAsync(dst, dstBase, src, srcOffset, srcLd, validRows,
                      validCols, rows, cols, dstLd, swizzle, blockStride);
      },
      "builder"_a, "dst"_a, "dst_base"_a, "src"_a, "src_offset"_a,
      "src_ld"_a, "valid_rows"_a, "valid_cols"_a, "rows"_a, "cols"_a,
      "dst_ld"_a, "swizzle"_a.none(), "block_stride"_a = 0);
  m.def("copy_async_commit",
        [](KernelBuilder &b) { copyAsyncCommit(b); }, "builder"_a);
  m.def(
      "copy_async_wait",
      [](KernelBuilder &b, int pending) { copyAsyncWait(b, pending); },
      "builder"_a, "pending"_a);
}

} // namespace enigma::python
