//===- LaunchTensorMaps.cpp - Tensor-map parameters of a launch -----------===//
#include "LaunchTensorMaps.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace enigma {

namespace {
// cuda.h's enumerators (the driver is loaded at run time, without cuda.h).
constexpr int kUint8 = 0, kUint16 = 1, kUint32 = 2, kUint64 = 4;
constexpr int kSwizzleNone = 0, kSwizzle128 = 3;
constexpr int kInterleaveNone = 0, kL2Promotion256 = 3, kOobFillZeros = 0;

/// Rows the map spans (cuTensorMapEncodeTiled allows up to 2^32): the
/// kernel asks only for boxes the cp.async copy would read, below row 2^31
/// (the TMA's coordinates are signed 32-bit).
constexpr uint64_t kRows = uint64_t(1) << 31;

/// A side of the map (pitch, rows, columns) in elements: the value of
/// scalar parameter `index`, or `constant` when `index` is -1; nothing
/// when the parameter holds a negative value or zero.
std::optional<uint64_t> sideOf(const KernelArtifact &artifact, int index,
                               uint64_t constant, const uint64_t *slots) {
  if (index < 0)
    return constant;
  const KernelParam &param = artifact.params[size_t(index)];
  size_t bytes = byteWidth(param.dtype);
  uint64_t bits = slots[index];
  if (bytes < 8)
    bits &= (uint64_t(1) << (8 * bytes)) - 1;
  if (isSigned(param.dtype) && (bits >> (8 * bytes - 1)) & 1)
    return std::nullopt;
  if (bits == 0)
    return std::nullopt;
  return bits;
}

int dataTypeOf(unsigned elementBytes) {
  switch (elementBytes) {
  case 1: return kUint8;
  case 2: return kUint16;
  case 4: return kUint32;
  default: return kUint64;
  }
}
} // namespace

LaunchTensorMaps::LaunchTensorMaps(const cuda::DriverApi &api,
                                   const KernelArtifact &artifact,
                                   const uint64_t *slots) {
  used = std::min<size_t>(artifact.cudaTensorMaps.size(), kMaxCudaTensorMaps);
  for (size_t i = 0; i < used; ++i) {
    const CudaTensorMap &map = artifact.cudaTensorMaps[i];
    std::memset(&maps[i], 0, sizeof(Map));
    std::optional<uint64_t> pitch =
        sideOf(artifact, map.pitchParam, map.pitchConstant, slots);
    uint64_t address = slots[map.param];
    if (!api.cuTensorMapEncodeTiled || !pitch || address % 16 ||
        (*pitch * map.elementBytes) % 16 ||
        *pitch * map.elementBytes >= (uint64_t(1) << 40) ||
        *pitch > (uint64_t(1) << 32))
      continue;
    uint64_t dims[2] = {*pitch, kRows};
    // A pipeline's copy names its matrix: the TMA zero-fills outside it
    // (the launch has checked that the buffer holds it). Coordinates are
    // signed 32-bit, so both sides stay below 2^31.
    if (map.rowsParam >= 0 || map.rowsConstant) {
      std::optional<uint64_t> rows =
          sideOf(artifact, map.rowsParam, map.rowsConstant, slots);
      std::optional<uint64_t> cols =
          sideOf(artifact, map.colsParam, map.colsConstant, slots);
      if (!rows || !cols || *rows == 0 || *cols == 0 || *cols > *pitch ||
          *rows >= kRows || *cols >= kRows)
        continue;
      dims[0] = *cols;
      dims[1] = *rows;
    }
    const uint64_t strides[1] = {*pitch * map.elementBytes};
    const unsigned box[2] = {map.boxCols, map.boxRows};
    const unsigned steps[2] = {1, 1};
    cuda::CUresult result = api.cuTensorMapEncodeTiled(
        &maps[i], dataTypeOf(map.elementBytes), 2,
        reinterpret_cast<void *>(address), dims, strides, box, steps,
        kInterleaveNone, map.swizzle128 ? kSwizzle128 : kSwizzleNone,
        kL2Promotion256, kOobFillZeros);
    if (result == cuda::kCudaSuccess)
      valid |= 1u << i;
  }
}

} // namespace enigma
