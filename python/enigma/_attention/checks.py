"""Host-side checks of the attention entry points, for numpy arrays and
PyTorch tensors alike: every mistake is a ``ValueError`` (or ``TypeError``
for something that is not an array) whose message starts with the entry
point and names the argument."""

from __future__ import annotations

import math
import numbers

import numpy as np

HEAD_DIMS = (64, 128, 256)
PAGE_SIZES = "a multiple of 16 from 16 to 256"
MAX_ELEMENTS = 2**32   # the kernels index tensors with 32-bit offsets


class ArrayInfo:
    """What the checks need to know of one argument: its shape, element
    type ("bf16", "f16", "f32", "i32" or the library's own name), where it
    lives and whether it is C-contiguous."""

    def __init__(self, x):
        self.array = x
        if _is_torch(x):
            import torch
            self.kind = "torch"
            self.shape = tuple(x.shape)
            self.dtype = {torch.bfloat16: "bf16", torch.float16: "f16",
                          torch.float32: "f32", torch.int32: "i32"}.get(
                              x.dtype, str(x.dtype))
            self.device = str(x.device)
            self.contiguous = x.is_contiguous()
        elif hasattr(x, "shape") and hasattr(x, "dtype") and \
                hasattr(x, "flags"):
            self.kind = "numpy"
            self.shape = tuple(x.shape)
            # numpy has no bfloat16: uint16 arrays hold bfloat16 bits.
            self.dtype = {"uint16": "bf16", "float16": "f16",
                          "float32": "f32", "int32": "i32"}.get(
                              x.dtype.name, x.dtype.name)
            self.device = "cpu"
            self.contiguous = bool(x.flags["C_CONTIGUOUS"])
        else:
            self.kind = None


def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch" and \
        hasattr(x, "is_contiguous")


def is_torch(x) -> bool:
    """Whether ``x`` is a PyTorch tensor."""
    return _is_torch(x)


class Checker:
    """Checks the arguments of one call of ``entry``."""

    def __init__(self, entry: str):
        self.entry = entry
        self.device = None
        self.kind = None

    def fail(self, message, kind=ValueError):
        raise kind(f"{self.entry}: {message}")

    def array(self, name, x, *, ndim, what, dtypes=("bf16", "f16")):
        """``x`` as an :class:`ArrayInfo`: an array of ``ndim`` dimensions
        (``what`` names them), of one of ``dtypes``, contiguous, where the
        other arguments are."""
        info = ArrayInfo(x)
        if info.kind is None:
            self.fail(f"{name} must be a numpy array or a torch.Tensor, got "
                      f"{type(x).__name__}", TypeError)
        if self.kind is None:
            self.kind = info.kind
        elif info.kind != self.kind:
            self.fail(f"{name} is a {info.kind} array but the other "
                      f"arguments are {self.kind} arrays; pass one kind")
        if len(info.shape) != ndim:
            self.fail(f"{name} must have {ndim} dimensions {what}, got shape "
                      f"{info.shape}")
        if info.dtype not in dtypes:
            names = {"bf16": "bfloat16 (numpy: uint16 bits)",
                     "f16": "float16", "f32": "float32", "i32": "int32"}
            self.fail(f"{name} must be {' or '.join(names[d] for d in dtypes)}"
                      f", got {info.dtype}")
        if self.device is None:
            self.device = info.device
        elif info.device != self.device:
            self.fail(f"{name} is on {info.device} but the other arguments "
                      f"are on {self.device}; move them to one device")
        if not info.contiguous:
            self.fail(f"{name} is not contiguous (shape {info.shape}); pass "
                      f"{name}.contiguous() (numpy: np.ascontiguousarray)")
        n = math.prod(info.shape)
        if n >= MAX_ELEMENTS:
            self.fail(f"{name} has {n} elements; the kernels index with 32 "
                      f"bits and take fewer than {MAX_ELEMENTS}")
        return info

    def same_dtype(self, pairs):
        first_name, first = pairs[0]
        for name, info in pairs[1:]:
            if info.dtype != first.dtype:
                self.fail(f"{name} is {info.dtype} but {first_name} is "
                          f"{first.dtype}; q, k and v take one dtype")

    def head_dim(self, d, name="q"):
        """``d`` one of HEAD_DIMS: the last dimension of ``name`` (None:
        the argument ``d`` itself)."""
        if isinstance(d, bool) or d not in HEAD_DIMS:
            what = f"the head dimension (last of {name})" if name else \
                "d (the head dimension)"
            self.fail(f"{what} must be 64, 128 or 256, got {d!r}")

    def heads(self, hq, hkv, k_name="k"):
        if hkv < 1 or hq < 1 or hq % hkv:
            self.fail(f"q has {hq} heads and {k_name} {hkv}: the query heads "
                      "must be a positive multiple of the key/value heads "
                      "(grouped-query attention)")

    def equal(self, what, got, want, name):
        if got != want:
            self.fail(f"{name} has {what} {got}, expected {want}")

    def scale(self, scale, d):
        if scale is None:
            return 1.0 / math.sqrt(d)
        if isinstance(scale, (bool, np.bool_)) or \
                not isinstance(scale, numbers.Real) or \
                not math.isfinite(scale) or scale <= 0:
            self.fail(f"scale must be a positive finite number, got "
                      f"{scale!r}")
        return float(scale)

    def flag(self, name, value) -> bool:
        """A yes/no argument: a bool (numpy's too), never a string or a
        number that only happens to be truthy."""
        if not isinstance(value, (bool, np.bool_)):
            self.fail(f"{name} must be a bool, got {value!r}")
        return bool(value)

    def runtime(self, runtime):
        """None or an Enigma runtime (enigma.CpuRuntime(), ...)."""
        from .._runtime import RuntimeBase
        from .launch import Target   # where the PyTorch ops run
        if runtime is not None and \
                not isinstance(runtime, (RuntimeBase, Target)):
            self.fail(f"runtime must be None or an Enigma runtime (e.g. "
                      f"enigma.CpuRuntime()), got {type(runtime).__name__}",
                      TypeError)

    def config(self, config, kind):
        """None or a configuration of class ``kind``."""
        if config is not None and not isinstance(config, kind):
            self.fail(f"config must be a {kind.__name__} (or None), got "
                      f"{type(config).__name__}", TypeError)

    def multiple(self, what, name, value, step, low, high=None):
        """``value`` (a field of a configuration ``what``) an int, a
        multiple of ``step`` from ``low`` (to ``high``)."""
        if isinstance(value, bool) or not isinstance(value, int) or \
                value % step or value < low or \
                (high is not None and value > high):
            upto = f" to {high}" if high is not None else ""
            self.fail(f"{what}: {name} must be a multiple of {step} from "
                      f"{low}{upto}, got {value!r}")

    def offsets(self, name, values, total, batch):
        """Cumulative offsets ``values`` (a host int array of ``batch + 1``):
        they start at 0, never decrease and end at most at ``total``."""
        if values[0] != 0:
            self.fail(f"{name} must start at 0, got {int(values[0])}")
        for i in range(batch):
            if values[i + 1] < values[i]:
                self.fail(f"{name} decreases at index {i + 1} ({int(values[i])}"
                          f" then {int(values[i + 1])}): the sequence lengths "
                          "must not be negative")
        if values[batch] > total:
            self.fail(f"{name} ends at {int(values[batch])} but the tensor "
                      f"holds only {total} rows")

    def page_size(self, p):
        if p < 16 or p > 256 or p % 16:
            self.fail(f"the page size (dimension 1 of k_cache) must be "
                      f"{PAGE_SIZES}, got {p}")

    def block_table(self, table, lengths, pages, page_size):
        """Every entry a sequence uses is a page of the cache, and no
        sequence is longer than its row of the table holds."""
        batch, width = table.shape
        for b in range(batch):
            n = int(lengths[b])
            if n < 0 or n > width * page_size:
                self.fail(f"seqlens_k[{b}] = {n} does not fit the block "
                          f"table's {width} pages of {page_size} keys")
            used = table[b, :(n + page_size - 1) // page_size]
            bad = [int(x) for x in used if not 0 <= int(x) < pages]
            if bad:
                self.fail(f"block_table[{b}] names page {bad[0]}, outside the "
                          f"cache's {pages} pages (0 .. {pages - 1})")

    def threadgroup_memory(self, needed, limit, runtime_name, what):
        if needed > limit:
            self.fail(f"{what} needs {needed} bytes of threadgroup memory "
                      f"but the {runtime_name} runtime gives a threadgroup "
                      f"{limit} bytes", ValueError)
