//===- CudaBuffer.cpp - Device memory of the CUDA backend -----------------===//
#include "CudaBuffer.h"

#include <algorithm>

namespace enigma {
using namespace cuda;

CudaBuffer::~CudaBuffer() {
  // After a reset the memory is gone, and its address may belong to a
  // newer allocation: never free it then.
  const PrimaryContext &primary = *state->primary;
  if (owned && generation == primary.generation) {
    CallersContext keep(*state);
    if (state->api.cuCtxSetCurrent(primary.context) == kCudaSuccess)
      state->api.cuMemFree(pointer);
  }
}

CUdeviceptr CudaBuffer::address() const {
  if (generation != state->primary->generation)
    throw RuntimeFailure(
        std::string(owned ? "a buffer of this CUDA runtime"
                          : "a device array bound to this CUDA runtime") +
        " was made before the CUDA context of device " +
        std::to_string(state->ordinal) +
        " was reset after a kernel faulted, and is gone; " +
        (owned ? "prepare the kernel again" : "bind a new array"));
  return pointer;
}

const CudaBuffer &cuda::asCudaBuffer(const DeviceBuffer &buffer) {
  auto *cudaBuffer = dynamic_cast<const CudaBuffer *>(&buffer);
  if (!cudaBuffer)
    throw DispatchError("buffer was not made by the CUDA backend");
  return *cudaBuffer;
}

namespace {
std::string toHex(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string text;
  do {
    text.insert(text.begin(), digits[value & 15]);
    value >>= 4;
  } while (value);
  return text;
}
} // namespace

std::shared_ptr<DeviceBuffer> CudaBackend::allocate(size_t bytes) {
  CallersContext keep(*state);
  state->makeCurrent();
  // cuMemAlloc rejects 0 bytes; a tiny allocation keeps every buffer a
  // valid pointer to pass to a kernel.
  size_t allocated = std::max<size_t>(bytes, 16);
  CUdeviceptr pointer = 0;
  CUresult result = state->api.cuMemAlloc(&pointer, allocated);
  if (poisonsContext(result))
    state->check(result, "cuMemAlloc");
  if (result != kCudaSuccess)
    throw RuntimeFailure("allocating " + std::to_string(bytes) +
                         " bytes on " + state->deviceName + " failed: " +
                         describeResult(state->api, result));
  auto buffer = std::make_shared<CudaBuffer>(state, pointer, bytes, true);
  state->check(state->api.cuMemsetD8(pointer, 0, allocated), "cuMemsetD8");
  return buffer;
}

std::shared_ptr<DeviceBuffer>
CudaBackend::wrapDeviceMemory(uint64_t address, size_t bytes) {
  if (bytes == 0) // an empty array may have no address at all
    return allocate(0);
  if (address == 0)
    throw DispatchError("a device array of " + std::to_string(bytes) +
                        " bytes has a null address");
  // A pointer of another device (or host memory) would only fail later, as
  // an illegal address inside the kernel; say it now.
  CallersContext keep(*state);
  state->makeCurrent();
  int ordinal = -1;
  CUresult result = state->api.cuPointerGetAttribute(
      &ordinal, kPointerAttributeDeviceOrdinal, CUdeviceptr(address));
  if (result != kCudaSuccess)
    throw DispatchError("address 0x" + toHex(address) +
                        " is not CUDA memory (" +
                        describeResult(state->api, result) + ")");
  if (ordinal != state->ordinal)
    throw DispatchError("the array lives on CUDA device " +
                        std::to_string(ordinal) + " but this runtime uses "
                        "device " + std::to_string(state->ordinal));
  return std::make_shared<CudaBuffer>(state, CUdeviceptr(address), bytes,
                                      false);
}

uint64_t CudaBackend::devicePointer(const DeviceBuffer &buffer) {
  return asCudaBuffer(buffer).address();
}

void CudaBackend::upload(DeviceBuffer &dst, const void *src, size_t bytes) {
  const CudaBuffer &buffer = asCudaBuffer(dst);
  if (bytes > buffer.bytes)
    throw DispatchError("upload of " + std::to_string(bytes) +
                        " bytes into a " + std::to_string(buffer.bytes) +
                        "-byte buffer");
  if (bytes == 0)
    return;
  CallersContext keep(*state);
  state->makeCurrent();
  state->check(state->api.cuMemcpyHtoD(buffer.address(), src, bytes),
               "cuMemcpyHtoD");
}

void CudaBackend::download(const DeviceBuffer &src, void *dst, size_t bytes) {
  const CudaBuffer &buffer = asCudaBuffer(src);
  if (bytes > buffer.bytes)
    throw DispatchError("download of " + std::to_string(bytes) +
                        " bytes from a " + std::to_string(buffer.bytes) +
                        "-byte buffer");
  if (bytes == 0)
    return;
  CallersContext keep(*state);
  state->makeCurrent();
  state->check(state->api.cuMemcpyDtoH(dst, buffer.address(), bytes),
               "cuMemcpyDtoH");
}

} // namespace enigma
