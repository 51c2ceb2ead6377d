"""Foundation benchmarks on the CPU backend, side by side in one run:

* enigma.compile(vector_add) in a warm process (trace + MLIR + passes + all
  three sources);
* CpuRuntime vector add over 2**24 floats against numpy's ``a + b``
  (kernel time of a prepared dispatch vs numpy writing into a preallocated
  output, both moving 3 * 4 * 2**24 bytes);
* the size of the built core library.

Usage: python3 bench/bench_core_cpu.py [--build build]
"""

import argparse
import os
import platform
import time

import numpy as np

import enigma
from enigma.benchmark import bench, bench_gpu, format_bench_result


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--log2n", type=int, default=24)
    args = parser.parse_args()

    rows = []
    r = bench(enigma.compile, vector_add, repeat=30, warmup=3,
              label="compile(vector_add)")
    print(format_bench_result(r))
    rows.append(("compile(vector_add), warm", f"{r.median_us / 1000:.2f} ms", ""))

    n = 1 << args.log2n
    rng = np.random.default_rng(0)
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(a)
    gbytes = 3 * 4 * n / 1e9

    rt = enigma.CpuRuntime()
    prepared = rt.prepare(enigma.compile(vector_add), [a, b], n * 4)
    e = bench_gpu(prepared, (n, 1, 1), (256, 1, 1), repeat=20, warmup=3,
                  label="enigma CpuRuntime vector_add")
    got = np.frombuffer(prepared.read_output(), np.float32)
    assert np.array_equal(got, a + b)
    prepared.release()
    nb = bench(np.add, a, b, out=out, repeat=20, warmup=3, label="numpy a + b")
    for res in (e, nb):
        print(format_bench_result(res, throughput_gbps=gbytes / (res.median_us * 1e-6)))
    ratio = e.median_us / nb.median_us
    rows.append((f"vector add 2^{args.log2n} f32, enigma CPU",
                 f"{e.median_us / 1000:.2f} ms",
                 f"{gbytes / (e.median_us * 1e-6):.1f} GB/s"))
    rows.append((f"vector add 2^{args.log2n} f32, numpy",
                 f"{nb.median_us / 1000:.2f} ms",
                 f"{gbytes / (nb.median_us * 1e-6):.1f} GB/s"))
    rows.append(("enigma time / numpy time", f"{ratio:.2f}x", "target <= 1.5x"))

    lib = os.path.join(args.build, "lib", "libenigma.so")
    if os.path.exists(lib):
        rows.append(("libenigma.so size", f"{os.path.getsize(lib) / 1e6:.1f} MB", ""))

    print(f"\nmachine: {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}")
    print("| measure | value | note |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
