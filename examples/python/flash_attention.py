"""Flash attention forward, ``O = softmax(Q K^T / sqrt(d)) V`` (causal or
not), bfloat16 in and out, on the matrix multiply-accumulate family
(docs/reference/mma.md).

    python examples/python/flash_attention.py [BH] [S] [D] [--causal]

Q, K, V and O are ``BH x S x D`` (batch times heads, sequence, head
dimension D = 64 or 128), row-major. A threadgroup owns ``rows`` query rows
(64 or 128), 16 per simdgroup, and walks the keys in blocks of ``bc``
(``tuned`` times the configurations ``(bc, rows, q_shared)`` on the
runtime):

1. its Q rows are read once, into a bfloat16 fragment (registers), or with
   ``q_shared`` into threadgroup memory (the default on CUDA: Hopper's
   wgmma then reads both operands of ``S = Q K^T`` from there; a product
   whose A is a fragment from before the loop runs as mma.sync);
2. per key block, ``copy_tile`` brings K and V into swizzled threadgroup
   memory (cp.async on CUDA) in blocks of 64 columns (the layout Hopper's
   wgmma reads), V's copy overlapping ``S = Q K^T`` and the next K's copy
   overlapping ``P V``;
3. ``S`` (a 16 x bc fragment, ``enigma.mma`` with K stored N x K; both
   products are warpgroup products with A in registers, one wgmma per
   four simdgroups on Hopper) is scaled,
   masked where needed (``mma_iota`` columns past the sequence, and above
   the diagonal when causal; a branch the whole threadgroup takes alike
   skips the mask in the other blocks) and folded into the online softmax:
   the running row
   maximum ``m`` and sum ``l`` are row vectors, ``P = exp2(S - m)``, the
   accumulator ``O`` is rescaled by ``exp2(m_old - m)``;
4. ``O += P V`` takes ``P`` from registers, converted to bfloat16 (the
   accumulator layout is the A-operand layout of the next product);
5. ``O / l`` is stored as bfloat16, rows past the sequence masked.

Causal attention stops at the diagonal block. Any S works (edges are
zero-filled and masked).
"""

import argparse
import functools
import math
import sys

import numpy as np

import enigma

ROWS = 64              # query rows per threadgroup (the default)


def to_bf16(x):
    """float array -> bfloat16 bits (uint16), rounding to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits):
    """bfloat16 bits (uint16) -> float32."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(
        np.float32)


def make_kernel(d, causal, bc=64, rows=ROWS, q_shared=False):
    """The kernel for head dimension ``d``, causal or not, ``bc`` keys per
    block, ``rows`` query rows (``rows // 16`` simdgroups) per
    threadgroup, Q in registers or (``q_shared``) threadgroup memory."""
    # K and V tiles: blocks of bc x 64 (rows of 128 bytes), blk apart.
    sw = enigma.mma_swizzle(64, enigma.bf16)
    blk = bc * 64
    blocks_of_d = d // 64
    neg_inf = float("-inf")

    def copy_rows(dst, src, n, offset, valid_rows):
        """n rows of Q, K or V into blocks of n x 64, n * 64 apart."""
        enigma.copy_tile(dst, src, n, d, src_ld=d, src_offset=offset,
                         dst_ld=64, block_stride=n * 64,
                         valid_rows=valid_rows, swizzle=sw)

    def operand(tile, transpose):
        return enigma.mma_operand(tile, ld=64, transpose=transpose,
                                  swizzle=sw,
                                  block_stride=blk if blocks_of_d > 1 else 0)

    @enigma.kernel
    def flash_attention(Q: enigma.bf16, K: enigma.bf16, V: enigma.bf16,
                        S: enigma.Scalar(enigma.u32),
                        scale: enigma.Scalar(enigma.f32), O: enigma.bf16):
        k_s = enigma.threadgroup_alloc(enigma.bf16, bc * d)
        v_s = enigma.threadgroup_alloc(enigma.bf16, bc * d)
        q0 = enigma.threadgroup_position_in_grid("y") * rows
        head = enigma.threadgroup_position_in_grid("z") * S * d
        sg = enigma.simdgroup_index_in_threadgroup()
        row0 = q0 + sg * 16
        rows_left = enigma.where(0, S - row0, row0 < S)

        if q_shared:   # blocks of rows x 64; each group of four its 64 rows
            q_s = enigma.threadgroup_alloc(enigma.bf16, rows * d)
            copy_rows(q_s, Q, rows, head + q0 * d,
                      enigma.where(0, S - q0, q0 < S))
            q = enigma.mma_operand(
                q_s, ld=64, swizzle=sw, offset=(sg // 4) * (64 * 64),
                block_stride=rows * 64 if blocks_of_d > 1 else 0)
        else:
            q = enigma.mma_load(Q, 16, d, ld=d, offset=head + row0 * d,
                                bounds=(rows_left, d))
        o = enigma.mma_zeros(16, d)
        m = enigma.mma_fill(neg_inf, 16)      # running row maximum
        l = enigma.mma_zeros(16)              # running row sum
        blocks = (S + (bc - 1)) // bc
        # Blocks that need no mask: whole ones, and left of the diagonal
        # when causal; the rest (at most the edge and diagonal blocks) are
        # masked.
        full = S // bc
        if causal:   # blocks up to the threadgroup's last row
            blocks = enigma.imin(blocks, (q0 + (rows + bc - 1)) // bc)
            full = enigma.imin(full, q0 // bc)

        copy_rows(k_s, K, bc, head, enigma.imin(S, bc))
        enigma.copy_commit()                 # with Q's copy, if any
        for j in enigma.range(blocks, dtype="uint"):
            k0 = j * bc
            copy_rows(v_s, V, bc, head + k0 * d, S - k0)
            enigma.copy_commit()
            enigma.copy_wait(1)              # this block's K has landed
            enigma.barrier()

            s = enigma.mma(enigma.mma_zeros(16, bc), q, operand(k_s, True),
                           k=d, warpgroup=True)
            s = s * scale                    # log2(e) / sqrt(d)
            with enigma.if_(j >= full):      # the same in every thread
                cols = enigma.mma_iota(1, 16, bc) + k0
                masked = cols >= S
                if causal:
                    masked = masked | (cols > enigma.mma_iota(0, 16, bc) +
                                       row0)
                s = enigma.where(s, neg_inf, masked)
            m_new = enigma.fmax(m, s.row_max())
            p = enigma.exp2(s - m_new)
            alpha = enigma.exp2(m - m_new)
            l = l * alpha + p.row_sum()
            o = o * alpha

            enigma.barrier()                 # every simdgroup is done with K
            k1 = k0 + bc
            copy_rows(k_s, K, bc, head + k1 * d,
                      enigma.where(0, S - k1, k1 < S))
            enigma.copy_commit()
            enigma.copy_wait(1)              # this block's V has landed
            enigma.barrier()
            o = enigma.mma(o, p.cast(enigma.bf16), operand(v_s, False),
                           warpgroup=True)
            m = m_new
            enigma.barrier()                 # every simdgroup is done with V
        enigma.copy_wait(0)
        enigma.mma_store(o / l, O, ld=d, offset=head + row0 * d,
                         bounds=(rows_left, d))

    return flash_attention


@functools.lru_cache(maxsize=None)
def compiled(d, causal, bc=64, rows=ROWS, q_shared=False):
    return enigma.compile(make_kernel(d, causal, bc, rows, q_shared))


def q_shared_on(rt):
    """Q in threadgroup memory on CUDA (both wgmma operands from there);
    in registers elsewhere (less threadgroup memory: Metal has 32 KiB)."""
    return isinstance(rt, enigma.CudaRuntime)


def block_keys(d):
    """Keys per block: 64 (threadgroup memory holds one K and one V block)."""
    return 64


# (keys per block, query rows per threadgroup, Q in threadgroup memory).
# Threadgroup memory: 2 bc D + (rows D with Q there) bfloat16 elements;
# configurations beyond Metal's 32 KiB fail there and are skipped.
CONFIGS = [(32, 64, False), (64, 64, False), (128, 64, False),
           (64, 128, False), (128, 128, False),
           (64, 64, True), (128, 64, True), (64, 128, True), (128, 128, True)]


@enigma.autotune(configs=CONFIGS, key=["bh", "s", "d", "causal"])
def tuned(config, bh, s, d, causal):
    """The Launch for ``config = (bc, rows, q_shared)``."""
    bc, rows, q_shared = config
    return enigma.Launch(compiled(d, causal, bc, rows, q_shared),
                         *launch(bh, s, rows), scalars=[s, scale(d)],
                         output_bytes=bh * s * d * 2)


def launch(bh, s, rows=ROWS):
    """(grid, threads): threadgroups of 2 * rows threads (rows / 16
    simdgroups) over (query rows, heads)."""
    threads = 2 * rows
    return (threads, -(-s // rows), bh), (threads, 1, 1)


def _check_shapes(q, k, v):
    if q.ndim != 3 or q.shape != k.shape or q.shape != v.shape:
        raise ValueError(f"Q, K, V must be BH x S x D of one shape, got "
                         f"{q.shape}, {k.shape}, {v.shape}")
    bh, s, d = q.shape
    if d not in (64, 128):
        raise ValueError(f"head dimension must be 64 or 128, got {d}")
    if bh * s * d >= 2**32:
        raise ValueError("BH * S * D must be below 2^32 (32-bit offsets)")
    return bh, s, d


def scale(d):
    """The scalar the kernel takes: log2(e) / sqrt(d) (scores go to exp2)."""
    return math.log2(math.e) / math.sqrt(d)


def run(rt, q, k, v, causal=False, q_shared=None):
    """Attention of bfloat16 bit arrays (uint16, BH x S x D); returns the
    bfloat16 bits of O. ``q_shared``: None picks ``q_shared_on(rt)``."""
    q, k, v = (np.ascontiguousarray(x, np.uint16) for x in (q, k, v))
    bh, s, d = _check_shapes(q, k, v)
    grid, threads = launch(bh, s)
    if q_shared is None:
        q_shared = q_shared_on(rt)
    raw = rt.execute(compiled(d, causal, block_keys(d), ROWS, q_shared),
                     [q, k, v], output_size=q.size * 2, grid=grid,
                     threads=threads, scalars=[s, scale(d)])
    return np.frombuffer(raw, np.uint16).reshape(q.shape).copy()


def reference(q, k, v, causal=False):
    """softmax(Q K^T / sqrt(d)) V in float64 from the bfloat16 inputs."""
    q, k, v = (from_bf16(x).astype(np.float64) for x in (q, k, v))
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(q.shape[-1])
    if causal:
        s = q.shape[1]
        scores = np.where(np.tril(np.ones((s, s), bool)), scores, -np.inf)
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def check_output(o, q, k, v, causal=False):
    """|o - ref| <= 2^-8 (max |V| + |ref|): P is rounded to bfloat16 before
    P V (at most 2^-9 max|V| in a row's weighted sum) and O is rounded to
    bfloat16 (2^-9 |ref|)."""
    want = reference(q, k, v, causal)
    got = from_bf16(o).astype(np.float64).reshape(want.shape)
    vmax = np.abs(from_bf16(v)).max()
    bound = 2.0**-8 * (vmax + np.abs(want)) + 1e-6
    err = np.abs(got - want)
    bad = ~(err <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements out of "
                           f"tolerance, worst error {float(np.nanmax(err))}")


def run_prepared(rt, x, causal=False):
    """(prepared, grid, threads, check) for ``x = (Q, K, V)`` bit arrays."""
    q, k, v = (np.ascontiguousarray(a, np.uint16) for a in x)
    bh, s, d = _check_shapes(q, k, v)
    grid, threads = launch(bh, s)
    prepared = rt.prepare(compiled(d, causal, block_keys(d), ROWS,
                                   q_shared_on(rt)),
                          [q, k, v], q.size * 2, scalars=[s, scale(d)])

    def check(out):
        check_output(np.frombuffer(out, np.uint16).reshape(q.shape), q, k, v,
                     causal)

    return prepared, grid, threads, check


def main(bh: int = 4, s: int = 200, d: int = 64, causal: bool = False) -> int:
    rng = np.random.default_rng()
    q, k, v = (to_bf16(rng.standard_normal((bh, s, d))) for _ in range(3))
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}, BH={bh} S={s} D={d} "
          f"causal={causal}")
    check_output(run(rt, q, k, v, causal), q, k, v, causal)
    print("pass")
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="bfloat16 flash attention forward on the best available "
                    "runtime, checked against numpy (float64).")
    for name, default, what in (("BH", 4, "batch x heads"),
                                ("S", 200, "sequence length"),
                                ("D", 64, "head dimension, 64 or 128")):
        parser.add_argument(name.lower(), metavar=name, type=int,
                            nargs="?", default=default,
                            help=f"{what} (default {default})")
    parser.add_argument("--causal", action="store_true",
                        help="mask keys after each query (causal attention)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    sys.exit(main(args.bh, args.s, args.d, args.causal))
