"""Shared fixtures: every test that takes ``runtime`` runs once per backend
named in ENIGMA_TEST_BACKENDS (default "cpu"; the GPU script adds "cuda";
"metal-host" runs the Metal source itself on the host)."""

import os
import secrets

import numpy as np
import pytest

import enigma

_BACKENDS = [b for b in os.environ.get("ENIGMA_TEST_BACKENDS", "cpu").split(",") if b]
_runtimes = {}


def _make_runtime(name):
    if name not in _runtimes:
        if name == "cpu":
            _runtimes[name] = enigma.CpuRuntime()
        elif name == "cuda":
            _runtimes[name] = enigma.CudaRuntime()
        elif name == "metal-host":
            _runtimes[name] = enigma.MetalHostRuntime()
        else:
            raise ValueError(f"unknown backend {name!r} in ENIGMA_TEST_BACKENDS")
    return _runtimes[name]


@pytest.fixture(params=_BACKENDS)
def runtime(request):
    """A runtime of each backend under test."""
    return _make_runtime(request.param)


@pytest.fixture
def rng():
    """A fresh random generator; its seed is printed so a failure can be
    replayed with ENIGMA_TEST_SEED."""
    seed = int(os.environ.get("ENIGMA_TEST_SEED", secrets.randbits(32)))
    print(f"random seed: {seed} (replay with ENIGMA_TEST_SEED={seed})")
    return np.random.default_rng(seed)


def run_kernel(runtime, compiled, inputs, out_dtype, out_count, grid, threads,
               **kwargs):
    """Executes and returns the single output as a numpy array."""
    out_dtype = np.dtype(out_dtype)
    raw = runtime.execute(compiled, inputs, output_size=out_count * out_dtype.itemsize,
                          grid=grid, threads=threads, **kwargs)
    return np.frombuffer(raw, dtype=out_dtype).copy()
