"""Timing helpers (API.md section 12). Benchmarks live in bench/, never in
unit tests."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

__all__ = ["BenchResult", "bench", "bench_gpu", "format_bench_result"]


@dataclass
class BenchResult:
    """Timings of one benchmark in microseconds (warm-up runs excluded)."""

    label: str | None
    samples_us: list = field(default_factory=list)
    warmup: int = 0

    @property
    def n(self) -> int:
        return len(self.samples_us)

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us)

    @property
    def min_us(self) -> float:
        return min(self.samples_us)

    @property
    def max_us(self) -> float:
        return max(self.samples_us)


def _check_counts(repeat, warmup):
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")


def bench(fn, *args, repeat=50, warmup=5, label=None, **kw) -> BenchResult:
    """Wall-clock time of ``fn(*args, **kw)``: ``warmup`` untimed calls, then
    ``repeat`` timed ones."""
    _check_counts(repeat, warmup)
    for _ in range(warmup):
        fn(*args, **kw)
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args, **kw)
        samples.append((time.perf_counter() - t0) * 1e6)
    return BenchResult(label or getattr(fn, "__name__", None), samples, warmup)


def bench_gpu(prepared, grid, threads, *, repeat=50, warmup=5,
              label=None) -> BenchResult:
    """Device time of a PreparedKernel's dispatch (``dispatch_timed``)."""
    _check_counts(repeat, warmup)
    for _ in range(warmup):
        prepared.dispatch(grid, threads)
    samples = [prepared.dispatch_timed(grid, threads) for _ in range(repeat)]
    return BenchResult(label, samples, warmup)


def format_bench_result(r: BenchResult, *, throughput_gbps=None) -> str:
    """One line: label, median/min/max and, given the bytes-per-second
    figure, the throughput."""
    text = (f"{r.label or 'benchmark'}: median {r.median_us:.1f} us "
            f"(min {r.min_us:.1f}, max {r.max_us:.1f}, n={r.n})")
    if throughput_gbps is not None:
        text += f", {throughput_gbps:.1f} GB/s"
    return text
