//===- PreparedKernel.cpp - A kernel bound once, launched many times ------===//
#include "enigma/Runtime/BoundsCheck.h"
#include "enigma/Runtime/Dispatch.h"

#include <algorithm>

namespace enigma {

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
