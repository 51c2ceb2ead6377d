"""From a checked problem to the launches that solve it: tile
configurations per runtime, the scalars each kernel takes (strides of the
layouts), grids, and the intermediate buffers."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field, replace

import numpy as np

from .backward import (BackwardConfig, dkdv_kernel, dq_convert_kernel,
                       dq_kernel, prep_kernel)
from .decode import (MERGE_THREADS, DecodeConfig, decode_kernel,
                     merge_kernel)
from .forward import ForwardConfig, forward_kernel
from .forward_ws import forward_ws_kernel
from .checks import Checker
from .launch import Step, runtime_name, threadgroup_memory_limit
from .._dtypes import plain_index
from .._inputs import torch_cuda_device
from .tiles import LOG2E


@dataclass
class Problem:
    """An attention problem after the checks. ``layout`` is "bhsd" (Q, O:
    batch, heads, rows, d) or "thd" (rows of all sequences, heads, d); keys
    are contiguous in the same layout, or paged (``page_size`` > 0: cache
    of shape (pages, page_size, kv_heads, d), a block table of
    ``table_stride`` pages per sequence)."""
    dtype: str
    d: int
    batch: int
    hq: int
    hkv: int
    layout: str
    max_sq: int
    max_skv: int
    total_q: int
    total_k: int
    causal: bool
    scale: float
    page_size: int = 0
    pages: int = 0
    table_stride: int = 0
    extra: dict = field(default_factory=dict)

    @property
    def group(self) -> int:
        return self.hq // self.hkv

    def strides(self):
        """Scalars of the Q/O, K/V and LSE layouts: head and row strides
        of Q (``q_sh``, ``q_ss``) and K (``k_sh``, ``k_ss``), and the LSE
        index ``start * l_bm + head * l_sh + row``."""
        d = self.d
        if self.layout == "bhsd":
            return dict(q_sh=self.max_sq * d, q_ss=d,
                        k_sh=self.max_skv * d, k_ss=d,
                        l_bm=self.hq, l_sh=self.max_sq)
        return dict(q_sh=d, q_ss=self.hq * d, k_sh=d, k_ss=self.hkv * d,
                    l_bm=1, l_sh=self.total_q)


# Tile shapes. CUDA: Q in threadgroup memory (both wgmma operands there;
# 128-key blocks of 64 rows were the fastest for D 64 and 128 on an H100,
# docs/benchmarks.md); elsewhere Q in registers and blocks that keep
# Metal's 32 KiB.
_CUDA_FORWARD = {64: ForwardConfig(128, 64, True),
                 128: ForwardConfig(128, 64, True),
                 256: ForwardConfig(64, 64, True)}
_HOST_FORWARD = {64: ForwardConfig(64, 64, False),
                 128: ForwardConfig(64, 64, False),
                 256: ForwardConfig(32, 64, False)}
# The pipelined kernel on sm_90 (contiguous keys): consumer warpgroups of
# 64 rows and blocks of 128 keys, as many stages as leave room. On an H100
# (2026-12-06) two consumer warpgroups ran 1.13-1.20x the classic kernel
# at D 128 but 0.83x at D 64, where the softmax, not the copies, bounds a
# block. The overlapped schedule (ForwardConfig.overlap: block j's
# S = Q K^T and block j-1's O += P V in flight together) ran 1.01-1.10x
# the serial one at D 128 over three runs (H100, 2026-12-07; 2124 against
# 2333 us, B H 128, S 4096, in the first): the default there; its causal
# consumers spill 80 bytes (ptxas, sm_90a), still the faster. At D 64
# three consumer warpgroups (192 rows, more warps to cover the softmax)
# ran 1.08x the classic kernel without a mask and level with it causal
# (1415 against 1534 us, 843 against 845); the overlap there ran
# 0.87-0.91x the classic kernel (and spilled with three warpgroups).
HOPPER_OVERLAP = {64: ForwardConfig(128, 128, True, pipelined=True,
                                    stages=3, overlap=True),
                  128: ForwardConfig(128, 128, True, pipelined=True,
                                     stages=2, overlap=True)}
_HOPPER_FORWARD = {64: ForwardConfig(128, 192, True, pipelined=True,
                                     stages=2),
                   128: HOPPER_OVERLAP[128]}
# Causal D 128 keeps the serial schedule: once the scale went into the
# exponent (one fma a score), it ran 1.01x the overlapped one with 16
# heads and 1.06-1.09x with Llama-3-8B's grouped heads (S 4096, 8192;
# H100, 2026-12-07), where the overlapped consumers also spill.
_HOPPER_CAUSAL = {128: replace(HOPPER_OVERLAP[128], overlap=False)}


def _hopper_forward(d: int, causal: bool) -> ForwardConfig:
    """The sm_90 default for contiguous keys (before the D 64 wide-tile
    threshold on short sequences)."""
    return _HOPPER_CAUSAL.get(d, _HOPPER_FORWARD[d]) if causal \
        else _HOPPER_FORWARD[d]


def hopper(runtime) -> bool:
    """Whether ``runtime`` is a CUDA runtime (or PyTorch's CUDA device) on
    an sm_90 GPU or newer, where the pipelined forward runs (rings need
    one)."""
    if runtime_name(runtime) != "cuda":
        return False
    arch = getattr(runtime, "architecture", 0)
    if arch:
        return arch >= 90
    try:
        import torch
        return torch_cuda_device(
            torch, getattr(runtime, "device", None) or 0)[0] >= 90
    except Exception:   # noqa: BLE001 - no torch or no device: classic
        return False


# The shortest query sequences for which D 64's 192-row tiles beat the
# classic kernel's 64-row ones (H100, 2026-12-07, 32 x 16 heads): without
# a mask 0.73-0.94x the classic kernel up to 1024 rows (1.02x at 768),
# 1.09x at 2048, 1.08x at 4096; causal 0.59-0.88x up to 1024 rows, 0.94x
# at 2048, 1.03x at 4096. Shorter sequences leave most of a wide tile's
# rows as padding and fewer tiles to spread over the multiprocessors.
WIDE_TILE_MIN_ROWS = {False: 2048, True: 4096}


def forward_config(runtime, d: int, paged: bool = False,
                   max_sq: int | None = None,
                   causal: bool = False) -> ForwardConfig:
    """The forward tile shape for ``runtime`` and head dimension ``d``:
    the pipelined kernel on sm_90 GPUs for contiguous keys (D 64 and
    128), the classic one elsewhere (``paged``: keys in a paged cache).
    ``max_sq``: the longest query sequence, when known; at D 64 the
    pipelined kernel's 192-row tiles are chosen only from
    ``WIDE_TILE_MIN_ROWS[causal]`` rows on (2048, causal 4096). At D 128
    the overlapped schedule without a mask, the serial one with
    ``causal``."""
    c = Checker("forward_config")
    c.head_dim(d, None)
    paged, causal = c.flag("paged", paged), c.flag("causal", causal)
    if max_sq is not None and (isinstance(max_sq, (bool, np.bool_)) or
                               not isinstance(max_sq, numbers.Integral) or
                               max_sq < 0):
        c.fail(f"max_sq must be None or an int of at least 0, got "
               f"{max_sq!r}")
    if runtime_name(runtime) != "cuda":
        return _HOST_FORWARD[d]
    if not paged and d in _HOPPER_FORWARD and hopper(runtime):
        config = _hopper_forward(d, causal)
        if config.rows < 192 or max_sq is None or \
                max_sq >= WIDE_TILE_MIN_ROWS[causal]:
            return config
    return _CUDA_FORWARD[d]


def forward_configs(d: int, kernel: str = "both"):
    """Every forward tile shape worth timing on CUDA for head dimension
    ``d`` (the benchmark's sweep): ``kernel`` "classic", "ws" (the
    pipelined kernel, sm_90 only; none for D 256) or "both"."""
    if kernel not in ("classic", "ws", "both"):
        raise ValueError(f"forward_configs: kernel must be 'classic', 'ws' "
                         f"or 'both', got {kernel!r}")
    Checker("forward_configs").head_dim(d, None)
    classic, ws = [], []
    if d == 256:   # Q in registers would spill
        classic = [ForwardConfig(32, 64, True), ForwardConfig(64, 64, True)]
    else:
        shapes = [(64, 64), (128, 64), (64, 128), (128, 128)]
        classic = [ForwardConfig(bc, rows, True) for bc, rows in shapes] + \
            [ForwardConfig(bc, rows, False) for bc, rows in shapes[:2]]
        ws = [ForwardConfig(bc, 128, True, pipelined=True, stages=stages)
              for bc, stages in ((128, 2), (64, 3), (128, 3), (64, 4))
              if ForwardConfig(bc, 128, True, True, stages).smem_bytes(d)
              <= threadgroup_memory_limit(None)]
        for c in (_hopper_forward(d, False), HOPPER_OVERLAP[d],
                  _hopper_forward(d, True)):
            if c not in ws:
                ws.append(c)
    return {"classic": classic, "ws": ws, "both": classic + ws}[kernel]


def check_forward_config(checker, p: Problem, config: ForwardConfig):
    """What the pipelined kernel covers: contiguous keys, D 64 or 128,
    whole warpgroups of 64 rows, blocks of 16 to 256 keys."""
    for name in ("turns", "overlap"):
        if not isinstance(getattr(config, name), bool):
            checker.fail(f"the forward ({config}): {name} must be a bool, "
                         f"got {getattr(config, name)!r}")
    if not config.pipelined:
        # Whole warpgroups of 64 rows (two threads a row), blocks of keys
        # in steps of the 16-key products.
        what = f"the forward ({config})"
        for name in ("turns", "overlap"):
            if getattr(config, name):
                checker.fail(f"{what}: {name} is the pipelined kernel's "
                             "(pipelined=True)")
        checker.multiple(what, "rows", config.rows, 64, 64)
        checker.multiple(what, "bc", config.bc, 16, 16)
        return
    what = f"the pipelined forward ({config})"
    for name in ("rows", "bc", "stages"):
        value = getattr(config, name)
        if isinstance(value, bool) or not isinstance(value, int):
            checker.fail(f"{what}: {name} must be an int, got {value!r}")
    if p.page_size:
        checker.fail(f"{what} takes contiguous keys; a paged cache runs "
                     "the classic forward (pipelined=False)")
    if p.d not in (64, 128):
        checker.fail(f"{what} takes head dimensions 64 and 128, got {p.d}")
    if config.rows % 64 or not 64 <= config.rows <= 192:
        checker.fail(f"{what}: rows must be 64, 128 or 192 (one consumer "
                     f"warpgroup per 64 rows), got {config.rows}")
    if config.bc % 16 or not 16 <= config.bc <= 256:
        checker.fail(f"{what}: bc must be a multiple of 16 from 16 to 256, "
                     f"got {config.bc}")
    if not 2 <= config.stages <= 8:
        checker.fail(f"{what}: stages must be 2 to 8, got {config.stages}")
    if config.overlap and config.turns:
        checker.fail(f"{what}: overlap and turns are two schedules of the "
                     "products; choose one")


def check_backward_config(checker, config: BackwardConfig, atomic: bool):
    """The shapes the backward kernels compute correctly: simdgroups of
    16 keys or queries, blocks of 16 rows, one or two stages; the atomic
    dQ takes each query block whole (``bq`` a multiple of the keys'
    16 * simdgroups rows)."""
    what = f"the backward ({config})"
    checker.multiple(what, "simdgroups", config.simdgroups, 1, 1)
    checker.multiple(what, "dq_simdgroups", config.dq_simdgroups, 1, 1)
    checker.multiple(what, "bq", config.bq, 16, 16)
    checker.multiple(what, "bk", config.bk, 16, 16)
    checker.multiple(what, "stages", config.stages, 1, 1, 2)
    if atomic and config.bq % (16 * config.simdgroups):
        checker.fail(f"{what}: deterministic=False needs bq a multiple of "
                     f"16 * simdgroups = {16 * config.simdgroups}, got "
                     f"{config.bq}")


def forward_steps(p: Problem, config: ForwardConfig, *, q="q", k="k",
                  v="v", cu_q="cu_q", cu_k="cu_k", table="table",
                  lengths="lengths", o="o", lse="lse"):
    """The forward launch: one threadgroup per ``config.rows`` query rows
    of each (sequence, query head)."""
    args = dict(Q=q, K=k, V=v, CU_Q=cu_q, CU_K=cu_k, TABLE=table,
                LENGTHS=lengths, n_heads=p.hq, group=p.group,
                total_q=p.total_q, total_k=p.total_k, pages=p.pages,
                table_stride=p.table_stride, scale2=p.scale * LOG2E,
                O=o, LSE=lse, **p.strides())
    if config.pipelined:
        kernel = forward_ws_kernel(p.dtype, p.d, p.causal, config)
        # K and V as one matrix of k_ss columns (the tensor map's extent).
        args["kv_rows"] = p.total_k * p.hkv * p.d // args["k_ss"]
    else:
        kernel = forward_kernel(p.dtype, p.d, p.causal, p.page_size, config)
    threads = config.threads
    grid = (threads, max(1, math.ceil(p.max_sq / config.rows)),
            p.batch * p.hq)
    return [Step(kernel, grid, (threads, 1, 1), args, outputs=("O", "LSE"))]


def check_forward_memory(checker, runtime, p: Problem, config):
    stages = f", {config.stages} stages" if config.pipelined else ""
    checker.threadgroup_memory(config.smem_bytes(p.d),
                               threadgroup_memory_limit(runtime),
                               runtime_name(runtime),
                               f"the forward kernel with head dimension "
                               f"{p.d} ({config.bc} keys per block, "
                               f"{config.rows} query rows{stages})")


# Decode: four simdgroups of 16 keys each per step; three blocks in
# flight on CUDA (copies are immediate elsewhere).
# Metal's 32 KiB take fewer keys per step (none fit D = 256).
_CUDA_DECODE = DecodeConfig(4, 16, 3)
_CPU_DECODE = DecodeConfig(4, 16, 2)
_METAL_DECODE = {64: DecodeConfig(2, 16, 2), 128: DecodeConfig(1, 16, 2),
                 256: DecodeConfig(1, 16, 2)}
DECODE_MAX_QUERIES = 16


def decode_config(runtime, d: int) -> DecodeConfig:
    """The decode tile shape for ``runtime`` and head dimension ``d``."""
    Checker("decode_config").head_dim(d, None)
    name = runtime_name(runtime)
    if name == "cuda":
        return _CUDA_DECODE
    return _CPU_DECODE if name == "cpu" else _METAL_DECODE[d]


def forward_plan(checker, runtime, p: Problem, *, config=None,
                 num_splits=None, cores=None):
    """(launches, temporaries) of a forward call: the split-key decode
    kernel when asked for (``num_splits >= 1``) or, left to the library
    (None), when every sequence has at most 16 queries and its tiles fit
    the runtime; the prefill kernel otherwise (``num_splits == 0``)."""
    checker.runtime(runtime)
    checker.config(config, ForwardConfig)
    num_splits = plain_index(num_splits)
    if isinstance(num_splits, bool) or not (
            num_splits is None or isinstance(num_splits, int)) or \
            (num_splits is not None and num_splits < 0):
        checker.fail(f"num_splits must be None or an int >= 0, got "
                     f"{num_splits!r}")
    decode = decode_config(runtime, p.d)
    fits = decode.smem_bytes(p.d) <= threadgroup_memory_limit(runtime)
    if num_splits is None and p.max_sq <= DECODE_MAX_QUERIES and fits \
            and config is None:
        splits = choose_splits(p, decode, cores or 1)
        return decode_steps(p, decode, splits)
    if num_splits:
        if p.max_sq > DECODE_MAX_QUERIES:
            checker.fail(f"num_splits={num_splits} asks for the decode "
                         f"kernel, which takes at most {DECODE_MAX_QUERIES} "
                         f"queries per sequence; the longest has {p.max_sq}")
        check_decode_memory(checker, runtime, p, decode)
        return decode_steps(p, decode, num_splits)
    config = config or forward_config(runtime, p.d, bool(p.page_size),
                                      p.max_sq, p.causal)
    check_forward_config(checker, p, config)
    check_forward_memory(checker, runtime, p, config)
    return forward_steps(p, config), {}


def decode_tiles(p: Problem) -> int:
    """Threadgroups of 16 packed rows per (sequence, key/value head)."""
    return max(1, math.ceil(p.group * p.max_sq / 16))


def choose_splits(p: Problem, config: DecodeConfig, cores: int) -> int:
    """Splits of the keys: enough threadgroups for two per core (SM),
    each split at least four steps of keys long."""
    units = max(1, p.batch * p.hkv * decode_tiles(p))
    want = math.ceil(2 * cores / units)
    longest = max(1, math.ceil(p.max_skv / (4 * config.keys_per_step)))
    return max(1, min(want, longest, 256))


def decode_steps(p: Problem, config: DecodeConfig, splits: int, *, q="q",
                 k="k", v="v", cu_q="cu_q", cu_k="cu_k", table="table",
                 lengths="lengths", o="o", lse="lse"):
    """(launches, temporaries) of split-key decoding: the temporaries are
    ``{name: element count}`` float32 arrays the caller allocates (the
    splits' partial rows) when there is more than one split."""
    step = config.keys_per_step
    chunk = max(step, math.ceil(math.ceil(max(p.max_skv, 1) / splits) / step)
                * step)
    splits = max(1, math.ceil(p.max_skv / chunk))
    final = splits == 1
    tiles = decode_tiles(p)
    rows_total = p.hq * p.total_q
    strides = p.strides()
    kernel = decode_kernel(p.dtype, p.d, p.causal, p.page_size, config,
                           final)
    args = dict(Q=q, K=k, V=v, CU_Q=cu_q, CU_K=cu_k, TABLE=table,
                LENGTHS=lengths, n_heads=p.hq, group=p.group,
                total_q=p.total_q, total_k=p.total_k, pages=p.pages,
                table_stride=p.table_stride, tiles=tiles, chunk=chunk,
                rows_total=rows_total, scale2=p.scale * LOG2E,
                O=o if final else "o_part", LSE=lse if final else "lse_part",
                **strides)
    grid = (config.threads, splits, p.batch * p.hkv * tiles)
    steps = [Step(kernel, grid, (config.threads, 1, 1), args,
                  outputs=("O", "LSE"))]
    if final:
        return steps, {}
    merge = merge_kernel(p.dtype, p.d)
    steps.append(Step(merge, (MERGE_THREADS * rows_total, 1, 1),
                      (MERGE_THREADS, 1, 1),
                      dict(OP="o_part", LP="lse_part", splits=splits,
                           rows_total=rows_total, q_sh=strides["q_sh"],
                           q_ss=strides["q_ss"], l_sh=strides["l_sh"],
                           O=o, LSE=lse), outputs=("O", "LSE")))
    return steps, {"o_part": splits * rows_total * p.d,
                   "lse_part": splits * rows_total}


def check_decode_memory(checker, runtime, p: Problem, config):
    checker.threadgroup_memory(config.smem_bytes(p.d),
                               threadgroup_memory_limit(runtime),
                               runtime_name(runtime),
                               f"the decode kernel with head dimension "
                               f"{p.d} ({config.stages} stages of "
                               f"{config.keys_per_step} keys)")


# Backward tile shapes (BackwardConfig: dK/dV simdgroups, queries per
# block, stages; dQ simdgroups, keys per block). Metal keeps 32 KiB.
_CUDA_BACKWARD = {64: BackwardConfig(4, 64, 2, 4, 64),
                  128: BackwardConfig(4, 64, 2, 4, 64),
                  256: BackwardConfig(2, 32, 2, 4, 64)}
_METAL_BACKWARD = {64: BackwardConfig(1, 16, 2, 1, 16),
                   128: BackwardConfig(1, 16, 1, 1, 16),
                   256: BackwardConfig(1, 16, 1, 1, 16)}


def backward_config(runtime, d: int) -> BackwardConfig:
    """The backward tile shapes for ``runtime`` and head dimension ``d``
    (the CPU runs CUDA's)."""
    Checker("backward_config").head_dim(d, None)
    if runtime_name(runtime) in ("metal", "metal-host"):
        return _METAL_BACKWARD[d]
    return _CUDA_BACKWARD[d]


def backward_plan(checker, runtime, p: Problem, *, deterministic: bool,
                  config=None, do="do", q="q", k="k", v="v", o="o",
                  lse="lse", cu_q="cu_q", cu_k="cu_k", dq="dq", dk="dk",
                  dv="dv"):
    """(launches, temporaries) of the backward: Delta, then dK and dV
    (with dQ accumulated by atomics unless ``deterministic``), then dQ
    (its own kernel when ``deterministic``, else the accumulator
    converted). Temporaries: ``{name: float32 element count}``."""
    checker.runtime(runtime)
    checker.config(config, BackwardConfig)
    config = config or backward_config(runtime, p.d)
    atomic = not checker.flag("deterministic", deterministic)
    check_backward_config(checker, config, atomic)
    limit = threadgroup_memory_limit(runtime)
    what = (f"the backward with head dimension {p.d}"
            f"{'' if atomic else ' (deterministic)'}")
    checker.threadgroup_memory(config.dkdv_smem_bytes(p.d, atomic), limit,
                               runtime_name(runtime), what + ", dK and dV")
    if deterministic:
        checker.threadgroup_memory(config.dq_smem_bytes(p.d), limit,
                                   runtime_name(runtime), what + ", dQ")
    strides = p.strides()
    common = dict(Q=q, K=k, V=v, DO=do, LSE=lse, DELTA="delta", CU_Q=cu_q,
                  CU_K=cu_k, n_heads=p.hq, group=p.group,
                  total_q=p.total_q, total_k=p.total_k, scale=p.scale,
                  scale2=p.scale * LOG2E, **strides)
    prep = Step(prep_kernel(p.dtype, p.d),
                (128, max(1, math.ceil(p.max_sq / 4)), p.batch * p.hq),
                (128, 1, 1),
                dict(DO=do, O=o, CU_Q=cu_q, n_heads=p.hq,
                     q_sh=strides["q_sh"], q_ss=strides["q_ss"],
                     l_bm=strides["l_bm"], l_sh=strides["l_sh"],
                     total_q=p.total_q, DELTA="delta"), outputs=("DELTA",))
    keys = 16 * config.simdgroups
    dkdv = Step(dkdv_kernel(p.dtype, p.d, p.causal, config, atomic),
                (32 * config.simdgroups, max(1, math.ceil(p.max_skv / keys)),
                 p.batch * p.hkv), (32 * config.simdgroups, 1, 1),
                dict(common, DK=dk, DV=dv, DQ="dq_acc"),
                outputs=("DK", "DV", "DQ"))
    temps = {"delta": p.hq * p.total_q,
             "dq_acc": p.total_q * p.hq * p.d if atomic else 1}
    if deterministic:
        rows = 16 * config.dq_simdgroups
        last = Step(dq_kernel(p.dtype, p.d, p.causal, config),
                    (32 * config.dq_simdgroups,
                     max(1, math.ceil(p.max_sq / rows)), p.batch * p.hq),
                    (32 * config.dq_simdgroups, 1, 1), dict(common, DQ=dq),
                    outputs=("DQ",))
    else:
        n = p.total_q * p.hq * p.d
        last = Step(dq_convert_kernel(p.dtype),
                    (256 * max(1, math.ceil(n / 256)), 1, 1), (256, 1, 1),
                    dict(ACC="dq_acc", n=n, scale=p.scale, DQ=dq),
                    outputs=("DQ",))
    steps = [prep]
    if p.total_k:
        steps.append(dkdv)
    return steps + [last], temps
