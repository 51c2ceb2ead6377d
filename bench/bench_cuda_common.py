"""What the steps of bench/bench_cuda.py share: the rows of the run's
table and the bars of its bandwidth chart, how they are recorded, the
timers (CUDA events around single launches, batches of launches queued
back to back), the vector add kernel and the examples' loader."""

import importlib.util
import os

import numpy as np

from bench_timing import batched_us  # noqa: F401 (the steps take it from here)

import enigma

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
rows = []      # (benchmark, implementation, time, GB/s or note, ratio)
bars = {}      # label -> GB/s for the chart


def record(bench, impl, us, nbytes=None, note=""):
    gbps = nbytes / (us * 1e-6) / 1e9 if nbytes else None
    shown = (f"{gbps:.0f} GB/s" + (f" ({note})" if note else "")) if gbps else note
    rows.append((bench, impl, f"{us:.1f} us", shown))
    if gbps:
        bars[f"{bench}\n{impl}"] = gbps
    print(f"{bench:28s} {impl:28s} {us:10.1f} us  {gbps or 0:8.0f} GB/s {note}", flush=True)
    return gbps


def not_run(bench, impl, why):
    rows.append((bench, impl, "not run", why))
    print(f"{bench:28s} {impl:28s} not run: {why}", flush=True)


def torch_time(fn, repeat):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return float(np.median(samples))


def cupy_add_kernel(cp):
    """The element-wise float add as a CuPy RawKernel (one thread per
    element, ``(a, b, c, n)``): the hand-written CUDA the benchmarks set
    Enigma's add beside."""
    return cp.RawKernel(r'''
    extern "C" __global__ void add(const float* a, const float* b, float* c, unsigned n) {
      unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) c[i] = a[i] + b[i];
    }''', "add")


def enigma_time(prepared, grid, threads, repeat):
    for _ in range(3):
        prepared.dispatch(grid, threads)
    return float(np.median([prepared.dispatch_timed(grid, threads) for _ in range(repeat)]))


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


def load_example(name):
    path = os.path.join(REPO, "examples", "python", name + ".py")
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def device_name():
    """The GPU the benchmarks ran on, as the driver names it (the charts and
    the table say which card gave the numbers)."""
    try:
        import torch
        return torch.cuda.get_device_name()
    except Exception:  # noqa: BLE001 - no torch or no GPU: a generic name
        return "NVIDIA GPU"
