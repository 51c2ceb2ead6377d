#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine for Enigma: system packages (MLIR 19,
# CMake, Ninja, GoogleTest), Python build tools, then builds and installs the
# enigma package (`pip install .`) and runs the seed's vector_add on the best
# backend available here. Safe to run again: finished steps are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

# clang-19 (and its faster linker, lld-19): the MSL host runtime compiles
# kernels' Metal source with it.
packages=(llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools cmake
          ninja-build g++ ccache libgtest-dev zlib1g-dev libzstd-dev clang-19
          lld-19)
# Optional: clang's libFuzzer runtime for scripts/fuzz_opt.sh.
if [ "${ENIGMA_FUZZ:-0}" = 1 ]; then packages+=(libclang-rt-19-dev); fi
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing ${missing[*]}"
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

echo "== Python build and test tools"
python3 -m pip install -q "nanobind>=2.0" "scikit-build-core>=0.10" numpy pytest \
  pytest-xdist lit

echo "== building and installing enigma (first build: about 15 minutes on 2 cores)"
start=$(date +%s)
python3 -m pip install -q --no-build-isolation .
echo "== built in $(( $(date +%s) - start )) s"

echo "== seed vector_add"
python3 examples/python/vector_add.py
