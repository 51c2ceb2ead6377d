"""enigma.testing's decorators skip under ``python -m unittest`` as well as
under pytest (the original builds them on unittest.skipUnless), and the
benchmark surface matches the original's."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import enigma
from enigma import benchmark, testing

# A test module as a user of the original writes it: every decorated test
# fails if it runs; the undecorated one passes.
_MODULE = textwrap.dedent("""
    import unittest

    import enigma
    from enigma.testing import (requires_apple_silicon, requires_cuda,
                                requires_metal, skip_if_no_metal)


    class TestKernels(unittest.TestCase):
        @enigma.testing.requires_metal
        def test_metal(self):
            self.fail("ran without Metal")

        @requires_apple_silicon
        def test_apple(self):
            if not enigma.testing.is_apple_silicon():
                self.fail("ran off Apple silicon")

        @requires_cuda
        def test_cuda(self):
            self.fail("ran without CUDA")

        @skip_if_no_metal()
        def test_called_form(self):
            self.fail("ran without Metal")

        def test_plain(self):
            self.assertEqual(1 + 1, 2)


    @requires_metal
    class TestWholeClass(unittest.TestCase):
        def test_inside(self):
            self.fail("ran without Metal")


    @requires_metal
    class TestPlainPytestClass:
        def test_inside(self):
            raise AssertionError("ran without Metal")


    @requires_cuda
    def test_function():
        raise AssertionError("ran without CUDA")
    """)


def _environment():
    env = dict(os.environ)
    env["ENIGMA_FORCE_NO_METAL"] = "1"
    env["ENIGMA_FORCE_NO_CUDA"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return env


def _write_module(tmp_path):
    (tmp_path / "test_user_module.py").write_text(_MODULE)


def test_decorators_skip_under_unittest(tmp_path):
    _write_module(tmp_path)
    run = subprocess.run([sys.executable, "-m", "unittest", "-v",
                          "test_user_module"], cwd=tmp_path,
                         env=_environment(), capture_output=True, text=True,
                         timeout=300)
    report = run.stderr
    assert run.returncode == 0, report
    skipped = 4 if testing.is_apple_silicon() else 5
    assert f"OK (skipped={skipped})" in report, report
    assert "test_plain" in report and "ok" in report


def test_decorators_skip_under_pytest(tmp_path):
    _write_module(tmp_path)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q",
                          "-p", "no:cacheprovider", "test_user_module.py"],
                         cwd=tmp_path, env=_environment(),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    expected = ("2 passed, 6 skipped" if testing.is_apple_silicon()
                else "1 passed, 7 skipped")
    assert expected in run.stdout, run.stdout


def test_force_variables_and_probes(monkeypatch):
    monkeypatch.setenv("ENIGMA_FORCE_NO_METAL", "1")
    monkeypatch.setenv("ENIGMA_FORCE_NO_CUDA", "1")
    assert testing.is_metal_available() is False
    assert testing.is_cuda_available() is False
    monkeypatch.delenv("ENIGMA_FORCE_NO_CUDA")
    try:
        enigma.CudaRuntime()
        cuda = True
    except RuntimeError:
        cuda = False
    assert testing.is_cuda_available() is cuda
    if sys.platform != "darwin":
        monkeypatch.delenv("ENIGMA_FORCE_NO_METAL")
        assert testing.is_metal_available() is False


def test_bench_result_statistics_match_a_hand_computation():
    r = benchmark.BenchResult("k", [4.0, 1.0, 3.0, 2.0], 2)
    assert (r.n, r.min_us, r.max_us) == (4, 1.0, 4.0)
    assert r.median_us == 2.5 and r.mean_us == 2.5
    assert r.stdev_us == pytest.approx(np.std([1, 2, 3, 4], ddof=1))
    assert repr(r) == ("BenchResult('k', n=4, median=2.50us, min=1.00us, "
                       "max=4.00us)")
    empty = benchmark.BenchResult("e", [], 0)
    assert (empty.median_us, empty.min_us, empty.max_us, empty.mean_us,
            empty.stdev_us) == (0.0, 0.0, 0.0, 0.0, 0.0)
    assert benchmark.BenchResult("one", [5.0], 0).stdev_us == 0.0


def test_format_bench_result_is_the_originals_line():
    r = benchmark.BenchResult("vector_add", [10.0, 12.5, 11.0], 1)
    assert benchmark.format_bench_result(r) == (
        "vector_add  n=3  median=11.00us  min=10.00us  max=12.50us")
    assert benchmark.format_bench_result(r, throughput_gbps=123.456) == (
        "vector_add  n=3  median=11.00us  min=10.00us  max=12.50us  "
        "BW=123.46GB/s")


def test_bench_labels_default_to_names(runtime, rng):
    def workload():
        pass

    assert benchmark.bench(workload, repeat=2, warmup=0).label == "workload"

    @enigma.kernel
    def doubled(A: enigma.f32, C: enigma.f32):
        tid = enigma.thread_position_in_grid
        C[tid] = A[tid] * 2.0

    n = 300
    a = rng.standard_normal(n).astype(np.float32)
    prepared = runtime.prepare(enigma.compile(doubled), [a], n * 4)
    try:
        r = benchmark.bench_gpu(prepared, (n, 1, 1), (64, 1, 1), repeat=3,
                                warmup=1)
        assert r.label == "enigma_kernel_doubled"
        assert r.n == 3 and r.warmup == 1 and r.min_us > 0
        np.testing.assert_array_equal(
            np.frombuffer(prepared.read_output(), np.float32), a * 2)
    finally:
        prepared.release()
