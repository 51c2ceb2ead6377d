"""enigma.testing and enigma.benchmark (docs/reference/tooling.md)."""

import importlib
import inspect
import os
import re
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


# The package and the modules a program imports names from (the original
# DSL's module paths included).
PUBLIC_MODULES = ["enigma", "enigma.tensor", "enigma.core", "enigma.tuple",
                  "enigma.typing", "enigma.ops", "enigma.compiler",
                  "enigma.compiler.compiler", "enigma.compiler.kernel",
                  "enigma.compiler.preprocessor", "enigma.testing",
                  "enigma.benchmark", "enigma.runtime_dispatch",
                  "enigma.runtime_dispatch.runtime", "enigma.torch",
                  "enigma.attention"]
REFERENCE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "docs", "reference")


def _public_names(module_name):
    """(module, name, object) of every public name of ``module_name``: its
    ``__all__``, or what ``dir`` shows without a leading underscore;
    submodules are not names."""
    if module_name == "enigma.torch":
        pytest.importorskip("torch")
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None) or \
        [n for n in dir(module) if not n.startswith("_")]
    for name in names:
        obj = getattr(module, name)
        if not inspect.ismodule(obj):
            yield module_name, name, obj


def _ours(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").split(".")[0] == \
        "enigma"


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_name_has_a_docstring(module_name):
    """help(enigma.X) says what X is, for every public name of the package
    and of its public modules: a function or class its own docstring, an
    object (a dtype, ``arch``) its class's."""
    missing = []
    for module, name, obj in _public_names(module_name):
        if callable(obj) and _ours(obj):
            documented = obj.__doc__
        elif _ours(type(obj)):
            documented = type(obj).__doc__
        else:
            continue  # re-exported from elsewhere (typing, numpy, str...)
        if not (documented or "").strip():
            missing.append(f"{module}.{name}")
    assert not missing, missing


def _reference_identifiers() -> set:
    """Every identifier written as code (`...` or a fenced block) on the
    docs/reference pages."""
    text = ""
    for page in sorted(os.listdir(REFERENCE)):
        if page.endswith(".md"):
            with open(os.path.join(REFERENCE, page)) as f:
                text += f.read() + "\n"
    blocks = re.findall(r"```.*?```", text, re.S)
    spans = re.findall(r"`[^`\n]+`", re.sub(r"```.*?```", "", text,
                                             flags=re.S))
    return set(re.findall(r"[A-Za-z_][A-Za-z_0-9]*",
                          "\n".join(blocks + spans)))


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_public_name_is_in_the_reference(module_name):
    """The contract (docs/reference/README.md and its pages) names every
    public name, as code, on some page."""
    known = _reference_identifiers()
    missing = [f"{module}.{name}"
               for module, name, _ in _public_names(module_name)
               if name not in known]
    assert not missing, missing


def test_the_reference_check_reads_only_code():
    # A name in prose does not count; in a code span or block it does.
    assert "launch" in _reference_identifiers()
    assert "Brackets" not in _reference_identifiers()
