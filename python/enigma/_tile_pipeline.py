"""Multi-buffered threadgroup memory for tiled kernels
(docs/reference/tile.md): a :class:`Pipeline` of ``stages`` buffers used as
a ring that rotates with ``advance()``, made by ``pipeline()``, and the
:class:`PipelineStage` it hands out, a threadgroup tensor that ``copy`` and
``gemm`` (``_tile``, ``_tile_gemm``) take like any other. The ring position
is a traced value carried through loops and branches. The design is in
docs/design/tile-helpers.md.
"""

from __future__ import annotations

from ._cooperation import ThreadgroupTensor, threadgroup_alloc
from ._dtypes import as_dtype
from ._ir import IRValue, current_tracer, fail, plain_index, to_value
from ._slots import Slot, control_state

__all__ = ["pipeline", "Pipeline", "PipelineStage"]

_U32 = as_dtype("uint")


class PipelineStage(ThreadgroupTensor):
    """One stage of a :class:`Pipeline`: ``size`` consecutive elements of
    the pipeline's threadgroup allocation, starting at element ``offset``
    (a traced ``uint``, because the stage a name such as ``front()`` refers
    to may be chosen at run time inside a traced loop).

    A stage is a threadgroup tensor of ``size`` elements: ``s[i]`` loads and
    ``s[i] = v`` stores element ``i`` of the stage (a constant ``i``
    outside ``0..size-1`` is an EnigmaError, a traced one is not checked),
    ``len(s)`` is ``size``, and it goes wherever a ``threadgroup_alloc``
    tensor does (``copy``, ``gemm``, ``load_if`` / ``store_if``, atomics,
    simdgroup matrix loads and stores). A stage denotes the buffer it named
    when it was taken: after ``advance()`` / ``swap()`` call ``front()`` /
    ``back()`` again."""

    def __init__(self, tensor: ThreadgroupTensor, offset: IRValue, size: int,
                 label: str):
        super().__init__(tensor._tracer, tensor._array, tensor.dtype, size)
        self._tensor = tensor
        self.offset = offset
        self.name = label

    def _index(self, index) -> IRValue:
        """The element of the whole allocation that is element ``index`` of
        the stage (what every access of a threadgroup tensor goes through,
        atomics included)."""
        index = plain_index(index)
        if isinstance(index, IRValue):
            if index.lanes != 1 or index.dtype.is_float or \
                    index.dtype.name == "b1":
                fail(f"index of {self.name} must be an integer, got a "
                     f"{index.dtype.name} value")
            return self.offset + index.cast(_U32)
        if isinstance(index, bool) or not isinstance(index, int):
            fail(f"index of {self.name} must be an integer, got "
                 f"{type(index).__name__}")
        if not 0 <= index < self.size:
            fail(f"index {index} is out of range for {self.name} "
                 f"({self.size} elements)")
        return self.offset + index

    def _view_start(self) -> IRValue:
        """Where the stage starts in the allocation (simdgroup matrix loads
        and stores add it to their offset)."""
        return self.offset

    def __repr__(self) -> str:
        return f"<{self.name}: threadgroup {self.dtype.msl}[{self.size}]>"


class Pipeline:
    """Multi-buffered threadgroup memory, ``Pipeline(dtype, size,
    stages=2)`` (or :func:`pipeline`): ``stages`` (at least 2) buffers of
    ``size`` elements in one allocation, used as a ring so that one stage
    can be filled while another is computed on. Make it at the top level of
    the kernel body, like ``threadgroup_alloc``.

    Stage ``k`` (``0 <= k < stages``) is the buffer ``k`` places after the
    front in the ring. ``front()`` is stage 0 (the one to compute on),
    ``back()`` is stage ``stages - 1`` (the one to fill next), and
    ``advance()`` rotates the ring by one: the old stage 1 becomes the
    front, the old front becomes the back. ``rotate()`` is the same call;
    ``swap()`` is ``advance()`` for a double buffer (2 stages).

    The ring position is a traced ``uint`` kept with the kernel's carried
    values, so ``advance()`` works both in Python-unrolled loops (the
    position folds to a constant) and inside traced loops
    (``enigma.range``, ``for_range``, ``if_`` arms), where it becomes a
    loop-carried value and each stage's offset is computed at run time."""

    def __init__(self, dtype, size, stages=2):
        tracer = current_tracer("pipeline")
        size, stages = plain_index((size, stages))
        for name, value in (("size", size), ("stages", stages)):
            if isinstance(value, bool) or not isinstance(value, int):
                fail(f"pipeline: {name} must be a Python int, got "
                     f"{type(value).__name__}")
        if size < 1:
            fail(f"pipeline: size must be at least 1, got {size}")
        if stages < 2:
            fail(f"pipeline: stages must be >= 2, got {stages} (a single "
                 "buffer is a threadgroup_alloc)")
        self._tensor = threadgroup_alloc(dtype, size * stages)
        self.dtype = self._tensor.dtype
        self.size = size
        self.stages = stages
        # The ring position lives in a control-flow slot: every loop or
        # branch traced from now on carries it, so advance() inside one is
        # seen by later iterations and by the code after it.
        self._position = Slot(to_value(0, _U32), "pipeline ring position")
        control_state(tracer).live.append(self._position)

    @property
    def position(self) -> IRValue:
        """The physical buffer (0..stages-1) that is the front now."""
        return self._position.value

    def stage(self, k) -> PipelineStage:
        """Stage ``k`` of the ring: a Python int in ``0..stages-1``, or a
        traced integer (taken modulo ``stages``)."""
        k = plain_index(k)
        if isinstance(k, IRValue):
            if k.lanes != 1 or k.dtype.is_float or k.dtype.name == "b1":
                fail(f"pipeline.stage: k must be an integer, got a "
                     f"{k.dtype.name} value")
            k = k.cast(_U32)
        elif isinstance(k, bool) or not isinstance(k, int):
            fail(f"pipeline.stage: k must be an integer, got "
                 f"{type(k).__name__}")
        elif not 0 <= k < self.stages:
            fail(f"pipeline.stage: k must be in 0..{self.stages - 1} for a "
                 f"{self.stages}-stage pipeline, got {k}")
        if isinstance(k, int) and k == 0:
            buffer = self.position          # already in 0..stages-1
        else:
            buffer = (self.position + k) % self.stages
        label = f"pipeline stage {k}" if isinstance(k, int) \
            else "pipeline stage"
        return PipelineStage(self._tensor, buffer * self.size, self.size,
                             label)

    def front(self) -> PipelineStage:
        """Stage 0: the buffer being computed on."""
        return self.stage(0)

    def back(self) -> PipelineStage:
        """Stage ``stages - 1``: the buffer being filled."""
        return self.stage(self.stages - 1)

    def advance(self) -> None:
        """Rotates the ring forward by one stage (stage ``k + 1`` becomes
        stage ``k``, the front becomes the back). Barriers are the
        caller's."""
        current_tracer("pipeline.advance")
        self._position.value = (self.position + 1) % self.stages

    def rotate(self) -> None:
        """The same as :meth:`advance`."""
        self.advance()

    def swap(self) -> None:
        """Exchanges front and back of a 2-stage pipeline (an EnigmaError
        for any other number of stages: use advance())."""
        if self.stages != 2:
            fail(f"pipeline.swap: swap() exchanges the two buffers of a "
                 f"2-stage pipeline, this one has {self.stages} stages; use "
                 "advance()")
        self.advance()

    def __repr__(self) -> str:
        return (f"<pipeline of {self.stages} x threadgroup "
                f"{self.dtype.msl}[{self.size}]>")


def pipeline(dtype, size, stages=2) -> Pipeline:
    """Allocates ``stages`` (at least 2) threadgroup buffers of ``size``
    elements of ``dtype`` (one ``threadgroup_alloc`` of ``stages * size``
    elements) for multi-buffering: fill ``back()`` while computing on
    ``front()``, then ``advance()`` (``swap()`` for 2 stages). Call it at
    the top level of the kernel body, like ``threadgroup_alloc``; the
    threadgroup memory limit (Metal's 32 KiB, 227 KiB at most) counts all
    stages. ``size`` and ``stages`` are Python
    ints. The same as ``Pipeline(dtype, size, stages)``."""
    return Pipeline(dtype, size, stages)
