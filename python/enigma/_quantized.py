"""Kernels of 4-bit weight-only quantized matrices in MLX's affine format
(docs/reference/quantized.md, docs/design/quantized-matmul.md).

A weight matrix ``w`` of shape (N, K) is stored as ``w_q`` (N, K / 8)
uint32, eight 4-bit codes per word along K, the lowest nibble first, with a
``scale`` and a ``bias`` per group of ``group_size`` consecutive values of a
row: ``w[n, k] = scale[n, k // group_size] * q[n, k] + bias[n, k //
group_size]``. This module builds the kernels on that format; the host
functions that launch them are in ``enigma.quantized``.

- :func:`quantize_kernel` / :func:`dequantize_kernel`: one thread per group
  / per packed word.
- the matrix-vector kernel (decode) is in ``_quantized_matvec``; it uses
  the in-kernel pieces below (:func:`vector_load`, :func:`scaled_codes`).
- :func:`matmul_kernel`: ``Y = X W^T`` on the matrix hardware: tiles of X
  and of ``w_q`` come into threadgroup memory with ``copy_tile`` (the
  words one tile ahead), each weight tile is dequantised into threadgroup
  memory (N x K, swizzled) while the previous product runs, then
  multiplied with ``enigma.mma``; optionally split along K over
  threadgroups, whose float partial sums :func:`split_sum_kernel` adds.
"""

# No `from __future__ import annotations`: the kernels' annotations name
# dtypes of the enclosing functions, which a string annotation cannot see.

import functools
import operator

from ._control import for_range, if_, range_constexpr
from ._cooperation import ThreadgroupTensor
from ._dtypes import Scalar, as_dtype, plain_index
from ._ir import BufferProxy, IRValue, current_tracer, fail, to_value
from ._gemm import MmaConfig, grouped_block_origin, warpgroup_shape
from ._kernel import kernel
from ._math import as_type, copysign, fma, fmax, fmin, imin, where
from ._mma import (copy_commit, copy_tile, copy_wait, mma, mma_operand,
                   mma_store, mma_swizzle, mma_wait, mma_zeros)
from ._threads import (barrier, simdgroup_index_in_threadgroup,
                       thread_index_in_threadgroup,
                       threadgroup_position_in_grid,
                       thread_position_in_grid_xyz)
from ._tile_pipeline import PipelineStage, pipeline
from ._vectors import make_vec

__all__ = ["BITS", "GROUP_SIZES", "ACTIVATION_DTYPES", "SlotsConfig",
           "QmmConfig",
           "quantize_kernel", "dequantize_kernel", "matmul_kernel",
           "split_sum_kernel"]

BITS = 4
GROUP_SIZES = (32, 64, 128)
ACTIVATION_DTYPES = ("f32", "f16", "bf16")
VALUES_PER_WORD = 32 // BITS       # 8 codes in a uint32
LEVELS = (1 << BITS) - 1           # codes 0..15

_U32 = as_dtype("u32")
_F32 = as_dtype("f32")
# Annotation names of the kernels' packed and float buffers.
enigma_u32 = _U32
enigma_f32 = _F32
# float(0x4B000000 | m) == 2^23 + m for m < 2^23: a code (or a code times
# 16^j, j < 4) becomes a float with one OR and one subtraction, where an
# int-to-float conversion runs at a quarter of the arithmetic rate on
# NVIDIA GPUs.
MAGIC_BITS = 0x4B000000
_MAGIC = 8388608.0                 # 2^23
_EPS = 1e-7                        # the smallest scale (MLX's eps)


def activation_dtype(dtype, what="dtype"):
    d = as_dtype(dtype)
    if d.name not in ACTIVATION_DTYPES:
        fail(f"{what} must be f32, f16 or bf16, got {d.name}")
    return d


def check_group_size(group_size):
    if group_size not in GROUP_SIZES:
        fail(f"group_size must be 32, 64 or 128, got {group_size!r}")
    return group_size


# --------------------------------------------------------------------------
# In-kernel pieces
# --------------------------------------------------------------------------

def _u32(x) -> IRValue:
    return to_value(x, _U32) if not isinstance(x, IRValue) else x.cast(_U32)


def _memory(mem):
    """(core memory, base offset or None) of a buffer parameter or a
    threadgroup tensor / pipeline stage."""
    if isinstance(mem, PipelineStage):
        return mem._tensor._array, mem.offset
    if isinstance(mem, ThreadgroupTensor):
        return mem._array, None
    if isinstance(mem, BufferProxy):
        return mem._buffer, None
    fail(f"vector access: expected a buffer or threadgroup memory, got "
         f"{type(mem).__name__}")


def vector_load(mem, index, lanes) -> IRValue:
    """``lanes`` consecutive elements of ``mem`` from ``index`` on, one
    access (``index`` must be a multiple of ``lanes``: the callers' indices
    are, since K is a multiple of 32)."""
    tracer = current_tracer("vector load")
    handle, base = _memory(mem)
    index = _u32(index) if base is None else base + _u32(index)
    return IRValue(tracer, tracer.call("vector_load", handle, index._value,
                                       lanes))


def vector_store(mem, index, value) -> None:
    tracer = current_tracer("vector store")
    handle, base = _memory(mem)
    index = _u32(index) if base is None else base + _u32(index)
    tracer.call("vector_store", handle, index._value, value._value)


def magic_bits(size, base=None):
    """``0x4B000000`` (or ``base``) as a value the compiler cannot fold:
    ``size >> 31`` is 0 (``size`` is a size the host functions keep below
    2^31) but unknown to the compiler, so ``(word & mask) | magic`` stays
    one three-input bit operation (LOP3 on NVIDIA GPUs) with the mask as
    its immediate; with both constants immediate it takes two."""
    return (MAGIC_BITS if base is None else base) | (size >> 31)


def magic_after(loaded, hold, base=None):
    """``0x4B000000`` (or ``base``) made to depend on every value of
    ``loaded`` (32-bit words: scalars, or fragments with a fragment
    ``hold``) through ``hold``, a 0 the compiler cannot see (``K >> 31``,
    as in :func:`magic_bits`): no code is decoded with it before all of
    them have returned. So all of a step's loads are issued before the
    first is used; the compilers otherwise sink each load to its use,
    leaving one in flight per lane (seen in the SASS)."""
    every = functools.reduce(operator.xor, loaded)
    return (MAGIC_BITS if base is None else base) | (every & hold)


def scaled_codes(word, magic, halves=None) -> list:
    """The eight codes of a packed word as floats, code ``i`` times
    ``16^(i % 4)`` (exact): ``(word & 0xF << 4j) | 2^23 bits`` is the float
    ``2^23 + q 16^j``, so each code costs one bit operation and one
    subtraction; the high half is shifted down once. ``magic`` is
    :func:`magic_bits`. ``halves``: the two half-words to read codes 0..3
    and 4..7 from, when not ``(word, word >> 16)``."""
    values = []
    for half in halves or (word, word >> 16):
        for j in range(4):
            bits = (half & (0xF << (4 * j))) | magic
            values.append(as_type(bits, "float") - _MAGIC)
    return values


UNSCALE = (1.0, 1.0 / 16, 1.0 / 256, 1.0 / 4096)


def _dequantize_word(word, scale, bias, magic, halves=None) -> list:
    """The eight float values ``scale * q + bias`` of a word, each with one
    rounding: ``fma(scale / 16^j, q 16^j, bias)`` (the factors are powers of
    two, so the product is exactly ``scale * q``). ``halves`` as in
    :func:`scaled_codes`."""
    scaled = [scale * f for f in UNSCALE]
    return [fma(scaled[i % 4], c, bias)
            for i, c in enumerate(scaled_codes(word, magic, halves))]


def _rint(x):
    """Round to nearest, ties to even (numpy's ``rint``), for any float:
    below 2^23 adding and subtracting 2^23 rounds, as IEEE addition
    does; from 2^23 on every float is an integer already."""
    ax = abs(x)
    r = (ax + _MAGIC) - _MAGIC
    return copysign(where(r, ax, ax >= _MAGIC), x)


# --------------------------------------------------------------------------
# quantize / dequantize
# --------------------------------------------------------------------------

def quantize_kernel(dtype, group_size):
    """Kernel ``(W: T, Wq: u32, S: T, B: T, groups: u32)``: one thread per
    group of ``group_size`` values of the flattened (N, K) matrix ``W``
    writes its ``group_size / 8`` words, its scale and its bias (MLX's
    affine quantisation, docs/reference/quantized.md)."""
    T = activation_dtype(dtype)
    gs = check_group_size(group_size)
    words = gs // VALUES_PER_WORD

    @kernel
    def quantize_groups(W: T, Wq: enigma_u32, S: T, B: T,
                        groups: Scalar(enigma_u32)):
        g = thread_position_in_grid_xyz("x")
        with if_(g < groups):
            base = g * gs
            with for_range(0, gs, dtype="uint",
                           init=[W[base].cast("float"),
                                 W[base].cast("float"), 0.0]) as (i, lim):
                v = W[base + i].cast("float")
                lim[0] = fmin(lim[0], v)
                lim[1] = fmax(lim[1], v)
                # 0, or NaN once a value is NaN or infinite (fmin and fmax
                # pass over a NaN): added to the scale and bias below, so
                # the whole group dequantises to NaN, as numpy's max and
                # min would make it, rather than to finite values.
                lim[2] = lim[2] + (v - v)
            w_min, w_max, not_finite = lim[0], lim[1], lim[2]
            delta = fmax((w_max - w_min) / float(LEVELS), _EPS)
            at_min = abs(w_min) > abs(w_max)
            scale = where(-delta, delta, at_min)
            edge = where(w_max, w_min, at_min)
            q0 = _rint(edge / scale)
            nonzero = q0 != 0.0
            scale = where(scale, edge / q0, nonzero)
            bias = where(0.0, edge, nonzero)
            scale = scale + not_finite
            bias = bias + not_finite
            S[g] = scale
            B[g] = bias
            with for_range(0, words, dtype="uint") as j:
                word = to_value(0, _U32)
                for p in range_constexpr(VALUES_PER_WORD):
                    v = (W[base + j * VALUES_PER_WORD + p].cast("float") -
                         bias) / scale
                    # NaN (a group with a NaN or infinite weight) becomes
                    # code 0.
                    v = fmin(fmax(v, 0.0), float(LEVELS))
                    q = ((v + _MAGIC) - _MAGIC).cast(_U32)
                    word = word | (q << (BITS * p))
                Wq[g * words + j] = word

    return quantize_groups


def dequantize_kernel(dtype, group_size):
    """Kernel ``(Wq: u32, S: T, B: T, W: T, words: u32)``: one thread per
    packed word writes its eight values ``T(fma(scale, q, bias))``."""
    T = activation_dtype(dtype)
    gs = check_group_size(group_size)
    words_per_group = gs // VALUES_PER_WORD

    @kernel
    def dequantize_words(Wq: enigma_u32, S: T, B: T, W: T,
                         words: Scalar(enigma_u32)):
        i = thread_position_in_grid_xyz("x")
        with if_(i < words):
            g = i // words_per_group
            values = _dequantize_word(Wq[i], S[g].cast("float"),
                                      B[g].cast("float"), magic_bits(words))
            for h in range_constexpr(2):
                vector_store(W, i * VALUES_PER_WORD + 4 * h,
                             make_vec(*[v.cast(T) for v in
                                        values[4 * h:4 * h + 4]]))

    return dequantize_words


# --------------------------------------------------------------------------
# Matrix products on the matrix hardware (prefill, and decode from a few
# rows on)
# --------------------------------------------------------------------------

class SlotsConfig:
    """A kernel configuration whose ``__slots__`` are its fields: equal,
    hashed and printed by them."""

    __slots__ = ()

    def as_dict(self) -> dict:
        return {s: getattr(self, s) for s in self.__slots__}

    def __eq__(self, other):
        return type(other) is type(self) and self.as_dict() == other.as_dict()

    def replace(self, **changes):
        """This configuration with ``changes`` (field=value) made."""
        d = self.as_dict()
        d.update(changes)
        return type(self)(**d)

    def __hash__(self):
        return hash((type(self).__name__,) + tuple(self.as_dict().values()))

    def __repr__(self) -> str:
        return (type(self).__name__ + "(" + ", ".join(
            f"{k}={v}" for k, v in self.as_dict().items()) + ")")


class QmmConfig(SlotsConfig):
    """Tile shapes of :func:`matmul_kernel`: a ``bm x bn`` block of Y per
    threadgroup (``bm`` rows of X, ``bn`` rows of the weights), K in steps
    of ``bk``, ``wm x wn`` simdgroups (each a ``bm/wm x bn/wn``
    fragment), ``stages`` tiles of X and of the packed words in threadgroup
    memory (the dequantised weights take 2 or 3, :meth:`weight_stages`),
    launch order grouped
    by ``group_m`` block rows, and ``splits`` threadgroups along K (None:
    chosen per launch so that the GPU has enough threadgroups; 1: none)."""

    # Never clustered: gemm's grouped block order (_gemm.grouped_block_origin)
    # reads these.
    cluster = 1
    cluster_shares = "a"

    __slots__ = ("bm", "bn", "bk", "wm", "wn", "stages", "group_m",
                 "splits")

    def __init__(self, bm=128, bn=128, bk=64, wm=8, wn=1, stages=3,
                 group_m=8, splits=None):
        (self.bm, self.bn, self.bk, self.wm, self.wn, self.stages,
         self.group_m, self.splits) = plain_index(
            (bm, bn, bk, wm, wn, stages, group_m, splits))
        for name in self.__slots__:
            v = getattr(self, name)
            if name == "splits" and v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                fail(f"QmmConfig: {name} must be a positive int, got {v!r}")
        if self.bm % (16 * self.wm) or self.bn % (16 * self.wn):
            fail(f"{self}: each simdgroup's tile ({self.bm}/{self.wm} x "
                 f"{self.bn}/{self.wn}) must have sides that are multiples "
                 "of 16")
        if self.bk % 32 or self.bk > 512:
            fail(f"{self}: bk must be a multiple of 32 up to 512, got "
                 f"{self.bk}")
        if not 2 <= self.stages <= 8:
            fail(f"{self}: stages must be 2 to 8, got {self.stages}")
        if self.threads > 1024:
            fail(f"{self}: {self.threads} threads per threadgroup; at most "
                 "1024")

    @property
    def threads(self) -> int:
        return 32 * self.wm * self.wn

    def mma_config(self) -> MmaConfig:
        return MmaConfig(self.bm, self.bn, self.bk, self.wm, self.wn,
                         self.stages, self.group_m)

    def warpgroup(self, dtype) -> bool:
        """Whether the products run as warpgroup products (wgmma on
        Hopper): :func:`enigma.warpgroup_shape` of the tiles."""
        return warpgroup_shape(self.mma_config(), activation_dtype(dtype))

    def weight_stages(self, dtype) -> int:
        """Stages of dequantised weight tiles: 2, or 3 when the products
        are asynchronous warpgroup products (one may still read the
        stage before the previous one). Only X's tiles and the packed
        words need ``stages`` (the copies in flight); a weight tile is
        written in the step before its product."""
        return 3 if self.asynchronous(dtype) else 2

    def asynchronous(self, dtype) -> bool:
        """Whether products stay in flight across steps: warpgroup
        products with 3 or more stages."""
        return self.warpgroup(dtype) and self.stages >= 3

    def smem_bytes(self, dtype) -> int:
        """Threadgroup memory of X's tiles and the dequantised weight
        tiles; the staged words add ``stages * bn * bk / 2`` bytes."""
        return (self.stages * self.bm + self.weight_stages(dtype) *
                self.bn) * self.bk * activation_dtype(dtype).itemsize

    def blocks(self, m: int, n: int) -> int:
        return -(-m // self.bm) * -(-n // self.bn)


class _WeightTiles:
    """The ``bn x bk`` tiles of the packed weights a threadgroup walks.
    :meth:`copy` brings a tile's words (``bn x bk / 8``) into a stage of
    threadgroup memory with ``copy_tile`` (cp.async on CUDA: no registers
    wait for them); :meth:`scales` reads the tile's scales and biases into
    registers; :meth:`store` dequantises a staged tile into a stage of
    ``bn x bk`` values, N x K, swizzled for ``mma``. Each thread owns
    ``per_thread`` chunks of 32 values (four words, one 16-byte access),
    chunk ``f = t + i * threads`` at tile row ``f // (bk / 32)``, column
    ``32 (f % (bk / 32))``."""

    def __init__(self, c, dtype, gs, Wq, S, B, N, K, col0, kt_end):
        self.c, self.dtype, self.gs = c, dtype, gs
        self.Wq, self.S, self.B, self.N, self.K = Wq, S, B, N, K
        self.col0, self.kt_end = col0, kt_end
        self.words = c.bk // VALUES_PER_WORD          # per tile row
        self.chunks_per_row = c.bk // 32
        chunks = c.bn * self.chunks_per_row
        self.per_thread = -(-chunks // c.threads)
        self.swizzle = mma_swizzle(c.bk, dtype)
        if self.swizzle is not None and self.swizzle.yyy_mask & 31:
            fail(f"{c}: the swizzle of {c.bk}-value rows reads bits below "
                 "5 of an offset")
        self.magic = magic_bits(K)
        t = thread_index_in_threadgroup()
        groups_per_row = K // gs
        # Lanes with bit `swap_bit` set store the two 8-byte halves of each
        # 16-byte chunk in the other order, so that every 8-byte store of a
        # half-warp covers all 32 banks (see _swap_bit).
        bit = self._swap_bit(chunks)
        self.shift = None
        swap = 0
        if bit is not None:
            swap = (t >> bit) & 1
            self.shift = swap * 16
        # Per owned chunk: where its words are in a staged tile, its scale
        # row, its column in the tile and where its values go. When the
        # threads do not divide the chunks, those left over in the last
        # round take the last chunk again and store the same values there
        # (a branch around the store would make the pipelines' positions,
        # which every branch carries, depend on the thread).
        self.owned = []
        for i in range(self.per_thread):
            f = t + i * c.threads
            if (i + 1) * c.threads > chunks:
                f = imin(f, chunks - 1)
            r = f // self.chunks_per_row
            col = (f % self.chunks_per_row) * 32
            row = imin(col0 + r, N - 1)    # rows past N: row N - 1's scales
            offset = r * c.bk + col
            if self.swizzle is not None:
                offset = self.swizzle(offset)
            if bit is not None:
                offset = offset ^ (swap * 4)
            self.owned.append((r * self.words + col // VALUES_PER_WORD,
                               row * groups_per_row, col, offset))

    def _swap_bit(self, chunks):
        """The bit of the lane index that makes every half-warp's 8-byte
        store of dequantised 16-bit values free of bank conflicts when the
        lanes it sets swap the halves of their chunks, or None (f32 values
        store whole 16-byte chunks; tiles without a swizzle). Found by
        trying each bit on the stores of every simdgroup and round: without
        a swap, all lanes of a store write the same half of their chunk, so
        a store uses half the banks and takes twice the wavefronts."""
        c = self.c
        if self.dtype.itemsize != 2 or self.swizzle is None:
            return None
        cpr = self.chunks_per_row
        for bit in range(5):
            if all(self._conflict_free(bit, cpr, chunks, i, w, v, h)
                   for i in range(self.per_thread)
                   for w in range(c.threads // 32)
                   for v in range(8) for h in (0, 16)):
                return bit
        return None

    def _conflict_free(self, bit, cpr, chunks, i, warp, v, first):
        """Whether the store of values ``4 v ..`` of round ``i`` by lanes
        ``first .. first + 15`` of simdgroup ``warp`` hits 16 distinct
        8-byte bank slots."""
        slots = {}
        for lane in range(first, first + 16):
            f = min(32 * warp + lane + i * self.c.threads, chunks - 1)
            r, col = divmod(f, cpr)
            swap = (lane >> bit) & 1
            at = self.swizzle(r * self.c.bk + col * 32) ^ (4 * (v ^ swap))
            slot = (at * 2 // 8) % 16
            if slots.setdefault(slot, at) != at:
                return False
        return True

    def copy(self, stage, kt) -> None:
        """Starts the copy of K tile ``kt``'s words into ``stage``; rows past
        N and words past K become 0."""
        c = self.c
        k0 = kt * c.bk
        words_per_row = self.K // VALUES_PER_WORD
        copy_tile(stage, self.Wq, c.bn, self.words, src_ld=words_per_row,
                  src_offset=self.col0 * words_per_row + k0 // VALUES_PER_WORD,
                  valid_rows=where(0, self.N - self.col0, self.col0 < self.N),
                  valid_cols=where(0, (self.K - k0) // VALUES_PER_WORD,
                                   k0 < self.K))

    def scales(self, kt) -> list:
        """[scale, bias] (floats) per owned chunk of K tile ``kt``; 0 for
        chunks past K, so that they dequantise to 0. A tile at or past
        ``kt_end`` reads the last one again."""
        c = self.c
        kt = imin(kt, self.kt_end - 1)
        values = []
        zero = to_value(0, self.dtype)
        for _, groups_at, col, _ in self.owned:
            k = kt * c.bk + col
            valid = k < self.K
            g = groups_at + where(0, k, valid) // self.gs
            values += [where(zero, self.S[g], valid).cast("float"),
                       where(zero, self.B[g], valid).cast("float")]
        return values

    def store(self, words_stage, scales, stage) -> None:
        """Dequantises the words in ``words_stage`` with ``scales`` (from
        :meth:`scales`) into ``stage``."""
        for i, (at, _, _, offset) in enumerate(self.owned):
            scale, bias = scales[2 * i], scales[2 * i + 1]
            words = vector_load(words_stage, at, 4)
            values = []
            for word in (words.x, words.y, words.z, words.w):
                # Swapping lanes read the high half-word first: their
                # values 4v.. are those of 4(v ^ 1).., stored there.
                halves = None if self.shift is None else \
                    (word >> self.shift, word >> (16 - self.shift))
                values += _dequantize_word(word, scale, bias, self.magic,
                                           halves)
            for v in range(8):
                vector_store(stage, self._value_offset(offset, v),
                             make_vec(*[x.cast(self.dtype) for x in
                                        values[4 * v: 4 * v + 4]]))

    def _value_offset(self, offset, v):
        """Store offset of values ``4 v .. 4 v + 3`` of a chunk whose
        values 0..3 go to ``offset``. The swizzle reads only bits 5 and up
        of an offset (checked in __init__) and the chunk starts at a
        multiple of 32, so ``swizzle(o + 4 v) == swizzle(o) ^ 4 v``."""
        if v == 0:
            return offset
        return offset + 4 * v if self.swizzle is None else offset ^ (4 * v)


def matmul_kernel(dtype, group_size, config: QmmConfig, split: bool):
    """Kernel ``(X: T, Wq: u32, S: T, B: T, Y: T, M: u32, N: u32, K: u32)``
    (``split``: ``(X, Wq, S, B, P: f32, M, N, K, tiles: u32)``): this
    threadgroup's ``bm x bn`` block of ``Y = X W^T``, or with ``split`` of
    the float partial sum ``P[s]`` over K tiles ``s * tiles ..`` (``s`` =
    threadgroup y). Launch ``threadgroups=(config.blocks(M, N), splits),
    threads=config.threads``.

    Step ``i`` of the K loop waits for X's tile ``i`` and the packed words
    of tile ``i + 1`` (one commit group: the words travel one tile ahead),
    starts the copies ``ahead`` tiles further, multiplies X's tile ``i`` by
    the dequantised weights of tile ``i`` (asynchronous warpgroup products
    from 3 stages on) and, while the product runs, dequantises tile ``i +
    1`` into the next stage. Scales and biases are read with plain loads
    in the step that uses them: on sm_90 a shared-memory store of a value
    loaded from device memory in an earlier step makes ptxas serialise
    every wgmma of the kernel (its warning C7514), so nothing loaded into
    registers crosses a step."""
    T = activation_dtype(dtype)
    gs = check_group_size(group_size)
    c = config
    words_bytes = c.stages * c.bn * c.bk // 2
    if c.smem_bytes(T) + words_bytes > 227 * 1024:
        fail(f"{c} needs {c.smem_bytes(T) + words_bytes} bytes of "
             f"threadgroup memory for {T.name} tiles; no target has more "
             f"than {227 * 1024}")
    if T.itemsize == 4 and c.bk % 8:
        fail(f"{c}: bk must be a multiple of 8 for f32")
    group = c.warpgroup(T)
    # Warpgroup products from 3 stages on stay in flight across the
    # barrier (docs/reference/mma.md): the stage of the product before the
    # previous one is the first free one, so one tile fewer is loaded ahead.
    asynchronous = c.asynchronous(T)
    ahead = c.stages - 2 if asynchronous else c.stages - 1
    wtm, wtn = c.bm // c.wm, c.bn // c.wn

    def body(X, Wq, S, B, out, M, N, K, tiles):
        current_tracer("quantized_matmul").call("require_threadgroup_size",
                                                c.threads)
        sw = mma_swizzle(c.bk, T)
        a_tiles = pipeline(T, c.bm * c.bk, c.stages)
        b_tiles = pipeline(T, c.bn * c.bk, c.weight_stages(T))
        w_tiles = pipeline(_U32, c.bn * c.bk // VALUES_PER_WORD, c.stages)
        row0, col0 = grouped_block_origin(c, M, N)
        ktiles = (K + (c.bk - 1)) // c.bk
        if split:
            split_index = threadgroup_position_in_grid("y")
            kt0 = split_index * tiles
            kt_end = imin(kt0 + tiles, ktiles)
        else:
            kt0, kt_end = to_value(0, _U32), ktiles
        count = kt_end - kt0
        weights = _WeightTiles(c, T, gs, Wq, S, B, N, K, col0, kt_end)
        rows_left = M - row0

        def load(s, i, guard):
            """Copies X's tile ``i`` (counted from kt0) and the words of
            tile ``i + 1`` into stage ``s`` of their rings, one group."""
            def copy_x():
                k0 = (kt0 + i) * c.bk
                copy_tile(a_tiles.stage(s), X, c.bm, c.bk, src_ld=K,
                          src_offset=row0 * K + k0, valid_rows=rows_left,
                          valid_cols=where(0, K - k0, k0 < K), swizzle=sw)

            def copy_w():
                weights.copy(w_tiles.stage((s + 1) % c.stages), kt0 + i + 1)

            if guard is None:
                copy_x()
                copy_w()
            else:
                with if_(i < count):
                    copy_x()
                with if_(i + 1 < count):
                    copy_w()
            copy_commit()

        # Words of tile 0 alone, then the groups of the first steps.
        weights.copy(w_tiles.stage(0), kt0)
        copy_commit()
        for s in range_constexpr(ahead):
            load(s, s, True)
        copy_wait(ahead)
        barrier()
        weights.store(w_tiles.stage(0), weights.scales(kt0), b_tiles.stage(0))

        warp = simdgroup_index_in_threadgroup()
        wrow = (warp // c.wn) * wtm
        wcol = (warp % c.wn) * wtn
        acc0 = mma_zeros(16, c.bn) if group else mma_zeros(wtm, wtn)
        with for_range(0, count, dtype="uint", init=[acc0]) as (i, carry):
            scales = weights.scales(kt0 + i + 1)
            copy_wait(ahead - 1)
            barrier()
            load(ahead, i + ahead, True)
            if group:      # each group of four: its 64 rows, all bn columns
                a_op = mma_operand(a_tiles.front(), ld=c.bk,
                                   offset=(warp // 4) * 64 * c.bk,
                                   swizzle=sw)
                b_op = mma_operand(b_tiles.front(), ld=c.bk, transpose=True,
                                   swizzle=sw)
            else:
                a_op = mma_operand(a_tiles.front(), ld=c.bk,
                                   offset=wrow * c.bk, swizzle=sw)
                b_op = mma_operand(b_tiles.front(), ld=c.bk,
                                   offset=wcol * c.bk, transpose=True,
                                   swizzle=sw)
            carry[0] = mma(carry[0], a_op, b_op, k=c.bk, warpgroup=group,
                           asynchronous=asynchronous)
            # While the product runs: tile i + 1 into the next stage, which
            # no product reads any more (those of the two steps before may
            # still be in flight on the two stages before it).
            weights.store(w_tiles.stage(1), scales, b_tiles.stage(1))
            a_tiles.advance()
            b_tiles.advance()
            w_tiles.advance()
        acc = mma_wait(carry[0]) if asynchronous else carry[0]
        copy_wait(0)

        out_row = row0 + (wrow if not group else warp * 16)
        out_col = col0 + (wcol if not group else 0)
        bounds = (where(0, M - out_row, out_row < M),
                  where(0, N - out_col, out_col < N))
        offset = out_row * N + out_col
        if split:
            offset = split_index * (M * N) + offset
        mma_store(acc, out, ld=N, offset=offset, bounds=bounds)

    if split:
        @kernel
        def quantized_matmul_split(X: T, Wq: enigma_u32, S: T, B: T,
                                   P: enigma_f32, M: Scalar(enigma_u32),
                                   N: Scalar(enigma_u32),
                                   K: Scalar(enigma_u32, multiple_of=gs),
                                   tiles: Scalar(enigma_u32)):
            body(X, Wq, S, B, P, M, N, K, tiles)
        return quantized_matmul_split

    @kernel
    def quantized_matmul(X: T, Wq: enigma_u32, S: T, B: T, Y: T,
                         M: Scalar(enigma_u32), N: Scalar(enigma_u32),
                         K: Scalar(enigma_u32, multiple_of=gs)):
        body(X, Wq, S, B, Y, M, N, K, None)
    return quantized_matmul


def split_sum_kernel(dtype):
    """Kernel ``(P: f32, Y: T, count: u32, splits: u32)``: ``Y[i] =
    T(sum_s P[s * count + i])`` (the partial sums of a product split along
    K, added in split order)."""
    T = activation_dtype(dtype)

    @kernel
    def quantized_matmul_sum(P: enigma_f32, Y: T, count: Scalar(enigma_u32),
                             splits: Scalar(enigma_u32)):
        i = thread_position_in_grid_xyz("x")
        with if_(i < count):
            with for_range(1, splits, dtype="uint",
                           init=[P[i]]) as (s, total):
                total[0] = total[0] + P[s * count + i]
            Y[i] = total[0]

    return quantized_matmul_sum
