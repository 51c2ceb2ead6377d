#!/usr/bin/env bash
# Runs on the GPU machine in one go: builds the thin Python module against
# the carried core (gpu-carry/, see gpu_prepare.sh), runs the C++ CUDA tests,
# the whole Python suite on the CPU and CUDA backends, differential fuzzing
# on CUDA, and the CUDA benchmarks; the benchmark table is printed last. Results go to $OUT (or
# ./gpu-results). ENIGMA_GPU_STEPS picks steps (default: cpp,pytest,fuzz,variants,bench;
# wsgemm: bench/check_gemm_ws.py, the warp-specialised GEMM checked and timed);
# ENIGMA_BENCH_ONLY is passed to bench_cuda.py --only; ENIGMA_PYTEST_ARGS to pytest
# (e.g. "-n 12" for pytest-xdist, which the GPU machine has).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
export ENIGMA_CACHE_DIR=/tmp/enigma-cache PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH="$PWD/gpu-carry:${LD_LIBRARY_PATH:-}"
status=0
steps=",${ENIGMA_GPU_STEPS:-cpp,pytest,fuzz,variants,bench},"
step() { [[ $steps == *",$1,"* ]]; }

echo "== GPU"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader

echo "== building the Python module against the carried core"
cmake -S . -B /tmp/gpu-build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DENIGMA_BUILD_CORE=OFF -DENIGMA_PREBUILT_DIR="$PWD/gpu-carry" >/tmp/gpu-cmake.log \
  || { cat /tmp/gpu-cmake.log; exit 1; }
ninja -C /tmp/gpu-build _core >/tmp/gpu-ninja.log 2>&1 || { tail -30 /tmp/gpu-ninja.log; exit 1; }
export ENIGMA_CORE_DIR=/tmp/gpu-build/python/enigma PYTHONPATH="$PWD/python"

if step cpp; then
echo "== C++ CUDA tests"
gpu-carry/CudaBackendTest 2>&1 | tail -5 || status=1
gpu-carry/NvrtcCompileTest --gtest_filter=-*EveryHelper* 2>&1 | tail -3 || status=1
fi

if step pytest; then
echo "== Python tests on ${ENIGMA_GPU_TEST_BACKENDS:-cpu,cuda}"
ENIGMA_TEST_BACKENDS=${ENIGMA_GPU_TEST_BACKENDS:-cpu,cuda} python3 -m pytest python/tests -q -p no:cacheprovider ${ENIGMA_PYTEST_ARGS:-} \
  -k "${ENIGMA_TEST_FILTER:-not zz_generated}" 2>&1 | tee "$out/pytest.log" | tail -40 \
  || status=1
fi

if step fuzz; then
echo "== differential fuzzing on CUDA (random kernels vs the numpy interpreter)"
timeout 150 python3 tools/fuzz/run_fuzz.py --backend cuda --count "${ENIGMA_FUZZ_COUNT:-3000}" \
  --seed "${ENIGMA_FUZZ_SEED:-900000}" --jobs 12 --out "$out/fuzz" 2>&1 \
  | tee "$out/fuzz.log" | tail -15 || status=1
# at most a few files come back from the GPU machine: the reproducers travel as one
tar czf "$out/fuzz.tar.gz" -C "$out" fuzz && rm -rf "$out/fuzz"
fi

if step variants; then
echo "== TV-layout add: thread/value layouts against vec_width=4"
python3 bench/tv_add_variants.py 2>&1 | tee "$out/tv_variants.log" || status=1
fi

if step wsgemm; then
echo "== warp-specialised GEMM: checks (one process per configuration, time-limited), timings against cuBLAS"
python3 bench/check_gemm_ws.py 2>&1 | tee "$out/check_gemm_ws.log" || status=1
fi

if step bench; then
echo "== CUDA benchmarks"
python3 bench/bench_cuda.py --out "$out" --only "${ENIGMA_BENCH_ONLY:-}" 2>&1 \
  | tee "$out/bench.log" || status=1
fi
exit $status
