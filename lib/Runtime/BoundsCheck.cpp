//===- BoundsCheck.cpp - Out-of-bounds detection at dispatch --------------===//
#include "enigma/Runtime/BoundsCheck.h"

#include "enigma/Support/BoundsRecord.h"

#include "CheckReport.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>

namespace enigma {

namespace {
namespace rec = bounds_record;

size_t entryBytes(const KernelParam &param) {
  return byteWidth(param.dtype) * std::max(1u, param.vecWidth);
}

/// "C (f32)" / "C (f32x4)".
std::string describeBuffer(const KernelParam &param) {
  std::string type = shortName(param.dtype);
  if (param.vecWidth > 1)
    type += "x" + std::to_string(param.vecWidth);
  return param.name + " (" + type + ")";
}

std::string where(const std::string &location) {
  return location.empty() ? "" : " at " + location;
}

/// How many positions along a guard's dimension pass it (`position <
/// limit`), or nothing where the comparison cannot be judged exactly: the
/// grid has positions that would read as negative in a signed comparison.
std::optional<uint64_t> passingPositions(const GridIndexBound::Guard &guard,
                                         const ScalarBits &scalars,
                                         uint64_t extent) {
  const unsigned bits = std::clamp(guard.bits, 1u, 64u);
  const uint64_t mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  const uint64_t limit =
      (guard.param < 0 ? guard.limit : scalars(unsigned(guard.param))) & mask;
  if (extent - 1 > mask)
    return std::nullopt; // positions wrap at the comparison's width
  if (!guard.isSigned)
    return limit;
  const uint64_t sign = uint64_t(1) << (bits - 1);
  if (extent - 1 >= sign)
    return std::nullopt;
  return (limit & sign) ? 0 : limit; // a negative limit: nobody passes
}

/// " (under `if thread_position_in_grid.x < n = 100`)", or "" unguarded.
std::string guardText(const KernelArtifact &kernel,
                      const GridIndexBound::Guard &guard, uint64_t limit) {
  if (guard.dim < 0)
    return "";
  std::string what = guard.param >= 0 && size_t(guard.param) <
                                             kernel.params.size()
                         ? kernel.params[size_t(guard.param)].name + " = " +
                               std::to_string(limit)
                         : std::to_string(limit);
  return std::string(" (under `if thread_position_in_grid.") +
         "xyz"[guard.dim] + " < " + what + "`)";
}

std::string formatUint128(unsigned __int128 value) {
  if (value == 0)
    return "0";
  std::string digits;
  for (; value; value /= 10)
    digits.insert(digits.begin(), char('0' + int(value % 10)));
  return digits;
}
/// A matrix side's base at this launch: the constant, or the scalar
/// parameter read in its own dtype; nothing for a negative signed value.
std::optional<uint64_t> sideBase(const KernelArtifact &kernel,
                                 const MatrixExtent::Side &side,
                                 const ScalarBits &scalars) {
  if (side.param < 0)
    return side.value;
  if (size_t(side.param) >= kernel.params.size())
    return std::nullopt;
  const DType dtype = kernel.params[size_t(side.param)].dtype;
  const unsigned bits = unsigned(byteWidth(dtype)) * 8;
  uint64_t value = scalars(unsigned(side.param));
  if (bits < 64)
    value &= (uint64_t(1) << bits) - 1;
  if (isSigned(dtype) && (value >> (bits - 1)) & 1)
    return std::nullopt;
  return value;
}

/// The side: its base divided (rounding up) by its divisor, times its
/// scale, at most 2^63 (so that the extent's product fits 128 bits; no
/// buffer is that large).
std::optional<uint64_t> sideValue(const KernelArtifact &kernel,
                                  const MatrixExtent::Side &side,
                                  const ScalarBits &scalars) {
  std::optional<uint64_t> base = sideBase(kernel, side, scalars);
  if (!base || side.divisor == 0)
    return std::nullopt;
  const unsigned __int128 value =
      (unsigned __int128)(*base / side.divisor +
                          (*base % side.divisor != 0)) *
      side.scale;
  const uint64_t most = uint64_t(1) << 63;
  return value > most ? most : uint64_t(value);
}

/// The matrices of kernel.matrixExtents against their bound buffers.
void checkMatrixExtents(
    const KernelArtifact &kernel,
    const std::vector<std::shared_ptr<DeviceBuffer>> &buffers,
    const ScalarBits &scalars) {
  for (const MatrixExtent &matrix : kernel.matrixExtents) {
    if (matrix.param >= kernel.params.size() ||
        matrix.param >= buffers.size() || !buffers[matrix.param])
      continue;
    std::optional<uint64_t> rows = sideValue(kernel, matrix.rows, scalars);
    std::optional<uint64_t> cols = sideValue(kernel, matrix.cols, scalars);
    std::optional<uint64_t> pitch = sideValue(kernel, matrix.pitch, scalars);
    if (!rows || !cols || !pitch || *rows == 0 || *cols == 0)
      continue;
    const unsigned __int128 needed =
        (unsigned __int128)(*rows - 1) * *pitch + *cols;
    const KernelParam &param = kernel.params[matrix.param];
    const size_t bytes = buffers[matrix.param]->size();
    const uint64_t entries = bytes / entryBytes(param);
    if (needed <= entries)
      continue;
    // One row: a flat extent, whose sizes `what` already gives.
    const std::string shape =
        matrix.rows.param < 0 && matrix.rows.value == 1
            ? ""
            : ", " + std::to_string(*rows) + " x " + std::to_string(*cols) +
                  " with pitch " + std::to_string(*pitch);
    throw DispatchError(
        "kernel " + kernel.kernelName + ": " + matrix.what + shape + ": " +
        formatUint128(needed) + " elements, but " + describeBuffer(param) +
        " has " +
        std::to_string(entries) + " (" + std::to_string(bytes) +
        " bytes); nothing was run. Give the buffer at least " +
        formatUint128(needed * entryBytes(param)) +
        " bytes (for an output: output_size), or pass the sizes it holds");
  }
}
} // namespace

//===----------------------------------------------------------------------===//
// Before the launch
//===----------------------------------------------------------------------===//

void checkLaunchBounds(
    const KernelArtifact &kernel,
    const std::vector<std::shared_ptr<DeviceBuffer>> &buffers, Dim3 grid,
    const ScalarBits &scalars) {
  checkMatrixExtents(kernel, buffers, scalars);
  const uint64_t extent[3] = {grid.x, grid.y, grid.z};
  for (const GridIndexBound &bound : kernel.gridIndexBounds) {
    if (bound.param >= kernel.params.size() || bound.param >= buffers.size() ||
        !buffers[bound.param])
      continue;
    const KernelParam &param = kernel.params[bound.param];
    // The positions that make the access along every dimension.
    uint64_t reach[3] = {extent[0], extent[1], extent[2]};
    uint64_t limit = 0;
    if (bound.guard.dim >= 0) {
      std::optional<uint64_t> passing = passingPositions(
          bound.guard, scalars, extent[bound.guard.dim]);
      if (!passing || *passing == 0)
        continue; // not judged, or no thread passes the guard
      limit = *passing;
      reach[bound.guard.dim] = std::min(reach[bound.guard.dim], limit);
    }
    // The index of the last thread along every dimension that feeds it.
    unsigned __int128 computed = bound.offset;
    uint64_t thread[3] = {0, 0, 0};
    for (int d = 0; d < 3; ++d) {
      if (bound.coefficient[d] == 0)
        continue;
      thread[d] = reach[d] - 1;
      computed += (unsigned __int128)bound.coefficient[d] * thread[d];
    }
    // Where the kernel's integers would wrap, it does not compute this
    // index: leave such a dispatch to the kernel.
    unsigned bits = bound.valueBits - (bound.signedIndex ? 1 : 0);
    if (bits < 128 && (computed >> bits) != 0)
      continue;
    unsigned __int128 last = computed + bound.extent - 1;
    size_t bytes = buffers[bound.param]->size();
    uint64_t entries = bytes / entryBytes(param);
    if (last < entries)
      continue;
    std::string index = formatUint128(computed);
    if (bound.extent > 1)
      index = "[" + index + ", " + formatUint128(computed + bound.extent) +
              ")";
    throw DispatchError(
        "kernel " + kernel.kernelName + ": the " + bound.access + " of " +
        param.name + where(bound.location) +
        guardText(kernel, bound.guard, limit) + " reaches index " + index +
        " for thread (" + std::to_string(thread[0]) + ", " +
        std::to_string(thread[1]) + ", " + std::to_string(thread[2]) +
        ") of grid (" + std::to_string(grid.x) + ", " +
        std::to_string(grid.y) + ", " + std::to_string(grid.z) + "), but " +
        describeBuffer(param) + " has " + std::to_string(entries) +
        " elements (" + std::to_string(bytes) +
        " bytes); nothing was run. Give the buffer at least " +
        formatUint128((last + 1) * entryBytes(param)) +
        " bytes (for an output: output_size), launch a smaller grid, or " +
        (bound.guard.dim >= 0 ? std::string("lower the guard's bound")
                              : "guard the access with `with enigma.if_(...)`"));
  }
}

void checkLaunchBounds(
    const KernelArtifact &kernel,
    const std::vector<std::shared_ptr<DeviceBuffer>> &buffers, Dim3 grid,
    const std::vector<LaunchArg> &args) {
  checkLaunchBounds(kernel, buffers, grid, [&](unsigned i) {
    return i < args.size() ? args[i].scalar.bits : 0;
  });
}

//===----------------------------------------------------------------------===//
// Bounds-checked mode
//===----------------------------------------------------------------------===//

std::shared_ptr<const KernelArtifact>
BoundsCheckLaunch::launchedArtifact(const KernelArtifact &kernel) {
  auto launched = std::make_shared<KernelArtifact>(kernel);
  if (kernel.dynamicThreadgroupMemory) {
    KernelParam bytes;
    bytes.name = "enigma_threadgroup_memory_bytes";
    bytes.kind = ParamKind::Scalar;
    bytes.dtype = DType::U64;
    launched->params.push_back(bytes);
  }
  for (const BoundsCheckParam &hidden : kernel.boundsCheckParams)
    launched->params.push_back(hidden.param);
  return launched;
}

BoundsCheckLaunch::BoundsCheckLaunch(
    Backend &backend, std::shared_ptr<const KernelArtifact> launched,
    const std::vector<std::shared_ptr<DeviceBuffer>> &buffers)
    : kernel(std::move(launched)) {
  const KernelArtifact &kernel = *this->kernel;
  record = backend.allocate(rec::kWords * sizeof(uint32_t)); // zero-filled
  for (const BoundsCheckParam &param : kernel.boundsCheckParams) {
    LaunchArg arg;
    if (param.sizeOfParam < 0) {
      arg.buffer = record.get();
    } else {
      auto index = size_t(param.sizeOfParam);
      if (index >= buffers.size() || !buffers[index] ||
          index >= kernel.params.size())
        throw RuntimeFailure("kernel " + kernel.kernelName +
                             ": bounds check of a parameter that has no "
                             "buffer");
      arg.scalar = ScalarValue{DType::U64, buffers[index]->size() /
                                               entryBytes(kernel.params[index])};
    }
    hidden.push_back(arg);
  }
}

void BoundsCheckLaunch::appendArgs(std::vector<LaunchArg> &args) const {
  args.insert(args.end(), hidden.begin(), hidden.end());
}

void BoundsCheckLaunch::launching(Dim3 grid, Dim3 threads,
                                  uint64_t threadgroupMemory) {
  lastGrid = grid;
  lastThreads = threads;
  lastThreadgroupMemory = threadgroupMemory;
}

void BoundsCheckLaunch::check(Backend &backend) const {
  uint32_t words[rec::kWords] = {};
  backend.download(*record, words, sizeof words);
  if (words[rec::kClaim] == 0)
    return;
  const uint32_t clean[rec::kWords] = {};
  backend.upload(*record, clean, sizeof clean);

  CheckedLaunch launch;
  launch.kernel = kernel.get();
  launch.grid = lastGrid;
  launch.threads = lastThreads;
  launch.threadgroupMemory = lastThreadgroupMemory;
  launch.context = this;
  launch.sizeOf = [](const void *context, int param) -> uint64_t {
    auto *self = static_cast<const BoundsCheckLaunch *>(context);
    const auto &hidden = self->kernel->boundsCheckParams;
    for (size_t h = 0; h < hidden.size(); ++h)
      if (hidden[h].sizeOfParam == param)
        return self->hidden[h].scalar.bits;
    return 0;
  };
  throw BoundsViolation(describeViolation(launch, words));
}

} // namespace enigma
