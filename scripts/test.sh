#!/usr/bin/env bash
# Runs every test: the C++ unit tests (GoogleTest), the lit/FileCheck suite
# and the MSL stand-in checks (through ctest), the C++ example, then the
# Python suite on the CPU backend and the MSL host runtime, which ends by
# compiling every MSL text it generated against the host stand-in of
# metal_stdlib and every CUDA text through NVRTC, and last the binary wheel
# installed into a fresh virtual environment.
# Needs the build tree that scripts/setup.sh made.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ ! -f build/CMakeCache.txt ]; then
  echo "no build tree: run scripts/setup.sh first" >&2
  exit 1
fi
echo "== building (incremental)"
cmake --build build

echo "== C++ unit tests, lit, MSL stand-in, C++ example"
ctest --test-dir build --output-on-failure

echo "== Python tests on the CPU backend and the MSL host runtime"
# Every test runs once, and each test that takes the `runtime` fixture once
# per backend: the CPU backend and the MSL host runtime (the kernel's Metal
# source compiled with clang++ and run with Metal's execution model).
# pytest-xdist spreads the tests over the cores (ENIGMA_TEST_JOBS workers,
# default one per core); the check of every source they generated runs
# after them, alone.
sources=build/generated-sources
rm -rf "$sources"
(
  export ENIGMA_SOURCE_DUMP_DIR="$PWD/$sources" \
    ENIGMA_CORE_DIR="$PWD/build/python/enigma" PYTHONPATH="$PWD/python"
  workers=()
  if python3 -c "import xdist" 2>/dev/null; then
    workers=(-n "${ENIGMA_TEST_JOBS:-auto}")
  else
    echo "(pytest-xdist is not installed: one process; scripts/setup.sh installs it)"
  fi
  ENIGMA_TEST_BACKENDS="${ENIGMA_TEST_BACKENDS:-cpu,metal-host}" \
    python3 -m pytest python/tests -q -p no:cacheprovider ${workers[@]+"${workers[@]}"} \
    --ignore=python/tests/test_zz_generated_sources.py
  python3 -m pytest python/tests/test_zz_generated_sources.py -q -p no:cacheprovider
)

echo "== binary wheel: build, auditwheel repair, fresh venv, seed kernel"
bash scripts/wheel_check.sh
