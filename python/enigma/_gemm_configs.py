"""Tile configurations of the GEMM (docs/reference/mma.md,
docs/design/gemm-heuristic.md): :class:`MmaConfig`, the lists per target
(:func:`gemm_configs`), the built-in choice from a shape with its cost
model (:func:`gemm_config_for`), the checks of a configuration against a
dtype, and which configurations run as warpgroup products. What a
configuration computes is :mod:`._gemm`'s (``gemm_block``)."""

from __future__ import annotations

import operator

from . import _core
from ._dtypes import as_dtype, plain_index
from ._ir import fail


def _size(x, what) -> int:
    """A side of a product: an int (numpy's too) of at least 0. ``what``:
    the side's name, or a function giving it (built only for the
    message)."""
    if type(x) is int and x >= 0:   # the common case, without a message
        return x
    try:
        value = operator.index(x)
    except TypeError:
        value = None
    if value is None or isinstance(x, bool) or value < 0:
        what = what() if callable(what) else what
        fail(f"{what} must be an int of at least 0, got {x!r}")
    return value


class MmaConfig:
    """Tile shapes of :func:`gemm_block`: a ``bm x bn`` block of C per
    threadgroup, K in steps of ``bk``, ``wm x wn`` simdgroups (each a
    ``bm/wm x bn/wn`` fragment), ``stages`` buffers of A and B tiles in
    flight, and ``group_m`` block rows per group of the launch order (as
    Triton's grouped ordering, for L2 reuse).

    ``warp_specialized=True`` runs the K loop as an
    :func:`enigma.pipeline_loop` (a producer warpgroup copying tiles with
    the Tensor Memory Accelerator on Hopper, the simdgroups consuming
    them); then ``persistent=True`` makes each threadgroup walk output
    blocks in grouped order (launch ``processors`` threadgroups, one per
    multiprocessor) and ``cluster`` (1, 2, 4) threadgroups share a tile
    (TMA multicast): with ``cluster_shares="a"`` (the default) those of
    consecutive block columns of one block row share their A tiles, with
    ``"b"`` those of consecutive block rows of one block column their B
    tiles (as cuBLAS pairs 64-row blocks at small M).

    ``split_k > 1`` (warp-specialised, not persistent, no cluster) splits
    K into ``split_k`` equal ranges of whole ``bk`` tiles, one per
    threadgroup row of the launch (grid y): :func:`gemm_block` then
    writes float partial products, which :func:`gemm_split_k_reduce` sums
    in a fixed order (deterministic, no atomics).

    ``stream_k = G > 0`` (warp-specialised and persistent, no cluster or
    split) launches ``G`` threadgroups that divide the K steps of the
    blocks not making whole waves evenly among themselves, blocks split
    between threadgroups summed through a float workspace in a fixed
    order (docs/design/stream-k.md): :func:`gemm_block` then takes
    ``workspace=`` and ``flags=`` (:func:`stream_k_workspace`).

    ``consumer_groups = 2`` (warp-specialised, not stream-K, ``wm * wn`` a
    multiple of 4) runs two groups of the ``wm x wn`` simdgroups, each
    multiplying every other K step of the block into its own accumulator;
    the two are added in threadgroup memory (``bm x bn`` floats) before
    the epilogue. Twice the threads, the same block and result; on an
    H100 (2026-12-07) not faster for the built-in blocks, which no
    built-in choice therefore uses (docs/design/consumer-groups.md)."""

    __slots__ = ("bm", "bn", "bk", "wm", "wn", "stages", "group_m",
                 "warp_specialized", "persistent", "cluster", "split_k",
                 "stream_k", "cluster_shares", "consumer_groups")

    def __init__(self, bm=128, bn=128, bk=32, wm=2, wn=2, stages=2,
                 group_m=8, *, warp_specialized=False, persistent=False,
                 cluster=1, split_k=1, stream_k=0, cluster_shares="a",
                 consumer_groups=1):
        # numpy integers as the ints they hold (the repr and cache keys of
        # the int spelling); check_fields refuses bools and floats.
        (self.bm, self.bn, self.bk, self.wm, self.wn, self.stages,
         self.group_m, cluster, split_k, stream_k, consumer_groups) = \
            plain_index((bm, bn, bk, wm, wn, stages, group_m, cluster,
                         split_k, stream_k, consumer_groups))
        self.warp_specialized = warp_specialized
        self.persistent = persistent
        self.cluster = cluster
        self.split_k = split_k
        self.stream_k = stream_k
        self.cluster_shares = cluster_shares
        self.consumer_groups = consumer_groups

    @property
    def threads(self) -> int:
        """The threadgroup (the consumers of a warp-specialised
        configuration, every group of them; CUDA adds its producer
        warpgroup itself)."""
        return 32 * self.wm * self.wn * self.consumer_groups

    @property
    def producer_registers(self) -> int:
        """Registers per thread of the producer warpgroup (CUDA): 56 (its
        copies, TMA and fallback, spilled at 40 and 48 in clusters), 24
        beside 512 consumers; beside 128 consumers, whose 256 registers
        it leaves untouched, 72, and 80 in clusters (a 16-stage ring of
        16 x 64 decode blocks with the TMA form printed beside the
        fallback spilled at 56, a 12-stage ring sharing B at 56; ptxas
        13.2 spilled the TF32 128 x 128 consumers beside a producer at 80,
        its register allocation being one for the whole kernel)."""
        if self.threads <= 128:
            return 80 if self.cluster > 1 else 72
        return 56 if self.threads <= 256 else 24

    @property
    def consumer_registers(self) -> int:
        """Registers per thread of the consumers (CUDA): what the block
        holds from launch on (``threads + 128`` threads, each with the
        registers ``__launch_bounds__`` leaves it) less the producer's, at
        most 256; 224 beside 256 consumers, 112 beside 512 (fp32 products
        on 128 x 128 spilled at 240). ``setmaxnreg`` cannot give more:
        the consumers would wait for registers forever."""
        return _core.fitting_consumer_registers(self.threads, 128,
                                                self.producer_registers)

    def smem_bytes(self, dtype) -> int:
        """Threadgroup memory: the stages of A and B tiles, and with
        consumer groups the float block their partial products meet in."""
        tiles = self.stages * (self.bm + self.bn) * self.bk * \
            as_dtype(dtype).itemsize
        return tiles + (4 * self.bm * self.bn if self.consumer_groups > 1
                        else 0)

    def _field_problem(self, name: str):
        """What is wrong with field ``name`` (the end of a message), or
        None; the message is built only when something is."""
        v = getattr(self, name)
        if name in ("warp_specialized", "persistent"):
            return None if isinstance(v, bool) else "must be a bool"
        if name == "cluster_shares":
            return None if v in ("a", "b") else \
                f"must be 'a' or 'b', got {v!r}"
        if isinstance(v, bool) or not isinstance(v, int):
            return f"must be a Python int, got {type(v).__name__}"
        least = 0 if name == "stream_k" else 1
        return None if v >= least else f"must be at least {least}, got {v}"

    def check_fields(self, what="MmaConfig"):
        """Each field of the right kind and at least its smallest value
        (an EnigmaError naming it); the combinations are gemm_block's.
        ``what``: the message's subject, or a function giving it (the
        launch path checks on every call and formats only on failure)."""
        for name in MmaConfig.__slots__:
            problem = self._field_problem(name)
            if problem:
                subject = what() if callable(what) else what
                fail(f"{subject}: config.{name} {problem}")

    def tiles(self, m: int, n: int) -> int:
        """Output blocks of an m x n C, padded to whole clusters."""
        self.check_fields(lambda: f"{self}.tiles")
        m = _size(m, lambda: f"{self}: m")
        n = _size(n, lambda: f"{self}: n")
        return self._padded_tiles(m, n)

    def _padded_tiles(self, m, n):
        """:meth:`tiles` of sides that may be traced values (the persistent
        schedule's count in the kernel): the blocks along the shared side
        rounded up to whole clusters."""
        rows, cols = (m + (self.bm - 1)) // self.bm, \
            (n + (self.bn - 1)) // self.bn
        c = self.cluster
        if self.cluster_shares == "b":
            return ((rows + (c - 1)) // c) * c * cols
        return rows * (((cols + (c - 1)) // c) * c)

    def blocks(self, m: int, n: int, processors: int | None = None) -> int:
        """Threadgroups of a launch over an m x n C: one per output block,
        or with ``persistent`` at most ``processors`` (whole clusters);
        with ``stream_k`` its ``stream_k`` threadgroups, which must not be
        more than ``processors`` when given (they wait for each other, so
        all must run at once)."""
        self.check_fields(lambda: f"{self}.blocks")
        if self.stream_k:
            if processors and self.stream_k > processors:
                fail(f"{self}: a stream-K launch of {self.stream_k} "
                     f"threadgroups needs them all resident at once, and "
                     f"the GPU runs at most {processors} (one per "
                     "multiprocessor); use stream_k <= "
                     f"{processors}")
            return self.stream_k
        tiles = self.tiles(m, n)
        if not self.persistent or not processors:
            return tiles
        most = max(self.cluster, processors - processors % self.cluster)
        return min(tiles, most)

    def launch(self, m: int, n: int, processors: int | None = None):
        """(grid, threads) of a launch over an m x n C; a persistent
        configuration takes the GPU's multiprocessors (``rt.multiprocessors``
        of a CudaRuntime; without them one threadgroup per block)."""
        return ((self.blocks(m, n, processors) * self.threads, self.split_k,
                 1), (self.threads, 1, 1))

    def k_tiles_per_split(self, k: int) -> int:
        """The ``bk`` tiles of K each of the ``split_k`` ranges covers (the
        last may cover fewer, or none)."""
        tiles = -(-k // self.bk)
        return -(-tiles // self.split_k)

    def as_dict(self) -> dict:
        return {s: getattr(self, s) for s in self.__slots__}

    def __eq__(self, other):
        return isinstance(other, MmaConfig) and \
            self.as_dict() == other.as_dict()

    def __hash__(self):
        return hash(tuple(self.as_dict().values()))

    def __repr__(self) -> str:
        defaults = {"warp_specialized": False, "persistent": False,
                    "cluster": 1, "split_k": 1, "stream_k": 0,
                    "cluster_shares": "a", "consumer_groups": 1}
        return ("MmaConfig(" + ", ".join(
            f"{k}={v!r}" for k, v in self.as_dict().items()
            if defaults.get(k, object()) != v) + ")")


# Threadgroup memory per target: Metal's 32 KiB; an sm_90 block's 227 KiB,
# which the CPU runtime also allows (the most any target allows, so the
# limit of a configuration's check; runtimes check their own at load).
_TG_LIMITS = {"metal": 32 * 1024, "cpu": 227 * 1024, "cuda": 227 * 1024}
_TG_LIMIT = max(_TG_LIMITS.values())


def gemm_dtype(dtype, what):
    """The DType of ``dtype`` (a DType or a name), which gemm_block
    multiplies (half, bfloat, float), or an EnigmaError naming ``what``."""
    t = as_dtype(dtype, strict=False)
    if t is None:
        fail(f"{what} must be half, bfloat or float (f16, bf16, f32), got "
             f"{dtype!r}")
    if t.name not in ("f16", "bf16", "f32"):
        fail(f"{what} must be half, bfloat or float, got {t.name}")
    return t


def gemm_configs(target: str = "cuda", dtype="bf16",
                 allow_tf32: bool = False,
                 warp_specialized: bool = False) -> list:
    """Configurations worth timing for ``target`` ("cuda", "metal", "cpu")
    and operand dtype, the usual winners first; each fits the target's
    threadgroup memory (32 KiB on Metal, 227 KiB on CUDA and the CPU). The
    16-bit CUDA list starts with warpgroup shapes (:func:`warpgroup_shape`:
    wgmma on Hopper). ``allow_tf32`` picks, for float operands on CUDA, the
    tiles of TF32 tensor-core products instead of those of FMA (other
    targets have one list; :func:`enigma.tf32_gemm_configs` lists TF32
    warpgroup tiles for a B stored n x k). ``warp_specialized=True`` lists the
    configurations of the pipelined mainloop instead (a producer
    warpgroup on Hopper; persistent and clustered variants)."""
    dtype = gemm_dtype(dtype, "gemm_configs: dtype")
    if target not in _TG_LIMITS:
        fail(f"gemm_configs: target must be one of {sorted(_TG_LIMITS)}, "
             f"got {target!r}")
    if not isinstance(allow_tf32, bool):
        fail(f"gemm_configs: allow_tf32 must be a bool, got {allow_tf32!r}")
    if not isinstance(warp_specialized, bool):
        fail("gemm_configs: warp_specialized must be a bool, got "
             f"{warp_specialized!r}")
    if warp_specialized:
        return [c for c in _pipelined_configs(target, dtype, allow_tf32)
                if c.smem_bytes(dtype) <= _TG_LIMITS[target]]
    if target == "cpu":
        return [MmaConfig(64, 64, 32, 2, 2, 2), MmaConfig(32, 32, 32, 1, 1, 2)]
    if target == "metal":
        return [MmaConfig(64, 64, 32, 2, 2, 2), MmaConfig(32, 64, 32, 1, 2, 2)]
    if dtype.itemsize == 2:
        # Hopper: 128 x 256 and 256 x 128 tiles of 4 stages were the
        # fastest on an H200 (docs/benchmarks.md); the smaller shapes fit
        # two threadgroups per multiprocessor.
        cands = [MmaConfig(128, 256, 64, 8, 1, 4),
                 MmaConfig(256, 128, 64, 16, 1, 4),
                 MmaConfig(128, 256, 64, 8, 1, 3),
                 MmaConfig(256, 128, 64, 16, 1, 3),
                 MmaConfig(128, 128, 64, 8, 1, 3),
                 MmaConfig(128, 128, 64, 8, 1, 4),
                 MmaConfig(64, 256, 64, 4, 1, 2),
                 MmaConfig(128, 128, 32, 2, 2, 4),
                 MmaConfig(128, 128, 32, 2, 2, 2),
                 MmaConfig(64, 128, 32, 2, 2, 2)]
    elif allow_tf32:
        # TF32 tensor cores (mma.sync m16n8k8): deeper pipelines and
        # wider tiles than FMA wants; fastest first on an H100 at 4096^3
        # (docs/benchmarks.md).
        cands = [MmaConfig(128, 128, 16, 2, 2, 4),
                 MmaConfig(128, 128, 32, 2, 2, 3),
                 MmaConfig(128, 256, 32, 2, 4, 3),
                 MmaConfig(256, 128, 32, 4, 2, 3),
                 MmaConfig(128, 256, 16, 2, 4, 4),
                 MmaConfig(128, 128, 32, 2, 2, 4),
                 MmaConfig(128, 64, 32, 2, 2, 3),
                 MmaConfig(128, 128, 32, 4, 2, 3),
                 MmaConfig(128, 64, 32, 2, 2, 2),
                 MmaConfig(64, 128, 32, 2, 2, 3)]
    else:
        # FMA in registers: fastest first on an H100 at 4096^3 and
        # 2048^3 (docs/benchmarks.md); smaller tiles for smaller products.
        cands = [MmaConfig(128, 128, 32, 2, 2, 2),
                 MmaConfig(128, 64, 32, 2, 2, 3),
                 MmaConfig(128, 64, 32, 2, 2, 2),
                 MmaConfig(128, 128, 16, 2, 2, 3),
                 MmaConfig(128, 128, 32, 2, 4, 2),
                 MmaConfig(256, 128, 16, 4, 2, 2),
                 MmaConfig(128, 64, 16, 2, 2, 2),
                 MmaConfig(128, 128, 16, 2, 4, 2),
                 MmaConfig(64, 64, 32, 2, 2, 2),
                 MmaConfig(64, 128, 16, 2, 2, 3)]
    return [c for c in cands if c.smem_bytes(dtype) <= _TG_LIMITS[target]]


def _pipelined_configs(target, dtype, allow_tf32):
    """The warp-specialised configurations of :func:`gemm_configs`."""
    def ws(*shape, **options):
        return MmaConfig(*shape, warp_specialized=True, **options)
    if target in ("cpu", "metal"):
        # The same mainloop as a software pipeline; a warpgroup shape for
        # 16-bit operands (64 x 64 x 64, 4 simdgroups) and a persistent one.
        if dtype.itemsize == 2:
            return [ws(64, 64, 64, 4, 1, 2), ws(64, 64, 32, 2, 2, 2,
                                                persistent=True)]
        return [ws(64, 64, 32, 2, 2, 2), ws(64, 64, 16, 4, 1, 2,
                                            persistent=True)]
    if dtype.itemsize == 2:
        # Two consumer warpgroups on 128 x 256 (each 64 x 256, 128
        # accumulators a thread), then smaller blocks for small products.
        return [ws(128, 256, 64, 8, 1, 4),
                ws(128, 256, 64, 8, 1, 4, persistent=True),
                ws(128, 256, 64, 8, 1, 4, persistent=True, cluster=2),
                ws(256, 128, 64, 16, 1, 4, persistent=True),
                ws(128, 128, 64, 8, 1, 6, persistent=True),
                ws(64, 256, 64, 4, 1, 5, persistent=True),
                ws(64, 128, 64, 4, 1, 8)]
    if allow_tf32:
        return [ws(128, 128, 32, 2, 2, 4), ws(128, 128, 32, 2, 2, 4,
                                              persistent=True),
                ws(128, 256, 32, 2, 4, 3, persistent=True)]
    return [ws(128, 128, 32, 2, 2, 4), ws(128, 64, 32, 2, 2, 4,
                                          persistent=True)]


def default_gemm_config(target: str = "cuda", dtype="bf16",
                        allow_tf32: bool = False,
                        warp_specialized: bool = False) -> MmaConfig:
    """The first of :func:`gemm_configs`."""
    return gemm_configs(target, dtype, allow_tf32, warp_specialized)[0]


# The built-in choice (docs/design/gemm-heuristic.md): H100's 132
# multiprocessors when the caller does not say.
_DEFAULT_PROCESSORS = 132
# Each split of K keeps at least this many bk tiles (the pipeline's ramp
# and the partial's store are paid once per split).
_MIN_TILES_PER_SPLIT = 4
_MAX_SPLIT_K = 16


def gemm_config_for(m: int, n: int, k: int, dtype="bf16",
                    sm_count: int | None = None, target: str = "cuda",
                    allow_tf32: bool = False) -> MmaConfig:
    """The configuration :func:`gemm_block` runs an ``m x n x k`` product
    with when none is given: a rule on the shape, the dtype and the GPU's
    multiprocessors (``sm_count``, default 132, an H100), no timing run
    (docs/design/gemm-heuristic.md). On CUDA with 16-bit operands:
    128 x 256 persistent tiles when they fill every multiprocessor, else
    64- or 128-row blocks 64 or 128 wide, whole or with K split
    (``split_k``), whichever a cost model of an H100's times finds
    fastest (at ``m <= 16`` a 64-row block that is not persistent runs
    as 16 rows of simdgroup products); stream-K (``stream_k``, :func:`stream_k_workspace`) only
    when asked for, never by this rule. Float operands (TF32 or not)
    and other targets: :func:`default_gemm_config` (the TF32 warpgroup
    configurations, :func:`enigma.tf32_gemm_configs`, are chosen by
    name: the rule does not know how B is stored, and wgmma with B
    stored k x n, copied transposed by the producer, measured slower
    than the default on an H200)."""
    what = "gemm_config_for"
    m, n, k, sm_count = plain_index((m, n, k, sm_count))
    for name, v in (("m", m), ("n", n), ("k", k)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            fail(f"{what}: {name} must be a positive int, got {v!r}")
    if sm_count is None:
        sm_count = _DEFAULT_PROCESSORS
    if not isinstance(sm_count, int) or isinstance(sm_count, bool) or \
            sm_count < 1:
        fail(f"{what}: sm_count must be a positive int, got {sm_count!r}")
    dtype = gemm_dtype(dtype, f"{what}: dtype")
    if target != "cuda" or dtype.itemsize != 2:
        return default_gemm_config(target, dtype, allow_tf32)
    choices = _gemm_choices(m, n, k, sm_count)
    pick = choices[0]
    for choice in choices[1:]:   # a later way must be clearly faster
        if choice[2] < pick[2] * _DISPLACE:
            pick = choice
    return _decode_rows(pick[1]) if m <= 16 else pick[1]


def _decode_rows(config):
    """At M <= 16, a non-persistent 64-row warpgroup block 64 or 128 wide
    as 16 rows of simdgroup products, split the same way: three quarters
    of a 64-row A tile are zeros there, and the smaller stages leave room
    for more of them in flight (on an H100, 2026-12-06: 2-11 % faster on
    the five decode shapes timed, docs/benchmarks.md)."""
    c = config
    if c.bm != 64 or c.bn not in _DECODE_STAGES or c.persistent:
        return c
    return MmaConfig(16, c.bn, 64, 1, 4, _DECODE_STAGES[c.bn],
                     warp_specialized=True, split_k=c.split_k)


# The stages of 16-row decode blocks by width (16 x 64 and 16 x 128 bf16
# blocks: 160 and 216 KiB).
_DECODE_STAGES = {64: 16, 128: 12}


# The cost model of gemm_config_for (docs/design/gemm-heuristic.md), in
# microseconds, its constants fitted to an H100's times (2026-12-07, with
# the producer's TMA form): one K step (bk = 64) of a block on its
# multiprocessor, by (bm, bn), and of a 16-row decode block (_decode_rows)
# by bn; the memory's rate in bytes per microsecond; a second kernel's
# launch and ramp.
_STEP_US = {(64, 64): 0.21, (64, 128): 0.21, (128, 64): 0.32,
            (128, 128): 0.34}
_DECODE_STEP_US = {64: 0.15, 128: 0.17}
_MEMORY_BYTES_PER_US = 2.8e6
# What one multiprocessor streams on its own: blocks on fewer than about
# 35 multiprocessors do not reach the memory's rate (16 x 4096 x 14336 as
# 32 whole blocks of 16 x 128 streamed 8.1e4 bytes per microsecond each).
_MULTIPROCESSOR_BYTES_PER_US = 8.0e4
_SECOND_KERNEL_US = 6.0
# A way later in the list replaces the one picked so far only when the
# model finds it this much faster (the model's error on the shapes it was
# fitted to is about 5 %).
_DISPLACE = 0.94


def _gemm_choices(m, n, k, sm_count):
    """[(name, configuration, modelled microseconds)] of the 16-bit CUDA
    rule: the one way of the 128 x 256 rule, else each candidate block
    whole and with K split; stream-K is listed (for the bench's
    comparison) but not chosen: on an H100 it was slower than split K or
    whole blocks on every shape the earlier model gave it."""
    def ws(*shape, **options):
        return MmaConfig(*shape, warp_specialized=True, **options)
    big = ws(128, 256, 64, 8, 1, 4, persistent=True)
    if m > 64 and big.tiles(m, n) >= sm_count:
        return [("data-parallel", big, 0)]
    # 64-row warpgroup blocks waste fewer rows at small M; 128-row ones
    # read B once for up to 128 rows. The earlier rule's block first; at
    # M <= 16 the 16 x 64 decode block while its blocks do not fill the
    # GPU (twice the blocks streaming B: on an H100, 2026-12-07, 5-9 %
    # faster than 16 x 128 where the model finds the two equal, the
    # memory's time).
    shapes = [(64, 128, 64, 4, 1, 8), (64, 64, 64, 4, 1, 8)] if m <= 64 \
        else [(128, 128, 64, 8, 1, 6), (128, 64, 64, 8, 1, 8),
              (64, 128, 64, 4, 1, 8)]
    if m <= 16 and ws(64, 64, 64, 4, 1, 8).tiles(m, n) < sm_count:
        shapes.reverse()
    k_tiles = -(-k // 64)
    operand_bytes = (m * k + k * n + m * n) * 2     # each read once

    def memory_us(nbytes, blocks):
        # The memory's time for bytes streamed by `blocks` threadgroups.
        busy = min(blocks, sm_count)
        return nbytes / min(_MEMORY_BYTES_PER_US,
                            busy * _MULTIPROCESSOR_BYTES_PER_US)

    choices = []
    for shape in shapes:
        tiles = ws(*shape).tiles(m, n)
        step = _STEP_US[shape[:2]]
        if m <= 16 and tiles < sm_count and shape[1] in _DECODE_STEP_US:
            step = _DECODE_STEP_US[shape[1]]   # run as 16 rows
        top = min(sm_count // tiles, k_tiles // _MIN_TILES_PER_SPLIT,
                  _MAX_SPLIT_K)
        # Split K (powers of two, the largest first; not of 64 x 64
        # blocks, measured slow): one wave of K ranges writing float
        # partials, then the reduction reading them back.
        split = 1 << max(top, 1).bit_length() - 1
        while split > 1 and shape[:2] != (64, 64):
            partials_us = memory_us(split * m * n * 4, sm_count)
            split_us = (max(-(-k_tiles // split) * step,
                            memory_us(operand_bytes, tiles * split) +
                            partials_us) +
                        partials_us + _SECOND_KERNEL_US)
            choices.append(("split-K", ws(*shape, split_k=split), split_us))
            split //= 2
        # Whole blocks: the waves of K loops, or the memory's time.
        whole_us = max(-(-tiles // sm_count) * k_tiles * step,
                       memory_us(operand_bytes, tiles))
        choices.append(("data-parallel",
                        ws(*shape, persistent=tiles >= sm_count), whole_us))
    first = shapes[0] if m <= 64 else shapes[2]
    streamk = ws(*first, persistent=True, stream_k=sm_count)
    choices.append(("stream-K", streamk, float("inf")))
    return choices


def check_config(config, dtype, what):
    if not isinstance(config, MmaConfig):
        fail(f"{what}: config must be an enigma.MmaConfig, got "
             f"{type(config).__name__}")
    c = config
    c.check_fields(what)
    if c.cluster not in (1, 2, 4):
        fail(f"{what}: {c}: cluster must be 1, 2 or 4 threadgroups")
    if c.split_k < 1 or c.split_k > 64:
        fail(f"{what}: {c}: split_k must be 1 to 64")
    if c.split_k > 1 and (not c.warp_specialized or c.persistent or
                          c.cluster > 1):
        fail(f"{what}: {c}: split_k > 1 runs the warp-specialised mainloop "
             "(warp_specialized=True) without persistent or cluster")
    if c.stream_k > 4096:
        fail(f"{what}: {c}: stream_k must be 0 (off) to 4096 threadgroups")
    if c.stream_k and (not c.warp_specialized or not c.persistent or
                       c.cluster > 1 or c.split_k > 1):
        fail(f"{what}: {c}: stream_k runs the warp-specialised persistent "
             "mainloop (warp_specialized=True, persistent=True) without "
             "cluster or split_k")
    if c.consumer_groups not in (1, 2):
        fail(f"{what}: {c}: consumer_groups must be 1 or 2")
    if c.consumer_groups > 1 and (not c.warp_specialized or c.stream_k or
                                  (c.wm * c.wn) % 4):
        fail(f"{what}: {c}: consumer_groups = 2 runs the warp-specialised "
             "mainloop (warp_specialized=True, not stream_k) with whole "
             f"warpgroups in each group (wm * wn = {c.wm * c.wn} is not a "
             "multiple of 4)")
    if (c.persistent or c.cluster > 1) and not c.warp_specialized:
        fail(f"{what}: {c}: persistent launches and clusters are part of the "
             "warp-specialised mainloop (warp_specialized=True)")
    if c.warp_specialized and c.threads % 128:
        fail(f"{what}: {c}: a warp-specialised configuration runs whole "
             f"warpgroups of consumers ({c.threads} threads is not a "
             "multiple of 128)")
    if c.bm % (16 * c.wm) or c.bn % (16 * c.wn):
        fail(f"{what}: {c}: each simdgroup's tile ({c.bm}/{c.wm} x "
             f"{c.bn}/{c.wn}) must have sides that are multiples of 16")
    kstep = 8 if dtype.itemsize == 4 else 16
    if c.bk % kstep:
        fail(f"{what}: {c}: bk must be a multiple of {kstep} for "
             f"{dtype.name}")
    if c.smem_bytes(dtype) > _TG_LIMIT:
        fail(f"{what}: {c} needs {c.smem_bytes(dtype)} bytes of threadgroup "
             f"memory for {dtype.name} tiles; no target has more than "
             f"{_TG_LIMIT} (Metal: 32 KiB)")
    # The classic mainloop waits with cp.async's wait_group (at most 7
    # groups open); the pipelined one on a ring of up to 16 stages.
    most = 16 if c.warp_specialized else 8
    if c.stages < 2 or c.stages > most:
        fail(f"{what}: stages must be 2 to {most}"
             f"{' (warp_specialized: 16)' if most == 8 else ''}, got "
             f"{c.stages}")


def warpgroup_shape(config, dtype, a_transposed=False) -> bool:
    """Whether :func:`gemm_block` runs ``config`` as warpgroup products
    (one wgmma per K step on Hopper, the same result elsewhere): 16-bit
    operands, A not transposed, ``bk == 64``, one column of simdgroups
    (``wn == 1``) of 16 rows each in groups of four, ``bn`` a multiple of
    64."""
    c = config
    return (as_dtype(dtype).itemsize == 2 and not a_transposed and
            c.bk == 64 and c.wn == 1 and c.wm % 4 == 0 and
            c.bm == 16 * c.wm and c.bn % 64 == 0)


# A K-major stage row of floats for TF32 wgmma: 128 bytes, what its
# 128-byte swizzle reads (and the TMA's writes); docs/design/tf32.md.
_TF32_BK = 32
# The producer warpgroup's registers when it copies B transposed: 4 of its
# 4 x 4 blocks (64 registers) in flight per thread, a 128 x 256 stage's
# whole 32 x 256 B tile, without spills; the consumers keep 192 beside 256
# consumer threads (ptxas: no spills either).
TF32_TRANSPOSE_PRODUCER_REGISTERS = 120


def tf32_warpgroup_shape(config, a_transposed: bool = False,
                         b_transposed: bool = False) -> bool:
    """Whether :func:`gemm_block` with float operands and
    ``allow_tf32=True`` runs ``config`` as warpgroup products (TF32 wgmma
    on Hopper, the same result elsewhere): ``bk == 32``, one column of
    simdgroups (``wn == 1``) of 16 rows each in groups of four, ``bn`` of
    64, 128 or 256; and B K-major in the stages: stored ``n x k``
    (``b_transposed``), or stored ``k x n`` with a warp-specialised
    configuration of at most 256 consumer threads, whose producer copies
    B's tiles transposed (``stage_copy(..., transpose=True)``; the
    producer warpgroup's registers beside 512 consumers are too few). A
    stored ``k x m`` (``a_transposed``) takes B stored ``n x k`` and a
    warp-specialised configuration; each simdgroup's rows of A then reach
    the product through registers (Hopper's wgmma reads 32-bit tiles in
    threadgroup memory only K-major; in the classic mainloop ptxas
    serialises those products, remark C7515, so it keeps ``mma.sync``)."""
    c = config
    b_k_major = bool(b_transposed) or (bool(c.warp_specialized) and
                                       c.threads <= 256)
    if a_transposed and not (b_transposed and c.warp_specialized):
        return False
    return (b_k_major and c.bk == _TF32_BK and c.wn == 1 and
            c.wm % 4 == 0 and c.bm == 16 * c.wm and c.bn in (64, 128, 256))
