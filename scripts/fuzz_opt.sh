#!/usr/bin/env bash
# libFuzzer on enigma-opt's parser and verifier (tools/enigma-opt-fuzz).
#
#   scripts/fuzz_opt.sh [SECONDS] [BUILD_DIR]
#
# Configures a separate build with clang-19 and
# -fsanitize=fuzzer-no-link,address (the enigma dialect is instrumented;
# the prebuilt MLIR 19 libraries are not), builds the fuzz target, seeds a
# corpus from every test/**/*.mlir (split at "// -----" as lit's
# -split-input-file does), and fuzzes for SECONDS (default 600). Crashes do
# not stop the run (-fork=1 -ignore_crashes=1); each is left as
# BUILD_DIR/artifacts/crash-* (earlier ones are removed first), to be
# replayed with
#   ASAN_OPTIONS=allow_user_poisoning=0 BUILD_DIR/enigma-opt-fuzz BUILD_DIR/artifacts/crash-<hash>
# and minimised with -minimize_crash=1 -runs=10000.
# Needs: apt-get install clang-19 libclang-rt-19-dev (besides setup.sh's).
# Environment: JOBS (ninja -j, default 1), FUZZ_ARGS (extra libFuzzer flags).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-600}
build=${2:-/tmp/fuzz-build}
jobs=${JOBS:-1}

for tool in clang-19 clang++-19; do
  command -v "$tool" >/dev/null || {
    echo "fuzz_opt.sh: $tool not found; apt-get install clang-19 libclang-rt-19-dev" >&2
    exit 1
  }
done

cmake -G Ninja -S "$root/tools/enigma-opt-fuzz" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19 \
  -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer -g" \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address -fno-omit-frame-pointer -g" \
  >/dev/null
nice ninja -C "$build" -j"$jobs" enigma-opt-fuzz

# Seed corpus: every lit test input, one file per split chunk.
corpus="$build/corpus"
mkdir -p "$corpus" "$build/artifacts"
find "$root/test" -name '*.mlir' -print0 | while IFS= read -r -d '' f; do
  base=$(echo "${f#"$root/test/"}" | tr '/' '_')
  awk -v out="$corpus/$base" '
    /^\/\/ -----/ { n++; next }
    { print > (out "." n) }' n=0 "$f"
done
echo "seed corpus: $(ls "$corpus" | wc -l) files"

# allow_user_poisoning=0: LLVM's allocators poison and unpoison memory from
# inline header code when compiled with ASan; here only the enigma objects
# are, while the prebuilt MLIR libraries hand out the same memory without
# unpoisoning it, which reads as use-after-poison inside MLIR on every input.
export ASAN_OPTIONS="allow_user_poisoning=0${ASAN_OPTIONS:+:$ASAN_OPTIONS}"
rm -f "$build"/artifacts/crash-* "$build"/artifacts/timeout-* "$build"/artifacts/oom-*
# shellcheck disable=SC2086
"$build/enigma-opt-fuzz" -fork=1 -ignore_crashes=1 -ignore_timeouts=1 \
  -ignore_ooms=1 -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -max_len=8192 -artifact_prefix="$build/artifacts/" -print_final_stats=1 \
  ${FUZZ_ARGS:-} "$corpus" 2>&1 | tee "$build/fuzz.log" |
  grep -E '^#[0-9]+: |INFO: (exiting|fuzzed)|ERROR: |SUMMARY' || true

echo "== summary"
last=$(grep -E '^#[0-9]+: ' "$build/fuzz.log" | tail -1 || true)
echo "last status: ${last:-none}"
echo "crash artifacts: $(find "$build/artifacts" -name 'crash-*' | wc -l)"
echo "timeout artifacts: $(find "$build/artifacts" -name 'timeout-*' | wc -l)"
echo "log: $build/fuzz.log"
