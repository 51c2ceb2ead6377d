"""The argument checks of every entry point turned into a
:class:`~.plans.Problem` and the arrays of its launches (numpy arrays or
PyTorch tensors alike)."""

from __future__ import annotations

import numpy as np

from .checks import is_torch
from .plans import Problem

__all__ = ["to_host", "bhsd_problem", "varlen_problem", "max_length",
           "paged_problem", "check_grad_inputs"]


def to_host(x):
    """A small integer argument as a numpy array (a copy from the device
    for CUDA tensors)."""
    return x.detach().cpu().numpy() if is_torch(x) else np.asarray(x)


def bhsd_problem(c, q, k, v, causal, scale):
    """The checked :class:`Problem` of (batch, heads, sequence, d) q, k
    and v, and the shapes (q, lse)."""
    what = "(batch, heads, sequence, head_dim)"
    qi = c.array("q", q, ndim=4, what=what)
    ki = c.array("k", k, ndim=4, what=what)
    vi = c.array("v", v, ndim=4, what=what)
    c.same_dtype([("q", qi), ("k", ki), ("v", vi)])
    b, hq, sq, d = qi.shape
    c.head_dim(d)
    c.equal("batch size", ki.shape[0], b, "k")
    c.equal("head dimension", ki.shape[3], d, "k")
    c.equal("shape", vi.shape, ki.shape, "v")
    c.heads(hq, ki.shape[1])
    skv = ki.shape[2]
    return Problem(dtype=qi.dtype, d=d, batch=b, hq=hq, hkv=ki.shape[1],
                   layout="bhsd", max_sq=sq, max_skv=skv, total_q=b * sq,
                   total_k=b * skv, causal=c.flag("causal", causal),
                   scale=c.scale(scale, d))


def varlen_problem(c, q, k, v, cu_q, cu_k, max_sq, max_skv, causal, scale,
                   *, read_values=True):
    """The checked :class:`Problem` (thd layout) and arrays of a varlen
    call. ``read_values``: the offsets are read and checked on the host
    (else ``max_sq`` and ``max_skv`` must be given)."""
    k_name, v_name = "k", "v"
    what = "(total, heads, head_dim)"
    qi = c.array("q", q, ndim=3, what=what)
    ki = c.array(k_name, k, ndim=3, what=what)
    vi = c.array(v_name, v, ndim=3, what=what)
    c.same_dtype([("q", qi), (k_name, ki), (v_name, vi)])
    total_q, hq, d = qi.shape
    c.head_dim(d)
    c.equal("head dimension", ki.shape[2], d, k_name)
    c.equal("shape", vi.shape, ki.shape, v_name)
    c.heads(hq, ki.shape[1], k_name)
    oq = c.array("cu_seqlens_q", cu_q, ndim=1, what="(batch + 1,)",
                 dtypes=("i32",))
    ok = c.array("cu_seqlens_k", cu_k, ndim=1, what="(batch + 1,)",
                 dtypes=("i32",))
    batch = oq.shape[0] - 1
    if batch < 0:
        c.fail("cu_seqlens_q must hold batch + 1 offsets, got none")
    c.equal("length", ok.shape[0], batch + 1, "cu_seqlens_k")
    if read_values:
        offsets_q, offsets_k = to_host(cu_q), to_host(cu_k)
        c.offsets("cu_seqlens_q", offsets_q, total_q, batch)
        c.offsets("cu_seqlens_k", offsets_k, ki.shape[0], batch)
        max_sq = max_length(c, "max_seqlen_q", max_sq, np.diff(offsets_q))
        max_skv = max_length(c, "max_seqlen_k", max_skv, np.diff(offsets_k))
    elif max_sq is None or max_skv is None:
        c.fail("max_seqlen_q and max_seqlen_k are needed when the offsets "
               "are not read")
    p = Problem(dtype=qi.dtype, d=d, batch=batch, hq=hq, hkv=ki.shape[1],
                layout="thd", max_sq=int(max_sq), max_skv=int(max_skv),
                total_q=total_q, total_k=ki.shape[0],
                causal=c.flag("causal", causal), scale=c.scale(scale, d))
    return p, dict(q=q, k=k, v=v, cu_q=cu_q, cu_k=cu_k)


def max_length(c, name, given, lengths):
    """``given`` (None: the longest of ``lengths``), checked to be at
    least the longest."""
    longest = int(lengths.max()) if len(lengths) else 0
    if given is None:
        return longest
    if isinstance(given, bool) or not isinstance(given, (int, np.integer)) \
            or given < longest:
        c.fail(f"{name} = {given!r} but the longest sequence has {longest} "
               "rows")
    return int(given)


def paged_problem(c, q, k_cache, v_cache, block_table, seqlens_k, cu_q,
                  max_sq, causal, scale, *, check_values):
    """The checked :class:`Problem` (thd queries, paged keys) and arrays
    of a paged call; ``check_values`` reads the integer arguments on the
    host."""
    what = "(total, heads, head_dim)"
    cache = "(pages, page_size, kv_heads, head_dim)"
    qi = c.array("q", q, ndim=3, what=what)
    ki = c.array("k_cache", k_cache, ndim=4, what=cache)
    vi = c.array("v_cache", v_cache, ndim=4, what=cache)
    c.same_dtype([("q", qi), ("k_cache", ki), ("v_cache", vi)])
    total_q, hq, d = qi.shape
    pages, page_size, hkv, kd = ki.shape
    c.head_dim(d)
    c.equal("head dimension", kd, d, "k_cache")
    c.equal("shape", vi.shape, ki.shape, "v_cache")
    c.heads(hq, hkv, "k_cache")
    c.page_size(page_size)
    ti = c.array("block_table", block_table, ndim=2,
                 what="(batch, pages per sequence)", dtypes=("i32",))
    li = c.array("seqlens_k", seqlens_k, ndim=1, what="(batch,)",
                 dtypes=("i32",))
    qo = c.array("cu_seqlens_q", cu_q, ndim=1, what="(batch + 1,)",
                 dtypes=("i32",))
    batch, width = ti.shape
    c.equal("length", li.shape[0], batch, "seqlens_k")
    c.equal("length", qo.shape[0], batch + 1, "cu_seqlens_q")
    if width < 1:
        c.fail("block_table needs at least one page per sequence")
    if max_sq is None and not check_values:
        c.fail("max_seqlen_q is needed when the values are not read")
    max_skv = width * page_size
    if check_values:
        offsets = to_host(cu_q)
        lengths = to_host(seqlens_k)
        c.offsets("cu_seqlens_q", offsets, total_q, batch)
        c.block_table(to_host(block_table), lengths, pages, page_size)
        max_sq = max_length(c, "max_seqlen_q", max_sq, np.diff(offsets))
        max_skv = int(lengths.max()) if batch else 0
    p = Problem(dtype=qi.dtype, d=d, batch=batch, hq=hq, hkv=hkv,
                layout="thd", max_sq=int(max_sq), max_skv=max_skv,
                total_q=total_q, total_k=0, causal=c.flag("causal", causal),
                scale=c.scale(scale, d), page_size=page_size, pages=pages,
                table_stride=width)
    return p, dict(q=q, k=k_cache, v=v_cache, cu_q=cu_q, table=block_table,
                   lengths=seqlens_k, cu_k=cu_q)


def check_grad_inputs(c, p, do, o, lse, q_shape, lse_shape):
    """``do`` and ``o`` as q, ``lse`` float32 of ``lse_shape``."""
    for name, x in (("do", do), ("o", o)):
        info = c.array(name, x, ndim=len(q_shape), what="(the shape of q)")
        c.equal("shape", info.shape, q_shape, name)
        if info.dtype != p.dtype:
            c.fail(f"{name} is {info.dtype} but q is {p.dtype}")
    info = c.array("lse", lse, ndim=len(lse_shape), what="(as the forward "
                   "returns it)", dtypes=("f32",))
    c.equal("shape", info.shape, lse_shape, "lse")
