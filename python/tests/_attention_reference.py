"""References and helpers of the attention tests: bfloat16 bits in numpy,
float64 attention (grouped heads, bottom-right causal masks, empty rows),
the tolerance of the forward's result, float64 gradients with the bounds
of the backward's rounding, and paged caches built from packed keys with
shuffled pages."""

import math

import numpy as np


def to_bf16(x):
    """float array -> bfloat16 bits (uint16), rounding to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(
        np.float32)


def make(rng, shape, dtype):
    """Random normal values as bf16 bits or float16."""
    x = rng.standard_normal(shape)
    return to_bf16(x) if dtype == "bf16" else x.astype(np.float16)


def values(x):
    """float64 values of bf16 bits / float16 arrays."""
    x = np.asarray(x)
    return (from_bf16(x) if x.dtype == np.uint16 else x).astype(np.float64)


def reference_head(q, k, v, causal, scale):
    """(O, LSE) of one head in float64: q (sq, d), k and v (skv, d)."""
    sq, skv = len(q), len(k)
    s = q @ k.T * scale
    if causal:
        allowed = np.arange(skv)[None, :] <= np.arange(sq)[:, None] + skv - sq
        s = np.where(allowed, s, -np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = s.max(axis=1, keepdims=True) if skv else np.full((sq, 1), -np.inf)
        m = np.where(np.isfinite(m), m, 0.0)
        p = np.exp(s - m)
        l = p.sum(axis=1, keepdims=True)
        o = np.where(l > 0, (p @ v) / np.where(l > 0, l, 1.0), 0.0)
        lse = np.where(l[:, 0] > 0, np.log(np.where(l[:, 0] > 0, l[:, 0], 1))
                       + m[:, 0], -np.inf)
    return o, lse


def reference_bhsd(q, k, v, causal, scale=None):
    q, k, v = values(q), values(k), values(v)
    b, hq, sq, d = q.shape
    group = hq // k.shape[1]
    scale = 1 / math.sqrt(d) if scale is None else scale
    o = np.zeros(q.shape)
    lse = np.zeros((b, hq, sq))
    for i in range(b):
        for h in range(hq):
            o[i, h], lse[i, h] = reference_head(q[i, h], k[i, h // group],
                                                v[i, h // group], causal,
                                                scale)
    return o, lse


def reference_varlen(q, k, v, cu_q, cu_k, causal, scale=None):
    q, k, v = values(q), values(k), values(v)
    total, hq, d = q.shape
    group = hq // k.shape[1]
    scale = 1 / math.sqrt(d) if scale is None else scale
    o = np.zeros(q.shape)
    lse = np.zeros((hq, total))
    for b in range(len(cu_q) - 1):
        rq = slice(cu_q[b], cu_q[b + 1])
        rk = slice(cu_k[b], cu_k[b + 1])
        for h in range(hq):
            o[rq, h], lse[h, rq] = reference_head(q[rq, h], k[rk, h // group],
                                                  v[rk, h // group], causal,
                                                  scale)
    return o, lse


def check_forward(o, lse, want_o, want_lse, v):
    """|o - ref| <= 2^-8 (max |V| + |ref|) (P is rounded to 16 bits before
    P V, O to 16 bits at the end); the LSE within 2^-16 (1 + |ref|), and
    -inf exactly where a row saw no key."""
    got = values(o)
    bound = 2.0**-8 * (np.abs(values(v)).max(initial=0) + np.abs(want_o)) \
        + 1e-6
    err = np.abs(got - want_o)
    bad = ~(err <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements of O "
                           f"out of tolerance, worst {np.nanmax(err)}")
    if lse is None:
        return
    lse = np.asarray(lse, np.float64)
    empty = np.isneginf(want_lse)
    assert np.array_equal(np.isneginf(lse), empty), "rows without keys"
    err = np.abs(lse[~empty] - want_lse[~empty])
    bad = ~(err <= 2.0**-16 * (1 + np.abs(want_lse[~empty])))
    assert not bad.any(), f"LSE out of tolerance, worst {np.nanmax(err)}"


def paged_cache(rng, k, v, cu_k, page_size, spare=2):
    """(k_cache, v_cache, block_table, seqlens_k) holding the packed keys
    and values of each sequence in pages of ``page_size``, the pages in
    shuffled order with ``spare`` unused ones (filled with noise), unused
    table entries pointing at random pages."""
    lengths = np.diff(cu_k).astype(np.int32)
    counts = [-(-int(n) // page_size) for n in lengths]
    pages = sum(counts) + spare
    _, hkv, d = k.shape
    k_cache = rng.integers(0, 2**15, (pages, page_size, hkv, d)).astype(k.dtype)
    v_cache = k_cache.copy()
    order = rng.permutation(pages)
    width = max(1, max(counts, default=1) + 1)
    table = rng.integers(0, pages, (len(lengths), width)).astype(np.int32)
    used = 0
    for b, n in enumerate(counts):
        for j in range(n):
            page = order[used]
            used += 1
            table[b, j] = page
            start = cu_k[b] + j * page_size
            stop = min(start + page_size, cu_k[b + 1])
            k_cache[page, :stop - start] = k[start:stop]
            v_cache[page, :stop - start] = v[start:stop]
    return k_cache, v_cache, table, lengths


# Gradients. The backward kernels round P and dS to 16 bits before their
# products (2^-8 relative each, bfloat16), use Delta from the 16-bit O and
# round the gradients to 16 bits; so |g - ref| <= 2^-6 (|P| |dO|-, |dS| |Q|-
# or |dS| |K|-products, computed in float64 from magnitudes, with |dP| +
# rowsum(|dO| |O|) for dP - Delta) + 2^-8 |ref|. A wrong mask, a wrong
# head or a missing block is off by the size of the terms.

def _grads_head(q, k, v, do, causal, scale):
    """float64 autograd of one head, and the magnitudes that bound the
    kernels' rounding: (dq, dk, dv), (bound_q, bound_k, bound_v)."""
    import torch
    q, k, v = (torch.tensor(x, dtype=torch.float64, requires_grad=True)
               for x in (q, k, v))
    do = torch.tensor(do, dtype=torch.float64)
    sq, skv = q.shape[0], k.shape[0]
    s = q @ k.T * scale
    if causal:
        allowed = torch.arange(skv)[None, :] <= \
            torch.arange(sq)[:, None] + skv - sq
        s = s.masked_fill(~allowed, float("-inf"))
    p = torch.softmax(s, dim=-1).nan_to_num(0.0)   # rows without keys
    (p @ v).backward(do)
    with torch.no_grad():
        dp = do @ v.T
        # Delta = rowsum(dO O) comes from the 16-bit O: its error follows
        # the sum of magnitudes, not the (cancelling) sum.
        delta = (do.abs() * (p @ v).abs()).sum(-1, keepdim=True)
        ds = p * (dp.abs() + delta)
        bound_q = ds @ k.abs() * scale
        bound_k = ds.T @ q.abs() * scale
        bound_v = p.T @ do.abs()
    return ((q.grad, k.grad, v.grad),
            (bound_q, bound_k, bound_v))


def reference_grads(q, k, v, do, rows_q, rows_k, causal, scale):
    """Gradients and bounds for packed (total, heads, d) tensors whose
    sequences are the row ranges ``rows_q[b]`` / ``rows_k[b]``."""
    q, k, v, do = values(q), values(k), values(v), values(do)
    group = q.shape[1] // k.shape[1]
    grads = [np.zeros(x.shape) for x in (q, k, v)]
    bounds = [np.zeros(x.shape) for x in (q, k, v)]
    for rq, rk in zip(rows_q, rows_k):
        for h in range(q.shape[1]):
            hk = h // group
            (gq, gk, gv), (bq, bk, bv) = _grads_head(
                q[rq, h], k[rk, hk], v[rk, hk], do[rq, h], causal, scale)
            grads[0][rq, h] += gq.numpy()
            grads[1][rk, hk] += gk.numpy()
            grads[2][rk, hk] += gv.numpy()
            bounds[0][rq, h] += bq.numpy()
            bounds[1][rk, hk] += bk.numpy()
            bounds[2][rk, hk] += bv.numpy()
    return grads, bounds


def check_grads(got, want, bounds):
    for name, g, r, bound in zip(("dq", "dk", "dv"), got, want, bounds):
        err = np.abs(values(g) - r)
        bad = ~(err <= 2.0**-6 * bound + 2.0**-8 * np.abs(r) + 1e-5)
        assert not bad.any(), (f"{name}: {int(bad.sum())} of {bad.size} out "
                               f"of tolerance, worst {np.nanmax(err)}")
