"""Language benchmarks on the CPU backend, side by
side in one run, printed as a Markdown table with the machine and date:

* vector add over 2**24 floats: CpuRuntime vs numpy ``np.add(a, b, out=)``
  (target: enigma within 1.5x of numpy);
* RMSNorm and softmax over a 4096 x 4096 float32 matrix: the examples of
  examples/python/ vs numpy doing the same work in float32 (target: enigma
  faster than numpy);
* compile time of the attention example (d = 64): ``enigma.compile`` (trace
  -> enigma MLIR -> passes -> MSL, CUDA and host C++ sources; no xcrun) in a
  warm process, median of 20 (target: under 80 ms).

Enigma times are ``dispatch_timed`` of a prepared kernel (inputs uploaded
once, as on a GPU); numpy writes into preallocated outputs where it can.
Every enigma result is checked against the float64 reference after timing.

Usage: python3 bench/bench_cpu_language.py [--rows 4096 --cols 4096
       --log2n 24 --repeat 20]
"""

import argparse
import importlib.util
import os
import pathlib
import platform
import sys
import time

import numpy as np

import enigma
from enigma.benchmark import bench, bench_gpu, format_bench_result

_EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples" / "python"


def _example(name):
    key = f"enigma_example_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(key, _EXAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        spec.loader.exec_module(module)
    return sys.modules[key]


# numpy doing the same work as the kernels, in float32 ----------------------

def numpy_rmsnorm(x, out, eps=1e-6):
    ms = np.mean(np.square(x), axis=1, keepdims=True, dtype=np.float32)
    np.multiply(x, 1.0 / np.sqrt(ms + np.float32(eps)), out=out)


def numpy_softmax(x, out):
    np.subtract(x, x.max(axis=1, keepdims=True), out=out)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True, dtype=np.float32)


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _time_kernel(rt, module, x, label, repeat):
    prepared, grid, threads, check = module.run_prepared(rt, x)
    try:
        r = bench_gpu(prepared, grid, threads, repeat=repeat, warmup=2,
                      label=label)
        out = np.frombuffer(prepared.read_output(), np.float32)
        check(out.reshape(np.shape(x)))
    finally:
        prepared.release()
    return r


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log2n", type=int, default=24)
    parser.add_argument("--rows", type=int, default=4096)
    parser.add_argument("--cols", type=int, default=4096)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    rt = enigma.CpuRuntime()
    rng = np.random.default_rng(0)
    rows = []  # (measure, enigma, numpy, ratio, target, met)

    def report(*results, gbytes=None):
        for r in results:
            tp = gbytes / (r.median_us * 1e-6) if gbytes else None
            print(format_bench_result(r, throughput_gbps=tp))

    # 1. vector add --------------------------------------------------------
    n = 1 << args.log2n
    a = rng.standard_normal(n, dtype=np.float32)
    b = rng.standard_normal(n, dtype=np.float32)
    out = np.empty_like(a)
    va = _example("vector_add")
    prepared = rt.prepare(enigma.compile(va.vector_add), [a, b], n * 4)
    e = bench_gpu(prepared, (n, 1, 1), (256, 1, 1), repeat=args.repeat,
                  warmup=2, label="enigma vector_add")
    assert np.array_equal(np.frombuffer(prepared.read_output(), np.float32),
                          a + b)
    prepared.release()
    nb = bench(np.add, a, b, out=out, repeat=args.repeat, warmup=2,
               label="numpy a + b")
    report(e, nb, gbytes=3 * 4 * n / 1e9)
    ratio = e.median_us / nb.median_us
    rows.append((f"vector add 2^{args.log2n} f32", e.median_us, nb.median_us,
                 ratio, "<= 1.5x", ratio <= 1.5))
    del a, b, out

    # 2. row reductions ----------------------------------------------------
    shape = (args.rows, args.cols)
    x = rng.standard_normal(shape, dtype=np.float32)
    y = np.empty_like(x)
    for name, numpy_fn in (("rmsnorm", numpy_rmsnorm),
                           ("softmax", numpy_softmax)):
        e = _time_kernel(rt, _example(name), x, f"enigma {name}", args.repeat)
        nb = bench(numpy_fn, x, y, repeat=args.repeat, warmup=2,
                   label=f"numpy {name} (f32)")
        _example(name).check_output(y, x)  # numpy's own f32 result is sane
        report(e, nb, gbytes=2 * x.nbytes / 1e9)
        ratio = e.median_us / nb.median_us
        rows.append((f"{name} {shape[0]}x{shape[1]} f32", e.median_us,
                     nb.median_us, ratio, "< 1x (faster)", ratio < 1.0))
    del x, y

    # 3. compile time of the attention example -----------------------------
    attention = _example("attention").make_kernel(64)
    c = bench(enigma.compile, attention, emit_only=True, repeat=20, warmup=3,
              label="compile(attention d=64)")
    report(c)
    rows.append(("compile attention (d=64), warm, median of 20", c.median_us,
                 None, None, "< 80 ms", c.median_us < 80_000))

    print(f"\nmachine: {_cpu_model()}, {os.cpu_count()} cores, "
          f"{platform.system()} {platform.machine()}, "
          f"{time.strftime('%Y-%m-%d')}; numpy {np.__version__}\n")
    print("| measure | enigma (CPU) | numpy | enigma / numpy | target | met |")
    print("|---|---|---|---|---|---|")

    def ms(us):
        return "" if us is None else f"{us / 1000:.2f} ms"

    for measure, e_us, n_us, ratio, target, met in rows:
        print(f"| {measure} | {ms(e_us)} | {ms(n_us)} | "
              f"{'' if ratio is None else f'{ratio:.2f}x'} | {target} | "
              f"{'yes' if met else 'no'} |")


if __name__ == "__main__":
    main()
