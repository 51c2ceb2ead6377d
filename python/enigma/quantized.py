"""4-bit weight-only quantized matrices in MLX's affine format, on the
arrays a program already has (docs/reference/quantized.md).

    import enigma, torch

    w_q, scales, biases = enigma.quantize(w, group_size=64)   # w: (N, K)
    y = enigma.quantized_matmul(x, w_q, scales, biases, group_size=64)
    w_hat = enigma.dequantize(w_q, scales, biases, group_size=64)

``w_q`` holds eight 4-bit codes per uint32 along K (lowest nibble first),
``scales`` and ``biases`` one value per group of ``group_size`` values of a
row: ``w_hat[n, k] = scales[n, g] * q[n, k] + biases[n, g]``, ``g = k //
group_size``. ``quantized_matmul`` computes ``x @ w_hat.T`` without
materialising ``w_hat``: a matrix-vector kernel streams the packed words
for a few rows of ``x`` (decode), a tensor-core kernel dequantises tiles
of them into threadgroup memory ahead of ``enigma.mma`` for more, and
on CUDA from ``PREFILL_DEQUANTIZE_ROWS`` rows of 16-bit ``x`` on
(prefill) the weights are dequantised once into a temporary and
multiplied by the pipelined GEMM (``DequantizedGemmConfig``). The
kernels are in ``enigma._quantized``, ``enigma._quantized_matvec`` and
``enigma._quantized_prefill``.

Arrays are numpy arrays (host; bfloat16 as uint16 bit patterns) or PyTorch
tensors (CPU or CUDA); the kernels run where the arrays are, through the
function-call form (``runtime=`` or ``enigma.use_runtime`` choose another
runtime, e.g. ``MetalHostRuntime``).
"""

import functools
import math

import numpy as np

from ._compile import compile as _compile_kernel
from ._gemm import gemm_config_for, split_k_workspace, stream_k_workspace
from ._inputs import bindable_input, torch_cuda_device
from ._launch import scoped_runtime
from ._quantized import (ACTIVATION_DTYPES, BITS, GROUP_SIZES, QmmConfig,
                         dequantize_kernel, matmul_kernel, quantize_kernel,
                         split_sum_kernel)
from ._quantized_matvec import QmvConfig, matvec_kernel
from ._quantized_matvec_mma import QmvMmaConfig, matvec_mma_kernel
from ._quantized_prefill import (DequantizedGemmConfig, gemm_kernel,
                                 needs_workspace)

__all__ = ["quantize", "dequantize", "quantized_matmul", "QmvConfig",
           "QmvMmaConfig", "QmmConfig", "DequantizedGemmConfig", "default_config",
           "quantized_matmul_configs", "GROUP_SIZES", "BITS",
           "MATVEC_MAX_ROWS", "PREFILL_DEQUANTIZE_ROWS"]

# Rows of x up to which quantized_matmul takes the matrix-vector kernel by
# default; from here on the matrix hardware does the products.
MATVEC_MAX_ROWS = 4
# Rows of 16-bit x from which quantized_matmul on CUDA dequantises the
# weights into a temporary and runs the pipelined GEMM
# (DequantizedGemmConfig): dequantising costs ~2.5 bytes of memory traffic
# per weight whatever M is, which from here on is a small part of the
# product's time, and the GEMM is faster than the fused kernel.
PREFILL_DEQUANTIZE_ROWS = 512
_U32_LIMIT = 2**31            # sizes the kernels' uint indices must stay below

# Default tile shapes per target. CUDA: the matrix-vector kernel with 8
# weight rows per simdgroup and K split over 2 simdgroups (enough
# threadgroups and 16-byte loads in flight for N = 4096); decode tiles of
# 16 rows of x (mma.sync), split along K when the grid is small; warpgroup
# shapes (wgmma on Hopper) from 17 rows on. Measured on an H100
# (2026-12-07, the four Llama-3-8B shapes): K in 2 parts ran within 1 % of
# 4 at K = 4096 x N = 4096 and K = 14336 and 8 % faster at N = 6144 and
# 28672; the decode tile with 2 stages ran 1.24-1.38x the same tile with 8
# (13.6 against 17.9 us at 16 x 4096 x 4096; more splits of K, 64-deep
# steps or 32- and 128-wide tiles were no faster). The larger tiles keep
# as many K tiles of x and words in flight as threadgroup memory allows
# (4, 3). Metal and the host runtimes: shapes within Metal's 32 KiB of
# threadgroup memory.
_CONFIGS = {
    "cuda": {
        "qmv": QmvConfig(rows=8, simdgroups=1, k_split=2),
        "small": QmmConfig(16, 64, 128, 1, 4, 2),
        "medium": QmmConfig(64, 256, 64, 4, 1, 6),
        "large": QmmConfig(128, 256, 64, 8, 1, 5),
    },
    "metal": {
        "qmv": QmvConfig(rows=4, simdgroups=1, k_split=2),
        "small": QmmConfig(16, 64, 64, 1, 4, 2),
        "medium": QmmConfig(32, 64, 64, 2, 2, 2),
        "large": QmmConfig(32, 64, 64, 2, 2, 2),
    },
}
_CONFIGS["cpu"] = _CONFIGS["metal"]


# --------------------------------------------------------------------------
# Arrays
# --------------------------------------------------------------------------

def _torch_module(a):
    """The torch module when ``a`` is a torch.Tensor, else None (torch is
    not imported for numpy arrays)."""
    if type(a).__module__.split(".")[0] != "torch":
        return None
    import torch
    return torch if isinstance(a, torch.Tensor) else None


class _Array:
    """What the host functions need of an argument: its library, dtype
    name (f32, f16, bf16, u32), shape, and the array to bind (contiguous;
    packed words as uint32)."""

    __slots__ = ("value", "torch", "dtype", "shape", "device")

    def __init__(self, value, what, packed=False):
        torch = _torch_module(value)
        self.torch = torch
        given = getattr(value, "dtype", None)  # before any view, for errors
        if torch is not None:
            names = {torch.float32: "f32", torch.float16: "f16",
                     torch.bfloat16: "bf16", torch.int32: "u32"}
            if hasattr(torch, "uint32"):
                names[torch.uint32] = "u32"
            dtype = names.get(value.dtype)
            if dtype == "u32":
                value = bindable_input(value)
                if value.dtype == torch.int32:
                    value = value.view(torch.uint32)
            elif dtype is not None:
                value = bindable_input(value)
            self.device = value.device
        elif isinstance(value, np.ndarray):
            names = {"float32": "f32", "float16": "f16", "uint16": "bf16",
                     "bfloat16": "bf16", "uint32": "u32", "int32": "u32"}
            dtype = names.get(value.dtype.name)
            if dtype is not None:
                value = bindable_input(value)
                if value.dtype.name in ("int32",):
                    value = value.view(np.uint32)
                elif value.dtype.name == "bfloat16":
                    value = value.view(np.uint16)
            self.device = None
        else:
            raise TypeError(
                f"{what} must be a numpy array or a torch.Tensor, got "
                f"{type(value).__name__}")
        want = ("u32",) if packed else ACTIVATION_DTYPES
        if dtype not in want:
            kinds = ("uint32 (or int32) words" if packed else
                     "float32, float16 or bfloat16 (numpy: uint16 bit "
                     "patterns)")
            raise TypeError(f"{what} must hold {kinds}, got {given}")
        self.value, self.dtype = value, dtype
        self.shape = tuple(int(d) for d in value.shape)

    def empty(self, shape, dtype):
        """A new array of this one's library and device."""
        if self.torch is not None:
            t = self.torch
            tdtype = {"f32": t.float32, "f16": t.float16, "bf16": t.bfloat16,
                      "u32": t.int32}[dtype]
            return t.empty(shape, dtype=tdtype, device=self.device)
        npdtype = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16,
                   "u32": np.uint32}[dtype]
        return np.empty(shape, dtype=npdtype)

    def zeros(self, shape, dtype):
        """:meth:`empty`, zeroed."""
        array = self.empty(shape, dtype)
        if self.torch is not None:
            array.zero_()
        else:
            array[:] = 0
        return array

    def bind(self, array):
        """``array`` (made by :meth:`empty`) as the kernels take it."""
        if self.torch is not None and array.dtype == self.torch.int32:
            return array.view(self.torch.uint32)
        return array


def _check_out(out, like, shape, dtype, what="out"):
    """``out`` checked against the result's shape, dtype and place: the
    array to bind (written in place)."""
    if isinstance(out, np.ndarray) and not out.flags.writeable:
        raise ValueError(f"{what} is read-only; the result is written into "
                         "it, so pass a writeable array")
    o = _Array(out, what)
    if o.dtype != dtype or o.shape != tuple(shape):
        raise ValueError(f"{what} must be a {dtype} array of shape "
                         f"{tuple(shape)}, got {o.dtype} {o.shape}")
    if (o.torch is None) != (like.torch is None) or \
            (o.torch is not None and o.device != like.device):
        raise ValueError(f"{what} must be where the inputs are")
    same = o.value.data_ptr() == out.data_ptr() if o.torch is not None \
        else np.shares_memory(o.value, out)
    if not same:
        raise ValueError(f"{what} must be contiguous and start on a "
                         "16-byte boundary (it is written in place)")
    return o.value


def _no_gradients(*arrays):
    """The kernels have no backward: a torch input that wants a gradient
    while autograd records would silently get none, so it is refused."""
    for a, value, what in arrays:
        if a.torch is not None and value.requires_grad and \
                a.torch.is_grad_enabled():
            raise ValueError(
                f"{what} requires grad, but quantized_matmul has no "
                "backward; call it under torch.no_grad() or "
                f"torch.inference_mode(), or pass {what}.detach()")


def _check_format(group_size, bits):
    if bits != BITS:
        raise ValueError(f"bits must be {BITS} (4-bit codes), got {bits!r}")
    if group_size not in GROUP_SIZES:
        raise ValueError(f"group_size must be one of {GROUP_SIZES}, got "
                         f"{group_size!r}")


def _runtime_kw(runtime):
    return {} if runtime is None else {"runtime": runtime}


def _target(runtime, *arrays):
    """"cuda", "metal" or "cpu": where the kernels will run."""
    rt = runtime if runtime is not None else scoped_runtime()
    if rt is not None:
        return {"cuda": "cuda", "metal": "metal"}.get(rt.name, "cpu")
    for a in arrays:
        if a.torch is not None and a.device.type == "cuda":
            return "cuda"
    return "cpu"


def _rows(shape):
    return math.prod(shape[:-1])


# --------------------------------------------------------------------------
# Compiled kernels, one per (kind, dtype, group size, shape)
# --------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _kernel(kind, dtype, group_size, config=None, split=False):
    if kind == "quantize":
        k = quantize_kernel(dtype, group_size)
    elif kind == "dequantize":
        k = dequantize_kernel(dtype, group_size)
    elif kind == "qmv":
        k = matvec_kernel(dtype, group_size, config)
    elif kind == "qmv_mma":
        k = matvec_mma_kernel(dtype, group_size, config, split)
    elif kind == "qmm":
        k = matmul_kernel(dtype, group_size, config, split)
    elif kind == "gemm":
        k = gemm_kernel(dtype, config)
    else:
        k = split_sum_kernel(dtype)
    return _compile_kernel(k, emit_only=True)


# --------------------------------------------------------------------------
# quantize / dequantize
# --------------------------------------------------------------------------

def quantize(w, group_size: int = 64, bits: int = 4, *, runtime=None):
    """``(w_q, scales, biases)`` of ``w`` (shape (..., K), f32, f16 or
    bf16): each group of ``group_size`` values along K gets ``scale`` and
    ``bias`` (w's dtype) with ``w ~ scale * q + bias``, ``q`` in 0..15
    (MLX's affine quantisation), and ``w_q`` (..., K / 8) holds the codes,
    eight per uint32, lowest nibble first (numpy: uint32; torch: int32).
    Runs as an Enigma kernel where ``w`` is."""
    _check_format(group_size, bits)
    a = _Array(w, "w")
    if len(a.shape) < 2:
        raise ValueError(f"w must have at least 2 dimensions (rows, K), "
                         f"got shape {a.shape}")
    K = a.shape[-1]
    if K % group_size:
        raise ValueError(f"group_size {group_size} does not divide the "
                         f"last dimension of w (K = {K})")
    rows = _rows(a.shape)
    if rows * K >= _U32_LIMIT:
        raise ValueError(f"w has {rows * K} values; at most {_U32_LIMIT - 1}")
    lead = a.shape[:-1]
    w_q = a.empty(lead + (K // 8,), "u32")
    scales = a.empty(lead + (K // group_size,), a.dtype)
    biases = a.empty(lead + (K // group_size,), a.dtype)
    groups = rows * K // group_size
    if groups:
        kernel = _kernel("quantize", a.dtype, group_size)
        kernel.launch(grid=groups, threads=64)(
            a.value, a.bind(w_q), scales, biases, groups,
            **_runtime_kw(runtime))
    return w_q, scales, biases


def _check_scales(w_q, scales, biases, group_size, dtype=None):
    """(rows, K) of the packed matrix, checking the three arrays agree."""
    if len(w_q.shape) < 2:
        raise ValueError(f"w_q must have at least 2 dimensions, got shape "
                         f"{w_q.shape}")
    K = w_q.shape[-1] * 8
    if K % group_size:
        raise ValueError(
            f"group_size {group_size} does not divide K = {K} (w_q has "
            f"{w_q.shape[-1]} words per row, 8 values each)")
    want = w_q.shape[:-1] + (K // group_size,)
    for name, a in (("scales", scales), ("biases", biases)):
        if a.shape != want:
            raise ValueError(
                f"{name} has shape {a.shape}; w_q of shape {w_q.shape} "
                f"(K = {K}) with group_size {group_size} needs {want}")
    if scales.dtype != biases.dtype:
        raise TypeError(f"scales are {scales.dtype} and biases "
                        f"{biases.dtype}; they must have one dtype")
    if dtype is not None and scales.dtype != dtype:
        raise TypeError(f"scales and biases are {scales.dtype} but x is "
                        f"{dtype}; they must have x's dtype")
    places = {(a.torch is None, str(a.device)) for a in (w_q, scales, biases)}
    if len(places) > 1:
        raise ValueError("w_q, scales and biases must be in one place (all "
                         "numpy, or torch tensors on one device)")
    return _rows(w_q.shape), K


def dequantize(w_q, scales, biases, group_size: int = 64, bits: int = 4, *,
               out=None, runtime=None):
    """``scales * q + biases`` per group: the (..., K) matrix of scales'
    dtype that ``w_q`` (..., K / 8) encodes, each value ``fma(scale, q,
    bias)`` in float rounded once. ``out`` (optional) receives it."""
    _check_format(group_size, bits)
    q = _Array(w_q, "w_q", packed=True)
    s, b = _Array(scales, "scales"), _Array(biases, "biases")
    rows, K = _check_scales(q, s, b, group_size)
    shape = q.shape[:-1] + (K,)
    if rows * K >= _U32_LIMIT:
        raise ValueError(f"w has {rows * K} values; at most {_U32_LIMIT - 1}")
    w = s.empty(shape, s.dtype) if out is None else out
    bound = w if out is None else _check_out(out, s, shape, s.dtype)
    words = rows * K // 8
    if words:
        kernel = _kernel("dequantize", s.dtype, group_size)
        kernel.launch(grid=words, threads=64)(
            q.value, s.value, b.value, bound, words, **_runtime_kw(runtime))
    return w


# --------------------------------------------------------------------------
# quantized_matmul
# --------------------------------------------------------------------------

def quantized_matmul_configs(target: str = "cuda") -> dict:
    """The default tile shapes of :func:`quantized_matmul` for ``target``
    ("cuda", "metal", "cpu"): ``{"qmv": QmvConfig, "small": QmmConfig
    (up to 16 rows of x), "medium": (up to 64), "large": QmmConfig}``."""
    if target not in _CONFIGS:
        raise ValueError(f"target must be one of {sorted(_CONFIGS)}, got "
                         f"{target!r}")
    return dict(_CONFIGS[target])


def default_config(m: int, target: str = "cuda", *, dtype=None):
    """The configuration :func:`quantized_matmul` takes for ``m`` rows of
    x on ``target``: the matrix-vector kernel up to 4 rows, then matrix
    products with tiles of 16, 64 or 128 rows; on CUDA from
    ``PREFILL_DEQUANTIZE_ROWS`` rows of 16-bit x (``dtype`` "bf16", "f16"
    or None) on, :class:`DequantizedGemmConfig` (the weights dequantised
    into a temporary, then the pipelined GEMM). ``dtype`` "f32": the
    tiles step half as far along K, so that their float32 rows take the
    threadgroup memory the 16-bit tiles were sized for."""
    configs = quantized_matmul_configs(target)
    if m <= MATVEC_MAX_ROWS:
        return configs["qmv"]
    if target == "cuda" and m >= PREFILL_DEQUANTIZE_ROWS and dtype != "f32":
        return DequantizedGemmConfig()
    if m <= 16:
        config = configs["small"]
    else:
        config = configs["medium"] if m <= 64 else configs["large"]
    if dtype == "f32" and config.bk >= 64:
        config = config.replace(bk=config.bk // 2)
    return config


def _sm_count(x):
    if x.torch is not None and x.device.type == "cuda":
        return torch_cuda_device(x.torch, x.device)[1]
    return 132


def _splits(config, m, n, k, target, x):
    """(splits, K tiles per split) of a product: the configuration's, or
    on CUDA enough threadgroups for two per multiprocessor."""
    ktiles = -(-k // config.bk)
    splits = config.splits
    if splits is None:
        if target != "cuda":
            return 1, ktiles
        want = 2 * _sm_count(x)
        blocks = config.blocks(m, n)
        splits = 1 if blocks >= want else \
            min(-(-want // blocks), max(1, ktiles // 2))
    splits = max(1, min(int(splits), ktiles))
    tiles = -(-ktiles // splits)
    return -(-ktiles // tiles), tiles


def quantized_matmul(x, w_q, scales, biases, transpose: bool = True,
                     group_size: int = 64, bits: int = 4, *, out=None,
                     config=None, runtime=None):
    """``x @ dequantize(w_q, scales, biases).T`` for ``x`` of shape (..., K)
    (f32, f16 or bf16; scales and biases of the same dtype) and ``w_q`` of
    shape (N, K / 8): the result has shape (..., N) and x's dtype, with
    float accumulation. ``transpose=True`` is MLX's default (w is (N, K));
    ``False`` is not supported. ``out`` (optional) receives the result.
    ``config``: a :class:`QmvConfig`, :class:`QmmConfig` or
    :class:`DequantizedGemmConfig` instead of :func:`default_config`."""
    if transpose is not True:
        raise ValueError("transpose must be True: w_q holds the rows of w "
                         "(N, K), packed along K")
    _check_format(group_size, bits)
    xa = _Array(x, "x")
    q = _Array(w_q, "w_q", packed=True)
    s, b = _Array(scales, "scales"), _Array(biases, "biases")
    if len(q.shape) != 2:
        raise ValueError(f"w_q must be 2-D (N, K / 8), got shape {q.shape}")
    _no_gradients((xa, x, "x"), (s, scales, "scales"), (b, biases, "biases"))
    if not xa.shape:
        raise ValueError("x must have at least 1 dimension (..., K)")
    N, K = _check_scales(q, s, b, group_size, xa.dtype)
    if xa.shape[-1] != K:
        raise ValueError(
            f"x has K = {xa.shape[-1]} values per row but w_q holds "
            f"{q.shape[-1]} words per row, K = {K}: packed weights of the "
            f"wrong length (w_q must be (N, {xa.shape[-1] // 8}) for this x)")
    if (xa.torch is None) != (q.torch is None) or \
            (xa.torch is not None and xa.device != q.device):
        raise ValueError("x and w_q must be in one place (both numpy, or "
                         "torch tensors on one device)")
    M = _rows(xa.shape)
    shape = xa.shape[:-1] + (N,)
    y = xa.empty(shape, xa.dtype) if out is None else out
    bound = y if out is None else _check_out(out, xa, shape, xa.dtype)
    if M == 0 or N == 0:
        return y
    if K == 0:
        raise ValueError("K must be at least the group size")
    if max(M * K, N * K // 8, M * N) >= _U32_LIMIT or K >= _U32_LIMIT:
        raise ValueError(f"product {M} x {N} x {K} too large for the "
                         "kernels' 32-bit indices")
    target = _target(runtime, xa, q)
    config = default_config(M, target, dtype=xa.dtype) if config is None \
        else config
    kw = _runtime_kw(runtime)
    args = (xa.value, q.value, s.value, b.value)
    if isinstance(config, QmvConfig):
        kernel = _kernel("qmv", xa.dtype, group_size, config)
        kernel.launch(**config.launch(M, N))(*args, bound, N, K, **kw)
        return y
    if isinstance(config, QmvMmaConfig):
        _matvec_mma(xa, args, bound, (M, N, K), group_size, config, target,
                    runtime)
        return y
    if isinstance(config, DequantizedGemmConfig):
        _dequantized_gemm(xa, q, s, b, group_size, bound, (M, N, K), config,
                          target, runtime)
        return y
    if not isinstance(config, QmmConfig):
        raise TypeError(f"config must be a QmvConfig, a QmvMmaConfig, a "
                        f"QmmConfig or a DequantizedGemmConfig, got "
                        f"{type(config).__name__}")
    splits, tiles = _splits(config, M, N, K, target, xa)
    if splits * M * N >= _U32_LIMIT:
        splits, tiles = 1, -(-K // config.bk)
    grid = {"threadgroups": (config.blocks(M, N), splits),
            "threads": (config.threads, 1)}
    if splits == 1:
        kernel = _kernel("qmm", xa.dtype, group_size, config, False)
        kernel.launch(**grid)(*args, bound, M, N, K, **kw)
        return y
    partial = xa.empty((splits, M, N), "f32")
    kernel = _kernel("qmm", xa.dtype, group_size, config, True)
    kernel.launch(**grid)(*args, partial, M, N, K, tiles, **kw)
    _kernel("sum", xa.dtype, 0).launch(grid=M * N, threads=256)(
        partial, bound, M * N, splits, **kw)
    return y


def _matvec_mma(xa, args, bound, shape, group_size, config, target,
                runtime):
    """``bound = x @ w_hat.T`` by :class:`QmvMmaConfig` (16-bit x, at most
    16 rows): one launch when the threadgroups' K range covers K, else
    float partial sums per range and the kernel that adds them."""
    M, N, K = shape
    if xa.dtype not in ("f16", "bf16"):
        raise ValueError(f"QmvMmaConfig multiplies f16 or bf16 x on the "
                         f"matrix hardware, got {xa.dtype}; use a QmvConfig "
                         "or QmmConfig")
    if M > 16:
        raise ValueError(f"QmvMmaConfig takes at most 16 rows of x, got {M}; "
                         "use a QmmConfig")
    config = config.for_shape(N, K, _sm_count(xa),
                              None if target == "cuda" else 512)
    if target != "cuda" and config.staged:
        # Within Metal's 32 KiB: x's rows only (the words staged as well
        # would pass it; the host runtimes gain nothing from staging).
        config = config.replace(staged=False)
    kw = _runtime_kw(runtime)
    splits = config.splits(K)
    launch = config.launch(N, K)
    if splits == 1:
        kernel = _kernel("qmv_mma", xa.dtype, group_size, config, False)
        kernel.launch(**launch)(*args, bound, M, N, K, **kw)
        return
    partial = xa.empty((splits, M, N), "f32")
    if config.sum_in_kernel:   # the last threadgroup of a block adds them
        flags = xa.zeros((launch["threadgroups"][0],), "u32")
        kernel = _kernel("qmv_mma", xa.dtype, group_size, config,
                         "in_kernel")
        kernel.launch(**launch)(*args, partial, xa.bind(flags), bound, M, N,
                                K, **kw)
        return
    kernel = _kernel("qmv_mma", xa.dtype, group_size, config, True)
    kernel.launch(**launch)(*args, partial, M, N, K, **kw)
    _kernel("sum", xa.dtype, 0).launch(grid=M * N, threads=256)(
        partial, bound, M * N, splits, **kw)


def _dequantized_gemm(xa, q, s, b, group_size, bound, shape, config, target,
                      runtime):
    """``bound = x @ w_hat.T`` by :class:`DequantizedGemmConfig`: the
    weights dequantised into a temporary of x's dtype, then the GEMM
    kernel of ``_quantized_prefill`` (its workspace and zeroed flags for
    split-K and stream-K configurations)."""
    M, N, K = shape
    if N * K >= _U32_LIMIT:
        raise ValueError(f"DequantizedGemmConfig: the dequantised weights "
                         f"({N} x {K}) exceed the kernels' 32-bit indices; "
                         "pass a QmmConfig (enigma.quantized.default_config"
                         "'s tiles dequantise in threadgroup memory)")
    sm_count = _sm_count(xa)
    gemm = config.gemm
    if gemm is None:
        gemm = gemm_config_for(M, N, K, xa.dtype, sm_count, target)
    kw = _runtime_kw(runtime)
    w = xa.empty((N, K), xa.dtype)
    dequantize(q.value, s.value, b.value, group_size, out=w, runtime=runtime)
    grid, threads = gemm.launch(M, N, sm_count if target == "cuda" else None)
    kernel = _kernel("gemm", xa.dtype, 0, gemm)
    run = kernel.launch(grid=grid, threads=threads)
    if not needs_workspace(gemm):
        run(xa.value, w, M, N, K, bound, **kw)
        return
    floats, flags = stream_k_workspace(gemm) if gemm.stream_k else \
        split_k_workspace(gemm, M, N)
    workspace = xa.empty((floats,), "f32")
    zeros = xa.zeros((flags,), "u32")
    run(xa.value, w, workspace, xa.bind(zeros), M, N, K, bound, **kw)
