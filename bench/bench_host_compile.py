"""How long a first call waits for the host compile of kernels whose shape
stresses the CPU backend's C++ and the MSL host runtime:

* ``live N``: N values computed before a barrier and used after it (each
  a per-thread array in the CPU backend's C++), also with the values loaded
  N elements apart per thread (``strided loads``);
* ``nest D``: D ``enigma.if_`` blocks nested in each other, a store in
  each.

For each kernel: the time of ``enigma.compile`` and of the first
``execute`` on each runtime (the host compile, with the cache off), the
result checked against numpy. The machine's load is printed with the
table, since the development VM is shared.

Usage: python3 bench/bench_host_compile.py [--live 16,64,128,256]
       [--strided 16,64,128] [--nest 100,256,500] [--backends cpu,metal-host]

The first execute's wall time and, in parentheses, the CPU time of the
compiler processes it ran (steadier than the wall time on a loaded
machine).
"""

import argparse
import os
import resource
import time

import numpy as np

import enigma


def live_kernel(n, strided):
    """n values computed before a barrier, summed (times T[i % 8]) after it:
    v_i = A[t] * (i + 1) + i, or with ``strided`` v_i = A[t * n + i] * (i + 1)
    (n loads a thread apart, which the host compiler vectorises as an
    interleaved group: a transposition)."""
    if strided:
        lines = [f"    v{i} = A[t * {n} + {i}] * {i + 1}.0" for i in range(n)]
    else:
        lines = [f"    v{i} = a * {i + 1}.0 + {i}.0" for i in range(n)]
    lines.append("    enigma.barrier()")
    lines.append("    s = 0.0")
    lines += [f"    s = s + v{i} * T[{i % 8}]" for i in range(n)]
    source = ("def live(A: enigma.f32, T: enigma.f32, C: enigma.f32):\n"
              "    t = enigma.thread_position_in_grid\n"
              "    a = A[t]\n" + "\n".join(lines) + "\n    C[t] = s\n")
    namespace = {"enigma": enigma}
    exec(compile(source, f"<live {n}>", "exec"), namespace)
    return enigma.kernel(namespace["live"])


def live_case(n, strided):
    a = np.arange(64 * n, dtype=np.float32) % 7
    t = np.ones(8, np.float32)
    if strided:
        want = (a.reshape(64, n).astype(np.float64)
                * np.arange(1, n + 1)).sum(axis=1)
    else:
        k = np.arange(n)
        want = np.array([(a[i] * (k + 1.0) + k).sum() for i in range(64)])
    return live_kernel(n, strided), [a, t], want


def nest_kernel(depth):
    @enigma.kernel
    def nest(A: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        x = A[t]
        blocks = []
        for i in range(depth):
            # A store at each level keeps the blocks from merging.
            C[t] = x + float(i)
            block = enigma.if_(x > float(i) - 100.0)
            block.__enter__()
            blocks.append(block)
        C[t] = x + float(depth)
        for block in reversed(blocks):
            block.__exit__(None, None, None)
    return nest


def nest_expected(a, depth):
    """x + the first level whose condition x > level - 100 fails (the store
    before it was the last), or x + depth when none fails."""
    x = a.astype(np.float64)
    first_failing = np.clip(np.ceil(x + 100.0), 0, depth)
    return x + first_failing


def nest_case(depth):
    a = np.arange(64, dtype=np.float32)
    return nest_kernel(depth), [a], nest_expected(a, depth)


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


RUN_GROUPS = 0


def _run_ms(rt, compiled, inputs):
    """Best of 5 timed dispatches over RUN_GROUPS threadgroups of 64 (the
    inputs tiled to cover them): the speed of the compiled code."""
    groups = RUN_GROUPS
    big = [np.tile(inputs[0], groups)] + inputs[1:]
    prepared = rt.prepare(compiled, big, output_size=4 * 64 * groups)
    try:
        return min(prepared.dispatch_timed(64 * groups, 64)
                   for _ in range(5)) / 1000.0
    finally:
        prepared.release()


def measure(label, kernel, inputs, want, backends):
    start = time.perf_counter()
    compiled = enigma.compile(kernel)
    compile_s = time.perf_counter() - start
    row = [label, f"{compile_s:.2f} s"]
    for name in backends:
        rt = enigma.CpuRuntime() if name == "cpu" else enigma.MetalHostRuntime()
        start, cpu = time.perf_counter(), _children_cpu()
        try:
            raw = rt.execute(compiled, inputs, output_size=4 * 64, grid=64,
                             threads=64)
            seconds = time.perf_counter() - start
            ok = np.allclose(np.frombuffer(raw, np.float32), want, rtol=1e-5)
            row.append(f"{seconds:.2f} s ({_children_cpu() - cpu:.2f} s)"
                       + ("" if ok else " WRONG"))
            if RUN_GROUPS:
                row[-1] += f", run {_run_ms(rt, compiled, inputs):.2f} ms"
        except Exception as e:  # noqa: BLE001 (reported in the table)
            row.append(f"{type(e).__name__} after "
                       f"{time.perf_counter() - start:.1f} s")
    print("| " + " | ".join(row) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--live", default="16,64,128,256")
    parser.add_argument("--strided", default="16,64,128")
    parser.add_argument("--nest", default="100,256,500")
    parser.add_argument("--backends", default="cpu,metal-host")
    parser.add_argument("--run", type=int, default=0, metavar="GROUPS",
                        help="also time a dispatch of GROUPS threadgroups")
    args = parser.parse_args()
    global RUN_GROUPS
    RUN_GROUPS = args.run
    backends = [b for b in args.backends.split(",") if b]
    print(f"load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores")
    print("| kernel | enigma.compile | " +
          " | ".join(f"first execute on {b} (compiler CPU time)"
                     for b in backends) + " |")
    print("|---|---|" + "---|" * len(backends))
    for n in [int(x) for x in args.live.split(",") if x]:
        measure(f"live {n}", *live_case(n, False), backends)
    for n in [int(x) for x in args.strided.split(",") if x]:
        measure(f"live {n}, strided loads", *live_case(n, True), backends)
    for d in [int(x) for x in args.nest.split(",") if x]:
        measure(f"nest {d}", *nest_case(d), backends)


if __name__ == "__main__":
    # Every compile timed for real: no kernel cache. Set here, not at
    # import: the tests import the kernel shapes from this file.
    os.environ["ENIGMA_DISABLE_CACHE"] = "1"
    main()
