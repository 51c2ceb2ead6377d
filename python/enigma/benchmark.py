"""Timing helpers. Benchmarks live in bench/, never in
unit tests."""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field

__all__ = ["BenchResult", "bench", "bench_gpu", "format_bench_result"]


@dataclass
class BenchResult:
    """Timings of one benchmark in microseconds (warm-up runs excluded).
    The statistics of an empty sample list are 0.0."""

    label: str
    samples_us: list = field(default_factory=list)
    warmup: int = 0

    @property
    def n(self) -> int:
        return len(self.samples_us)

    @property
    def median_us(self) -> float:
        return statistics.median(self.samples_us) if self.samples_us else 0.0

    @property
    def min_us(self) -> float:
        return min(self.samples_us) if self.samples_us else 0.0

    @property
    def max_us(self) -> float:
        return max(self.samples_us) if self.samples_us else 0.0

    @property
    def mean_us(self) -> float:
        return statistics.fmean(self.samples_us) if self.samples_us else 0.0

    @property
    def stdev_us(self) -> float:
        """Sample standard deviation; 0.0 with fewer than two samples."""
        return statistics.stdev(self.samples_us) if self.n >= 2 else 0.0

    def __repr__(self) -> str:
        return (f"BenchResult({self.label!r}, n={self.n}, "
                f"median={self.median_us:.2f}us, min={self.min_us:.2f}us, "
                f"max={self.max_us:.2f}us)")


def _check_counts(repeat, warmup):
    if repeat < 1:
        raise ValueError(f"repeat must be at least 1, got {repeat}")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")


def _samples(measure, repeat, warmup) -> list:
    for _ in range(warmup):
        measure()
    return [measure() for _ in range(repeat)]


def bench(fn, *args, repeat=50, warmup=5, label=None, **kw) -> BenchResult:
    """Wall-clock time of ``fn(*args, **kw)``: ``warmup`` untimed calls, then
    ``repeat`` timed ones. The label defaults to the function's name."""
    _check_counts(repeat, warmup)

    def once() -> float:
        t0 = time.perf_counter_ns()
        fn(*args, **kw)
        return (time.perf_counter_ns() - t0) / 1000.0

    return BenchResult(label or getattr(fn, "__name__", "fn"),
                       _samples(once, repeat, warmup), warmup)


def bench_gpu(prepared, grid, threads, *, repeat=50, warmup=5,
              label=None) -> BenchResult:
    """Device time of a PreparedKernel's dispatch (``dispatch_timed``),
    warm-up dispatches included in the same way. The label defaults to the
    kernel's name."""
    _check_counts(repeat, warmup)
    return BenchResult(
        label or getattr(prepared, "_kernel_name", None) or "prepared",
        _samples(lambda: float(prepared.dispatch_timed(grid, threads)),
                 repeat, warmup), warmup)


def format_bench_result(r: BenchResult, *, throughput_gbps=None) -> str:
    """One line for a table, fields two spaces apart:
    ``label  n=50  median=12.34us  min=..us  max=..us[  BW=..GB/s]``."""
    parts = [str(r.label), f"n={r.n}", f"median={r.median_us:.2f}us",
             f"min={r.min_us:.2f}us", f"max={r.max_us:.2f}us"]
    if throughput_gbps is not None:
        parts.append(f"BW={throughput_gbps:.2f}GB/s")
    return "  ".join(parts)
