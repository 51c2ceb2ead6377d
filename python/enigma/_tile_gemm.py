"""``gemm``, the tile helper that accumulates ``C += op(A) @ op(B)``
(docs/reference/tile.md), with the original Enigma DSL's meaning: into a
per-thread ``register_tensor``, or together with the whole threadgroup
into memory, on scalar threads or on simdgroup 8x8 matrices. Like ``copy``
(``_tile``), whose operands it shares, it expands into existing traced
operations. The design is in docs/design/tile-helpers.md.
"""

from __future__ import annotations

import builtins

from ._threads import barrier as _barrier
from ._threads import (simd_barrier, simdgroup_index_in_threadgroup,
                       simdgroups_per_threadgroup,
                       thread_index_in_threadgroup)
from ._control import for_range, if_, register_tensor
from ._dtypes import as_dtype
from ._math import fma
from ._simd import (simdgroup_matrix_load, simdgroup_matrix_store,
                    simdgroup_multiply_accumulate)
from ._ir import EnigmaError, IRValue, current_tracer, fail, plain_index
from ._tile import MAX_EXTENT, TileOperand, threads_in_group

__all__ = ["gemm"]

# Simdgroup tiles are 8x8 (Metal's simdgroup_float8x8 / half8x8).
_SIMD_TILE = 8
_SIMD_DTYPES = ("f32", "f16")
# K steps of 8 unrolled per iteration of the simdgroup path's K loop: the
# accumulator tile cannot be loop-carried, so it goes through memory once
# per iteration; beyond this many steps the K loop becomes a traced loop.
_SIMD_UNROLL = 8
# Up to this K the scalar path unrolls its dot product at trace time.
_SCALAR_UNROLL_K = 32
# The register path unrolls K when M * N * K multiply-adds stay within this.
_REGISTER_UNROLL_MACS = 1024


def _extent(value, name: str) -> int:
    if isinstance(value, IRValue):
        fail(f"gemm: {name} must be a Python int: the tile shape is fixed "
             "when the kernel is traced (loop over tiles for run-time sizes)")
    value = plain_index(value)
    if isinstance(value, bool) or not isinstance(value, int):
        fail(f"gemm: {name} must be a Python int, got {type(value).__name__}")
    if value <= 0:
        fail(f"gemm: {name} must be positive, got {value}")
    return value


def _accumulator_type(accum_dtype):
    try:
        dtype = as_dtype(accum_dtype)
    except EnigmaError as e:
        fail(f"gemm: accum_dtype: {e}")
    if dtype.name not in ("f32", "f16", "bf16", "i32", "u32", "i64", "u64"):
        fail(f"gemm: accum_dtype must be float, half, bfloat or a 32/64-bit "
             f"integer type, got {dtype.name}")
    return dtype


def _check_types(a, b, c, accum) -> None:
    for op in (a, b, c):
        if op.dtype.name == "b1":
            fail(f"gemm: {op.role} ({op.label}) holds bool; gemm needs "
                 "numbers")
    if accum.is_float:
        if not c.dtype.is_float:
            fail(f"gemm: C ({c.label}) holds {c.dtype.name} but accum_dtype "
                 f"is {accum.name}: the float result would be truncated; use "
                 "a float C or an integer accum_dtype")
    else:
        for op in (a, b, c):
            if op.dtype.is_float:
                fail(f"gemm: accum_dtype {accum.name} is an integer type but "
                     f"{op.role} ({op.label}) holds {op.dtype.name}; "
                     "accumulate floats in float")


def _simdgroup_blocker(a, b, c, accum, M, N, K):
    """Why the simdgroup path cannot compute this gemm (None when it can)."""
    bad = [f"{n}={v}" for n, v in (("M", M), ("N", N), ("K", K))
           if v % _SIMD_TILE]
    if bad:
        return (f"M, N and K must be multiples of {_SIMD_TILE} (8x8 "
                f"simdgroup tiles), got {', '.join(bad)}")
    if accum.name not in _SIMD_DTYPES:
        return (f"accum_dtype must be float or half, got {accum.name}")
    for op in (a, b, c):
        if op.dtype != accum:
            return (f"A, B and C must all hold accum_dtype ({accum.name}): "
                    f"the 8x8 tiles accumulate in their own element type, "
                    f"but {op.role} ({op.label}) holds {op.dtype.name}")
    return None


def gemm(A, B, C, *, M, N, K, transpose_A=False, transpose_B=False,
         accum_dtype="float", use_simdgroup=None, barrier=True) -> None:
    """``C[M, N] += op(A)[M, K] @ op(B)[K, N]`` on row-major tiles.

    ``A`` and ``B`` are buffer parameters, ``threadgroup_alloc`` tensors or
    pipeline stages, element ``(r, c)`` of an ``R x C`` tile being element
    ``r * C + c``. ``op(A)`` is ``A`` (``M x K``), or with ``transpose_A``
    the transpose of ``A`` stored ``K x M``; likewise ``transpose_B`` reads
    ``B`` stored ``N x K``. ``M``, ``N``, ``K`` are Python ints. Products
    are summed in ``accum_dtype`` (float, half, bfloat or a 32/64-bit
    integer type) starting from ``C``'s value; the sum is stored back into
    ``C``.

    ``C`` a ``register_tensor`` of shape ``(M, N)`` (the original's scalar
    gemm): the calling thread computes the whole tile into its own
    registers; any thread may call it, alone or with others. ``A`` and
    ``B`` may then be register tensors too (shapes ``(M, K)`` / ``(K, N)``,
    or transposed); K is then unrolled.

    ``C`` in memory (a buffer, threadgroup tensor or stage): the threads of
    the threadgroup compute the tile together, after a threadgroup barrier
    (so A and B written by other threads just before are seen, as the
    original's gemm does; ``barrier=False`` leaves it out where the caller
    has already synchronised). The scalar path gives each thread the output
    elements ``t, t + T, ...`` (``T`` threads in the group). With
    ``use_simdgroup=True``, each simdgroup computes whole 8x8 output tiles
    with ``simdgroup_multiply_accumulate`` (transposed operands through
    transposed tile loads); this needs M, N, K multiples of 8 and A, B, C
    all of ``accum_dtype`` float or half (else an EnigmaError says which).
    ``use_simdgroup=None`` picks the simdgroup path exactly when those
    hold. A threadgroup whose size is not a multiple of 32 takes the scalar
    path at run time either way. Put ``enigma.barrier()`` between the gemm
    and other threads' reads of C. Repeated gemm calls with the same C, M,
    N and path give each C element to the same thread (or simdgroup) every
    time. Every thread of the group must reach the call."""
    what = "gemm"
    current_tracer(what)
    M, N, K = _extent(M, "M"), _extent(N, "N"), _extent(K, "K")
    for name, size in (("M * N", M * N), ("M * K", M * K), ("K * N", K * N)):
        if size > MAX_EXTENT:
            fail(f"gemm: {name} = {size} elements is too large (at most "
                 f"{MAX_EXTENT})")
    for name, flag in (("transpose_A", transpose_A),
                       ("transpose_B", transpose_B)):
        if not isinstance(flag, bool):
            fail(f"gemm: {name} must be True or False, got {flag!r}")
    if use_simdgroup is not None and not isinstance(use_simdgroup, bool):
        fail(f"gemm: use_simdgroup must be True, False or None (automatic), "
             f"got {use_simdgroup!r}")
    if not isinstance(barrier, bool):
        fail(f"gemm: barrier must be True or False, got {barrier!r}")
    a = TileOperand(what, "A", A, registers=True)
    b = TileOperand(what, "B", B, registers=True)
    c = TileOperand(what, "C", C, registers=True)
    accum = _accumulator_type(accum_dtype)
    if c.space == "register":
        if use_simdgroup:
            fail("gemm: use_simdgroup=True but C is a register tensor: "
                 "simdgroup tiles are stored to memory (pass a threadgroup "
                 "tensor or buffer as C)")
        _require_shape(c, (M, N))
        _require_shape(a, (K, M) if transpose_A else (M, K))
        _require_shape(b, (N, K) if transpose_B else (K, N))
        _check_types(a, b, c, accum)
        _gemm_registers(a, b, c, accum, M, N, K, transpose_A, transpose_B)
        return
    for op in (a, b):
        if op.space == "register":
            fail(f"gemm: {op.role} is a register tensor, so C must be one "
                 "too (each thread then computes its own tile); C is "
                 f"{c.label}")
    a.require(what, M * K, f"{'a K x M' if transpose_A else 'an M x K'} tile "
              f"(M={M}, K={K})", at_launch=True)
    b.require(what, K * N, f"{'an N x K' if transpose_B else 'a K x N'} tile "
              f"(K={K}, N={N})", at_launch=True)
    c.require(what, M * N, f"an M x N tile (M={M}, N={N})", at_launch=True)
    _check_types(a, b, c, accum)

    blocker = _simdgroup_blocker(a, b, c, accum, M, N, K)
    if use_simdgroup and blocker:
        fail(f"gemm: use_simdgroup=True but {blocker}")
    if barrier:
        spaces = {op.space for op in (a, b, c)}
        _barrier("mem_device_and_threadgroup" if len(spaces) == 2
                 else f"mem_{spaces.pop()}")
    if use_simdgroup is False or blocker:
        _gemm_scalar(a, b, c, accum, M, N, K, transpose_A, transpose_B)
        return
    # Simdgroup matrices need full simdgroups (CUDA's warp shuffles use all
    # 32 lanes), which only the dispatch decides: a group of another size
    # takes the scalar path. The condition is the same for every thread of
    # the group, so the simdgroup ops stay under uniform control flow.
    with if_(threads_in_group() % 32 == 0) as (full, partial):
        with full:
            _gemm_simdgroup(a, b, c, M, N, K, transpose_A, transpose_B)
        with partial:
            _gemm_scalar(a, b, c, accum, M, N, K, transpose_A, transpose_B)


def _require_shape(op, shape) -> None:
    """A register operand must have exactly the tile's shape."""
    if op.space == "register" and tuple(op.shape) != shape:
        fail(f"gemm: register tensor {op.role} has shape {tuple(op.shape)} "
             f"but the tile is {shape}")


def _gemm_registers(a, b, c, accum, M, N, K, transpose_A, transpose_B):
    """The calling thread computes the whole tile: for each k, the M values
    of column k of op(A) and the N values of row k of op(B) are read once
    and their outer product is added to the M x N accumulators (a register
    tensor, so they stay in registers). A traced k (a loop for large
    tiles) indexes memory operands only: register operands force the K
    loop to be unrolled."""
    C = c.memory
    acc = C
    if C.dtype != accum:
        acc = register_tensor((M, N), accum)
        for m in builtins.range(M):
            for n in builtins.range(N):
                acc[m, n] = C[m, n].cast(accum)

    def step(k):
        xs = [a.load(k * M + m if transpose_A else m * K + k).cast(accum)
              for m in builtins.range(M)]
        ys = [b.load(n * K + k if transpose_B else k * N + n).cast(accum)
              for n in builtins.range(N)]
        for m in builtins.range(M):
            for n in builtins.range(N):
                acc[m, n] = fma(xs[m], ys[n], acc[m, n]) if accum.is_float \
                    else acc[m, n] + xs[m] * ys[n]

    if "register" in (a.space, b.space) or \
            M * N * K <= _REGISTER_UNROLL_MACS:
        for k in builtins.range(K):
            step(k)
    else:
        with for_range(0, K, dtype="uint") as k:
            step(k)
    if acc is not C:
        for m in builtins.range(M):
            for n in builtins.range(N):
                C[m, n] = acc[m, n].cast(C.dtype)


def _gemm_scalar(a, b, c, accum, M, N, K, transpose_A, transpose_B):
    """Thread t owns the output elements t, t + T, ...; each is a dot
    product of length K accumulated in ``accum``."""
    tid = thread_index_in_threadgroup()
    with for_range(tid, M * N, threads_in_group(), dtype="uint") as e:
        m = e // N
        n = e % N

        def term(k, acc):
            x = a.load(k * M + m if transpose_A else m * K + k).cast(accum)
            y = b.load(n * K + k if transpose_B else k * N + n).cast(accum)
            return fma(x, y, acc) if accum.is_float else acc + x * y

        acc = c.load(e).cast(accum)
        if K <= _SCALAR_UNROLL_K:
            for k in builtins.range(K):
                acc = term(k, acc)
        else:
            with for_range(0, K, dtype="uint", init=[acc]) as (k, carry):
                carry[0] = term(k, carry[0])
            acc = carry[0]
        c.store(e, acc)


def _matrix_offset(op, offset):
    return (offset if isinstance(op.base, int) and op.base == 0
            else op.base + offset)


def _gemm_simdgroup(a, b, c, M, N, K, transpose_A, transpose_B):
    """Simdgroup s owns the 8x8 output tiles s, s + S, ... (S simdgroups);
    for each it walks K in steps of 8 with simdgroup_multiply_accumulate.
    A transposed operand is read with transposed tile loads (A stored K x M:
    the tile at (row0, k0) starts at k0 * M + row0, rows M apart).

    A matrix cannot be carried by a traced loop, so the accumulator tile is
    loaded from C, updated by up to _SIMD_UNROLL unrolled steps and stored
    back; longer K runs a traced loop of such blocks."""
    elem = a.dtype
    tiles_n = N // _SIMD_TILE
    steps = K // _SIMD_TILE
    flags = "mem_threadgroup" if c.space == "threadgroup" else "mem_device"
    sg = simdgroup_index_in_threadgroup()
    with for_range(sg, (M // _SIMD_TILE) * tiles_n,
                   simdgroups_per_threadgroup(), dtype="uint") as t:
        row0 = (t // tiles_n) * _SIMD_TILE
        col0 = (t % tiles_n) * _SIMD_TILE
        c_at = _matrix_offset(c, row0 * N + col0)

        def block(first_step, count):
            acc = simdgroup_matrix_load(c.memory, N, elem=elem,
                                        offset=c_at)
            for u in builtins.range(count):
                k0 = (first_step + u) * _SIMD_TILE
                tile_a = simdgroup_matrix_load(
                    a.memory, M if transpose_A else K, elem=elem,
                    offset=_matrix_offset(
                        a, k0 * M + row0 if transpose_A else row0 * K + k0),
                    transpose=transpose_A)
                tile_b = simdgroup_matrix_load(
                    b.memory, K if transpose_B else N, elem=elem,
                    offset=_matrix_offset(
                        b, col0 * K + k0 if transpose_B else k0 * N + col0),
                    transpose=transpose_B)
                acc = simdgroup_multiply_accumulate(tile_a, tile_b, acc)
            simdgroup_matrix_store(acc, c.memory, N, offset=c_at)

        if steps <= _SIMD_UNROLL:
            block(0, steps)
            return
        with for_range(0, steps // _SIMD_UNROLL, dtype="uint") as blk:
            block(blk * _SIMD_UNROLL, _SIMD_UNROLL)
            # The next block reloads the tile this one stored.
            simd_barrier(flags)
        if steps % _SIMD_UNROLL:
            block(steps - steps % _SIMD_UNROLL, steps % _SIMD_UNROLL)
