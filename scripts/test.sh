#!/usr/bin/env bash
# Runs every test: the C++ unit tests (GoogleTest), the lit/FileCheck suite
# and the MSL stand-in checks (through ctest), the C++ example, then the
# Python suite, which ends by compiling every MSL text it generated against
# the host stand-in of metal_stdlib and every CUDA text through NVRTC, and
# last the binary wheel installed into a fresh virtual environment.
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

echo "== Python tests"
sources=build/generated-sources
rm -rf "$sources"
ENIGMA_SOURCE_DUMP_DIR="$PWD/$sources" ENIGMA_CORE_DIR="$PWD/build/python/enigma" \
  PYTHONPATH="$PWD/python" python3 -m pytest python/tests -q -p no:cacheprovider

echo "== binary wheel: build, auditwheel repair, fresh venv, seed kernel"
bash scripts/wheel_check.sh
