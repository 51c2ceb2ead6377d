#!/usr/bin/env bash
# Run here (where MLIR is installed): gathers what the GPU machine needs and
# cannot build itself — the self-contained core libenigma.so and the C++
# CUDA test binaries — into gpu-carry/ (git-ignored), to be carried along
# with the working tree. Then scripts/gpu_run.sh runs there.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake --build build --target enigma CudaBackendTest NvrtcCompileTest
rm -rf gpu-carry && mkdir -p gpu-carry
cp build/lib/libenigma.so build/unittests/Cuda/CudaBackendTest \
   build/unittests/Cuda/NvrtcCompileTest gpu-carry/
strip --strip-unneeded gpu-carry/libenigma.so
du -sh gpu-carry
