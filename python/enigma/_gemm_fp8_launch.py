"""``enigma.gemm_fp8``: the scaled 8-bit float GEMM on arrays
(docs/reference/fp8.md). It checks the operands and scales, picks the
scaling from the scales' shapes, compiles :func:`enigma.gemm_fp8_block`
once per configuration and launches it with the function-call form on the
arrays' runtime (or ``runtime=``)."""

# No `from __future__ import annotations`: the kernel's annotations name
# local dtypes, evaluated where the kernel is defined.

import functools

import numpy as np

from . import _core
from ._dtypes import Scalar, as_dtype, f32, plain_index, u32
from ._inputs import bindable_input, torch_cuda_device
from ._gemm_fp8 import FP8_BLOCK, cached_fp8_configs, gemm_fp8_block
from ._kernel import kernel
from ._gemm import MmaConfig

__all__ = ["gemm_fp8", "gemm_fp8_kernel", "gemm_fp8_scaling"]

_FP8 = ("f8e4m3", "f8e5m2")
_OUT = ("bf16", "f16", "f32", "f8e4m3", "f8e5m2")


def _error(message):
    raise _core.DispatchError(f"gemm_fp8: {message}")


@functools.lru_cache(maxsize=None)
def gemm_fp8_kernel(config: MmaConfig, scaling: str, a_dtype: str,
                    b_dtype: str, out_dtype: str, scale_out: bool,
                    amax: bool, fast_accum: bool = False):
    """The ``@enigma.kernel`` of one configuration: parameters ``(A, B,
    SA, SB, SO, M, N, K, C, AMAX)`` (SO and AMAX are read only with
    ``scale_out`` / ``amax``; give 1-element arrays otherwise), launched
    with ``config.launch(M, N)`` (persistent configurations:
    ``config.launch(M, N, processors)``); ``fast_accum`` as
    ``gemm_fp8_block``'s."""
    A_, B_, C_ = as_dtype(a_dtype), as_dtype(b_dtype), as_dtype(out_dtype)

    @kernel
    def gemm_fp8(A: A_, B: B_, SA: f32, SB: f32, SO: f32, M: Scalar(u32),
                 N: Scalar(u32), K: Scalar(u32), C: C_, AMAX: u32):
        gemm_fp8_block(A, B, C, m=M, n=N, k=K, config=config, scale_a=SA,
                       scale_b=SB, scaling=scaling,
                       scale_out=SO if scale_out else None,
                       amax=AMAX if amax else None, fast_accum=fast_accum)
    return gemm_fp8


# --- arrays -----------------------------------------------------------------

def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _fp8_name(x, given, what):
    """The 8-bit format of operand ``x``: its own dtype (PyTorch, ml_dtypes)
    or, for uint8 bits, ``given`` (default e4m3)."""
    text = str(getattr(x, "dtype", ""))
    own = {"torch.float8_e4m3fn": "f8e4m3", "torch.float8_e5m2": "f8e5m2",
           "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2"}.get(text)
    if given is not None:
        dtype = as_dtype(given, strict=False)
        if dtype is None or dtype.name not in _FP8:
            _error(f"{what}_dtype must be enigma.f8e4m3 or enigma.f8e5m2, "
                   f"got {given!r}")
        given = dtype.name
    if own is not None:
        if given is not None and given != own:
            _error(f"{what} is {text} but {what}_dtype says {given}")
        return own
    if text in ("uint8", "torch.uint8"):
        return given or "f8e4m3"
    _error(f"{what} must hold 8-bit floats (a PyTorch float8 tensor, an "
           f"ml_dtypes float8 array, or uint8 bits from enigma.fp8_encode), "
           f"got {text or type(x).__name__}")


def _shape(x, what):
    shape = tuple(int(d) for d in getattr(x, "shape", ()))
    if len(shape) != 2:
        _error(f"{what} must be a 2-D matrix, got shape {shape}")
    return shape


def _scale_array(s, like, what):
    """A float32 array (on ``like``'s device) of the scale ``s``: a number
    or an array."""
    if _is_torch(like):
        import torch
        if isinstance(s, (bool, np.bool_)):
            _error(f"{what} must be a float32 number or tensor, got {s!r}")
        if not isinstance(s, torch.Tensor):
            s = _device_scale(torch, np.asarray(s, np.float32), like.device)
        if s.dtype != torch.float32:
            _error(f"{what} must be float32, got {s.dtype}")
        if s.device != like.device:
            _error(f"{what} is on {s.device}, the operands on {like.device}")
        return s.contiguous()
    if _is_torch(s):
        _error(f"{what} is a PyTorch tensor but the operands are not")
    if isinstance(s, (bool, np.bool_)):
        _error(f"{what} must be a float32 number or array, got {s!r}")
    s = plain_index(s)
    if isinstance(s, int):   # a Python or numpy integer: 2 as 2.0
        s = float(s)
    s = np.asarray(s)
    if s.dtype.kind != "f":
        _error(f"{what} must hold float32 values, got {s.dtype}")
    # A copy: the kernel binds every buffer writeable, and a caller's
    # scales may be read-only or a broadcast view.
    return np.array(s, dtype=np.float32, order="C", copy=True)


def gemm_fp8_scaling(m, n, k, a_shape, b_shape):
    """The scaling ("tensor", "row" or "block") that scales of shapes
    ``a_shape`` / ``b_shape`` mean for an ``m x n x k`` product; a
    DispatchError naming the accepted shapes otherwise."""
    kb, nb = -(-k // FP8_BLOCK), -(-n // FP8_BLOCK)
    one = ((), (1,), (1, 1))
    a_row = ((m,), (m, 1))
    b_row = ((n,), (n, 1), (1, n))
    if a_shape in one and b_shape in one:
        return "tensor"
    if (a_shape in one + a_row) and (b_shape in one + b_row):
        return "row"
    if a_shape == (m, kb) and b_shape == (nb, kb):
        return "block"
    _error(f"scales of shapes {a_shape} and {b_shape} fit no scaling of the "
           f"{m} x {n} x {k} product: per tensor () or (1,) each; per row "
           f"({m},) for A and ({n},) for B (one may be per tensor); per "
           f"block ({m}, {kb}) for A (1 x {FP8_BLOCK} blocks along K) and "
           f"({nb}, {kb}) for B ({FP8_BLOCK} x {FP8_BLOCK} blocks)")


def _prepare_scales(scaling, sa, sb, m, n):
    """The scale arrays as the kernel reads them."""
    def full(s, count):
        if _is_torch(s):
            return s.reshape(-1).expand(count).contiguous() if s.numel() == 1 \
                else s.reshape(-1).contiguous()
        s = s.reshape(-1)
        return np.full(count, s[0], np.float32) if s.size == 1 else s
    if scaling == "tensor":
        return sa.reshape(-1), sb.reshape(-1)
    if scaling == "row":
        return full(sa, m), full(sb, n)
    # block: A's scales M-contiguous, (ceil(K/128), M)
    sa_t = sa.t().contiguous() if _is_torch(sa) else \
        np.ascontiguousarray(sa.T)
    return sa_t, sb.reshape(-1) if not _is_torch(sb) else \
        sb.contiguous().reshape(-1)


def _empty(like, shape, dtype):
    name = as_dtype(dtype).name
    if _is_torch(like):
        import torch
        tdtype = {"bf16": torch.bfloat16, "f16": torch.float16,
                  "f32": torch.float32, "f8e4m3": torch.float8_e4m3fn,
                  "f8e5m2": torch.float8_e5m2, "u32": torch.uint32}[name]
        return torch.empty(shape, dtype=tdtype, device=like.device)
    ndtype = {"bf16": np.uint16, "f16": np.float16, "f32": np.float32,
              "f8e4m3": np.uint8, "f8e5m2": np.uint8, "u32": np.uint32}[name]
    return np.empty(shape, dtype=ndtype)


# Constant tensors on the device, made once per device and value: creating
# a CUDA tensor from host values copies and waits for the device, which
# made each call of gemm_fp8 wait for the previous one (twice the time of
# the kernel at 4096^3) and cannot be captured in a CUDA graph. The kernel
# only reads them (scales given as numbers, the amax word when no amax is
# asked for), so one tensor serves every call.
_DEVICE_CONSTANTS = {}
_DEVICE_CONSTANTS_MOST = 256


def _device_constant(device, value, make):
    """The tensor ``make()`` builds for ``value`` on ``device``, built once
    per device and value."""
    key = (str(device), value)
    found = _DEVICE_CONSTANTS.get(key)
    if found is None:
        if len(_DEVICE_CONSTANTS) >= _DEVICE_CONSTANTS_MOST:
            _DEVICE_CONSTANTS.clear()
        found = _DEVICE_CONSTANTS[key] = make()
    return found


def _device_scale(torch, values, device):
    """A float32 tensor of ``values`` (a numpy array) on ``device``; one
    value is made once per device."""
    if values.ndim:
        return torch.tensor(values, device=device)
    return _device_constant(device, ("scale", values.tobytes()),
                            lambda: torch.tensor(values, device=device))


def _zero_u32(like, used=True):
    """One zero uint32 (the amax's float bits) where ``like`` lives; with
    ``used=False`` one kept per device (the kernel does not write it)."""
    if _is_torch(like):
        import torch

        def zero():
            return torch.zeros(1, dtype=torch.uint32, device=like.device)
        return zero() if used else \
            _device_constant(like.device, "unused amax", zero)
    return np.zeros(1, np.uint32)


def _cuda_device(runtime, like):
    """(architecture number, multiprocessors) of the CUDA device the launch
    runs on (a CudaRuntime given, else the CUDA tensors'), or None off
    CUDA."""
    if runtime is not None:
        if runtime.name != "cuda":
            return None
        return runtime.architecture, runtime.multiprocessors
    if _is_torch(like) and like.device.type == "cuda":
        import torch
        return torch_cuda_device(torch, like.device)
    return None


def _target(runtime, like):
    """("cuda", "metal" or "cpu", the CUDA architecture number or 0)."""
    cuda = _cuda_device(runtime, like)
    if cuda is not None:
        if 0 < cuda[0] < 80:
            _error(f"the CUDA device is sm_{cuda[0]}; "
                   "8-bit float products need sm_80 or newer (tensor "
                   "cores with half products; wgmma with 8-bit "
                   "operands on sm_90)")
        return "cuda", cuda[0]
    if runtime is not None:
        return {"metal": "metal", "metal-host": "metal"}.get(
            runtime.name, "cpu"), 0
    return "cpu", 0


def gemm_fp8(a, b, scale_a, scale_b, *, out_dtype="bf16", scale_out=None,
             amax: bool = False, a_dtype=None, b_dtype=None, out=None,
             config: MmaConfig | None = None, runtime=None,
             fast_accum: bool = False):
    """``C = (A * scale_a) @ (B * scale_b)^T`` for 8-bit float matrices
    ``a`` (M x K) and ``b`` (N x K), both row-major (K-major, "TN"), the
    products summed in f32; returns C (M x N) of ``out_dtype`` (bf16, f16,
    f32, f8e4m3 or f8e5m2), and with ``amax=True`` also ``max |A B^T|``
    scaled (before ``scale_out``) as a float.

    ``a``/``b``: PyTorch float8 tensors (CPU or CUDA), ml_dtypes float8
    arrays, or uint8 arrays of bits (``enigma.fp8_encode``; their format
    from ``a_dtype``/``b_dtype``, default e4m3). Scales are float32
    (numbers or arrays on the operands' device); their shapes choose the
    scaling: per tensor (one value each), per row (``(M,)`` for A, ``(N,)``
    for B; either may be one value), or per block (``(M, ceil(K/128))``
    for A: 1 x 128 blocks along K, ``(ceil(N/128), ceil(K/128))`` for B:
    128 x 128 blocks, as DeepSeek-V3). An 8-bit C is
    ``saturating_cast(result * scale_out)``. The result is written into
    ``out`` when given (contiguous, M x N, of ``out_dtype``; bf16 and 8-bit
    numpy outputs as uint16 / uint8 bits), else into a new array like the
    operands. ``config`` overrides the tile configuration (the first of
    ``gemm_fp8_configs`` for the target otherwise); ``runtime`` the
    runtime (else the arrays': a shared CpuRuntime for host arrays, a
    CudaRuntime for CUDA tensors). On an sm_90 GPU the default
    configuration is the warp-specialised kernel's (a pipeline with a TMA
    producer warpgroup), elsewhere the classic one's.

    ``fast_accum=False`` (the default, as ``torch._scaled_mm``'s
    ``use_fast_accum``) promotes each 128 of K into a separate f32
    accumulator; ``True`` keeps one accumulator through K (on Hopper the
    tensor cores' own reduced-precision sums: faster, less exact). Block
    scaling always adds each 128 of K in f32."""
    m, k = _shape(a, "a")
    n, k2 = _shape(b, "b")
    if k != k2:
        _error(f"a is {m} x {k} and b is {n} x {k2}: b must be N x K (the "
               "product is A @ B^T), with the same K")
    fa = _fp8_name(a, a_dtype, "a")
    fb = _fp8_name(b, b_dtype, "b")
    try:
        out_name = as_dtype(out_dtype).name
    except _core.EnigmaError:
        out_name = repr(out_dtype)
    if out_name not in _OUT:
        _error(f"out_dtype must be one of {', '.join(_OUT)}, got {out_name}")
    if _is_torch(a) != _is_torch(b):
        _error("a and b must both be PyTorch tensors or both be arrays")
    if scale_out is not None and out_name not in _FP8:
        _error(f"scale_out scales an 8-bit result; out_dtype is {out_name}")
    sa = _scale_array(scale_a, a, "scale_a")
    sb = _scale_array(scale_b, a, "scale_b")
    scaling = gemm_fp8_scaling(m, n, k, tuple(sa.shape), tuple(sb.shape))
    sa, sb = _prepare_scales(scaling, sa, sb, m, n)
    so = _scale_array(1.0 if scale_out is None else scale_out, a,
                      "scale_out").reshape(-1)
    if tuple(so.shape) != (1,):
        _error(f"scale_out must be one value, got shape {tuple(so.shape)}")
    if not isinstance(fast_accum, bool):
        _error(f"fast_accum must be a bool, got {fast_accum!r}")
    if config is not None and not isinstance(config, MmaConfig):
        _error(f"config must be an enigma.MmaConfig (or None), got "
               f"{type(config).__name__}")
    if 0 in (m, n, k):
        return _empty_product(a, out, (m, n), out_name, amax)
    target, arch = _target(runtime, a)
    if config is None:
        # The pipeline with roles needs sm_90 (TMA, mbarriers, setmaxnreg).
        config = cached_fp8_configs(target, scaling, bool(amax),
                                    arch >= 90, fast_accum)[0]
    elif config.warp_specialized and target == "cuda" and arch < 90:
        _error(f"{config} runs the warp-specialised pipeline, which needs "
               f"sm_90; the device is sm_{arch}")
    if out is None:
        out = _empty(a, (m, n), out_name)
    elif tuple(getattr(out, "shape", ())) != (m, n):
        _error(f"out must be {m} x {n}, got shape "
               f"{tuple(getattr(out, 'shape', ()))}")
    amax_bits = _zero_u32(a, used=bool(amax))
    compiled = gemm_fp8_kernel(config, scaling, fa, fb, out_name,
                               scale_out is not None, bool(amax), fast_accum)
    cuda = _cuda_device(runtime, a)
    grid, threads = config.launch(
        m, n, cuda[1] if cuda is not None and config.persistent else None)
    launch = compiled.launch(grid=grid, threads=threads)
    extra = {} if runtime is None else {"runtime": runtime}
    launch(_bits(a), _bits(b), sa, sb, so, m, n, k, out, amax_bits, **extra)
    if not amax:
        return out
    if _is_torch(amax_bits):
        value = float(amax_bits.cpu().view(__import__("torch").float32)[0])
    else:
        value = float(amax_bits.view(np.float32)[0])
    return out, value


def _bits(x):
    """Operands as the kernel binds them (a slice of a wider matrix, a
    transposed, read-only or misaligned view: copied), ml_dtypes arrays as
    bytes."""
    x = bindable_input(x)
    if isinstance(x, np.ndarray) and x.dtype.kind != "u":
        return x.view(np.uint8)
    return x


def _empty_product(like, out, shape, out_name, amax):
    """C of a product with no rows, no columns or K = 0: every element a
    sum of nothing, 0 (and 0 in every output format)."""
    if out is None:
        out = _empty(like, shape, out_name)
    elif tuple(getattr(out, "shape", ())) != shape:
        _error(f"out must be {shape[0]} x {shape[1]}, got shape "
               f"{tuple(getattr(out, 'shape', ()))}")
    elif getattr(out, "dtype", None) != _empty(like, (0, 0), out_name).dtype:
        _error(f"out must hold {out_name} results, got "
               f"{getattr(out, 'dtype', type(out).__name__)}")
    if _is_torch(out):
        import torch
        out.view(torch.uint8).zero_()
    else:
        out[...] = 0
    return (out, 0.0) if amax else out
