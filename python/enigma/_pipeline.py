"""Pipelines with roles: warp specialisation as a construct of the language
(docs/reference/pipelines.md, docs/design/warp-specialization.md).

A :class:`PipelineRing` is a ring of ``stages`` slots in each of its
threadgroup buffers. :func:`pipeline_loop` runs ``for i in [lower,
upper): producer(i, slot); consumer(i, slot, carry)`` on it: the producer
copies tiles into the iteration's stage (:func:`stage_copy` only), the
consumer is any kernel code that reads that stage (products with
:func:`enigma.mma` on ``ring.stage(buffer, slot)``). Every target runs the
producers up to ``stages`` iterations ahead: the CPU and Metal as a
software pipeline of the whole threadgroup, CUDA on Hopper with a producer
warpgroup issuing Tensor Memory Accelerator copies into the ring and the
consumer warps waiting on mbarriers.
"""

from __future__ import annotations

from ._control import Carry, Slot, initial_value
from ._cooperation import threadgroup_alloc
from ._dtypes import as_dtype
from ._ir import (BufferProxy, Fragment, IRValue, current_tracer, fail,
                  plain_index, static_int, to_value)
from ._layout_swizzle import Swizzle
from ._slots import control_state
from ._tile_pipeline import PipelineStage

__all__ = ["PipelineRing", "pipeline_ring", "pipeline_loop", "stage_copy",
           "consumer_turn"]

_U32 = as_dtype("uint")
_F32 = as_dtype("float")


def _call(function: str, *args):
    return current_tracer(function).call(function, *args)


def _u32(x, what: str) -> IRValue:
    """A traced integer (a Python int becomes a uint constant)."""
    if isinstance(x, Fragment):
        fail(f"{what} must be an integer, got a fragment")
    if isinstance(x, IRValue):
        if x.lanes != 1 or x.dtype.is_float or x.dtype.name == "b1":
            fail(f"{what} must be an integer, got {x.dtype.name}")
        return x
    x = plain_index(x)
    if isinstance(x, bool) or not isinstance(x, int):
        fail(f"{what} must be an integer, got {type(x).__name__}")
    if x < 0:
        fail(f"{what} must not be negative, got {x}")
    return to_value(x, _U32 if x < 2**32 else as_dtype("u64"))


def _swizzle(sw, what: str):
    if sw is None:
        return None
    if isinstance(sw, Swizzle):
        return (sw.bits, sw.base, sw.shift)
    if isinstance(sw, tuple) and len(sw) == 3 and \
            all(isinstance(v, int) for v in sw):
        return tuple(sw)
    fail(f"{what} must be an enigma.Swizzle, got {sw!r}")


class PipelineRing:
    """A ring of ``stages`` slots in each of its threadgroup buffers (made
    by :func:`pipeline_ring`). ``ring.buffers[j]`` is buffer ``j`` (a
    threadgroup tensor of ``stages * slot_elements[j]`` elements);
    ``ring.stage(j, slot, offset=0)`` is slot ``slot`` of it as a pipeline
    stage (a threadgroup tensor starting at ``slot * slot_elements[j] +
    offset``) that :func:`enigma.mma_operand`, :func:`enigma.mma_load` and
    indexing accept."""

    def __init__(self, handle, buffers, slot_elements, stages, roles):
        self._handle = handle
        self.buffers = buffers
        self.slot_elements = slot_elements
        self.stages = stages
        self.producer_registers, self.consumer_registers, self.cluster = roles

    def stage(self, buffer: int, slot, offset: int = 0) -> PipelineStage:
        """Slot ``slot`` (the ``slot`` of a producer or consumer region) of
        buffer ``buffer``, from element ``offset`` of the slot on."""
        buffer = static_int(buffer, "stage: buffer", minimum=0)
        if not 0 <= buffer < len(self.buffers):
            fail(f"stage: buffer {buffer} of a ring of {len(self.buffers)}")
        size = self.slot_elements[buffer]
        offset = static_int(offset, "stage: offset", minimum=0)
        start = _u32(slot, "stage: slot") * size + offset
        return PipelineStage(self.buffers[buffer], start, size - offset,
                             f"stage of ring buffer {buffer}")

    def __repr__(self) -> str:
        return (f"PipelineRing(stages={self.stages}, slot_elements="
                f"{self.slot_elements})")


def pipeline_ring(stages: int, buffers, *, threads: int | None = None,
                  producer_registers: int = 40,
                  consumer_registers: int = 232,
                  cluster: int = 1) -> PipelineRing:
    """A ring of ``stages`` (2 to 16) slots: ``buffers`` is a list of
    ``(dtype, elements per slot)``, each allocated as threadgroup memory
    of ``stages`` slots. Call it at the top level of the kernel body. The
    kernel then runs only in full threadgroups of ``threads`` threads, a
    multiple of 128 (the consumers; every other launch is a DispatchError);
    leave it out where ``enigma.gemm_block`` fixes the size.

    The roles of the kernel on CUDA: a producer warpgroup runs beside the
    threadgroup with ``producer_registers`` registers per thread, the
    consumers with ``consumer_registers`` (``setmaxnreg``; multiples of 8
    from 24 to 256 that fit 64K registers); ``cluster`` (1, 2, 4 or 8)
    threadgroups of consecutive x positions form a thread-block cluster
    that shares copies marked ``multicast``. Elsewhere these do nothing."""
    stages = static_int(stages, "pipeline_ring: stages")
    if threads is not None:
        _call("require_threadgroup_size",
              static_int(threads, "pipeline_ring: threads"))
    if not 2 <= stages <= 16:
        fail(f"pipeline_ring: stages must be 2 to 16, got {stages}")
    if not isinstance(buffers, (list, tuple)) or not buffers:
        fail("pipeline_ring: buffers must be a list of (dtype, elements per "
             "slot)")
    tensors, sizes = [], []
    for j, spec in enumerate(buffers):
        if not isinstance(spec, (list, tuple)) or len(spec) != 2:
            fail(f"pipeline_ring: buffer {j} must be (dtype, elements per "
                 f"slot), got {spec!r}")
        dtype, size = as_dtype(spec[0]), static_int(spec[1],
                                                    f"buffer {j} elements")
        if size < 1:
            fail(f"pipeline_ring: buffer {j} needs at least one element per "
                 "slot")
        tensors.append(threadgroup_alloc(dtype, stages * size))
        sizes.append(size)
    roles = tuple(static_int(v, f"pipeline_ring: {name}") for v, name in
                  ((producer_registers, "producer_registers"),
                   (consumer_registers, "consumer_registers"),
                   (cluster, "cluster")))
    handle = _call("pipeline_ring", [t._array for t in tensors], stages,
                   *roles)
    return PipelineRing(handle, tensors, sizes, stages, roles)


def pipeline_loop(ring: PipelineRing, lower, upper=None, *, producer,
                  consumer, init=None, consumer_groups: int = 1) -> list:
    """``for i in [lower, upper): producer(i, slot); consumer(i, slot,
    carry)`` on ``ring`` (``pipeline_loop(ring, n, ...)``: from 0 to n).

    ``producer(i, slot)`` issues the iteration's :func:`stage_copy` calls
    into ``slot`` and may compute with values every thread shares (kernel
    parameters, the threadgroup's position, counters of enclosing loops);
    nothing else. ``consumer(i, slot, carry)`` is any kernel code reading
    the stages of ``slot`` (``ring.stage(j, slot)``); ``carry`` holds the
    carried values (``init``): assign ``carry[k] = ...`` for the next
    iteration. Returns the carried values after the last iteration (a
    list). Fragments may stay in flight (``mma(..., asynchronous=True)``)
    from one iteration to the next; wait for the results with
    ``enigma.mma_wait``.

    The meaning is that sequential loop, run by the whole threadgroup;
    targets run producers up to ``stages`` iterations ahead, which is the
    same because producers read nothing consumers write and consumers
    only read their own stage. Call it where every thread arrives (not
    under a branch that depends on the thread).

    ``consumer_groups`` = G (1 to 4): the threadgroup's warpgroups (128
    threads each; warpgroup ``simdgroup_index // 4``) form G groups,
    warpgroup ``w`` in group ``w % G``, and iteration ``i`` runs the
    consumer in group ``(i - lower) % G`` only; the other groups' carried
    values pass unchanged. Each group so carries its own partial result
    over every G-th iteration (add them afterwards, e.g. through
    threadgroup memory), and on CUDA the groups' products overlap. The
    kernel must run in threadgroups of a multiple of 128 G threads, and
    the consumer takes no :class:`consumer_turn`
    (docs/design/consumer-groups.md)."""
    if not isinstance(ring, PipelineRing):
        fail(f"pipeline_loop: ring must be an enigma.pipeline_ring(...), got "
             f"{type(ring).__name__}")
    for name, role in (("producer", producer), ("consumer", consumer)):
        if not callable(role):
            fail(f"pipeline_loop: {name} must be a function ({name}(i, "
                 f"slot{', carry' if name == 'consumer' else ''})), got "
                 f"{type(role).__name__}")
    consumer_groups = plain_index(consumer_groups)
    if isinstance(consumer_groups, bool) or \
            not isinstance(consumer_groups, int) or \
            not 1 <= consumer_groups <= 4:
        fail(f"pipeline_loop: consumer_groups must be an int from 1 to 4, "
             f"got {consumer_groups!r}")
    if upper is None:
        lower, upper = 0, lower
    lo, hi = _u32(lower, "pipeline_loop: lower"), _u32(upper,
                                                       "pipeline_loop: upper")
    if init is None:
        init = []
    elif isinstance(init, (IRValue, int, float)):
        init = [init]
    slots = [Slot(initial_value(v, f"carry[{k}]"), f"carry[{k}]")
             for k, v in enumerate(init)]
    tracer = current_tracer("pipeline_loop")
    index, slot = (IRValue(tracer, v) for v in
                   _call("begin_pipeline", ring._handle, lo._value,
                         hi._value, [s.value._value for s in slots],
                         consumer_groups))
    producer(index, slot)
    values = _call("begin_consumer")
    index, slot = IRValue(tracer, values[0]), IRValue(tracer, values[1])
    for s, v in zip(slots, values[2:]):
        s.value = IRValue(tracer, v)
    carry = Carry(slots)
    # The carried values are live in the consumer, as a loop's are in its
    # body: an if_ there that assigns carry[k] yields it.
    live = control_state(tracer).live
    live.extend(slots)
    try:
        consumer(index, slot, carry)
    finally:
        own = {id(s) for s in slots}
        live[:] = [s for s in live if id(s) not in own]
    results = _call("end_pipeline", [s.value._value for s in slots])
    return [IRValue(tracer, v) for v in results]


def stage_copy(ring: PipelineRing, slot, buffer: int, src, *, at, shape,
               ld, box, offset: int = 0, block_cols: int | None = None,
               block_stride: int | None = None, swizzle=None,
               multicast: bool = False, transpose: bool = False) -> None:
    """In a producer region: the ``box = (box_rows, box_cols)`` box whose
    element (0, 0) is ``at = (row, col)`` of the ``shape = (rows, cols)``
    matrix in buffer parameter ``src`` (rows ``ld`` elements apart) into
    ``slot`` of ring buffer ``buffer``, from element ``offset`` of the
    slot on. Elements outside the matrix become 0 and are not read.

    Box element (r, c) lands at ``offset + (c // bc) * block_stride +
    swizzle(r * bc + c % bc)`` of the stage, with ``bc = block_cols``
    (default: the whole width) and ``block_stride`` (default ``box_rows *
    bc``): columns in blocks, each a dense tile swizzled in itself. The
    layout ``enigma.mma_operand(ring.stage(buffer, slot, offset),
    ld=bc, swizzle=..., block_stride=...)`` reads. Hopper's TMA copies a
    box whose blocks are rows of 128 bytes under
    ``enigma.mma_swizzle(bc, dtype)``, or unswizzled rows; anything else is
    copied by the producer warp. ``multicast=True``: the copy is the same
    in every threadgroup of the ring's cluster (CUDA loads it once per
    cluster).

    ``transpose=True`` (32-bit elements, box sides multiples of 4): the
    stage holds the box's transpose, a ``box_cols x box_rows`` tile; box
    element (r, c) lands at ``offset + (r // bc) * block_stride +
    swizzle(c * bc + r % bc)`` with ``bc = block_cols`` (default
    ``box_rows``) and ``block_stride`` (default ``box_cols * bc``). A box of
    a ``k x n`` matrix then lands K-major, as the TMA's copy of the ``n x
    k`` matrix would (what TF32 warpgroup products read). On CUDA the
    producer warpgroup's threads copy it (the TMA cannot transpose)."""
    if not isinstance(ring, PipelineRing):
        fail(f"stage_copy: ring must be an enigma.pipeline_ring(...), got "
             f"{type(ring).__name__}")
    if not isinstance(src, BufferProxy):
        fail(f"stage_copy: the source must be a buffer parameter, got "
             f"{type(src).__name__}")
    if src.lanes > 1:
        fail(f"stage_copy: buffer '{src.name}' holds vectors (vec_width)")
    pairs = {}
    for name, pair in (("at", at), ("shape", shape), ("box", box)):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            fail(f"stage_copy: {name} must be a pair, got {pair!r}")
        pairs[name] = pair
    box_rows = static_int(box[0], "stage_copy: box rows")
    box_cols = static_int(box[1], "stage_copy: box columns")
    buffer = static_int(buffer, "stage_copy: buffer", minimum=0)
    offset = static_int(offset, "stage_copy: offset", minimum=0)
    bc = 0 if block_cols is None else static_int(block_cols,
                                                 "stage_copy: block_cols")
    bs = 0 if block_stride is None else static_int(
        block_stride, "stage_copy: block_stride")
    if not isinstance(transpose, bool):
        fail(f"stage_copy: transpose must be True or False, got "
             f"{transpose!r}")
    _call("stage_copy", ring._handle, _u32(slot, "stage_copy: slot")._value,
          buffer, offset, box_rows, box_cols, bc, bs,
          _swizzle(swizzle, "stage_copy: swizzle"), bool(multicast),
          src._buffer, _u32(at[0], "stage_copy: row")._value,
          _u32(at[1], "stage_copy: column")._value,
          _u32(shape[0], "stage_copy: rows")._value,
          _u32(shape[1], "stage_copy: columns")._value,
          _u32(ld, "stage_copy: ld")._value, transpose)


class consumer_turn:
    """``with enigma.consumer_turn(): ...`` in a :func:`pipeline_loop`
    consumer: the body runs in one consumer warpgroup (128 threads) at a
    time, the warpgroups taking turns in order (0, 1, ..., 0, ...). It
    changes no result; on CUDA with a producer warpgroup it lets one
    warpgroup's tensor-core products run while another computes in
    registers (the other's softmax in attention). Use it at the top level
    of the consumer (not inside ``if_`` or ``range`` there), every
    iteration taking the same turns; a turn must not hold a ``barrier()``
    (docs/reference/pipelines.md, docs/design/consumer-turns.md).

    ``after``: float values or fragments computed before the turn that
    must be complete when it begins (on CUDA the assembler could otherwise
    move their computation into the turn); they change no result."""

    def __init__(self, after=()):
        if isinstance(after, (IRValue, Fragment)):
            after = [after]
        values = []
        for k, v in enumerate(after):
            if not isinstance(v, (IRValue, Fragment)) or \
                    v.dtype.name != _F32.name:
                fail(f"consumer_turn: after[{k}] must be a float value or "
                     f"fragment, got {v!r}")
            values.append(v._value)
        self._after = values

    def __enter__(self):
        _call("consumer_turn", True, self._after)
        return self

    def __exit__(self, kind, value, traceback):
        if kind is None:
            _call("consumer_turn", False)
        return False
