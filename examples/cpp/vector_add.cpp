//===- vector_add.cpp - The seed kernel written with the C++ API ----------===//
//
// Builds `C[tid] = A[tid] + B[tid]` with enigma::KernelBuilder, compiles it
// (MLIR -> MSL, CUDA C++, host C++), prints the Metal Shading Language, runs
// it on the CPU backend through the shared Dispatcher and checks the result.
// Prints "pass" when every element matches.
//
//===----------------------------------------------------------------------===//
#include "enigma/Builder/KernelBuilder.h"
#include "enigma/Runtime/CpuBackend.h"
#include "enigma/Runtime/Dispatch.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <vector>

namespace {

enigma::KernelArtifact buildVectorAdd() {
  enigma::KernelBuilder k("vector_add");
  enigma::Buffer A = k.addBuffer("A", enigma::DType::F32);
  enigma::Buffer B = k.addBuffer("B", enigma::DType::F32);
  enigma::Buffer C = k.addBuffer("C", enigma::DType::F32);
  enigma::Value tid = k.threadPositionInGrid();
  C[tid] = A[tid] + B[tid];
  return k.compile();
}

/// Runs the kernel over `n` elements with 256-thread groups (the last one
/// partial unless n is a multiple of 256); returns how many elements differ
/// from a + b, counting a written element past the grid as a difference.
size_t runAndCheck(enigma::Dispatcher &dispatcher,
                   const enigma::KernelArtifact &kernel, uint32_t n,
                   std::mt19937 &rng) {
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> a(n), b(n);
  for (uint32_t i = 0; i < n; ++i) {
    a[i] = dist(rng);
    b[i] = dist(rng);
  }
  const size_t extra = 3; // elements past the grid stay zero
  enigma::DispatchArgs args;
  args.inputs = {{a.data(), n * sizeof(float), enigma::DType::F32, n},
                 {b.data(), n * sizeof(float), enigma::DType::F32, n}};
  args.outputSizes = {(n + extra) * sizeof(float)};
  std::vector<std::vector<uint8_t>> outputs =
      dispatcher.execute(kernel, args, {n, 1, 1}, {256, 1, 1});

  std::vector<float> c(n + extra);
  std::memcpy(c.data(), outputs.at(0).data(), c.size() * sizeof(float));
  size_t bad = 0;
  for (uint32_t i = 0; i < n; ++i)
    bad += c[i] != a[i] + b[i];
  for (size_t i = n; i < n + extra; ++i)
    bad += c[i] != 0.0f;
  std::printf("n = %u: %zu mismatches\n", n, bad);
  return bad;
}

} // namespace

int main() {
  try {
    enigma::KernelArtifact kernel = buildVectorAdd();
    std::printf("kernel %s, Metal Shading Language:\n%s\n",
                kernel.kernelName.c_str(), kernel.mslSource.c_str());

    enigma::Dispatcher dispatcher(std::make_shared<enigma::CpuBackend>());
    std::mt19937 rng(std::random_device{}());
    size_t bad = 0;
    for (uint32_t n : {1u, 255u, 257u, 1u << 20})
      bad += runAndCheck(dispatcher, kernel, n, rng);
    if (bad != 0) {
      std::printf("FAIL\n");
      return 1;
    }
    std::printf("pass\n");
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
