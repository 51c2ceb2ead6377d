"""Stream-K for :func:`enigma.gemm_block` (docs/design/stream-k.md).

``MmaConfig(..., warp_specialized=True, persistent=True, stream_k=G)``
launches ``G`` threadgroups (about one per multiprocessor). The output
blocks are cut into two parts:

* the stream-K part, the first ``S`` blocks in grouped order: their
  ``S x KT`` K steps (``KT`` steps of ``bk`` per block) are divided
  evenly among the ``G`` threadgroups, each taking one contiguous range
  that may begin and end inside a block;
* the data-parallel part, the other blocks, whole, in waves of ``G``
  (block ``S + g``, ``S + g + G``, ... for threadgroup ``g``).

``S`` is 0 when the blocks make whole waves, all blocks when they make
less than one wave, else the last partial wave plus one full wave (each
threadgroup then gets between one and two blocks' worth of K steps, so
no block is cut into slivers).

A threadgroup walks its stream-K range from its end down to its start.
The block holding its range's end is, unless the range ends on the
block's last K step, a *partial*: the threadgroup stores its float
product to its slot of the workspace and raises its flag (a release
store). The block holding its range's start is, unless the range starts
on the block's first K step, one it *finishes*: it waits for the flags
of the lower-numbered threadgroups that computed the block's earlier K
steps (acquire loads), adds their partials in increasing threadgroup
order to its own product (a fixed order: the result is the same bit for
bit run to run), lowers their flags again and stores the block with the
user's epilogue. Blocks in between are whole and stored as usual.

Every wait is on a lower-numbered threadgroup, which stores its partial
first thing. On a GPU the launch must be co-resident (``G`` at most the
multiprocessors: :meth:`MmaConfig.launch` refuses more); the CPU and MSL
host runtimes hand out threadgroups in increasing order, so the one
waited for has always started.
"""

from __future__ import annotations

from ._control import for_range, if_, while_
from ._cooperation import atomic_load, atomic_store
from ._dtypes import plain_index
from ._ir import BufferProxy, fail
from ._math import imax, imin, where
from ._mma import mma_load, mma_store
from ._threads import barrier, thread_index_in_threadgroup, \
    threadgroup_position_in_grid, threadgroups_per_grid

__all__ = ["stream_k_workspace", "stream_k_schedule"]


def stream_k_workspace(config) -> tuple:
    """``(floats, flags)``: the sizes, in elements, of the float
    workspace and the uint flags a stream-K :func:`gemm_block` with
    ``config`` needs (one ``bm x bn`` partial and one flag per
    threadgroup). The flags must be zero before the first launch; every
    launch leaves them zero."""
    if not isinstance(getattr(config, "stream_k", None), int) or \
            not config.stream_k:
        fail("stream_k_workspace: config must be an MmaConfig with "
             f"stream_k > 0, got {config!r}")
    g = config.stream_k
    return g * config.bm * config.bn, g


# --------------------------------------------------------------------------
# The schedule (Python mirror of the kernel's arithmetic)
# --------------------------------------------------------------------------

def _split(tiles: int, groups: int) -> int:
    """The blocks of the stream-K part (see the module doc)."""
    waves, rest = divmod(tiles, groups)
    if rest == 0:
        return 0
    return tiles if waves == 0 else rest + groups


def stream_k_schedule(config, m: int, n: int, k: int,
                      groups: int | None = None) -> list:
    """What each of the ``config.stream_k`` threadgroups (or of a launch
    of ``groups`` threadgroups, at most that many) computes for an ``m x
    n x k`` product, in its order: a list per threadgroup of ``(block,
    k_begin, k_end)`` (block: the position in grouped order; K steps of
    ``bk``, ``k_end`` exclusive). The kernel computes the same with the
    launch's values; tests and the heuristic read it here."""
    groups = plain_index(groups)
    if groups is not None and (isinstance(groups, bool) or
                               not isinstance(groups, int) or groups < 1):
        fail(f"stream_k_schedule: groups must be at least 1 (or None), "
             f"got {groups!r}")
    g_count = config.stream_k if groups is None else \
        min(groups, config.stream_k)
    tiles = config.tiles(m, n)
    kt = -(-k // config.bk)
    sk = _split(tiles, g_count)
    total = sk * kt
    q, r = divmod(total, g_count)
    out = []
    for g in range(g_count):
        begin = g * q + min(g, r)
        end = begin + q + (1 if g < r else 0)
        units = []
        if end > begin:
            for t in range((end - 1) // kt, begin // kt - 1, -1):
                units.append((t, max(begin, t * kt) - t * kt,
                              min(end, t * kt + kt) - t * kt))
        units.extend((t, 0, kt) for t in range(sk + g, tiles, g_count))
        out.append(units)
    return out


# --------------------------------------------------------------------------
# Inside gemm_block
# --------------------------------------------------------------------------

def stream_k_buffers(config, workspace, flags, what):
    """EnigmaErrors for missing or mistyped workspace buffers, else the
    matrices gemm_block records for them (so that a launch with smaller
    ones is a DispatchError)."""
    for name, buf, dtype in (("workspace", workspace, "f32"),
                             ("flags", flags, "u32")):
        if not isinstance(buf, BufferProxy):
            fail(f"{what}: {config}: stream_k needs {name}= (a buffer "
                 f"parameter of {dtype}; enigma.stream_k_workspace gives "
                 f"its size), got {type(buf).__name__}")
        if buf.dtype.name != dtype:
            fail(f"{what}: {config}: {name} must hold {dtype}, got "
                 f"{buf.dtype.name}")
    c = config
    return ((workspace, "writes its stream-K partials into the workspace",
             (c.stream_k * c.bm, c.bn), "(stream_k bm) x bn", c.bn, "bn"),
            (flags, "keeps its stream-K flags in the flags buffer",
             (1, c.stream_k),
             "1 x stream_k", c.stream_k, "stream_k"))


def stream_k_tiles(s, ring, epilogue, workspace, flags, *, mainloop, store,
                   block_origin):
    """This threadgroup's work in a stream-K launch (the module doc):
    ``s`` is gemm_block's shape, ``ring`` its operand ring; gemm_block
    gives its parts: ``mainloop(s, ring, row0, col0, k_begin, k_end)``
    (the accumulator), ``store(s, acc, row0, col0, epilogue)`` and
    ``block_origin(config, m, n, block)``."""
    c = s.config
    # The launch's threadgroups, at most the workspace's slots (any more
    # stay idle; config.launch gives exactly stream_k).
    groups = imin(threadgroups_per_grid("x"), c.stream_k)
    g = threadgroup_position_in_grid("x")
    kt = s.ktiles
    tiles = ((s.m + (c.bm - 1)) // c.bm) * ((s.n + (c.bn - 1)) // c.bn)
    waves, rest = tiles // groups, tiles % groups
    sk = where(where(rest + groups, tiles, waves == 0), 0, rest == 0)
    total = sk * kt
    q, r = total // groups, total % groups
    begin = g * q + imin(g, r)
    end = begin + q + where(0, 1, g < r)
    has_sk = end > begin
    last_tile = where(0, (end - 1) // kt, has_sk)
    n_sk = where(0, last_tile - begin // kt + 1, has_sk)
    dp = tiles - sk
    n_dp = where(0, (dp - g + groups - 1) // groups, g < dp)
    units = where(0, n_sk + n_dp, g < groups)
    # The threadgroup whose range holds K step x (x < total).
    big = r * (q + 1)

    def owner(x):
        return where(r + (x - big) // imax(q, 1), x // (q + 1), x < big)

    slot = c.bm * c.bn
    tid = thread_index_in_threadgroup()
    with for_range(0, units, dtype="uint") as j:
        in_sk = j < n_sk
        t = where(sk + g + (j - n_sk) * groups, last_tile - j, in_sk)
        first = t * kt
        k_begin = where(0, imax(begin, first) - first, in_sk)
        k_end = where(kt, imin(end, first + kt) - first, in_sk)
        row0, col0 = block_origin(c, s.m, s.n, t)
        acc = mainloop(s, ring, row0, col0, k_begin, k_end)
        ends_block = k_end == kt
        with if_(k_end < kt):   # a partial: to this threadgroup's slot
            mma_store(acc, workspace, ld=c.bn,
                      offset=g * slot + s.wrow * c.bn + s.wcol)
            barrier("mem_device")
            with if_(tid == 0):
                atomic_store(flags, g, 1, order="release")
        # Finishing: the partials of threadgroups owner(first) .. g - 1,
        # in that order (none for a whole block or a partial).
        finishes = (k_begin > 0) & ends_block
        lowest = where(g, owner(first), finishes)
        with for_range(lowest, g, dtype="uint", init=[acc]) as (h, carry):
            with while_(lambda: atomic_load(flags, h, order="acquire") == 0):
                pass
            carry[0] = carry[0] + mma_load(
                workspace, s.wtm, s.wtn, ld=c.bn,
                offset=h * slot + s.wrow * c.bn + s.wcol)
            barrier("mem_device")   # every thread has seen the flag
            with if_(tid == 0):
                atomic_store(flags, h, 0)
        acc = carry[0]
        with if_(ends_block):
            store(s, acc, row0, col0, epilogue)


# A finisher's wait for the partials it sums, in K steps (the cost model).
STREAM_K_WAIT_STEPS = 1


def stream_k_cost(config, m: int, n: int, k: int) -> float:
    """The modelled time of a stream-K launch, in K steps of its block on
    one multiprocessor (docs/design/gemm-heuristic.md): the most K steps
    any threadgroup runs, plus for a threadgroup that finishes a block the
    store of its own partial and the loads of the others' (at the rate a
    K step reads its operands), plus one step of waiting."""
    c = config
    step_bytes = (c.bm + c.bn) * c.bk * 2
    tile_steps = c.bm * c.bn * 4 / step_bytes
    worst = 0.0
    schedule = stream_k_schedule(c, m, n, k)
    kt = -(-k // c.bk)
    # Threadgroups contributing to each split block.
    parts = {}
    for units in schedule:
        for t, kb, ke in units:
            if ke - kb < kt:
                parts[t] = parts.get(t, 0) + 1
    for units in schedule:
        steps = sum(ke - kb for _, kb, ke in units)
        fix = 0.0
        for t, kb, ke in units:
            if ke < kt:
                fix += tile_steps
            elif kb > 0:
                fix += (parts[t] - 1) * tile_steps + STREAM_K_WAIT_STEPS
        worst = max(worst, steps + fix)
    return worst
