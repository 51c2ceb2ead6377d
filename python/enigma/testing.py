"""Helpers for tests of code that uses Enigma (API.md section 12)."""

from __future__ import annotations

import platform
import sys

__all__ = ["is_darwin", "is_apple_silicon", "is_metal_available",
           "requires_metal", "requires_apple_silicon", "skip_if_no_metal",
           "is_cuda_available", "requires_cuda"]


def is_darwin() -> bool:
    """True on macOS."""
    return sys.platform == "darwin"


def is_apple_silicon() -> bool:
    """True on macOS on an Apple (arm64) processor."""
    return is_darwin() and platform.machine() == "arm64"


def is_metal_available() -> bool:
    """True when enigma.MetalRuntime() can be created here."""
    from ._runtime import MetalRuntime
    try:
        MetalRuntime()
        return True
    except RuntimeError:
        return False


def is_cuda_available() -> bool:
    """True when enigma.CudaRuntime() finds a CUDA driver, a GPU and NVRTC."""
    from ._runtime import CudaRuntime
    try:
        CudaRuntime()
        return True
    except RuntimeError:
        return False


def _skip_unless(condition_fn, reason):
    import pytest
    return pytest.mark.skipif(not condition_fn(), reason=reason)


def requires_metal(fn=None):
    """pytest decorator: skip unless Metal is available."""
    mark = _skip_unless(is_metal_available, "Metal is not available here")
    return mark(fn) if fn is not None else mark


skip_if_no_metal = requires_metal


def requires_apple_silicon(fn=None):
    """pytest decorator: skip unless running on Apple silicon."""
    mark = _skip_unless(is_apple_silicon, "needs an Apple silicon Mac")
    return mark(fn) if fn is not None else mark


def requires_cuda(fn=None):
    """pytest decorator: skip unless a CUDA GPU is usable."""
    mark = _skip_unless(is_cuda_available, "no CUDA GPU here")
    return mark(fn) if fn is not None else mark
