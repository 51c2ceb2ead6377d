"""Helpers for tests of code that uses Enigma: probes for
the backends, and decorators that skip a test where its backend is missing,
under ``python -m unittest`` and pytest alike."""

from __future__ import annotations

import os
import platform
import sys
import unittest

__all__ = ["is_darwin", "is_apple_silicon", "is_metal_available",
           "requires_metal", "requires_apple_silicon", "skip_if_no_metal",
           "is_cuda_available", "requires_cuda"]


def is_darwin() -> bool:
    """True on macOS."""
    return sys.platform == "darwin"


def is_apple_silicon() -> bool:
    """True on macOS on an Apple (arm64) processor."""
    return is_darwin() and platform.machine() == "arm64"


# Probe results, found once per process (creating a runtime is not free).
_probed: dict = {}


def _probe(name: str, make) -> bool:
    if name not in _probed:
        try:
            make()
            _probed[name] = True
        except Exception:  # a probe never raises
            _probed[name] = False
    return _probed[name]


def is_metal_available() -> bool:
    """True when enigma.MetalRuntime() can be created here. Never raises;
    the answer is found once per process. ``ENIGMA_FORCE_NO_METAL=1`` makes
    it False."""
    if os.environ.get("ENIGMA_FORCE_NO_METAL") or not is_darwin():
        return False
    from ._runtime import MetalRuntime
    return _probe("metal", MetalRuntime)


def is_cuda_available() -> bool:
    """True when enigma.CudaRuntime() finds a CUDA driver, a GPU and NVRTC.
    Never raises; found once per process. ``ENIGMA_FORCE_NO_CUDA=1`` makes
    it False."""
    if os.environ.get("ENIGMA_FORCE_NO_CUDA"):
        return False
    from ._runtime import CudaRuntime
    return _probe("cuda", CudaRuntime)


def _skip_unless(available: bool, reason: str):
    """A decorator for test functions, methods and classes: unittest's skip
    (which pytest honours for functions and TestCase classes) plus, when
    pytest is running, its mark, which also covers plain test classes."""
    def decorate(test):
        test = unittest.skipUnless(available, reason)(test)
        pytest = sys.modules.get("pytest")
        if pytest is not None:
            test = pytest.mark.skipif(not available, reason=reason)(test)
        return test
    return decorate


def requires_metal(fn=None):
    """Skips the decorated test (function, method or class) unless Metal is
    available. Usable bare (``@requires_metal``) or called
    (``@requires_metal()``)."""
    decorate = _skip_unless(is_metal_available(), "requires a Metal GPU")
    return decorate(fn) if fn is not None else decorate


skip_if_no_metal = requires_metal


def requires_apple_silicon(fn=None):
    """Skips the decorated test unless running on macOS on Apple silicon."""
    decorate = _skip_unless(is_apple_silicon(),
                            "requires Apple silicon (arm64 macOS)")
    return decorate(fn) if fn is not None else decorate


def requires_cuda(fn=None):
    """Skips the decorated test unless a CUDA GPU is usable."""
    decorate = _skip_unless(is_cuda_available(), "requires a CUDA GPU")
    return decorate(fn) if fn is not None else decorate
