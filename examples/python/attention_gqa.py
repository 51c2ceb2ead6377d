"""Grouped-query attention with enigma.attention: a batch of sequences of
different lengths (packed, with cumulative offsets), fewer key/value heads
than query heads, causal masks aligned bottom-right (prefill with a few
cached keys before the new queries), checked against numpy in float64.

    python examples/python/attention_gqa.py [--heads 8] [--kv-heads 2] \
        [--dim 128] [--lengths 17,0,64] [--cached 5] [--no-causal] \
        [--dtype bf16|f16]

Sequence ``b`` has ``lengths[b]`` queries and ``cached + lengths[b]`` keys;
query ``i`` sees the cached keys and the new ones up to its own.
"""

import argparse
import math
import sys

import numpy as np

import enigma
import enigma.attention as ea


def to_bf16(x):
    """float array -> bfloat16 bits (uint16), rounding to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def values(x):
    """float64 values of bfloat16 bits or float16."""
    if x.dtype == np.uint16:
        return (x.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return x.astype(np.float64)


def reference(q, k, v, cu_q, cu_k, causal):
    """Packed attention in float64, one sequence and head at a time."""
    q, k, v = values(q), values(k), values(v)
    group = q.shape[1] // k.shape[1]
    out = np.zeros(q.shape)
    for b in range(len(cu_q) - 1):
        rq, rk = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        for h in range(q.shape[1]):
            s = q[rq, h] @ k[rk, h // group].T / math.sqrt(q.shape[2])
            sq, skv = s.shape
            if causal:
                seen = np.arange(skv)[None, :] <= \
                    np.arange(sq)[:, None] + skv - sq
                s = np.where(seen, s, -np.inf)
            if skv and sq:
                p = np.exp(s - s.max(axis=1, keepdims=True))
                out[rq, h] = p @ v[rk, h // group] / p.sum(1, keepdims=True)
    return out


def main(heads=8, kv_heads=2, dim=128, lengths=(17, 0, 64), cached=5,
         causal=True, dtype="bf16"):
    rng = np.random.default_rng()
    cu_q = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum([n + cached for n in lengths])]
                          ).astype(np.int32)

    def make(rows, h):
        x = rng.standard_normal((rows, h, dim))
        return to_bf16(x) if dtype == "bf16" else x.astype(np.float16)

    q = make(cu_q[-1], heads)
    k, v = make(cu_k[-1], kv_heads), make(cu_k[-1], kv_heads)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}, {heads} query heads on {kv_heads} "
          f"key/value heads, D={dim}, lengths {list(lengths)} + {cached} "
          f"cached keys, causal={causal}, {dtype}")
    o = ea.attention_varlen(q, k, v, cu_q, cu_k, causal=causal, runtime=rt)
    want = reference(q, k, v, cu_q, cu_k, causal)
    err = np.abs(values(o) - want)
    bound = 2.0**-8 * (np.abs(values(v)).max() + np.abs(want)) + 1e-6
    if not (err <= bound).all():
        print(f"FAIL: worst error {err.max()}")
        return 1
    print(f"worst error {err.max():.3g}")
    print("pass")
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--dim", type=int, default=128,
                        help="head dimension: 64, 128 or 256")
    parser.add_argument("--lengths", default="17,0,64",
                        help="queries of each sequence, comma-separated")
    parser.add_argument("--cached", type=int, default=5,
                        help="keys before each sequence's queries")
    parser.add_argument("--no-causal", dest="causal", action="store_false")
    parser.add_argument("--dtype", choices=("bf16", "f16"), default="bf16")
    return parser.parse_args(argv)


if __name__ == "__main__":
    a = parse_args(sys.argv[1:])
    sys.exit(main(a.heads, a.kv_heads, a.dim,
                  tuple(int(x) for x in a.lengths.split(",")), a.cached,
                  a.causal, a.dtype))
