"""Decoding against a paged key/value cache with enigma.attention: one new
query per sequence, the keys in pages of a shared cache (vLLM's layout,
pages in shuffled order), the keys of each sequence split across
threadgroups and the partial results merged (flash-decoding). Checked
against numpy in float64.

    python examples/python/attention_decode.py [--batch 4] [--heads 32] \
        [--kv-heads 8] [--dim 128] [--keys 1000] [--page-size 64] \
        [--splits N]
"""

import argparse
import math
import sys

import numpy as np

import enigma
import enigma.attention as ea


def to_bf16(x):
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def paged_cache(rng, lengths, page_size, kv_heads, dim):
    """(k_cache, v_cache, block_table, packed k, packed v): each sequence's
    keys in pages of the cache, the pages in random order."""
    counts = [-(-n // page_size) for n in lengths]
    pages = sum(counts)
    shape = (pages, page_size, kv_heads, dim)
    k_cache = to_bf16(rng.standard_normal(shape))
    v_cache = to_bf16(rng.standard_normal(shape))
    order = rng.permutation(pages)
    table = np.zeros((len(lengths), max(counts)), np.int32)
    ks, vs, used = [], [], 0
    for b, (n, c) in enumerate(zip(lengths, counts)):
        table[b, :c] = order[used:used + c]
        used += c
        ks.append(k_cache[table[b, :c]].reshape(-1, kv_heads, dim)[:n])
        vs.append(v_cache[table[b, :c]].reshape(-1, kv_heads, dim)[:n])
    return k_cache, v_cache, table, ks, vs


def main(batch=4, heads=32, kv_heads=8, dim=128, keys=1000, page_size=64,
         splits=None):
    rng = np.random.default_rng()
    lengths = [max(1, keys - 37 * b) for b in range(batch)]
    k_cache, v_cache, table, ks, vs = paged_cache(rng, lengths, page_size,
                                                  kv_heads, dim)
    q = to_bf16(rng.standard_normal((batch, heads, dim)))
    cu_q = np.arange(batch + 1, dtype=np.int32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}, batch {batch}, {heads} query "
          f"heads on {kv_heads} key/value heads, D={dim}, up to {keys} "
          f"keys in pages of {page_size}, splits {splits or 'auto'}")
    o = ea.attention_paged(q, k_cache, v_cache, table,
                           np.array(lengths, np.int32), cu_q,
                           num_splits=splits, runtime=rt)
    group = heads // kv_heads
    worst = 0.0
    for b in range(batch):
        k, v = from_bf16(ks[b]), from_bf16(vs[b])
        for h in range(heads):
            s = k[:, h // group] @ from_bf16(q[b, h]) / math.sqrt(dim)
            p = np.exp(s - s.max())
            want = p @ v[:, h // group] / p.sum()
            err = np.abs(from_bf16(o[b, h]) - want)
            if not (err <= 2.0**-8 * (np.abs(v).max() + np.abs(want))).all():
                print(f"FAIL: sequence {b}, head {h}: error {err.max()}")
                return 1
            worst = max(worst, float(err.max()))
    print(f"worst error {worst:.3g}")
    print("pass")
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--dim", type=int, default=128)
    parser.add_argument("--keys", type=int, default=1000,
                        help="keys of the first sequence (the others fewer)")
    parser.add_argument("--page-size", type=int, default=64,
                        help="a multiple of 16 from 16 to 256")
    parser.add_argument("--splits", type=int, default=None,
                        help="splits of each sequence's keys (default: "
                             "the library chooses)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    a = parse_args(sys.argv[1:])
    sys.exit(main(a.batch, a.heads, a.kv_heads, a.dim, a.keys, a.page_size,
                  a.splits))
