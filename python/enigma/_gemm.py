"""A threadgroup GEMM on the mma family (docs/reference/mma.md,
docs/design/mma.md, docs/design/warp-specialization.md).

:func:`gemm_block` computes one threadgroup's block of ``C = A @ B``: its
K loop is a ``stages``-deep pipeline of tile copies feeding products in
registers, and its epilogue stores the block with bounds. Two mainloops:

* the classic one: every thread copies (``copy_tile``, cp.async on CUDA)
  and every simdgroup multiplies, one barrier per K step;
* with ``MmaConfig(warp_specialized=True)``, an :func:`enigma.pipeline_loop`
  whose producer copies the tiles (a producer warpgroup with the Tensor
  Memory Accelerator on Hopper) and whose consumer multiplies; optionally
  persistent (a tile scheduler in grouped order) and in clusters that
  share A tiles.

The structure is: the tile scheduler (which output blocks a threadgroup
computes, :func:`grouped_block_origin` / :func:`_persistent_tiles`), the mainloop
over a K range (:func:`_mainloop_classic` / :func:`_mainloop_pipelined`,
each returning the accumulator of one block), and the epilogue
(:func:`_epilogue`). The tile shapes (:class:`MmaConfig`, the lists per
target and the built-in choice) are :mod:`._gemm_configs`'s.
"""

from __future__ import annotations

from . import _core
from ._control import for_range, if_, range_constexpr
from ._dtypes import as_dtype
from ._ir import BufferProxy, current_tracer, fail, static_int, to_value
from ._math import imin, where
from ._cooperation import threadgroup_alloc
from ._mma import (copy_commit, copy_tile, copy_wait, mma, mma_load,
                   mma_operand, mma_store, mma_swizzle, mma_wait, mma_zeros)
from ._pipeline import pipeline_loop, pipeline_ring, stage_copy
from ._threads import (barrier, simdgroup_index_in_threadgroup,
                       threadgroup_position_in_grid, threadgroups_per_grid)
from ._tile_pipeline import pipeline
from ._gemm_splitk import SplitKReduction, split_k_buffers, \
    split_k_workspace
from ._gemm_streamk import (stream_k_buffers,
                            stream_k_schedule, stream_k_tiles,
                            stream_k_workspace)

__all__ = ["MmaConfig", "gemm_block", "gemm_configs", "default_gemm_config",
           "warpgroup_shape", "tf32_warpgroup_shape", "gemm_split_k_reduce",
           "split_k_reduce_launch",
           "gemm_config_for", "stream_k_workspace", "stream_k_schedule",
           "split_k_workspace"]

_U32 = as_dtype("uint")


def _call(function: str, *args):
    """``_core.<function>`` through the located call."""
    return current_tracer(function).call(function, *args)


def _index(x, what: str):
    """The core value of a traced integer or Python int (a uint)."""
    if isinstance(x, int) and not isinstance(x, bool):
        if x < 0:
            fail(f"{what} must not be negative, got {x}")
        return to_value(x, _U32 if x < 2**32 else as_dtype("u64"))._value
    if getattr(x, "lanes", 1) != 1 or x.dtype.is_float:
        fail(f"{what} must be an integer")
    return x._value



# The configurations (and the built-in choice) live in _gemm_configs;
# they are this module's public names too.
from ._gemm_configs import (TF32_TRANSPOSE_PRODUCER_REGISTERS, MmaConfig,
                            check_config, default_gemm_config,
                            gemm_config_for, gemm_configs, gemm_dtype,
                            tf32_warpgroup_shape, warpgroup_shape)


def grouped_block_origin(config, m, n, pid=None):
    """(row0, col0) of output block ``pid`` (default: this threadgroup's
    position) of C in grouped order: ``group_m`` block rows at a time, so
    that threadgroups running together share rows of A and columns of B
    in L2. With a cluster, the ``cluster`` threadgroups of one cluster
    (consecutive ``pid``) take consecutive block columns of one block row,
    whose A tiles they share, or with ``cluster_shares="b"`` consecutive
    block rows of one block column, whose B tiles they share."""
    c = config
    if pid is None:
        pid = threadgroup_position_in_grid("x")
    rank = pid % c.cluster if c.cluster > 1 else 0
    if c.cluster > 1:
        pid = pid // c.cluster
    rows_shared = c.cluster_shares == "b"
    # The rows and columns of one cluster's blocks.
    span_m = c.bm * c.cluster if rows_shared else c.bm
    span_n = c.bn if rows_shared else c.bn * c.cluster
    blocks_m = (m + (span_m - 1)) // span_m
    blocks_n = (n + (span_n - 1)) // span_n
    per_group = c.group_m * blocks_n
    group = pid // per_group
    first_m = group * c.group_m
    size_m = imin(blocks_m - first_m, c.group_m)
    in_group = pid % per_group
    row0 = (first_m + in_group % size_m) * span_m
    col0 = (in_group // size_m) * span_n
    if rows_shared:
        return row0 + rank * c.bm, col0
    return row0, col0 + rank * c.bn


def _persistent_tiles(config, m, n, body):
    """``body(row0, col0)`` for each output block this threadgroup takes
    in a persistent launch: block ``t``, ``t + G``, ... for the
    threadgroup's position ``t`` and ``G`` threadgroups (whole clusters
    walk cluster blocks together)."""
    c = config
    with for_range(threadgroup_position_in_grid("x"), c._padded_tiles(m, n),
                   threadgroups_per_grid("x"), dtype="uint") as t:
        body(*grouped_block_origin(c, m, n, t))


def require_matrices(what, matrices):
    """Records each ``(buffer, verb, (rows, cols), shape, pitch, pitch
    name)`` on the kernel, so that a launch with a buffer too small for
    its matrix is a DispatchError. Sides are scalar parameters or
    constants, each optionally as ``(side, divisor, scale)``: ``ceil(side
    / divisor) * scale`` (sides counted in blocks or multiples); others
    are not judged."""
    def side(x):
        return x if isinstance(x, tuple) else (x, 1, 1)
    for buf, verb, (rows, cols), shape, pitch, pitch_name in matrices:
        (rows, rd, rs), (cols, cd, cs), (pitch, pd, ps) = \
            side(rows), side(cols), side(pitch)
        _call("require_matrix_extent", buf._buffer,
              _index(rows, f"{what}: rows"), _index(cols, f"{what}: cols"),
              _index(pitch, f"{what}: {pitch_name}"),
              f"{what} {verb} as {_article(shape)} {shape} matrix (pitch "
              f"{pitch_name})", rd, rs, cd, cs, pd, ps)


def _article(shape: str) -> str:
    """"an m x k", "a k x n", "a 1 x m", "a (split_k m) x n": a side
    named by one letter is spoken as the letter, a longer name or a
    number as itself."""
    head = shape.lstrip("(")
    letter = head[:1] in "fhlmnrsx" and head[1:2] in (" ", ")", "")
    return "an" if letter or head[:1] in "aeio8" else "a"


def gemm_block(A, B, C, *, m, n, k, config: MmaConfig, lda=None, ldb=None,
               ldc=None, a_transposed=False, b_transposed=False,
               c_transposed=False, allow_tf32=False, epilogue=None,
               origin=None, workspace=None, flags=None):
    """This threadgroup's ``bm x bn`` block of ``C = A @ B`` (``A`` is
    ``m x k``, ``B`` is ``k x n``, row-major with pitches ``lda`` (default
    ``k``), ``ldb`` (default ``n``), ``ldc`` (default ``n``);
    ``a_transposed``: A is stored ``k x m``, ``b_transposed``: B is stored
    ``n x k``, ``c_transposed``: C is stored ``n x m``, ``ldc`` default
    ``m``). Call it at the top level of the kernel body (it allocates
    threadgroup memory); launch ``config.launch(m, n)``.

    The K loop keeps ``config.stages`` tiles of A and B in flight
    (:func:`copy_tile`, swizzled by :func:`mma_swizzle`), each simdgroup
    multiplies its part into a fragment in registers, and the block is
    stored with bounds, so any m, n, k is correct (edges are zero-filled
    and masked). The kernel then runs only in threadgroups of exactly
    ``config.threads`` threads, all full (``config.launch`` gives them; any
    other launch is a DispatchError). Configurations of
    :func:`warpgroup_shape` multiply as
    warpgroups (``mma(..., warpgroup=True)``: wgmma on Hopper), with B in
    64-column blocks, and from 3 stages on keep one product in flight
    across the barrier (``asynchronous=True``, one tile fewer loaded
    ahead). ``epilogue(acc, row, col)`` may return a new fragment
    (``row``/``col``: this simdgroup's first row and column of C) before
    it is stored. ``origin=(row0, col0)`` overrides the grouped launch
    order.

    With ``config.split_k = S > 1`` the threadgroups of grid row ``s``
    (``config.launch`` gives S rows) multiply K tiles ``[s P, (s + 1) P)``
    (``P = config.k_tiles_per_split(k)``). Given ``workspace``, a float
    buffer, and ``flags``, a uint buffer zeroed once before the first
    launch, of the sizes :func:`split_k_workspace` gives, the last of a
    block's S threadgroups sums their partials in a fixed order (the
    same bit for bit run to run), applies ``epilogue`` and stores C
    (docs/design/split-k-in-kernel.md). Without them ``C`` is a float
    buffer of the S partial products, ``S x m`` rows of pitch ``ldc``
    (partial ``s`` from row ``s m``), which :func:`gemm_split_k_reduce`
    sums into the result in a second kernel; no ``epilogue`` then.
    No ``origin`` either way.

    With ``config.stream_k = G`` (docs/design/stream-k.md) launch
    ``config.launch(m, n)`` (``G`` threadgroups) and give ``workspace``, a
    float buffer, and ``flags``, a uint buffer zeroed once before the
    first launch, of the sizes :func:`stream_k_workspace` gives; blocks
    split between threadgroups are summed in a fixed order, so the result
    is the same bit for bit from run to run. No ``origin`` then.
    Returns nothing."""
    what = "gemm_block"
    for name, buf in (("A", A), ("B", B), ("C", C)):
        if not isinstance(buf, BufferProxy):
            fail(f"{what}: {name} must be a buffer parameter, got "
                 f"{type(buf).__name__}")
    if A.dtype != B.dtype:
        fail(f"{what}: A is {A.dtype.name} and B is {B.dtype.name}; both "
             "must have one dtype")
    dtype = gemm_dtype(A.dtype, f"{what}: A and B")
    check_config(config, dtype, what)
    c = config
    # Its simdgroups split the block among themselves, so the kernel runs
    # in threadgroups of exactly config.threads (the runtime refuses other
    # launches; the copies unroll for that count).
    _call("require_threadgroup_size", c.threads)
    if c.stream_k:
        if origin is not None:
            fail(f"{what}: {c}: a stream-K launch schedules its own blocks "
                 "(no origin)")
        require_matrices(what, stream_k_buffers(c, workspace, flags, what))
    elif c.split_k > 1 and (workspace is not None or flags is not None):
        require_matrices(what, split_k_buffers(c, m, n, workspace, flags,
                                                what))
    elif workspace is not None or flags is not None:
        fail(f"{what}: {c}: workspace and flags belong to split-K and "
             "stream-K configurations (MmaConfig(split_k=...) or "
             "MmaConfig(stream_k=...))")
    if c.consumer_groups > 1 and c.split_k > 1:
        fail(f"{what}: {c}: consumer groups split each block's K steps "
             "between themselves; with split_k the threadgroups split them "
             "too: use one or the other")
    # Split K with its partials in C, summed by a second kernel.
    partials_in_c = c.split_k > 1 and workspace is None
    if c.split_k > 1 and origin is not None:
        fail(f"{what}: {c}: a split-K launch places its own blocks (no "
             "origin)")
    if partials_in_c:
        if c_transposed:
            fail(f"{what}: {c}: split_k partials in C are stored m x n; "
                 "c_transposed needs workspace= and flags= (the sum in "
                 "the kernel)")
        if C.dtype.name != "f32":
            fail(f"{what}: {c}: with split_k and no workspace C holds the "
                 f"float partial products, got a {C.dtype.name} buffer "
                 "(give workspace= and flags= to sum them in the kernel: "
                 "enigma.split_k_workspace)")
        if epilogue is not None:
            fail(f"{what}: {c}: split_k partials take no epilogue (apply "
                 "it in gemm_split_k_reduce, or give workspace= and "
                 "flags= to sum them in the kernel)")
    lda = (m if a_transposed else k) if lda is None else lda
    ldb = (k if b_transposed else n) if ldb is None else ldb
    ldc = (m if c_transposed else n) if ldc is None else ldc
    require_matrices(what, ((A, "reads A", (k, m) if a_transposed else
                              (m, k), "k x m" if a_transposed else "m x k",
                              lda, "lda"),
                             (B, "reads B", (n, k) if b_transposed else
                              (k, n), "n x k" if b_transposed else "k x n",
                              ldb, "ldb"),
                             (C, "writes C", ((m, 1, c.split_k), n) if
                              partials_in_c else (n, m) if c_transposed
                              else (m, n),
                              "(split_k m) x n" if partials_in_c else
                              "n x m" if c_transposed else "m x n", ldc,
                              "ldc")))
    shape = _GemmShape(A, B, C, m, n, k, lda, ldb, ldc, a_transposed,
                       b_transposed, allow_tf32, c, dtype,
                       c_transposed=bool(c_transposed))
    if not c.warp_specialized:
        row0, col0 = grouped_block_origin(c, m, n) if origin is None else origin
        _epilogue(shape, _mainloop_classic(shape, row0, col0), row0, col0,
                  epilogue)
        return
    ring = _operand_ring(shape)
    if c.stream_k:
        stream_k_tiles(shape, ring, epilogue, workspace, flags,
                       mainloop=_mainloop_pipelined,
                       store=_epilogue,
                       block_origin=grouped_block_origin)
        return
    if c.split_k > 1:
        # This threadgroup row's K tiles; the partial goes to rows s m...
        split = threadgroup_position_in_grid("y")
        per = (shape.ktiles + (c.split_k - 1)) // c.split_k
        k_begin = imin(split * per, shape.ktiles)
        k_end = imin(k_begin + per, shape.ktiles)
        if not partials_in_c:
            reduction = SplitKReduction(shape, workspace, flags, split)
            _persistent_tiles(c, m, n, lambda row0, col0: reduction.finish(
                _mainloop_pipelined(shape, ring, row0, col0, k_begin, k_end),
                row0, col0, epilogue, _epilogue))
            return
        _persistent_tiles(c, m, n, lambda row0, col0: _epilogue(
            shape, _mainloop_pipelined(shape, ring, row0, col0, k_begin,
                                       k_end), row0, col0, None,
            base=split * m * ldc))
        return
    if origin is None:
        # Always the loop over blocks: a launch of one threadgroup per block
        # runs it once. (ptxas also keeps the products of this form in
        # flight, where it serialised them in a kernel without the loop,
        # remark C7515.)
        _persistent_tiles(c, m, n, lambda row0, col0: _epilogue(
            shape, _mainloop_pipelined(shape, ring, row0, col0), row0, col0,
            epilogue))
        return
    row0, col0 = origin
    _epilogue(shape, _mainloop_pipelined(shape, ring, row0, col0), row0,
              col0, epilogue)


class _GemmShape:
    """What the parts of gemm_block share: the matrices, their sides and
    pitches, the configuration and how each simdgroup and each tile is
    laid out."""

    def __init__(self, A, B, C, m, n, k, lda, ldb, ldc, a_transposed,
                 b_transposed, allow_tf32, config, dtype,
                 c_transposed=False):
        c = config
        self.A, self.B, self.C, self.m, self.n, self.k = A, B, C, m, n, k
        self.lda, self.ldb, self.ldc = lda, ldb, ldc
        self.a_transposed, self.b_transposed = a_transposed, b_transposed
        self.c_transposed = c_transposed
        self.allow_tf32, self.config, self.dtype = allow_tf32, c, dtype
        self.wtm, self.wtn = c.bm // c.wm, c.bn // c.wn
        # Stored tiles: A is bm x bk (a_transposed: bk x bm), B bk x bn
        # (b_transposed: bn x bk). Warpgroup products keep a bk x bn B in
        # blocks of 64 columns (rows of 128 bytes, as wgmma reads them);
        # a warp-specialised float B comes in blocks of 32 columns (128
        # bytes, what the TMA's swizzle writes).
        self.group = warpgroup_shape(c, dtype, a_transposed)
        if dtype.name == "f32" and allow_tf32:   # TF32 wgmma
            self.group = tf32_warpgroup_shape(c, a_transposed, b_transposed)
        # TF32 wgmma reads B only K-major: a B stored k x n reaches the
        # stage through a transposing stage copy (docs/design/tf32.md).
        self.b_copy_transposes = bool(self.group) and dtype.name == "f32" \
            and not b_transposed
        b_k_major = b_transposed or self.b_copy_transposes
        self.b_k_major = b_k_major
        block = 128 // dtype.itemsize
        self.b_block = 0
        if not b_k_major and (self.group or (
                c.warp_specialized and c.bn > block and c.bn % block == 0 and
                (self.wtn % block == 0 or block % self.wtn == 0))):
            self.b_block = 64 if self.group else block
        if c.warp_specialized and not self.group and not b_k_major and \
                not self.b_block and c.bn > block and \
                (c.wn > 1 or c.bn * dtype.itemsize > 256):
            # An unswizzled B wider than a block: 16 x 192 blocks of four
            # simdgroups (48 columns each, rows of 384 bytes) gave wrong
            # products on an H200 (2026-12-06) while the CPU and MSL
            # results were right. Until the cause is found, the layouts
            # that share either trait are refused; 64 x 96 blocks of one
            # simdgroup column (192-byte rows) ran right.
            fail(f"gemm_block: {c}: a warp-specialised B tile of {c.bn} "
                 f"columns stored k x n outside {block}-column blocks "
                 f"({c.wn} simdgroup columns of {self.wtn}) is not "
                 f"supported: each simdgroup's columns must be a multiple "
                 f"or a divisor of {block}, or wn must be 1 with rows of "
                 f"at most 256 bytes")
        # A stored k x m in TF32 warpgroup products (warp-specialised
        # only) reaches them through registers (wgmma reads 32-bit tiles
        # only K-major); the TMA writes its stage tile in blocks of 32
        # columns (128-byte rows, what its swizzle can write).
        self.a_block = 0
        if self.group and a_transposed:
            self.a_block = 128 // dtype.itemsize
        self.a_stride = c.bk * self.a_block
        self.a_shape = (c.bk, self.a_block or c.bm) if a_transposed else \
            (c.bm, c.bk)
        self.b_shape = (c.bn, c.bk) if b_k_major else \
            (c.bk, self.b_block or c.bn)
        self.sw_a = mma_swizzle(self.a_shape[1], dtype)
        self.sw_b = mma_swizzle(self.b_shape[1], dtype)
        self.b_stride = c.bk * self.b_block
        self.ktiles = (k + (c.bk - 1)) // c.bk
        simdgroup = simdgroup_index_in_threadgroup()
        # With consumer groups, warpgroup w is in group w % G (the
        # pipeline's rule) and `warp` counts the simdgroups of one group.
        groups = c.consumer_groups
        self.group_index = None
        self.partials = None
        warp = simdgroup
        if groups > 1:
            warpgroup = simdgroup // 4
            self.group_index = warpgroup % groups
            warp = (warpgroup // groups) * 4 + simdgroup % 4
            # Where the groups' partial products meet (a bm x bn block).
            self.partials = threadgroup_alloc("float", c.bm * c.bn)
        self.warp = warp
        self.wrow = (warp // c.wn) * self.wtm
        self.wcol = (warp % c.wn) * self.wtn

    def operands(self, a_tile, b_tile):
        """This simdgroup's A and B operands in a stage's tiles."""
        c = self.config
        if self.group:     # the group's 64 rows; B is the whole tile
            first = (self.warp // 4) * 64
            offset = first * c.bk
            if self.a_transposed:   # stored columns, in blocks of a_block
                offset = (first // self.a_block) * self.a_stride + \
                    first % self.a_block
            a_op = mma_operand(a_tile, ld=self.a_shape[1], offset=offset,
                               transpose=self.a_transposed,
                               swizzle=self.sw_a,
                               block_stride=self.a_stride)
            b_op = mma_operand(b_tile, ld=self.b_shape[1],
                               transpose=self.b_k_major, swizzle=self.sw_b,
                               block_stride=self.b_stride)
            return a_op, b_op
        wrow, wcol = self.wrow, self.wcol
        a_op = mma_operand(a_tile, ld=self.a_shape[1],
                           offset=wrow if self.a_transposed else wrow * c.bk,
                           transpose=self.a_transposed, swizzle=self.sw_a)
        if self.b_block:   # the simdgroup's columns in their block
            b_op = mma_operand(b_tile, ld=self.b_block,
                               offset=(wcol // self.b_block) * self.b_stride +
                               wcol % self.b_block, swizzle=self.sw_b,
                               block_stride=self.b_stride)
        else:
            b_op = mma_operand(b_tile, ld=self.b_shape[1],
                               offset=wcol * c.bk if self.b_transposed
                               else wcol,
                               transpose=self.b_transposed, swizzle=self.sw_b)
        return a_op, b_op


def _mainloop_classic(s, row0, col0):
    """The accumulator of the block at (row0, col0) over all of K: every
    thread copies (cp.async), ``stages - 1`` tiles ahead (one fewer with
    asynchronous warpgroup products), one barrier per K step."""
    c = s.config
    a_tiles = pipeline(s.dtype, c.bm * c.bk, c.stages)
    b_tiles = pipeline(s.dtype, c.bk * c.bn, c.stages)
    rows_left = s.m - row0
    cols_left = s.n - col0

    def load(stage, kt):
        """Copies K tile kt into stage (tiles past K: nothing) and closes
        the group."""
        if isinstance(kt, int):
            copy_tiles(stage, kt)
        else:   # inside the loop: the last `ahead` steps have no tile left
            with if_(kt < s.ktiles):
                copy_tiles(stage, kt)
        copy_commit()

    def copy_tiles(stage, kt):
        k0 = kt * c.bk
        k_left = where(0, s.k - k0, k0 < s.k)
        if s.a_transposed:   # A^T tile: rows k0.., columns row0..
            copy_tile(stage[0], s.A, c.bk, c.bm, src_ld=s.lda,
                      src_offset=k0 * s.lda + row0, valid_rows=k_left,
                      valid_cols=rows_left, swizzle=s.sw_a)
        else:
            copy_tile(stage[0], s.A, c.bm, c.bk, src_ld=s.lda,
                      src_offset=row0 * s.lda + k0, valid_rows=rows_left,
                      valid_cols=k_left, swizzle=s.sw_a)
        if s.b_transposed:   # B^T tile: rows col0.., columns k0..
            copy_tile(stage[1], s.B, c.bn, c.bk, src_ld=s.ldb,
                      src_offset=col0 * s.ldb + k0, valid_rows=cols_left,
                      valid_cols=k_left, swizzle=s.sw_b)
        else:              # b_block: bk x 64 blocks of columns
            copy_tile(stage[1], s.B, c.bk, c.bn, src_ld=s.ldb,
                      src_offset=k0 * s.ldb + col0, valid_rows=k_left,
                      valid_cols=cols_left, swizzle=s.sw_b,
                      dst_ld=s.b_shape[1], block_stride=s.b_stride)

    # Tiles loaded ahead of the one computed on. Asynchronous warpgroup
    # products (3 stages or more) keep the previous step's product in
    # flight, so its stage is not refilled until the step after.
    asynchronous = s.group and c.stages >= 3
    ahead = c.stages - 2 if asynchronous else c.stages - 1
    for st in range_constexpr(ahead):
        load((a_tiles.stage(st), b_tiles.stage(st)), st)

    with for_range(0, s.ktiles, dtype="uint",
                   init=[mma_zeros(s.wtm, s.wtn)]) as (kt, carry):
        copy_wait(ahead - 1)
        barrier()
        # Free again: the stage of the product before the previous one
        # (asynchronous: every group completed it before this barrier), or
        # of the previous one.
        load((a_tiles.stage(ahead), b_tiles.stage(ahead)), kt + ahead)
        a_op, b_op = s.operands(a_tiles.front(), b_tiles.front())
        carry[0] = mma(carry[0], a_op, b_op, k=c.bk,
                       allow_tf32=s.allow_tf32, warpgroup=s.group,
                       asynchronous=asynchronous)
        a_tiles.advance()
        b_tiles.advance()
    acc = mma_wait(carry[0]) if asynchronous else carry[0]
    copy_wait(0)
    return acc


def _operand_ring(s):
    """The ring of the pipelined mainloop: ``stages`` slots of an A tile
    and a B tile, with the roles' registers and the cluster."""
    c = s.config
    producer, consumer = c.producer_registers, c.consumer_registers
    if s.b_copy_transposes:
        # The producer's threads carry B's tiles through their registers.
        producer = TF32_TRANSPOSE_PRODUCER_REGISTERS
        consumer = _core.fitting_consumer_registers(c.threads, 128, producer)
    return pipeline_ring(c.stages, [(s.dtype, c.bm * c.bk),
                                    (s.dtype, c.bk * c.bn)],
                         producer_registers=producer,
                         consumer_registers=consumer, cluster=c.cluster)


def operand_copies(s, ring, row0, col0, tiles=1):
    """The producer of the pipelined mainloop for the block at (row0,
    col0): ``producer(kt, slot)`` copies K tile ``kt`` of A into ring
    buffer 0 and of B into buffer 1 (the TMA on Hopper, edges zero-filled
    by it). Other mainloops on the same ring layout (the 8-bit GEMM) add
    their own copies around it. ``tiles`` = T: each slot holds T
    consecutive K tiles, tile ``kt * T + t`` in buffers ``2t`` and ``2t +
    1`` (tiles past K are zeros)."""
    c = s.config
    # The threadgroups of a cluster compute blocks of one block row (or
    # with cluster_shares="b" of one block column): they share the A (B)
    # tile, which each loads a share of (multicast).
    shared_a = c.cluster > 1 and c.cluster_shares == "a" and \
        not s.a_transposed
    shared_b = c.cluster > 1 and c.cluster_shares == "b" and \
        not s.b_copy_transposes

    def producer(kt, slot):
        for t in range(tiles):
            tile_copies(kt * tiles + t, slot, 2 * t)

    def tile_copies(kt, slot, a):
        b = a + 1
        k0 = kt * c.bk
        if s.a_transposed:   # A^T: a bk x bm box of the k x m matrix
            stage_copy(ring, slot, a, s.A, at=(k0, row0), shape=(s.k, s.m),
                       ld=s.lda, box=(c.bk, c.bm), swizzle=s.sw_a,
                       block_cols=s.a_block or None,
                       block_stride=s.a_stride or None)
        else:
            stage_copy(ring, slot, a, s.A, at=(row0, k0), shape=(s.m, s.k),
                       ld=s.lda, box=(c.bm, c.bk), swizzle=s.sw_a,
                       multicast=shared_a)
        if s.b_transposed:   # B^T: a bn x bk box of the n x k matrix
            stage_copy(ring, slot, b, s.B, at=(col0, k0), shape=(s.n, s.k),
                       ld=s.ldb, box=(c.bn, c.bk), swizzle=s.sw_b,
                       multicast=shared_b)
        elif s.b_copy_transposes:   # TF32 wgmma: the k x n box, K-major
            stage_copy(ring, slot, b, s.B, at=(k0, col0), shape=(s.k, s.n),
                       ld=s.ldb, box=(c.bk, c.bn), swizzle=s.sw_b,
                       transpose=True)
        else:
            stage_copy(ring, slot, b, s.B, at=(k0, col0), shape=(s.k, s.n),
                       ld=s.ldb, box=(c.bk, c.bn), swizzle=s.sw_b,
                       block_cols=s.b_block or None,
                       block_stride=s.b_stride or None, multicast=shared_b)
    return producer


def _mainloop_pipelined(s, ring, row0, col0, k_begin=0, k_end=None):
    """The accumulator of the block at (row0, col0) over K tiles
    ``[k_begin, k_end)`` (default: all): an :func:`enigma.pipeline_loop`
    whose producer copies the iteration's A and B tiles into the ring
    (:func:`operand_copies`) and whose consumer multiplies them;
    warpgroup products stay in flight from one K step to the next."""
    c = s.config
    if k_end is None:
        k_end = s.ktiles
    producer = operand_copies(s, ring, row0, col0)
    asynchronous = s.group

    def consumer(kt, slot, carry):
        a_op, b_op = s.operands(ring.stage(0, slot), ring.stage(1, slot))
        carry[0] = mma(carry[0], a_op, b_op, k=c.bk,
                       allow_tf32=s.allow_tf32, warpgroup=s.group,
                       asynchronous=asynchronous)

    acc, = pipeline_loop(ring, k_begin, k_end, producer=producer,
                         consumer=consumer, init=[mma_zeros(s.wtm, s.wtn)],
                         consumer_groups=c.consumer_groups)
    return mma_wait(acc) if asynchronous else acc


def _sum_groups(s, acc):
    """With consumer groups: group 0's accumulator plus group 1's (its
    every other K step), through threadgroup memory; group 1 gets a value
    it does not store."""
    c = s.config
    offset = s.wrow * c.bn + s.wcol
    with if_(s.group_index == 1):
        mma_store(acc, s.partials, ld=c.bn, offset=offset)
    barrier()
    total = acc + mma_load(s.partials, s.wtm, s.wtn, ld=c.bn, offset=offset)
    # The next block's partials wait until every group has read these.
    barrier()
    return total


def _epilogue(s, acc, row0, col0, epilogue, base=0):
    """The user's epilogue, then this simdgroup's part of the block stored
    with bounds (``base``: the element of C where the m x n result
    begins)."""
    if s.group_index is None:
        _store_block(s, acc, row0, col0, epilogue, base)
        return
    total = _sum_groups(s, acc)
    with if_(s.group_index == 0):   # the block's sum is group 0's
        _store_block(s, total, row0, col0, epilogue, base)


def _store_block(s, acc, row0, col0, epilogue, base):
    out_row, out_col = row0 + s.wrow, col0 + s.wcol
    if epilogue is not None:
        result = epilogue(acc, out_row, out_col)
        if result is not None:
            acc = result
    m, n = s.m, s.n
    at = out_col * s.ldc + out_row if s.c_transposed else \
        out_row * s.ldc + out_col
    mma_store(acc, s.C, ld=s.ldc, offset=base + at,
              transpose=s.c_transposed,
              bounds=(where(0, m - out_row, out_row < m),
                      where(0, n - out_col, out_col < n)))



# The pieces the 8-bit GEMM's pipelined kernel (_gemm_fp8_pipelined) builds
# on: the operand layout, the tile scheduler and the bounded store.
GemmShape, persistent_tiles, block_epilogue = (_GemmShape, _persistent_tiles,
                                               _epilogue)

# --------------------------------------------------------------------------
# Split-K: the fixed-order sum of the partial products
# --------------------------------------------------------------------------

_REDUCE_THREADS = 256


def split_k_reduce_launch(m: int, n: int):
    """(grid, threads) of a :func:`gemm_split_k_reduce` kernel over an
    m x n result: one thread per element."""
    total = m * n
    return ((-(-total // _REDUCE_THREADS) * _REDUCE_THREADS, 1, 1),
            (_REDUCE_THREADS, 1, 1))


def gemm_split_k_reduce(W, C, *, m, n, splits, ldc=None, ldw=None,
                        epilogue=None):
    """``C = W[0] + W[1] + ... + W[splits - 1]`` for the float partial
    products ``W`` of a split-K :func:`gemm_block` (``splits x m`` rows of
    pitch ``ldw``, default ``n``): each thread sums its element of the
    partials in order 0, 1, ... in float, so the result does not depend on
    which threadgroup finished first (no atomics), applies
    ``epilogue(value, row, col)`` if given, and stores it to ``C`` (pitch
    ``ldc``, default ``n``; C's dtype). ``splits`` is a Python int. Launch
    :func:`split_k_reduce_launch` ``(m, n)``."""
    from ._threads import thread_position_in_grid_xyz
    what = "gemm_split_k_reduce"
    for name, buf in (("W", W), ("C", C)):
        if not isinstance(buf, BufferProxy):
            fail(f"{what}: {name} must be a buffer parameter, got "
                 f"{type(buf).__name__}")
    if W.dtype.name != "f32":
        fail(f"{what}: W holds the float partials, got {W.dtype.name}")
    splits = static_int(splits, f"{what}: splits")
    if splits < 1:
        fail(f"{what}: splits must be at least 1, got {splits}")
    ldc = n if ldc is None else ldc
    ldw = n if ldw is None else ldw
    require_matrices(what, ((W, "reads W", (m * splits, n),
                              "(splits m) x n", ldw, "ldw"),
                             (C, "writes C", (m, n), "m x n", ldc, "ldc")))
    i = thread_position_in_grid_xyz("x")
    row, col = i // n, i % n
    with if_(i < m * n):
        total = W[row * ldw + col]
        for s in range_constexpr(1, splits):
            total = total + W[(s * m + row) * ldw + col]
        if epilogue is not None:
            result = epilogue(total, row, col)
            if result is not None:
                total = result
        C[row * ldc + col] = total.cast(C.dtype)
