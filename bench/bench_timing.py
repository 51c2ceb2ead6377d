"""The one timer of the GPU benchmarks that compare libraries: batches of
launches queued back to back (bench_cuda.py, bench_fp8.py,
check_gemm_ws.py's workers, bench_attention.py through bench_cuda_common)."""

import time

import numpy as np


def batched_us(launch, sync, batch=10, samples=6):
    """Median over `samples` batches of the wall time per launch of `batch`
    launches queued back to back and waited for once: the GPU stays busy,
    so each library's host-side launch cost (Triton's Python launcher,
    PyTorch's dispatcher, Enigma's argument checks) hides behind the
    previous kernel, as in a real program, instead of being timed with the
    kernel as single-launch events do."""
    launch()
    sync()
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(batch):
            launch()
        sync()
        times.append((time.perf_counter() - start) * 1e6 / batch)
    return float(np.median(times))
