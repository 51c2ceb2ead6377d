"""The attention backward pass with enigma.attention: dQ, dK and dV from
the forward's output and log-sum-exp, grouped-query heads and a causal
mask, checked against the gradients worked out in numpy (float64).

    python examples/python/attention_backward.py [--batch 2] [--heads 4] \
        [--kv-heads 2] [--seq 100] [--dim 64] [--no-causal] \
        [--atomic-dq]

dQ comes from a kernel of its own (the same bits on every run, no float
atomics); with ``--atomic-dq``, from atomics in the dK/dV kernel.
``--deterministic`` is accepted and is the default.
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


def reference_grads(q, k, v, do, causal):
    """(dq, dk, dv) of softmax(Q K^T / sqrt(d)) V in float64:
    dV = P^T dO, dP = dO V^T, dS = P (dP - rowsum(dO O)), dQ = dS K / sqrt(d),
    dK = dS^T Q / sqrt(d); grouped heads add into their key/value head."""
    b, hq, s, d = q.shape
    group = hq // k.shape[1]
    dq, dk, dv = np.zeros(q.shape), np.zeros(k.shape), np.zeros(v.shape)
    scale = 1 / math.sqrt(d)
    for i in range(b):
        for h in range(hq):
            kh, vh = k[i, h // group], v[i, h // group]
            scores = q[i, h] @ kh.T * scale
            if causal:
                scores = np.where(np.tril(np.ones((s, s), bool)), scores,
                                  -np.inf)
            p = np.exp(scores - scores.max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            o = p @ vh
            dp = do[i, h] @ vh.T
            ds = p * (dp - (do[i, h] * o).sum(1, keepdims=True))
            dq[i, h] = ds @ kh * scale
            dk[i, h // group] += ds.T @ q[i, h] * scale
            dv[i, h // group] += p.T @ do[i, h]
    return dq, dk, dv


def main(batch=2, heads=4, kv_heads=2, seq=100, dim=64, causal=True,
         deterministic=True):
    rng = np.random.default_rng()
    q = to_bf16(rng.standard_normal((batch, heads, seq, dim)))
    k = to_bf16(rng.standard_normal((batch, kv_heads, seq, dim)))
    v = to_bf16(rng.standard_normal((batch, kv_heads, seq, dim)))
    do = to_bf16(rng.standard_normal((batch, heads, seq, dim)))
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}, B={batch}, {heads} query heads on "
          f"{kv_heads}, S={seq}, D={dim}, causal={causal}, "
          f"deterministic={deterministic}")
    o, lse = ea.attention(q, k, v, causal=causal, return_lse=True,
                          runtime=rt)
    grads = ea.attention_backward(do, q, k, v, o, lse, causal=causal,
                                  deterministic=deterministic, runtime=rt)
    want = reference_grads(*(from_bf16(x) for x in (q, k, v, do)), causal)
    for name, got, ref in zip(("dq", "dk", "dv"), grads, want):
        err = np.abs(from_bf16(got) - ref)
        # 16-bit P and dS before their products, 16-bit results.
        bound = 2.0**-6 * (np.abs(ref).max() + np.abs(ref))
        if not (err <= bound).all():
            print(f"FAIL: {name}: worst error {err.max()}")
            return 1
        print(f"{name}: worst error {err.max():.3g}")
    print("pass")
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--kv-heads", type=int, default=2)
    parser.add_argument("--seq", type=int, default=100)
    parser.add_argument("--dim", type=int, default=64)
    parser.add_argument("--no-causal", dest="causal", action="store_false")
    parser.add_argument("--deterministic", action="store_true",
                        help="the default: dQ by a kernel of its own")
    parser.add_argument("--atomic-dq", dest="atomic", action="store_true",
                        help="dQ added up with float atomics")
    return parser.parse_args(argv)


if __name__ == "__main__":
    a = parse_args(sys.argv[1:])
    sys.exit(main(a.batch, a.heads, a.kv_heads, a.seq, a.dim, a.causal,
                  not a.atomic))
