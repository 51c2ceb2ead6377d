"""The matrix-vector kernel of 4-bit quantized weights (decode): ``y = x
W^T`` for a few rows of ``x`` on plain arithmetic, the weights in MLX's
affine format (``enigma._quantized``, docs/design/quantized-matmul.md).

Memory bound: the kernel must keep enough packed words in flight per
multiprocessor and spend few instructions per weight. Each lane reads 32
values of a row (four words) with one 16-byte load, ``rows`` rows at once
for one load of x; the simdgroups of a threadgroup split K between them
(``k_split``) so that a short K still gives many threadgroups of short
lifetime, and add their sums through threadgroup memory at the end.
"""

# No `from __future__ import annotations`: the kernel's annotations name
# dtypes of the enclosing function, which a string annotation cannot see.

from ._control import for_range, if_, range_constexpr
from ._cooperation import threadgroup_alloc
from ._dtypes import Scalar, as_dtype, plain_index
from ._ir import fail
from ._kernel import kernel
from ._math import as_type, fma, imin, where
from ._quantized import (UNSCALE, VALUES_PER_WORD, SlotsConfig,
                         activation_dtype, check_group_size, magic_after,
                         magic_bits, scaled_codes, vector_load)
from ._simd import simd_sum
from ._threads import (barrier, simdgroup_index_in_threadgroup,
                       thread_index_in_simdgroup,
                       thread_index_in_threadgroup,
                       threadgroup_position_in_grid)

__all__ = ["QmvConfig", "matvec_kernel"]

# Annotation name of the packed words.
enigma_u32 = as_dtype("u32")

# Values per lane and chunk: four packed words, one 16-byte load per row.
CHUNK = 32


class QmvConfig(SlotsConfig):
    """Shape of :func:`matvec_kernel`. A threadgroup has ``simdgroups *
    k_split`` simdgroups: ``simdgroups`` sets of ``k_split`` simdgroups,
    each set owning ``rows`` rows of the weights and splitting K between
    its simdgroups; each lane reads ``chunks`` chunks of 32 values of each
    of its rows per step of the K loop (``rows * chunks`` 16-byte loads
    before their first use). ``k_split=1, chunks=1`` is the kernel where
    one simdgroup walks a whole row; ``hoist_loads=False`` leaves each
    load where it is used, as the first version of the kernel did (the
    compilers then keep one 16-byte load per lane in flight; kept to
    compare against)."""

    __slots__ = ("rows", "simdgroups", "k_split", "chunks", "hoist_loads")

    def __init__(self, rows=4, simdgroups=2, k_split=1, chunks=1,
                 hoist_loads=True):
        self.rows, self.simdgroups, self.k_split, self.chunks = plain_index(
            (rows, simdgroups, k_split, chunks))
        if not isinstance(hoist_loads, bool):
            fail(f"QmvConfig: hoist_loads must be a bool, got "
                 f"{hoist_loads!r}")
        self.hoist_loads = hoist_loads
        for name in self.__slots__[:4]:
            v = getattr(self, name)
            top = 8 if name == "chunks" else 32
            if isinstance(v, bool) or not isinstance(v, int) or \
                    not 1 <= v <= top:
                fail(f"QmvConfig: {name} must be an int from 1 to {top}, "
                     f"got {v!r}")
        if self.threads > 1024:
            fail(f"{self}: {self.threads} threads per threadgroup; at most "
                 "1024")

    @property
    def threads(self) -> int:
        return 32 * self.simdgroups * self.k_split

    @property
    def rows_per_threadgroup(self) -> int:
        return self.rows * self.simdgroups

    def launch(self, m: int, n: int) -> dict:
        """``launch(...)`` keywords for an m x n product: threadgroups
        over (rows of x, blocks of ``rows * simdgroups`` weight rows), the
        rows of x fastest, so the threadgroups that read the same weights
        run together."""
        return {"threadgroups": (m, -(-n // self.rows_per_threadgroup)),
                "threads": (self.threads, 1)}


def _bits(value, dtype):
    """The bits of a scale or bias as a uint."""
    if dtype.itemsize == 4:
        return as_type(value, "uint")
    return as_type(value, "ushort").cast(enigma_u32)


def matvec_kernel(dtype, group_size, config: QmvConfig):
    """Kernel ``(X: T, Wq: u32, S: T, B: T, Y: T, N: u32, K: u32)``:
    ``Y[m, n] = sum_k X[m, k] w[n, k]`` for the row ``m`` = threadgroup x
    and the ``rows * simdgroups`` weight rows of threadgroup y.

    K is cut into chunks of 32 values (four words of a row, one group or
    part of one). Step ``s`` of a lane of simdgroup part ``p`` (of
    ``k_split``) reads chunks ``s * span + u * 32 k_split + 32 p + lane``
    (``u < chunks``, ``span = 32 k_split chunks``): first the words of all
    its rows and chunks, then per chunk x's 32 values once for all rows,
    and adds ``scale * sum(x q) + bias * sum(x)`` per row (MLX's
    arrangement: the bias costs nothing per weight). Chunks past K read
    chunk 0 with scale and bias 0 (no branch); rows past N read row N - 1
    and are not stored. ``simd_sum`` adds the lanes; with ``k_split > 1``
    the parts' sums meet in threadgroup memory and are added in part
    order (deterministic)."""
    T = activation_dtype(dtype)
    gs = check_group_size(group_size)
    c = config
    lanes = 32 * c.k_split             # chunks one u of a step covers
    span = lanes * c.chunks            # chunks per step
    x_vectors = CHUNK // 4

    @kernel
    def quantized_matvec(X: T, Wq: enigma_u32, S: T, B: T, Y: T,
                         N: Scalar(enigma_u32),
                         K: Scalar(enigma_u32, multiple_of=gs)):
        lane = thread_index_in_simdgroup()
        sg = simdgroup_index_in_threadgroup()
        part, row_set = 0, sg
        if c.k_split > 1:
            part, row_set = sg % c.k_split, sg // c.k_split
        row0 = (threadgroup_position_in_grid("y") * c.simdgroups +
                row_set) * c.rows
        m = threadgroup_position_in_grid("x")
        words_per_row = K // VALUES_PER_WORD
        groups_per_row = K // gs
        rows = [imin(row0 + r, N - 1) for r in range(c.rows)]
        x_row = m * K
        magic = magic_bits(K)
        hold = K >> 31          # 0: the host keeps K below 2^31
        steps = (K // CHUNK + (span - 1)) // span
        with for_range(0, steps, dtype="uint",
                       init=[0.0] * c.rows) as (step, acc):
            first = step * span + part * 32 + lane
            ks, valid = [], []
            for u in range_constexpr(c.chunks):
                k0 = (first + u * lanes) * CHUNK
                ok = k0 < K
                valid.append(ok)
                ks.append(where(0, k0, ok))   # a chunk past K reads chunk 0
            # Every load of the step (words, scales, biases) before the
            # first use: the step's magic depends on all of them
            # (magic_after); being no constant, it also keeps `(word &
            # mask) | magic` one LOP3.

            def load(u, r):
                """(16-byte vector of words, raw scale, raw bias)."""
                at = rows[r] * groups_per_row + ks[u] // gs
                return (vector_load(Wq, rows[r] * words_per_row +
                                    ks[u] // VALUES_PER_WORD, 4),
                        S[at], B[at])

            loaded = {}
            step_magic = magic
            if c.hoist_loads:
                bits = []
                for u in range_constexpr(c.chunks):
                    for r in range_constexpr(c.rows):
                        loaded[u, r] = load(u, r)
                        w4, sb, bb = loaded[u, r]
                        bits += [w4.x, _bits(sb, T), _bits(bb, T)]
                step_magic = magic_after(bits, hold)
            for u in range_constexpr(c.chunks):
                k, ok = ks[u], valid[u]
                xs, x_sum = [], None
                for v in range_constexpr(x_vectors):
                    x4 = vector_load(X, x_row + k + 4 * v, 4)
                    for j, xv in enumerate((x4.x, x4.y, x4.z, x4.w)):
                        xj = xv.cast("float")
                        x_sum = xj if x_sum is None else x_sum + xj
                        # x / 16^j: the codes come as q 16^j.
                        xs.append(xj * UNSCALE[j] if j else xj)
                for r in range_constexpr(c.rows):
                    w4, sb, bb = loaded[u, r] if c.hoist_loads else \
                        load(u, r)
                    scale = where(0.0, sb.cast("float"), ok)
                    bias = where(0.0, bb.cast("float"), ok)
                    dots = []
                    for w, word in enumerate((w4.x, w4.y, w4.z, w4.w)):
                        d = None
                        codes = scaled_codes(word, step_magic)
                        for i, code in enumerate(codes):
                            x = xs[8 * w + i]
                            d = x * code if d is None else fma(x, code, d)
                        dots.append(d)
                    dot = (dots[0] + dots[1]) + (dots[2] + dots[3])
                    acc[r] = fma(scale, dot, fma(bias, x_sum, acc[r]))
        totals = [simd_sum(acc[r]) for r in range(c.rows)]
        if c.k_split == 1:
            for r in range_constexpr(c.rows):
                with if_((lane == 0) & (row0 + r < N)):
                    Y[m * N + row0 + r] = totals[r]
        else:
            # Sums of simdgroup (set s, part p) at (s k_split + p) rows + r.
            sums = threadgroup_alloc("float", c.threads // 32 * c.rows)
            with if_(lane == 0):
                for r in range_constexpr(c.rows):
                    sums[sg * c.rows + r] = totals[r]
            barrier()
            t = thread_index_in_threadgroup()
            with if_(t < c.simdgroups * c.rows):
                s, r = t // c.rows, t % c.rows
                base = s * (c.k_split * c.rows) + r
                total = sums[base]
                for p in range_constexpr(1, c.k_split):
                    total = total + sums[base + p * c.rows]
                row = (threadgroup_position_in_grid("y") * c.simdgroups +
                       s) * c.rows + r
                with if_(row < N):
                    Y[m * N + row] = total

    return quantized_matvec
