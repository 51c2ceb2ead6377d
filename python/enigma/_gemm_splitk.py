"""Split K with the reduction in the same kernel
(docs/design/split-k-in-kernel.md).

``MmaConfig(split_k=S)`` with ``workspace=`` and ``flags=`` given to
:func:`enigma.gemm_block`: the ``S`` threadgroups of one output block
(grid rows ``0 .. S - 1``) each store their float partial product to the
block's slots of the workspace and count themselves in the block's
counter (one atomic add, acquire and release). The threadgroup that
counts last adds the ``S`` partials in the order ``0, 1, ..., S - 1``
(the same bit for bit whichever threadgroup came last), sets the counter
back to zero, applies the user's epilogue and stores the block.

Nobody waits for anybody: a threadgroup that is not last leaves, so the
launch needs no co-residency (unlike stream-K), and the CPU and MSL host
runtimes, which run threadgroups one after another, compute the same.
"""

from __future__ import annotations

from ._control import for_range, if_
from ._cooperation import atomic_fetch_add, atomic_store, threadgroup_alloc
from ._ir import BufferProxy, fail
from ._mma import mma_load, mma_store
from ._threads import barrier, thread_index_in_threadgroup

__all__ = ["split_k_workspace"]


def split_k_workspace(config, m: int, n: int) -> tuple:
    """``(floats, flags)``: the sizes, in elements, of the float workspace
    and the uint counters a split-K :func:`gemm_block` with ``config``
    needs to sum its partial products in the kernel for an ``m x n`` C
    (``split_k`` partials of ``bm x bn`` and one counter per output
    block). The counters must be zero before the first launch; every
    launch leaves them zero."""
    if not isinstance(getattr(config, "split_k", None), int) or \
            config.split_k < 2:
        fail("split_k_workspace: config must be an MmaConfig with "
             f"split_k > 1, got {config!r}")
    blocks = config.tiles(m, n)   # checks m and n
    return blocks * config.split_k * config.bm * config.bn, blocks


def split_k_buffers(config, m, n, workspace, flags, what):
    """EnigmaErrors for missing or mistyped buffers, else the matrices
    gemm_block records for them (a launch with smaller ones is a
    DispatchError where m and n are known)."""
    for name, buf, dtype in (("workspace", workspace, "f32"),
                             ("flags", flags, "u32")):
        if not isinstance(buf, BufferProxy):
            fail(f"{what}: {config}: summing split-K partials in the kernel "
                 f"needs {name}= (a buffer parameter of {dtype}; "
                 "enigma.split_k_workspace gives its size), got "
                 f"{type(buf).__name__}")
        if buf.dtype.name != dtype:
            fail(f"{what}: {config}: {name} must hold {dtype}, got "
                 f"{buf.dtype.name}")
    # A row per block row of C (ceil(m / bm)) holding the split_k partials
    # of each of its ceil(n / bn) blocks; a counter per block.
    c = config
    per_row = (n, c.bn, c.split_k * c.bm * c.bn)
    return ((workspace, "writes its split-K partials into the workspace",
             ((m, c.bm, 1), per_row), "(ceil(m/bm)) x (ceil(n/bn) split_k "
             "bm bn)", per_row, "ceil(n/bn) split_k bm bn"),
            (flags, "counts the split-K partials of each block in flags",
             ((m, c.bm, 1), (n, c.bn, 1)), "(ceil(m/bm)) x (ceil(n/bn))",
             (n, c.bn, 1), "ceil(n/bn)"))


class SplitKReduction:
    """The in-kernel sum of one launch's partials: make it at the top
    level of the kernel (it allocates the threadgroup word that tells
    every thread whether its threadgroup came last), then call
    :meth:`finish` with each block's partial product."""

    def __init__(self, shape, workspace, flags, split):
        self.shape, self.workspace, self.flags = shape, workspace, flags
        self.split = split
        self.arrived = threadgroup_alloc("u32", 1)

    def finish(self, acc, row0, col0, epilogue, store):
        """Stores this threadgroup's partial of the block at (row0, col0);
        the last of the block's ``split_k`` threadgroups sums all of them
        in order and stores the block with ``store(shape, acc, row0,
        col0, epilogue)``."""
        s, c = self.shape, self.shape.config
        splits = c.split_k
        block = (row0 // c.bm) * ((s.n + (c.bn - 1)) // c.bn) + col0 // c.bn
        slot = c.bm * c.bn
        first = block * (splits * slot) + s.wrow * c.bn + s.wcol
        mma_store(acc, self.workspace, ld=c.bn,
                  offset=first + self.split * slot)
        # Every thread's stores reach the device before the count does.
        barrier("mem_device")
        tid = thread_index_in_threadgroup()
        with if_(tid == 0):
            self.arrived[0] = atomic_fetch_add(self.flags, block, 1,
                                               order="acq_rel")
        barrier()
        with if_(self.arrived[0] == splits - 1):
            # One partial at a time (a loop, not unrolled: ptxas hoisted
            # the unrolled loads of 128 x 128 blocks and spilled).
            total = mma_load(self.workspace, s.wtm, s.wtn, ld=c.bn,
                             offset=first)
            with for_range(1, splits, dtype="uint", init=[total]) as \
                    (h, carry):
                carry[0] = carry[0] + mma_load(
                    self.workspace, s.wtm, s.wtn, ld=c.bn,
                    offset=first + h * slot)
            with if_(tid == 0):   # ready for the next launch
                atomic_store(self.flags, block, 0)
            store(s, carry[0], row0, col0, epilogue)
