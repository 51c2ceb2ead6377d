"""The decode kernel of 4-bit quantized weights on the matrix hardware: ``y
= x W^T`` for up to 16 rows of ``x`` with 16-bit x, the weights
dequantised straight into the registers of the products' A operand
(``enigma._quantized``, docs/design/quantized-matmul.md).

The product is computed transposed, ``y^T = W x^T``: 16 weight rows are the
A operand (a fragment, dequantised from the packed words with
:func:`enigma.mma_gather`), x's rows are B, staged once per threadgroup in
threadgroup memory. The words never pass through threadgroup memory,
so a weight costs its load, a few bit operations and one fused
multiply-add, and the products' 16 columns of x cost nothing extra.

A product sums over K in any order, so the kernel reads each chunk of 32
values of K in the order that puts, for every lane, the eight codes it
holds of a row (in the CUDA fragment layout: columns ``2c, 2c + 1, 2c + 8,
...`` of lane ``c = lane % 4``) in one packed word: logical column ``L``
of a chunk is physical value ``PERMUTE[L]``, and x is staged in the same
order. Every target computes the same sums; only the number of loads
depends on the layout.

With ``pairs=True`` the codes are not dequantised: ``(word >> 4 s) &
0x000F000F | magic`` is two 16-bit floats ``c + q`` (``c`` = 128 for
bfloat, 1024 for half; nibbles ``s`` and ``s + 4``), one bit operation
for two codes, which :func:`enigma.mma_halves` makes the products' A
operand as they are (``PAIRS_PERMUTE`` orders K for it). Each group's
product ``P = (c + q) x^T`` is then scaled in float: ``y += scale P +
(bias - c scale) X``, with ``X`` the group's sums of x (computed once per
threadgroup). The weights are never rounded to x's dtype, so the result
is the exact product's, to float accumulation.
"""

# No `from __future__ import annotations`: the kernel's annotations name
# dtypes of the enclosing function, which a string annotation cannot see.

from ._control import for_range, if_, range_constexpr
from ._cooperation import atomic_fetch_add, atomic_store, threadgroup_alloc
from ._dtypes import Scalar, as_dtype, plain_index
from ._ir import fail
from ._kernel import kernel
from ._math import as_type, fma, imin, where
from ._mma import (mma, mma_fill, mma_gather, mma_halves, mma_iota, mma_load,
                   mma_operand, mma_store, mma_zeros)
from ._quantized import (VALUES_PER_WORD, SlotsConfig, check_group_size,
                         enigma_f32, enigma_u32, magic_after, magic_bits,
                         vector_load, vector_store)
from ._vectors import make_vec
from ._threads import (barrier, simdgroup_index_in_threadgroup,
                       thread_index_in_threadgroup,
                       threadgroup_position_in_grid, threadgroups_per_grid)

__all__ = ["QmvMmaConfig", "matvec_mma_kernel", "PERMUTE", "PAIRS_PERMUTE"]

CHUNK = 32          # values of K per packed-word group of a lane
ROWS = 16           # weight rows of one A fragment
XROWS = 16          # rows of x (the product's N)
_MAGIC = 8388608.0  # 2^23
MAX_SPAN = 8192     # values of K (of 16 rows of x) one threadgroup stages
# The span for_shape picks at most: 64 KiB of x, three threadgroups of
# 256 threads per multiprocessor.
DEFAULT_MAX_SPAN = 2048


def _physical(logical: int) -> int:
    """Physical value of K (in a chunk) at logical column ``logical``:
    word ``(L % 8) // 2``, nibble ``2 (L // 8) + L % 2``."""
    word, nibble = (logical % 8) // 2, 2 * (logical // 8) + logical % 2
    return VALUES_PER_WORD * word + nibble


PERMUTE = tuple(_physical(L) for L in range(CHUNK))


def _pair_column(word: int, s: int) -> int:
    """Logical column (in a chunk) of the pair of nibbles ``s`` and ``s +
    4`` of word ``word``: pair column ``c = 8 (s // 2) + 2 word + s % 2``
    of the words' fragment, whose halves mma_halves puts at ``16 (s // 2)
    + 8 (s % 2) + 2 word`` and the next."""
    return 16 * (s // 2) + 8 * (s % 2) + 2 * word


def _pairs_physical(logical: int) -> int:
    """``pairs=True``: physical value of K at logical column ``logical``."""
    for word in range(4):
        for s in range(4):
            at = _pair_column(word, s)
            if logical in (at, at + 1):
                return VALUES_PER_WORD * word + s + 4 * (logical - at)
    raise AssertionError(logical)


PAIRS_PERMUTE = tuple(_pairs_physical(L) for L in range(CHUNK))
# The 16-bit float whose low mantissa bits take a code exactly: c + q.
PAIR_MAGIC = {"bf16": (0x43004300, 128.0), "f16": (0x64006400, 1024.0)}


class QmvMmaConfig(SlotsConfig):
    """Shape of :func:`matvec_mma_kernel`. A threadgroup owns ``row_groups``
    blocks of 16 weight rows and a range of ``span`` values of K; each
    block's K range is split between ``parts`` simdgroups (``row_groups *
    parts`` simdgroups in all), each of which walks its share in steps of
    ``chunks`` chunks of 32 values, all of a step's loads issued before
    the first is used. K beyond one threadgroup's ``span`` goes to more
    threadgroups (grid y) whose float partial sums a second kernel adds.
    ``staged=True`` first copies the span's packed words, scales and
    biases into threadgroup memory with coalesced loads and gathers from
    there (CUDA only); ``False`` gathers from device memory.
    ``pairs=True`` decodes two codes per bit operation into the products'
    16-bit A operand and applies scales and biases to each group's float
    sums (the module doc); a step then covers whole groups (``chunks * 32``
    a multiple of the group size). ``sum_in_kernel=True``: with K split
    between threadgroups, the last of a block's threadgroups adds the
    partial sums (in split order, the same result) instead of a second
    kernel. Neither has run on a GPU yet."""

    __slots__ = ("row_groups", "parts", "chunks", "span", "staged", "pairs",
                 "sum_in_kernel")

    def __init__(self, row_groups=4, parts=2, chunks=8, span=None,
                 staged=False, pairs=False, sum_in_kernel=False):
        self.row_groups, self.parts, self.chunks, self.span = plain_index(
            (row_groups, parts, chunks, span))
        for name, flag in (("staged", staged), ("pairs", pairs),
                           ("sum_in_kernel", sum_in_kernel)):
            if not isinstance(flag, bool):
                fail(f"QmvMmaConfig: {name} must be a bool, got {flag!r}")
        self.staged, self.pairs = staged, pairs
        self.sum_in_kernel = sum_in_kernel
        for name, top in (("row_groups", 8), ("parts", 8), ("chunks", 16),
                          ("span", MAX_SPAN)):
            v = getattr(self, name)
            if name == "span" and v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, int) or \
                    not 1 <= v <= top:
                fail(f"QmvMmaConfig: {name} must be an int from 1 to {top}"
                     f"{' or None' if name == 'span' else ''}, got {v!r}")
        if self.span is not None and self.span % self.step_span:
            fail(f"{self}: span must be a multiple of parts * chunks * 32 "
                 f"= {self.step_span}")
        if self.threads > 1024:
            fail(f"{self}: {self.threads} threads per threadgroup; at most "
                 "1024")

    def for_shape(self, n: int, k: int, sm_count: int,
                  max_span: int = None) -> "QmvMmaConfig":
        """This configuration with ``span`` chosen for an n x k product
        when it is None: about three threadgroups per multiprocessor (K
        split between threadgroups when the weight rows alone give fewer),
        at most ``max_span`` (default ``DEFAULT_MAX_SPAN``) values of x
        staged per threadgroup."""
        if self.span is not None:
            return self
        blocks = -(-n // self.rows_per_threadgroup)
        steps = -(-k // self.step_span)
        want = max(1, min(steps, round(3 * sm_count / blocks)))
        span = -(-steps // want) * self.step_span
        top = DEFAULT_MAX_SPAN if max_span is None else max_span
        span = min(span, max(self.step_span,
                             top // self.step_span * self.step_span))
        return self.replace(span=span)

    @property
    def threads(self) -> int:
        return 32 * self.row_groups * self.parts

    @property
    def step_span(self) -> int:
        """Values of K one step of all parts covers."""
        return self.parts * self.chunks * CHUNK

    @property
    def rows_per_threadgroup(self) -> int:
        return ROWS * self.row_groups

    def splits(self, k: int) -> int:
        if self.span is None:
            fail(f"{self}: span is chosen per shape; call for_shape first")
        return -(-k // self.span)

    def launch(self, n: int, k: int) -> dict:
        return {"threadgroups": (-(-n // self.rows_per_threadgroup),
                                 self.splits(k)),
                "threads": (self.threads, 1)}


def _items(t, threads, count):
    """``(f, f < count)`` for the items ``t, t + threads, ...`` thread
    ``t`` of ``threads`` takes of ``count`` (the last round's spare
    threads get ``f >= count``)."""
    for i in range_constexpr(-(-count // threads)):
        f = t + i * threads
        yield f, f < count


def _staged_pair(pair: int, pairs: bool):
    """(logical column less ``2 word``, first value, second value) of the
    ``pair``-th pair x's staging stores of one word's 8 values: values
    ``2 pair, 2 pair + 1`` at ``8 pair`` (PERMUTE), or with ``pairs``
    values ``pair, pair + 4`` at ``_pair_column(0, pair)``."""
    if pairs:
        return _pair_column(0, pair), pair, pair + 4
    return 8 * pair, 2 * pair, 2 * pair + 1


def _group_sums(xs, ld, c, gs, t):
    """``X[g, m]``, the float sum of x's staged row ``m`` over group ``g`` of
    the span, in threadgroup memory (``XROWS`` per group); the whole
    threadgroup calls it after staging x, and it ends with a barrier."""
    groups = c.span // gs
    count = groups * XROWS
    sums = threadgroup_alloc(enigma_f32, count)
    for f, inside in _items(t, c.threads, count):
        f = imin(f, count - 1)     # spare threads add the last sum again
        g, m = f // XROWS, f % XROWS
        row = m * ld + g * gs
        with for_range(1, gs, dtype="uint",
                       init=[xs[row].cast("float")]) as (i, total):
            total[0] = total[0] + xs[row + i].cast("float")
        with if_(inside):
            sums[f] = total[0]
    barrier()
    return sums


def _paired_products(acc, c, gs, T, xs, ld, x_sums, firsts, words, scales,
                     biases, shift, magic, offset):
    """One step of the ``pairs`` form: each chunk's words become pairs of
    16-bit ``offset + q`` (one bit operation per pair) and the products'
    A operand (mma_halves); a group's product ``P`` joins the accumulator
    as ``scale P + (bias - offset scale) X``, in float."""
    per_group = gs // CHUNK
    part = None
    # scales[i] and biases[i] are those of the step's group i.
    for u in range_constexpr(c.chunks):
        pairs = ((words[u] >> shift) & 0x000F000F) | magic
        start = mma_zeros(ROWS, XROWS) if u % per_group == 0 else part
        # Past K, x's staged values are 0: the codes read there (chunk
        # 0's) add nothing, nor do their groups' X.
        part = mma(start, mma_halves(pairs, T.name),
                   mma_operand(xs, ld=ld, offset=firsts[u], transpose=True))
        if (u + 1) % per_group == 0:
            x_group = mma_load(x_sums, ROWS, XROWS, ld=0,
                               offset=(firsts[u] // gs) * XROWS)
            group = u // per_group
            bias = fma(scales[group], -offset, biases[group])
            acc = fma(scales[group], part, fma(bias, x_group, acc))
    return acc


def matvec_mma_kernel(dtype, group_size, config: QmvMmaConfig, split):
    """Kernel ``(X: T, Wq: u32, S: T, B: T, Y, M: u32, N: u32, K: u32)``
    for ``M <= 16`` rows of x (T f16 or bf16). Threadgroup ``(i, s)``
    computes rows ``rows_per_threadgroup * i ...`` of ``y^T`` over values
    ``span * s ...`` of K. ``split``: Y is the float partial sums
    ``P[s, m, n]`` (``splits * M * N``); otherwise ``Y[m, n]`` of T.

    The threadgroup stages x's rows of its K range in threadgroup memory,
    chunks permuted (``PERMUTE``) and rows past M zero; then simdgroup
    ``(g, p)`` (block ``g``, part ``p``) multiplies its 16 weight rows,
    dequantised by :func:`enigma.mma_gather` of the packed words, scales
    and biases, with x's columns; the parts' sums meet in threadgroup
    memory and are added in part order."""
    if config.span is None:
        fail(f"{config}: span is chosen per shape; call for_shape first")
    T = as_dtype(dtype)
    if T.name not in ("f16", "bf16"):
        fail(f"matvec_mma_kernel: x must be f16 or bf16, got {T.name}")
    gs = check_group_size(group_size)
    c = config
    if c.pairs and (c.chunks * CHUNK) % gs:
        fail(f"{c}: with pairs a step of chunks * 32 = {c.chunks * CHUNK} "
             f"values of K must hold whole groups of {gs}")
    ld = c.span + 8               # padded rows: conflict-free B reads

    def products(X, Wq, S, B, M, N, K):
        """Everything but the stores: (thread, block, split, the parts'
        sums in threadgroup memory, complete)."""
        t = thread_index_in_threadgroup()
        sg = simdgroup_index_in_threadgroup()
        block = threadgroup_position_in_grid("x")
        split_index = threadgroup_position_in_grid("y")
        k_begin = split_index * c.span

        # x's rows of this K range, each chunk in PERMUTE order: thread
        # item f stages 8 values of row f // (span / 8).
        xs = threadgroup_alloc(T, XROWS * ld)
        words_per_row = c.span // VALUES_PER_WORD
        for f, inside in _items(t, c.threads, XROWS * words_per_row):
            m, w = f // words_per_row, f % words_per_row
            k = k_begin + w * VALUES_PER_WORD
            live = (m < M) & (k < K) & inside
            src = where(0, m * K + k, live)
            chunk, word = w // 4, w % 4
            # Values 8 word .. 8 word + 7 of the chunk, two 4-value loads;
            # pairs (2 s, 2 s + 1) go to logical 2 word + 8 s, side by side
            # (pairs=True: values s and s + 4 to _pair_column(word, s)).
            loaded = [vector_load(X, src + 4 * h, 4) for h in range(2)]
            values = [where(0.0, v.cast("float"), live).cast(T)
                      for x4 in loaded for v in (x4.x, x4.y, x4.z, x4.w)]
            with if_(inside):
                for pair in range_constexpr(4):
                    at, first, second = _staged_pair(pair, c.pairs)
                    vector_store(xs, m * ld + chunk * CHUNK + 2 * word + at,
                                 make_vec(values[first], values[second]))
        rows_tg = c.rows_per_threadgroup
        if c.staged:
            # The threadgroup's packed words, scales and biases of the
            # span, read with coalesced 16-byte loads (a chunk of a row
            # each) into threadgroup memory; the products' gathers then
            # read threadgroup memory. Rows padded by 4 words: the 8 rows
            # x 4 words of one gather fall in 32 distinct banks.
            wld = c.span // VALUES_PER_WORD + 4
            ws = threadgroup_alloc(enigma_u32, rows_tg * wld)
            chunks_per_row = c.span // CHUNK
            for f, inside in _items(t, c.threads, rows_tg * chunks_per_row):
                r, ch = f // chunks_per_row, f % chunks_per_row
                n = imin(block * rows_tg + r, N - 1)
                k = k_begin + ch * CHUNK
                src = n * (K // VALUES_PER_WORD) + \
                    where(0, k // VALUES_PER_WORD, k < K)
                w4 = vector_load(Wq, src, 4)
                with if_(inside):
                    vector_store(ws, r * wld + ch * 4, w4)
            groups = c.span // gs
            sld = groups + 1
            ss = threadgroup_alloc(T, rows_tg * sld)
            bs = threadgroup_alloc(T, rows_tg * sld)
            for f, inside in _items(t, c.threads, rows_tg * groups):
                r, gg = f // groups, f % groups
                n = imin(block * rows_tg + r, N - 1)
                k = k_begin + gg * gs
                at = n * (K // gs) + where(0, k // gs, k < K)
                with if_(inside):
                    ss[r * sld + gg] = S[at]
                    bs[r * sld + gg] = B[at]
        barrier()
        if c.pairs:
            x_sums = _group_sums(xs, ld, c, gs, t)

        g, p = sg // c.parts, sg % c.parts
        row0 = block * rows_tg + g * ROWS
        # The A fragment's columns, or (pairs) the words' fragment's: the
        # lane's elements of a row read one word either way.
        width = ROWS if c.pairs else CHUNK
        rows = mma_iota(0, ROWS, width)
        cols = mma_iota(1, ROWS, width)
        # Bit operations (the columns are not negative): the compilers
        # then see that a lane's elements of a row read one word.
        nibble = ((cols >> 3) << 1) | (cols & 1)
        if c.staged:
            local = rows + g * ROWS
            word_of = local * wld + ((cols >> 1) & 3)
            group_of = local * sld
        else:
            # A row past N reads row N - 1 (its sums are not stored).
            row = rows + row0
            row = where(row, mma_fill(0, ROWS, width, dtype="int") + (N - 1),
                        row >= N.cast("int"))
            word_of = row * (K // VALUES_PER_WORD).cast("int") + \
                ((cols >> 1) & 3)
            group_of = row * (K // gs).cast("int")
        if c.pairs:   # pair column c holds nibbles s and s + 4, s = nibble
            shift = nibble.cast("uint") << 2
            magic, offset = PAIR_MAGIC[T.name]
        else:
            mask = (mma_fill(0xF, ROWS, CHUNK, dtype="uint") <<
                    ((nibble & 3) << 2).cast("uint"))
            high = (nibble >> 2).cast("uint") << 4  # 16 for nibbles 4..7
            unscale = mma_fill(1.0, ROWS, CHUNK)
            for j in range_constexpr(1, 4):
                unscale = where(unscale, mma_fill(16.0 ** -j, ROWS, CHUNK),
                                (nibble & 3) == j)
            magic = None
        hold = (K >> 31).cast("uint")          # 0, unknown to the compiler

        steps = c.span // c.step_span
        with for_range(0, steps, dtype="uint",
                       init=[mma_zeros(ROWS, XROWS)]) as (step, acc):
            firsts, words, scales, biases = [], [], [], []
            for u in range_constexpr(c.chunks):
                at_k = ((step * c.parts + p) * c.chunks + u) * CHUNK
                firsts.append(at_k)
                # (pairs: a group's scale and bias only where it ends)
                need = not c.pairs or (u + 1) % (gs // CHUNK) == 0
                if c.staged:
                    # Past K the staged chunks are chunk 0's.
                    words.append(mma_gather(ws, word_of + at_k // 8))
                    if need:
                        scales.append(mma_gather(ss, group_of + at_k // gs))
                        biases.append(mma_gather(bs, group_of + at_k // gs))
                    continue
                k0 = k_begin + at_k
                kk = where(0, k0, k0 < K)      # past K: chunk 0
                # The chunk's offset in the (32-bit) indices, not the
                # gather's offset: one 32-bit multiply-add per address.
                words.append(mma_gather(Wq, word_of + (kk >> 3).cast("int")))
                if need:
                    at = (kk // gs).cast("int")
                    scales.append(mma_gather(S, group_of + at))
                    biases.append(mma_gather(B, group_of + at))
            scales = [v.cast("float") for v in scales]
            biases = [v.cast("float") for v in biases]
            # Gathers from device memory: every load of the step before
            # the first use, the step's magic depending on all of them
            # (magic_after). Threadgroup memory answers fast: the staged
            # form decodes each chunk as it comes, in fewer registers,
            # with magic_bits' magic (no constant either, so `(halves &
            # mask) | magic` is one LOP3).
            step_magic = magic_bits(K, magic)
            if not c.staged:
                step_magic = magic_after(
                    words + [as_type(v, "uint") for v in scales + biases],
                    hold, magic)
            if c.pairs:
                acc[0] = _paired_products(acc[0], c, gs, T, xs, ld, x_sums,
                                          firsts, words, scales, biases,
                                          shift, step_magic, offset)
            else:
                a_acc = acc[0]
                for u in range_constexpr(c.chunks):
                    halves = words[u] >> high
                    bits = (halves & mask) | step_magic
                    codes = as_type(bits, "float") - _MAGIC
                    # Past K, x's staged values are 0: the weights read
                    # there (chunk 0's) add nothing.
                    weights = fma(scales[u] * unscale, codes, biases[u])
                    a_acc = mma(a_acc, weights,
                                mma_operand(xs, ld=ld, offset=firsts[u],
                                            transpose=True))
                acc[0] = a_acc

        sums = threadgroup_alloc("float", c.threads // 32 * ROWS * XROWS)
        mma_store(acc[0], sums, ld=XROWS, offset=sg * ROWS * XROWS)
        barrier()
        return t, block, split_index, sums

    def each_output(t, block, sums, M, N, write):
        """``write(m, n, total)`` for this threadgroup's outputs inside M x
        N, the parts' sums added in part order."""
        count = c.row_groups * ROWS * XROWS
        for f, inside in _items(t, c.threads, count):
            f = imin(f, count - 1)     # spare threads re-read the last sum
            gg, r, m = f // (ROWS * XROWS), (f // XROWS) % ROWS, f % XROWS
            base = (gg * c.parts) * ROWS * XROWS + r * XROWS + m
            total = sums[base]
            for q in range_constexpr(1, c.parts):
                total = total + sums[base + q * ROWS * XROWS]
            n = block * c.rows_per_threadgroup + gg * ROWS + r
            with if_(inside & (m < M) & (n < N)):
                write(m, n, total)

    if split == "in_kernel":
        return _summed_kernel(T, gs, c, products, each_output)
    out_dtype = enigma_f32 if split else T

    @kernel
    def quantized_matvec_mma(X: T, Wq: enigma_u32, S: T, B: T, Y: out_dtype,
                             M: Scalar(enigma_u32), N: Scalar(enigma_u32),
                             K: Scalar(enigma_u32, multiple_of=gs)):
        t, block, split_index, sums = products(X, Wq, S, B, M, N, K)
        at = split_index * M if split else 0

        def write(m, n, total):
            Y[(at + m) * N + n] = total
        each_output(t, block, sums, M, N, write)

    return quantized_matvec_mma


def _summed_kernel(T, gs, c, products, each_output):
    """Kernel ``(X, Wq, S, B, P: f32, F: u32, Y: T, M, N, K)``: each
    threadgroup stores its float partial sums ``P[s, m, n]``; the last of a
    block's threadgroups to arrive (a counter per block in ``F``, zeroed
    before the first launch and left zeroed) adds the block's partials in
    split order, as the second kernel of the two-launch form does (the
    same result bit for bit), and stores Y."""
    rows_tg = c.rows_per_threadgroup

    @kernel
    def quantized_matvec_mma_summed(X: T, Wq: enigma_u32, S: T, B: T,
                                    P: enigma_f32, F: enigma_u32, Y: T,
                                    M: Scalar(enigma_u32),
                                    N: Scalar(enigma_u32),
                                    K: Scalar(enigma_u32, multiple_of=gs)):
        t, block, split_index, sums = products(X, Wq, S, B, M, N, K)

        def write(m, n, total):
            P[(split_index * M + m) * N + n] = total
        each_output(t, block, sums, M, N, write)
        # Every thread's partials reach the device before the count does.
        barrier("mem_device")
        arrived = threadgroup_alloc(enigma_u32, 1)
        with if_(t == 0):
            arrived[0] = atomic_fetch_add(F, block, 1, order="acq_rel")
        barrier()
        splits = threadgroups_per_grid("y")
        with if_(arrived[0] == splits - 1):
            for f, inside in _items(t, c.threads, rows_tg * XROWS):
                r, m = f // XROWS, f % XROWS
                n = block * rows_tg + r
                live = inside & (m < M) & (n < N)
                at = where(0, m * N + n, live)
                with for_range(1, splits, dtype="uint",
                               init=[P[at]]) as (h, total):
                    total[0] = total[0] + P[h * M * N + at]
                with if_(live):
                    Y[at] = total[0]
            with if_(t == 0):          # ready for the next launch
                atomic_store(F, block, 0)

    return quantized_matvec_mma_summed
