"""enigma.testing and enigma.benchmark (API.md section 12)."""

import inspect
import sys

import numpy as np
import pytest

import enigma
from enigma import benchmark, testing


@enigma.kernel
def _scale(A: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] * 2.0


def test_platform_queries_match_this_machine():
    assert testing.is_darwin() == (sys.platform == "darwin")
    if not testing.is_darwin():
        assert not testing.is_apple_silicon()
        assert not testing.is_metal_available()
    try:
        enigma.CudaRuntime()
        cuda = True
    except RuntimeError:
        cuda = False
    assert testing.is_cuda_available() == cuda


def test_skip_decorators_skip_under_pytest_and_unittest():
    for deco, available in (
            (testing.requires_metal, testing.is_metal_available),
            (testing.skip_if_no_metal, testing.is_metal_available),
            (testing.requires_apple_silicon, testing.is_apple_silicon),
            (testing.requires_cuda, testing.is_cuda_available)):
        for form in (deco, deco()):  # bare and called
            def test_x():
                pass
            decorated = form(test_x)
            skip = not available()
            assert bool(getattr(decorated, "__unittest_skip__", False)) == skip
            marks = [m for m in getattr(decorated, "pytestmark", [])
                     if m.name == "skipif"]
            assert len(marks) == 1 and marks[0].args[0] == skip


def test_bench_counts_calls_and_reports_statistics():
    calls = []
    r = benchmark.bench(lambda x: calls.append(x), 7, repeat=9, warmup=3,
                        label="append")
    assert len(calls) == 12 and calls[0] == 7
    assert r.n == 9 and r.warmup == 3 and r.label == "append"
    assert 0 <= r.min_us <= r.median_us <= r.max_us
    line = benchmark.format_bench_result(r, throughput_gbps=12.5)
    assert line.startswith("append  n=9  median=") and \
        line.endswith("  BW=12.50GB/s")


def test_bench_rejects_bad_counts():
    with pytest.raises(ValueError):
        benchmark.bench(lambda: None, repeat=0)
    with pytest.raises(ValueError):
        benchmark.bench(lambda: None, warmup=-1)


def test_bench_gpu_times_a_prepared_kernel(runtime, rng):
    n = 4099
    a = rng.standard_normal(n).astype(np.float32)
    prepared = runtime.prepare(enigma.compile(_scale), [a], n * 4)
    r = benchmark.bench_gpu(prepared, (n, 1, 1), (128, 1, 1), repeat=5,
                            warmup=2, label="scale")
    assert r.n == 5 and r.min_us > 0
    out = np.frombuffer(prepared.read_output(), np.float32)
    np.testing.assert_array_equal(out, a * 2)
    prepared.release()


def test_every_public_name_has_a_docstring():
    """help(enigma.X) says what X is for every public name of the package
    and of its tooling modules."""
    missing = []
    for module in (enigma, enigma.testing, enigma.benchmark):
        for name in dir(module):
            obj = getattr(module, name)
            if name.startswith("_") or inspect.ismodule(obj) or \
                    not callable(obj):
                continue
            if getattr(obj, "__module__", "").split(".")[0] not in \
                    ("enigma", "builtins"):
                continue  # re-exported from elsewhere (typing, numpy...)
            if not (obj.__doc__ or "").strip():
                missing.append(f"{module.__name__}.{name}")
    assert not missing, missing
