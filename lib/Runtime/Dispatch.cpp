//===- Dispatch.cpp - Binding, validation and launches --------------------===//
#include "enigma/Runtime/Dispatch.h"
#include "enigma/Support/Error.h"

#include "enigma/Support/ProcessLife.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <charconv>
#include <sstream>
#include <thread>

namespace enigma {

//===----------------------------------------------------------------------===//
// Number conversion
//===----------------------------------------------------------------------===//

namespace {
std::string describeNumber(const HostNumber &value) {
  std::ostringstream out;
  if (const double *d = std::get_if<double>(&value)) {
    // The shortest text that reads back as the same double, laid out as
    // Python's repr does (1000000.0, 0.0001, 1e+39, 1e-05; never
    // 9.9999999999999994e+38).
    double magnitude = std::fabs(*d);
    bool fixed = magnitude == 0 || (magnitude >= 1e-4 && magnitude < 1e16);
    char text[400];
    auto [end, ec] = std::to_chars(
        text, text + sizeof text, *d,
        fixed ? std::chars_format::fixed : std::chars_format::scientific);
    std::string shortest(text, ec == std::errc() ? end : text);
    out << shortest;
    // Make it visible that the user passed a float, even for 3.0.
    if (std::isfinite(*d) &&
        shortest.find_first_of(".e") == std::string::npos)
      out << ".0";
  } else if (const int64_t *i = std::get_if<int64_t>(&value)) {
    out << *i;
  } else if (const uint64_t *u = std::get_if<uint64_t>(&value)) {
    out << *u;
  } else {
    out << (std::get<bool>(value) ? "True" : "False");
  }
  return out.str();
}

[[noreturn]] void rejectNumber(const HostNumber &value, std::string_view what,
                               const std::string &why) {
  throw DispatchError(std::string(what) + " cannot take " +
                      describeNumber(value) + ": " + why);
}

/// Rounds `value` to nearest-even in an IEEE binary format with the given
/// field widths; nothing if a finite value overflows it. Rounding directly
/// from double avoids the double rounding of going through float.
std::optional<uint64_t> roundToBinaryFormat(double value, int exponentBits,
                                            int fractionBits) {
  const uint64_t sign = std::signbit(value) ? 1ull << (exponentBits + fractionBits) : 0;
  const uint64_t exponentMask = ((1ull << exponentBits) - 1) << fractionBits;
  if (std::isnan(value))
    return sign | exponentMask | (1ull << (fractionBits - 1)); // quiet NaN
  if (std::isinf(value))
    return sign | exponentMask;
  double magnitude = std::fabs(value);
  if (magnitude == 0)
    return sign;
  const int bias = (1 << (exponentBits - 1)) - 1;
  const int minExponent = 1 - bias;
  int exponent = std::max(std::ilogb(magnitude), minExponent);
  // Scale so that the representable values are exactly the integers.
  auto mantissa = uint64_t(std::nearbyint(
      std::ldexp(magnitude, fractionBits - exponent)));
  if (mantissa >> (fractionBits + 1)) { // rounding carried into the next binade
    mantissa >>= 1;
    ++exponent;
  }
  if (exponent > bias)
    return std::nullopt;
  const uint64_t implicitBit = 1ull << fractionBits;
  if (mantissa < implicitBit) // subnormal (exponent field 0)
    return sign | mantissa;
  return sign | (uint64_t(exponent + bias) << fractionBits) |
         (mantissa - implicitBit);
}

/// Rounds `value` to nearest-even in f8e4m3 (docs/design/fp8.md): an IEEE
/// layout whose top exponent holds finite values, all but S.1111.111 (its
/// one NaN); nothing if a finite value rounds beyond 448. From double
/// directly, as roundToBinaryFormat.
std::optional<uint64_t> roundToFloat8E4M3(double value) {
  const uint64_t sign = std::signbit(value) ? 0x80u : 0u;
  if (std::isnan(value))
    return sign | 0x7fu;
  if (std::isinf(value))
    return std::nullopt;
  double magnitude = std::fabs(value);
  if (magnitude == 0)
    return sign;
  // 3 fraction bits: units of 2^(e - 3) in binade e, of 2^-9 below 2^-6.
  int exponent = std::max(std::ilogb(magnitude), -6);
  auto mantissa = uint64_t(std::nearbyint(std::ldexp(magnitude, 3 - exponent)));
  if (mantissa >> 4) {
    mantissa >>= 1;
    ++exponent;
  }
  if (exponent > 8 || (exponent == 8 && mantissa == 15))
    return std::nullopt; // beyond 448 (S.1111.111 is NaN)
  if (mantissa < 8) // subnormal
    return sign | mantissa;
  return sign | (uint64_t(exponent + 7) << 3) | (mantissa - 8);
}

ScalarValue toFloatBits(const HostNumber &value, DType dtype,
                        std::string_view what) {
  double number = 0;
  if (const double *d = std::get_if<double>(&value))
    number = *d;
  else if (const int64_t *i = std::get_if<int64_t>(&value))
    number = double(*i);
  else if (const uint64_t *u = std::get_if<uint64_t>(&value))
    number = double(*u);
  else
    number = std::get<bool>(value) ? 1.0 : 0.0;

  std::optional<uint64_t> bits;
  switch (dtype) {
  case DType::F32: {
    float single = float(number);
    if (!std::isinf(single) || std::isinf(number))
      bits = std::bit_cast<uint32_t>(single);
    break;
  }
  case DType::F16:
    bits = roundToBinaryFormat(number, 5, 10);
    break;
  case DType::F8E4M3:
    bits = roundToFloat8E4M3(number);
    break;
  case DType::F8E5M2: // IEEE-like: infinities, NaN with all exponent bits
    if (std::isnan(number))
      bits = (std::signbit(number) ? 0x80u : 0u) | 0x7fu; // metal_fp8.h's NaN
    else
      bits = roundToBinaryFormat(number, 5, 2);
    break;
  default: // BF16
    bits = roundToBinaryFormat(number, 8, 7);
    break;
  }
  if (!bits)
    rejectNumber(value, what, std::string("out of range for ") +
                                  shortName(dtype));
  return ScalarValue{dtype, *bits};
}

struct IntegerRange {
  int64_t min;
  uint64_t max;
};

IntegerRange integerRange(DType dtype) {
  unsigned bits = unsigned(byteWidth(dtype)) * 8;
  if (isSigned(dtype))
    return {bits == 64 ? std::numeric_limits<int64_t>::min()
                       : -(int64_t(1) << (bits - 1)),
            (uint64_t(1) << (bits - 1)) - 1};
  return {0, bits == 64 ? std::numeric_limits<uint64_t>::max()
                        : (uint64_t(1) << bits) - 1};
}

ScalarValue toIntegerBits(const HostNumber &value, DType dtype,
                          std::string_view what) {
  if (std::holds_alternative<double>(value))
    rejectNumber(value, what, std::string("a float is not an integer; ") +
                                  "convert it explicitly (int(x))");
  IntegerRange range = integerRange(dtype);
  uint64_t bits = 0;
  bool inRange = true;
  if (const int64_t *i = std::get_if<int64_t>(&value)) {
    inRange = *i >= range.min && (*i < 0 || uint64_t(*i) <= range.max);
    bits = uint64_t(*i);
  } else if (const uint64_t *u = std::get_if<uint64_t>(&value)) {
    inRange = *u <= range.max;
    bits = *u;
  } else {
    bits = std::get<bool>(value) ? 1 : 0;
  }
  if (!inRange) {
    std::ostringstream why;
    why << "out of range for " << shortName(dtype) << " [" << range.min
        << ", " << range.max << "]";
    rejectNumber(value, what, why.str());
  }
  unsigned width = unsigned(byteWidth(dtype)) * 8;
  if (width < 64)
    bits &= (uint64_t(1) << width) - 1; // keep only the dtype's bytes
  return ScalarValue{dtype, bits};
}

ScalarValue toBoolBits(const HostNumber &value, std::string_view what) {
  if (const bool *b = std::get_if<bool>(&value))
    return ScalarValue{DType::Bool, *b ? 1u : 0u};
  const int64_t *i = std::get_if<int64_t>(&value);
  const uint64_t *u = std::get_if<uint64_t>(&value);
  if ((i && (*i == 0 || *i == 1)) || (u && (*u == 0 || *u == 1)))
    return ScalarValue{DType::Bool, i ? uint64_t(*i) : *u};
  rejectNumber(value, what, "a bool takes True/False or 0/1");
}
} // namespace

ScalarValue convertNumber(const HostNumber &value, DType dtype,
                          std::string_view what) {
  if (dtype == DType::Bool)
    return toBoolBits(value, what);
  if (isFloat(dtype))
    return toFloatBits(value, dtype, what);
  return toIntegerBits(value, dtype, what);
}

//===----------------------------------------------------------------------===//
// Launch shape
//===----------------------------------------------------------------------===//

namespace {
std::string formatDim3(Dim3 d) {
  return "(" + std::to_string(d.x) + ", " + std::to_string(d.y) + ", " +
         std::to_string(d.z) + ")";
}
} // namespace

void checkLaunchShape(Dim3 grid, Dim3 threads, uint64_t maxThreads) {
  if (grid.volume() == 0)
    throw DispatchError("grid " + formatDim3(grid) +
                        " has a zero dimension; every dimension counts "
                        "threads and must be at least 1");
  if (threads.volume() == 0)
    throw DispatchError("threads " + formatDim3(threads) +
                        " has a zero dimension; every dimension of the "
                        "threadgroup must be at least 1");
  if (threads.volume() > maxThreads)
    throw DispatchError("threads " + formatDim3(threads) + " is " +
                        std::to_string(threads.volume()) +
                        " threads per threadgroup, more than the maximum of " +
                        std::to_string(maxThreads));
  const uint32_t gridDims[3] = {grid.x, grid.y, grid.z};
  const uint32_t groupDims[3] = {threads.x, threads.y, threads.z};
  for (int d = 0; d < 3; ++d) {
    uint64_t groups = (uint64_t(gridDims[d]) + groupDims[d] - 1) / groupDims[d];
    if (groups > kMaxThreadgroupsPerGrid[d])
      throw DispatchError(
          "grid " + formatDim3(grid) + " in threadgroups of " +
          formatDim3(threads) + " is " + std::to_string(groups) +
          " threadgroups along " + "xyz"[d] + ", more than the " +
          std::to_string(kMaxThreadgroupsPerGrid[d]) +
          " every backend accepts (a GPU's limit; x: 2^31 - 1, y and z: "
          "65535 threadgroups); use larger threadgroups or fewer threads");
  }
}

void checkThreadgroupShape(const KernelArtifact &kernel, Dim3 grid,
                           Dim3 threads) {
  bool partialEdge = grid.x % threads.x || grid.y % threads.y ||
                     grid.z % threads.z;
  if (uint64_t size = kernel.threadgroupSize;
      size && (threads.volume() != size || partialEdge))
    throw DispatchError(
        "kernel " + kernel.kernelName + " runs only in threadgroups of " +
        std::to_string(size) + " threads (its gemm_block configuration's "
        "threads; launch it with config.launch(m, n)): threads " +
        formatDim3(threads) +
        (threads.volume() != size
             ? " is " + std::to_string(threads.volume()) + " threads"
             : " does not divide grid " + formatDim3(grid) +
                   " (the edge threadgroup would be partial)"));
  if (!kernel.wholeSimdgroups)
    return;
  uint64_t unit = kernel.wholeWarpgroups ? 128 : 32;
  if (threads.volume() % unit == 0 && !partialEdge)
    return;
  std::string what =
      kernel.wholeWarpgroups
          ? " has warpgroup products (four simdgroups multiply together), "
            "so its threadgroups must be whole groups of four simdgroups"
          : " holds simdgroup fragments, so its threadgroups must be whole "
            "simdgroups";
  throw DispatchError(
      "kernel " + kernel.kernelName + what + ": threads " +
      formatDim3(threads) +
      (threads.volume() % unit
           ? " is not a multiple of " + std::to_string(unit) + " threads"
           : " does not divide grid " + formatDim3(grid) +
                 " (the edge threadgroup would be partial)"));
}

void checkThreadgroupMemory(const KernelArtifact &kernel,
                            const Backend &backend) {
  uint64_t limit = backend.maxThreadgroupMemory();
  if (kernel.threadgroupMemoryBytes <= limit)
    return;
  throw DispatchError(
      "kernel " + kernel.kernelName + " uses " +
      std::to_string(kernel.threadgroupMemoryBytes) +
      " bytes of threadgroup memory; the " + backend.name() +
      " runtime's device allows " + std::to_string(limit) + " (" +
      std::to_string(limit / 1024) +
      " KiB) per threadgroup. Use smaller tiles or fewer stages for it" +
      (limit < 64 * 1024 ? " (Metal's limit is 32 KiB; CUDA GPUs of sm_90 "
                           "allow 227 KiB)"
                         : ""));
}

uint64_t checkDynamicThreadgroupMemory(const KernelArtifact &kernel,
                                       const std::optional<uint64_t> &bytes,
                                       const Backend &backend) {
  if (!kernel.dynamicThreadgroupMemory) {
    if (bytes)
      throw DispatchError(
          "kernel " + kernel.kernelName + " was given threadgroup_memory=" +
          std::to_string(*bytes) + " but has no dynamic threadgroup array "
          "(enigma.dynamic_threadgroup_alloc); leave it out");
    return 0;
  }
  if (!bytes)
    throw DispatchError(
        "kernel " + kernel.kernelName + " has a dynamic threadgroup array "
        "(enigma.dynamic_threadgroup_alloc): give its size in bytes with "
        "threadgroup_memory=");
  // Metal takes lengths in multiples of 16 bytes; every target gets that.
  const uint64_t padded = (*bytes + 15) / 16 * 16;
  const uint64_t limit = backend.maxThreadgroupMemory();
  if (*bytes > limit || kernel.threadgroupMemoryBytes + padded > limit)
    throw DispatchError(
        "kernel " + kernel.kernelName + ": threadgroup_memory=" +
        std::to_string(*bytes) + " (" + std::to_string(padded) +
        " as a multiple of 16) and its " +
        std::to_string(kernel.threadgroupMemoryBytes) +
        " bytes of threadgroup_alloc arrays need " +
        std::to_string(kernel.threadgroupMemoryBytes + padded) +
        " bytes of threadgroup memory; the " + backend.name() +
        " runtime's device allows " + std::to_string(limit) + " (" +
        std::to_string(limit / 1024) + " KiB) per threadgroup");
  return *bytes;
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

struct Dispatcher::Binding {
  enum class Source { Input, Scalar, Output };
  struct Slot {
    Source source = Source::Input;
    size_t index = 0; // into inputs, or the output's position
    size_t bytes = 0; // buffer size (inputs and outputs)
    ScalarValue scalar;
    /// The caller's device memory bound in place (into DispatchArgs, which
    /// outlives the binding), or null for a buffer the runtime allocates.
    const ArrayArg *device = nullptr;
  };
  std::vector<Slot> slots; // one per parameter
  ConstantValues constants;
};

namespace {
/// "B (f32)", or "B (f32x4)" for a vector buffer.
std::string describeParam(const KernelParam &param) {
  std::string type = shortName(param.dtype);
  if (param.vecWidth > 1)
    type += "x" + std::to_string(param.vecWidth);
  return param.name + " (" + type + ")";
}

/// A scalar's promise (enigma.Scalar(..., multiple_of=N)): the kernel may
/// have chosen aligned vector accesses on the strength of it.
void checkMultiple(const std::string &prefix, const KernelParam &param,
                   const HostNumber &value) {
  uint64_t m = param.multipleOf;
  bool ok = true;
  if (const int64_t *i = std::get_if<int64_t>(&value))
    ok = *i % int64_t(m) == 0;
  else if (const uint64_t *u = std::get_if<uint64_t>(&value))
    ok = *u % m == 0;
  if (!ok)
    throw DispatchError(prefix + ": scalar parameter " + describeParam(param) +
                        " is declared a multiple of " + std::to_string(m) +
                        " (multiple_of), got " +
                        std::visit([](auto v) { return std::to_string(v); },
                                   value) +
                        "; the kernel's vector accesses rely on it");
}

std::string describeParams(const KernelArtifact &kernel,
                           const std::vector<size_t> &indices) {
  if (indices.empty())
    return "none";
  std::string list;
  for (size_t i : indices)
    list += (list.empty() ? "" : ", ") + describeParam(kernel.params[i]);
  return list;
}

std::string plural(size_t count, const char *noun) {
  return std::to_string(count) + " " + noun + (count == 1 ? "" : "s");
}

size_t entryBytes(const KernelParam &param) {
  return byteWidth(param.dtype) * std::max(1u, param.vecWidth);
}

void checkInput(const KernelArtifact &kernel, const KernelParam &param,
                size_t inputIndex, const ArrayArg &input) {
  std::string label = "kernel " + kernel.kernelName + ": input " +
                      std::to_string(inputIndex) + " (" + param.name + ")";
  if (input.dtype != param.dtype)
    throw DispatchError(label + " has dtype " + numpyName(input.dtype) +
                        " but parameter " + param.name + " is " +
                        shortName(param.dtype));
  if (input.bytes != input.elements * byteWidth(input.dtype))
    throw DispatchError(label + " claims " + std::to_string(input.elements) +
                        " elements of " + numpyName(input.dtype) +
                        " but holds " + std::to_string(input.bytes) +
                        " bytes");
  if (input.bytes % entryBytes(param) != 0)
    throw DispatchError(label + " holds " + std::to_string(input.bytes) +
                        " bytes, not a whole number of " +
                        std::to_string(entryBytes(param)) +
                        "-byte entries of parameter " + describeParam(param));
  if (input.bytes > 0 && !input.data && !input.onDevice)
    throw DispatchError(label + " has no data");
}

void checkOutputArray(const KernelArtifact &kernel, const KernelParam &param,
                      size_t outputIndex, const ArrayArg &output) {
  std::string label = "kernel " + kernel.kernelName + ": output " +
                      std::to_string(outputIndex) + " (" + param.name + ")";
  if (!output.onDevice)
    throw DispatchError(label + " must be a device array; outputs in host "
                        "memory are returned by the runtime (give their "
                        "size instead)");
  if (output.dtype != param.dtype)
    throw DispatchError(label + " has dtype " + numpyName(output.dtype) +
                        " but parameter " + param.name + " is " +
                        shortName(param.dtype));
  if (output.bytes == 0 || output.bytes % entryBytes(param) != 0)
    throw DispatchError(label + " holds " + std::to_string(output.bytes) +
                        " bytes, not a non-zero whole number of " +
                        std::to_string(entryBytes(param)) +
                        "-byte entries of parameter " + describeParam(param));
}

void checkOutputSize(const KernelArtifact &kernel, const KernelParam &param,
                     size_t bytes) {
  std::string label =
      "kernel " + kernel.kernelName + ": output " + describeParam(param);
  if (bytes == 0)
    throw DispatchError(label + " has size 0; give its size in bytes");
  if (bytes % entryBytes(param) != 0)
    throw DispatchError(label + " has size " + std::to_string(bytes) +
                        " bytes, not a multiple of its " +
                        std::to_string(entryBytes(param)) + "-byte element");
}

/// Inputs, scalars and outputs (sizes, or device arrays) must cover the
/// kernel's parameters exactly once, as in the original Enigma runtime:
/// scalars bind to the scalar parameters in order, inputs to the leading
/// buffer parameters and outputs to the buffer parameters after them. A
/// shortfall is never filled with extra zeroed outputs.
void checkCoverage(const KernelArtifact &kernel,
                   const std::vector<size_t> &bufferParams,
                   const std::vector<size_t> &scalarParams,
                   const DispatchArgs &args) {
  const std::string prefix = "kernel " + kernel.kernelName;
  const bool arrays = !args.outputArrays.empty();
  if (arrays && !args.outputSizes.empty())
    throw DispatchError(prefix + ": give output arrays or output sizes, "
                                 "not both");
  const size_t inputs = args.inputs.size(), scalars = args.scalars.size();
  const size_t outputs =
      arrays ? args.outputArrays.size() : args.outputSizes.size();
  if (scalars == scalarParams.size() &&
      inputs + outputs == bufferParams.size())
    return;

  // Say where each parameter's value would have come from.
  std::string binding;
  size_t nextBuffer = 0, nextScalar = 0;
  for (const KernelParam &param : kernel.params) {
    std::string source;
    if (param.kind == ParamKind::Scalar) {
      source = nextScalar < scalars ? "scalar " + std::to_string(nextScalar)
                                    : "nothing";
      ++nextScalar;
    } else if (nextBuffer < inputs) {
      source = "input " + std::to_string(nextBuffer++);
    } else {
      size_t output = nextBuffer++ - inputs;
      source = output < outputs ? "output " + std::to_string(output)
                                : "nothing";
    }
    binding += (binding.empty() ? "" : ", ") + param.name + " <- " + source;
  }
  std::vector<std::string> unused;
  for (size_t k = scalarParams.size(); k < scalars; ++k)
    unused.push_back("scalar " + std::to_string(k));
  for (size_t k = bufferParams.size(); k < inputs; ++k)
    unused.push_back("input " + std::to_string(k));
  size_t usedOutputs =
      bufferParams.size() > inputs ? bufferParams.size() - inputs : 0;
  for (size_t k = usedOutputs; k < outputs; ++k)
    unused.push_back("output " + std::to_string(k));
  for (size_t k = 0; k < unused.size(); ++k)
    binding += (k == 0 ? "; left over: " : ", ") + unused[k];

  std::vector<size_t> all(kernel.params.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  throw DispatchError(
      prefix + " has " + plural(all.size(), "parameter") + " (" +
      describeParams(kernel, all) + ") but " + plural(inputs, "input") +
      " + " + plural(scalars, "scalar") + " + " + plural(outputs, "output") +
      " = " + std::to_string(inputs + scalars + outputs) + " were given (" +
      binding + "). Every parameter takes exactly one: scalars bind to the "
      "scalar parameters in order, inputs to the buffer parameters in order, "
      "outputs to the buffer parameters after the inputs. output_size is one "
      "output; give output_sizes=[...] (one size per output) for several");
}

} // namespace

ConstantValues bindConstants(const KernelArtifact &kernel,
                             const ConstantArgs &given) {
  ConstantValues values;
  for (const FunctionConstantUse &use : kernel.constants) {
    std::string label = "function constant " + std::to_string(use.index) +
                        " (" + shortName(use.dtype) + ")";
    auto it = given.find(use.index);
    if (it == given.end())
      throw DispatchError("kernel " + kernel.kernelName + " uses " + label +
                          " but no value was given for it");
    std::optional<DType> type = parseDType(it->second.dtype);
    if (!type)
      throw DispatchError(label + ": unknown dtype '" + it->second.dtype +
                          "'");
    if (*type != use.dtype)
      throw DispatchError("kernel " + kernel.kernelName + " declares " +
                          label + " but it was given as " +
                          shortName(*type));
    values[use.index] = convertNumber(it->second.value, use.dtype, label);
  }
  // Constants the kernel does not use are ignored, as Metal does.
  return values;
}

Dispatcher::Binding Dispatcher::bind(const KernelArtifact &kernel,
                                     const DispatchArgs &args) const {
  const std::vector<KernelParam> &params = kernel.params;
  std::vector<size_t> bufferParams, scalarParams;
  for (size_t i = 0; i < params.size(); ++i)
    (params[i].kind == ParamKind::Buffer ? bufferParams : scalarParams)
        .push_back(i);
  const std::string prefix = "kernel " + kernel.kernelName;

  if (args.scalars.size() != scalarParams.size())
    throw DispatchError(prefix + " takes " +
                        plural(scalarParams.size(), "scalar") + " (" +
                        describeParams(kernel, scalarParams) + ") but " +
                        std::to_string(args.scalars.size()) + " were given");
  checkCoverage(kernel, bufferParams, scalarParams, args);
  const std::vector<size_t> &sizes = args.outputSizes;
  const std::vector<ArrayArg> &outputArrays = args.outputArrays;

  Binding binding;
  binding.slots.resize(params.size());
  size_t nextBuffer = 0, nextScalar = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    const KernelParam &param = params[i];
    Binding::Slot &slot = binding.slots[i];
    if (param.kind == ParamKind::Scalar) {
      if (param.vecWidth > 1)
        throw DispatchError(prefix + ": vector scalar parameter " +
                            describeParam(param) + " is not supported");
      slot.source = Binding::Source::Scalar;
      slot.index = nextScalar;
      const HostNumber &value = args.scalars[nextScalar++];
      slot.scalar = convertNumber(value, param.dtype,
                                  "scalar parameter " + describeParam(param));
      if (param.multipleOf > 1)
        checkMultiple(prefix, param, value);
    } else if (nextBuffer < args.inputs.size()) {
      const ArrayArg &input = args.inputs[nextBuffer];
      checkInput(kernel, param, nextBuffer, input);
      slot.source = Binding::Source::Input;
      slot.index = nextBuffer++;
      slot.bytes = input.bytes;
      slot.device = input.onDevice ? &input : nullptr;
    } else {
      size_t output = nextBuffer++ - args.inputs.size();
      slot.source = Binding::Source::Output;
      slot.index = output;
      if (!outputArrays.empty()) {
        checkOutputArray(kernel, param, output, outputArrays[output]);
        slot.bytes = outputArrays[output].bytes;
        slot.device = &outputArrays[output];
      } else {
        slot.bytes = sizes[output];
        checkOutputSize(kernel, param, slot.bytes);
      }
    }
  }
  binding.constants = bindConstants(kernel, args.constants);
  return binding;
}

//===----------------------------------------------------------------------===//
// Dispatcher
//===----------------------------------------------------------------------===//

Dispatcher::Dispatcher(std::shared_ptr<Backend> backend)
    : device(std::move(backend)) {
  if (!device)
    throw std::invalid_argument("Dispatcher needs a backend");
}

uint64_t Dispatcher::maxThreadsPerThreadgroup() const {
  return std::min(kMaxThreadsPerThreadgroup,
                  device->maxThreadsPerThreadgroup());
}

namespace {
/// One lock for the kernel tables of every dispatcher: held only to look up
/// and update them, never while a kernel compiles (a fork() may copy it).
ForkSafeMutex &tablesMutex() {
  static ForkSafeMutex *mutex = new ForkSafeMutex;
  return *mutex;
}

/// Kernels a dispatcher keeps loaded when nothing else uses them:
/// ENIGMA_LOADED_KERNELS, else 128.
size_t loadedKernelBound() {
  static const size_t bound = [] {
    const char *text = std::getenv("ENIGMA_LOADED_KERNELS");
    long value = text && *text ? std::strtol(text, nullptr, 10) : 0;
    return size_t(value >= 1 ? value : 128);
  }();
  return bound;
}
} // namespace

Dispatcher::~Dispatcher() = default;

std::shared_ptr<LoadedKernel>
Dispatcher::loadKernel(const KernelArtifact &kernel,
                       const ConstantValues &constants) {
  // The sources identify the kernel; a process-local hash is enough since
  // the name and constants are part of the key too.
  std::hash<std::string> hashText;
  std::ostringstream keyText;
  keyText << kernel.kernelName << '|' << std::hex << hashText(kernel.cppSource)
          << '|' << hashText(kernel.mslSource) << '|'
          << hashText(kernel.cudaSource);
  for (const auto &[index, value] : constants)
    keyText << '|' << std::dec << index << ':' << shortName(value.dtype) << '='
            << std::hex << value.bits;
  const std::string key = keyText.str();

  // The runtimes that run Metal source cannot run what Metal lacks.
  std::string backend = device->name();
  if (!kernel.metalUnsupported.empty() &&
      (backend == "metal" || backend == "metal-host"))
    throw EnigmaError("kernel " + kernel.kernelName + " cannot run on the " +
                      backend + " runtime: " + kernel.metalUnsupported +
                      ". Run it on the CPU or CUDA runtime");

  // Loading happens outside the lock, so that launches of loaded kernels
  // never wait for a compile; a second thread that wants the same kernel
  // waits for the first (polling, so that it can be interrupted) instead
  // of compiling it twice.
  for (auto lastPoll = std::chrono::steady_clock::now();;) {
    {
      std::lock_guard<ForkSafeMutex> lock(tablesMutex());
      KernelEntry &entry = kernels[key];
      std::shared_ptr<LoadedKernel> found =
          entry.kernel ? entry.kernel : entry.weak.lock();
      if (found) {
        entry.kernel = found;
        entry.lastUse = ++useClock;
        return found;
      }
      // A load in flight in another thread, unless that thread was in the
      // parent of this fork()ed child (and does not exist here).
      if (!entry.loading || entry.loadingGeneration != forkGeneration()) {
        entry.loading = true;
        entry.loadingGeneration = forkGeneration();
        break;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    if (auto now = std::chrono::steady_clock::now();
        now - lastPoll >= kInterruptPollInterval) {
      lastPoll = now;
      if (interruptRequested())
        throw Interrupted("waiting for kernel " + kernel.kernelName +
                          " to compile was interrupted");
    }
  }

  std::shared_ptr<LoadedKernel> loadedKernel;
  try {
    checkThreadgroupMemory(kernel, *device);
    loadedKernel = device->load(kernel, constants);
  } catch (...) {
    std::lock_guard<ForkSafeMutex> lock(tablesMutex());
    kernels.erase(key); // the next call tries again
    throw;
  }
  std::lock_guard<ForkSafeMutex> lock(tablesMutex());
  KernelEntry &entry = kernels[key];
  entry.loading = false;
  entry.kernel = loadedKernel;
  entry.weak = loadedKernel;
  entry.lastUse = ++useClock;
  keepRecentlyUsed();
  return loadedKernel;
}

void Dispatcher::keepRecentlyUsed() {
  const size_t bound = loadedKernelBound();
  std::vector<std::pair<uint64_t, KernelEntry *>> held;
  for (auto &[key, entry] : kernels)
    if (entry.kernel)
      held.emplace_back(entry.lastUse, &entry);
  if (held.size() > bound) {
    // The least recently used are let go (unloaded when nothing else holds
    // them; found again through `weak` while something does).
    std::nth_element(held.begin(), held.end() - bound, held.end());
    for (auto it = held.begin(); it != held.end() - bound; ++it)
      it->second->kernel.reset();
  }
  if (kernels.size() > 2 * bound + 16)
    std::erase_if(kernels, [](const auto &item) {
      const KernelEntry &entry = item.second;
      return !entry.kernel && !entry.loading && entry.weak.expired();
    });
}

void Dispatcher::materialize(const KernelArtifact &kernel,
                             const Binding &binding,
                             std::vector<std::shared_ptr<DeviceBuffer>> &buffers,
                             std::vector<LaunchArg> &launchArgs) {
  buffers.assign(kernel.params.size(), nullptr);
  launchArgs.assign(kernel.params.size(), LaunchArg{});
  for (size_t i = 0; i < binding.slots.size(); ++i) {
    const Binding::Slot &slot = binding.slots[i];
    if (slot.source == Binding::Source::Scalar) {
      launchArgs[i].scalar = slot.scalar;
      continue;
    }
    buffers[i] = slot.device
                     ? device->wrapDeviceMemory(slot.device->deviceAddress,
                                                slot.bytes)
                     : device->allocate(slot.bytes); // zero-filled
    launchArgs[i].buffer = buffers[i].get();
  }
}

std::vector<std::vector<uint8_t>>
Dispatcher::execute(const KernelArtifact &kernel, const DispatchArgs &args,
                    Dim3 grid, Dim3 threads) {
  checkLaunchShape(grid, threads, maxThreadsPerThreadgroup());
  checkThreadgroupShape(kernel, grid, threads);
  Binding binding = bind(kernel, args);
  const uint64_t threadgroupMemory =
      checkDynamicThreadgroupMemory(kernel, args.threadgroupMemory, *device);
  // Hidden parameters (dynamic threadgroup memory, bounds-checked mode)
  // come after the user's.
  std::shared_ptr<const KernelArtifact> hidden =
      BoundsCheckLaunch::hasHiddenParams(kernel)
          ? BoundsCheckLaunch::launchedArtifact(kernel)
          : nullptr;
  const KernelArtifact &launched = hidden ? *hidden : kernel;
  std::shared_ptr<LoadedKernel> loadedKernel =
      loadKernel(launched, binding.constants);

  std::vector<std::shared_ptr<DeviceBuffer>> buffers;
  std::vector<LaunchArg> launchArgs;
  materialize(kernel, binding, buffers, launchArgs);
  checkLaunchBounds(kernel, buffers, grid, launchArgs);
  if (kernel.dynamicThreadgroupMemory)
    launchArgs.push_back(
        LaunchArg{nullptr, ScalarValue{DType::U64, threadgroupMemory}});
  std::optional<BoundsCheckLaunch> boundsCheck;
  if (BoundsCheckLaunch::needed(kernel)) {
    boundsCheck.emplace(*device, hidden, buffers);
    boundsCheck->appendArgs(launchArgs);
  }
  for (size_t i = 0; i < binding.slots.size(); ++i) {
    const Binding::Slot &slot = binding.slots[i];
    if (slot.source == Binding::Source::Input && slot.bytes > 0 &&
        !slot.device)
      device->upload(*buffers[i], args.inputs[slot.index].data, slot.bytes);
  }

  if (boundsCheck)
    boundsCheck->launching(grid, threads, threadgroupMemory);
  device->launch(*loadedKernel, launched, launchArgs, grid, threads);
  if (boundsCheck)
    boundsCheck->check(*device);

  std::vector<std::vector<uint8_t>> outputs;
  for (size_t i = 0; i < binding.slots.size(); ++i) {
    const Binding::Slot &slot = binding.slots[i];
    if (slot.source != Binding::Source::Output)
      continue;
    if (slot.device) { // written in place; nothing to return
      outputs.emplace_back();
      continue;
    }
    outputs.emplace_back(slot.bytes);
    device->download(*buffers[i], outputs.back().data(), slot.bytes);
  }
  return outputs;
}

PreparedKernel Dispatcher::prepare(const KernelArtifact &kernel,
                                   const DispatchArgs &args) {
  Binding binding = bind(kernel, args);
  PreparedKernel prepared;
  prepared.threadgroupMemory =
      checkDynamicThreadgroupMemory(kernel, args.threadgroupMemory, *device);
  prepared.artifact = BoundsCheckLaunch::hasHiddenParams(kernel)
                          ? BoundsCheckLaunch::launchedArtifact(kernel)
                          : std::make_shared<const KernelArtifact>(kernel);
  prepared.kernel = loadKernel(*prepared.artifact, binding.constants);
  materialize(kernel, binding, prepared.buffers, prepared.args);
  if (kernel.dynamicThreadgroupMemory)
    prepared.args.push_back(
        LaunchArg{nullptr, ScalarValue{DType::U64, prepared.threadgroupMemory}});
  if (BoundsCheckLaunch::needed(kernel)) {
    prepared.boundsCheck = std::make_shared<BoundsCheckLaunch>(
        *device, prepared.artifact, prepared.buffers);
    prepared.boundsCheck->appendArgs(prepared.args);
  }
  for (size_t i = 0; i < binding.slots.size(); ++i) {
    const Binding::Slot &slot = binding.slots[i];
    if (slot.source == Binding::Source::Input && slot.bytes > 0 &&
        !slot.device)
      device->upload(*prepared.buffers[i], args.inputs[slot.index].data,
                     slot.bytes);
    if (slot.source == Binding::Source::Output)
      prepared.outputParams.push_back(i);
  }
  prepared.backend = device;
  prepared.kernelName = kernel.kernelName;
  prepared.onHost = device->name() != "cuda" && device->name() != "metal";
  return prepared;
}

//===----------------------------------------------------------------------===//
// PreparedKernel
//===----------------------------------------------------------------------===//

void PreparedKernel::checkUsable() const {
  if (!backend)
    throw RuntimeFailure("prepared kernel " + kernelName +
                         " was released; prepare it again to use it");
}

void PreparedKernel::beforeLaunch(Dim3 grid, Dim3 threads) {
  checkUsable();
  checkLaunchShape(grid, threads,
                   std::min(kMaxThreadsPerThreadgroup,
                            backend->maxThreadsPerThreadgroup()));
  checkThreadgroupShape(*artifact, grid, threads);
  checkLaunchBounds(*artifact, buffers, grid, args);
  if (boundsCheck)
    boundsCheck->launching(grid, threads, threadgroupMemory);
}

void PreparedKernel::dispatch(Dim3 grid, Dim3 threads) {
  beforeLaunch(grid, threads);
  backend->launch(*kernel, *artifact, args, grid, threads);
  if (boundsCheck)
    boundsCheck->check(*backend);
}

void PreparedKernel::dispatchAsync(Dim3 grid, Dim3 threads) {
  beforeLaunch(grid, threads);
  backend->launchAsync(*kernel, *artifact, args, grid, threads);
}

void PreparedKernel::synchronize() {
  checkUsable();
  backend->synchronize();
  if (boundsCheck) // violations of the launches queued until now
    boundsCheck->check(*backend);
}

double PreparedKernel::dispatchTimed(Dim3 grid, Dim3 threads) {
  beforeLaunch(grid, threads);
  double micros = backend->launchTimed(*kernel, *artifact, args, grid, threads);
  if (boundsCheck)
    boundsCheck->check(*backend);
  return micros;
}

std::vector<std::vector<uint8_t>> PreparedKernel::readOutputs() const {
  checkUsable();
  backend->synchronize(); // queued launches write these buffers
  std::vector<std::vector<uint8_t>> outputs;
  for (size_t param : outputParams) {
    const DeviceBuffer &buffer = *buffers[param];
    outputs.emplace_back(buffer.size());
    backend->download(buffer, outputs.back().data(), buffer.size());
  }
  return outputs;
}

std::vector<uint8_t> PreparedKernel::readOutput() const {
  checkUsable();
  if (outputParams.empty())
    throw DispatchError("kernel " + kernelName + " has no output buffer");
  backend->synchronize(); // queued launches write this buffer
  const DeviceBuffer &buffer = *buffers[outputParams.front()];
  std::vector<uint8_t> bytes(buffer.size());
  backend->download(buffer, bytes.data(), bytes.size());
  return bytes;
}

void PreparedKernel::release() {
  args.clear();
  buffers.clear();
  outputParams.clear();
  kernel.reset();
  artifact.reset();
  boundsCheck.reset();
  backend.reset();
}

} // namespace enigma
