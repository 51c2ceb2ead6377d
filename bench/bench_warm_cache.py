"""Warm-cache launch time on the host runtimes.

What a program pays when the kernel cache already holds its kernel: a new
process's first launch (cache lookup, trust checks, hash check, loading the
object, the launch itself), and the steady-state cost of a launch once the
kernel is loaded (``execute``, a prepared ``dispatch`` and the
function-call form). Each first-launch figure is the median over fresh
processes; each steady-state figure the median over many launches.

    ENIGMA_CORE_DIR=<build>/python/enigma PYTHONPATH=python \\
        python3 bench/bench_warm_cache.py [--processes 9] [--backends cpu,metal-host]

The cache is a fresh folder of its own, filled by one process first.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_CHILD = r'''
import json, sys, time
import numpy as np
import enigma

backend, steady = sys.argv[1], int(sys.argv[2])

@enigma.kernel
def add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]

n = 1024
a = np.arange(n, dtype=np.float32)
b = np.ones(n, dtype=np.float32)
rt = enigma.CpuRuntime() if backend == "cpu" else enigma.MetalHostRuntime()
compiled = enigma.compile(add)
t0 = time.perf_counter()
out = rt.execute(compiled, [a, b], output_size=4 * n, grid=n, threads=256)
first = time.perf_counter() - t0
assert np.array_equal(np.frombuffer(out, np.float32), a + b)
result = {"first_execute_ms": first * 1e3}
if steady:
    def median_us(fn, count):
        times = []
        for _ in range(count):
            t = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t)
        return statistics.median(times) * 1e6
    import statistics
    for _ in range(50):
        rt.execute(compiled, [a, b], output_size=4 * n, grid=n, threads=256)
    result["execute_us"] = median_us(
        lambda: rt.execute(compiled, [a, b], output_size=4 * n, grid=n,
                           threads=256), 2000)
    prepared = rt.prepare(compiled, [a, b], output_size=4 * n)
    result["dispatch_us"] = median_us(lambda: prepared.dispatch(n, 256), 4000)
    if backend == "cpu":
        c = np.empty(n, np.float32)
        add[n, 256](a, b, c)
        result["call_form_us"] = median_us(lambda: add[n, 256](a, b, c), 4000)
print(json.dumps(result))
'''


def run_child(script, cache, backend, steady):
    env = dict(os.environ, ENIGMA_CACHE_DIR=cache)
    env.pop("ENIGMA_DISABLE_CACHE", None)
    done = subprocess.run([sys.executable, script, backend, str(steady)],
                          env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=9)
    parser.add_argument("--backends", default="cpu,metal-host")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="enigma-bench-") as work:
        script = os.path.join(work, "child.py")
        with open(script, "w") as f:
            f.write(_CHILD)
        for backend in options.backends.split(","):
            cache = os.path.join(work, "cache-" + backend)
            cold = run_child(script, cache, backend, 0)
            firsts = [run_child(script, cache, backend, 0)["first_execute_ms"]
                      for _ in range(options.processes)]
            steady = run_child(script, cache, backend, 1)
            print(f"{backend}: cold first execute {cold['first_execute_ms']:.0f} ms;"
                  f" warm first execute median {statistics.median(firsts):.2f} ms"
                  f" (min {min(firsts):.2f}, max {max(firsts):.2f},"
                  f" {options.processes} processes)")
            print("  steady state: " + ", ".join(
                f"{k} {v:.1f}" for k, v in steady.items()
                if k != "first_execute_ms"))


if __name__ == "__main__":
    main()
