"""Attention as models use it, as Enigma kernels: grouped-query heads,
query and key lengths of their own (causal masks aligned bottom-right),
variable-length batches, a paged key/value cache, split-key decoding and
the backward pass. docs/reference/attention.md is the reference,
docs/design/attention.md says how the kernels are built.

    import enigma.attention as ea
    o = ea.attention(q, k, v, causal=True)           # (B, H, S, D) arrays
    o, lse = ea.attention_varlen(q, k, v, cu_q, cu_k, return_lse=True)
    dq, dk, dv = ea.attention_backward(do, q, k, v, o, lse, causal=True)

numpy arrays run on the runtime given (``runtime=``; the CPU runtime
when left out) and give numpy arrays; bfloat16 is carried in ``uint16``
arrays of bit patterns, float16 in ``float16`` arrays. PyTorch tensors
run through the ops of :mod:`enigma.torch` (``torch.ops.enigma.*``, with
autograd) on their own device.
"""

from __future__ import annotations

import numpy as np

from ._attention import launch as _launch
from ._attention import plans as _plans
from ._attention.checks import Checker, is_torch
from ._attention.inputs import (bhsd_problem, check_grad_inputs,
                                paged_problem, varlen_problem)

__all__ = ["attention", "attention_varlen", "attention_paged",
           "attention_backward", "attention_varlen_backward",
           "ForwardConfig", "BackwardConfig", "DecodeConfig",
           "forward_config", "forward_configs", "backward_config",
           "decode_config"]

ForwardConfig = _plans.ForwardConfig
BackwardConfig = _plans.BackwardConfig
DecodeConfig = _plans.DecodeConfig
forward_config = _plans.forward_config
forward_configs = _plans.forward_configs
backward_config = _plans.backward_config
decode_config = _plans.decode_config


def _torch_arguments(entry, runtime, config):
    """PyTorch tensors run through the ops of :mod:`enigma.torch` on
    their own device with the default tile shapes."""
    if runtime is not None or config is not None:
        raise ValueError(f"{entry}: runtime= and config= are for numpy "
                         "arrays; PyTorch tensors run on their own device "
                         "with the default tile shapes (leave both out)")


def _forward_numpy(checker, p, arrays, runtime, config, num_splits,
                   return_lse, out_shape, lse_shape):
    return_lse = checker.flag("return_lse", return_lse)
    steps, temps = _plans.forward_plan(checker, runtime, p, config=config,
                                       num_splits=num_splits,
                                       cores=_launch.cores(runtime))
    # Poisoned: a row the kernels failed to write shows as NaN.
    o = np.full(out_shape, np.nan, np.float16)
    if p.dtype == "bf16":
        o = np.full(out_shape, 0x7FC0, np.uint16)
    lse = np.full(lse_shape, np.nan, np.float32)
    arrays.update(o=o, lse=lse)
    for name, count in temps.items():
        arrays[name] = np.zeros(count, np.float32)
    if p.total_q and p.batch:
        _launch.run(steps, arrays, runtime)
    return (o, lse) if return_lse else o


def attention(q, k, v, *, causal: bool = False, scale=None,
              return_lse: bool = False, num_splits=None, runtime=None,
              config=None):
    """``softmax(scale * Q K^T) V`` for ``q`` of shape (B, Hq, Sq, D) and
    ``k``, ``v`` of shape (B, Hkv, Skv, D), ``Hq`` a multiple of ``Hkv``
    (query head ``h`` reads key/value head ``h // (Hq // Hkv)``). Returns
    ``o`` (B, Hq, Sq, D), and with ``return_lse`` also the natural
    log-sum-exp of each row's scaled scores, float32 (B, Hq, Sq).

    ``causal``: query ``i`` sees keys ``j <= i + Skv - Sq`` (aligned
    bottom-right, as FlashAttention 2); rows that see no key give 0 and an
    LSE of -inf. ``scale`` defaults to ``1 / sqrt(D)``. ``config``: a
    :class:`ForwardConfig` instead of the runtime's default tile shape.

    ``num_splits``: None lets the library choose; sequences of at most 16
    queries then run the split-key decode kernel (the keys of one
    sequence spread over several threadgroups, their partial results
    merged), longer ones the prefill kernel. ``0`` asks for the prefill
    kernel, ``n >= 1`` for the decode kernel with the keys in ``n``
    splits."""
    if is_torch(q):
        _torch_arguments("attention", runtime, config)
        from ._attention import torch_ops
        return torch_ops.attention(q, k, v, causal=causal, scale=scale,
                                   return_lse=return_lse,
                                   num_splits=num_splits)
    c = Checker("attention")
    p = bhsd_problem(c, q, k, v, causal, scale)
    b, sq, skv = p.batch, p.max_sq, p.max_skv
    arrays = dict(q=q, k=k, v=v,
                  cu_q=np.arange(b + 1, dtype=np.int32) * sq,
                  cu_k=np.arange(b + 1, dtype=np.int32) * skv,
                  table=np.zeros(1, np.int32), lengths=np.zeros(1, np.int32))
    return _forward_numpy(c, p, arrays, runtime, config, num_splits,
                          return_lse, (b, p.hq, sq, p.d), (b, p.hq, sq))


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, *,
                     max_seqlen_q=None, max_seqlen_k=None,
                     causal: bool = False, scale=None,
                     return_lse: bool = False, num_splits=None,
                     runtime=None, config=None):
    """Attention over a batch of sequences of different lengths, packed:
    ``q`` is (total_q, Hq, D), ``k`` and ``v`` (total_k, Hkv, D); sequence
    ``b`` is rows ``cu_seqlens_q[b] .. cu_seqlens_q[b + 1]`` of ``q`` and
    ``cu_seqlens_k[b] .. cu_seqlens_k[b + 1]`` of ``k`` and ``v`` (int32
    arrays of batch + 1 offsets from 0; empty sequences are allowed).
    ``max_seqlen_q`` / ``max_seqlen_k``: the longest sequences (read from
    the offsets when left out). Returns ``o`` (total_q, Hq, D) and with
    ``return_lse`` the log-sum-exp, float32 (Hq, total_q). Masks, scale,
    ``num_splits`` and ``config`` as :func:`attention`."""
    if is_torch(q):
        _torch_arguments("attention_varlen", runtime, config)
        from ._attention import torch_ops
        return torch_ops.attention_varlen(
            q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=max_seqlen_q,
            max_seqlen_k=max_seqlen_k, causal=causal, scale=scale,
            return_lse=return_lse, num_splits=num_splits)
    c = Checker("attention_varlen")
    p, arrays = varlen_problem(c, q, k, v, cu_seqlens_q, cu_seqlens_k,
                               max_seqlen_q, max_seqlen_k, causal, scale)
    arrays.update(table=np.zeros(1, np.int32),
                  lengths=np.zeros(1, np.int32))
    return _forward_numpy(c, p, arrays, runtime, config, num_splits,
                          return_lse, (p.total_q, p.hq, p.d),
                          (p.hq, p.total_q))


def attention_paged(q, k_cache, v_cache, block_table, seqlens_k,
                    cu_seqlens_q, *, max_seqlen_q=None, causal: bool = False,
                    scale=None, return_lse: bool = False, num_splits=None,
                    runtime=None, config=None, check_values: bool = True):
    """Attention of packed queries against a paged key/value cache, as
    vLLM and FlashInfer lay it out: ``k_cache`` and ``v_cache`` are
    (pages, page_size, Hkv, D) (FlashInfer's "NHD"), ``page_size`` a
    multiple of 16 from 16 to 256; sequence ``b`` has ``seqlens_k[b]``
    keys, key ``s`` being row ``s % page_size`` of page ``block_table[b,
    s // page_size]`` (``block_table``: int32 (batch, pages per
    sequence); pages may come in any order and be shared). ``q`` is
    (total_q, Hq, D) with ``cu_seqlens_q`` (int32, batch + 1) as in
    :func:`attention_varlen`; causal masks align each sequence's queries
    with its last keys. Returns ``o`` (total_q, Hq, D) and with
    ``return_lse`` the LSE (Hq, total_q). ``num_splits`` as
    :func:`attention` (decode with a few queries per sequence splits the
    keys by default).

    ``check_values``: the offsets, lengths and block table are read on
    the host and checked (every page named in range, every sequence
    within its row of the table); for CUDA tensors that costs a
    synchronisation, and it is skipped while a CUDA graph is being
    captured. Unchecked, a page number out of range is not read (its keys
    count as zeros) and nothing is read outside the cache."""
    if is_torch(q):
        _torch_arguments("attention_paged", runtime, config)
        from ._attention import torch_ops
        return torch_ops.attention_paged(
            q, k_cache, v_cache, block_table, seqlens_k, cu_seqlens_q,
            max_seqlen_q=max_seqlen_q, causal=causal, scale=scale,
            return_lse=return_lse, num_splits=num_splits,
            check_values=check_values)
    c = Checker("attention_paged")
    p, arrays = paged_problem(c, q, k_cache, v_cache, block_table,
                              seqlens_k, cu_seqlens_q, max_seqlen_q, causal,
                              scale, check_values=True)
    return _forward_numpy(c, p, arrays, runtime, config, num_splits,
                          return_lse, (p.total_q, p.hq, p.d),
                          (p.hq, p.total_q))


def _backward_numpy(c, p, arrays, runtime, deterministic, config):
    steps, temps = _plans.backward_plan(c, runtime, p,
                                        deterministic=deterministic,
                                        config=config)
    q, k = arrays["q"], arrays["k"]
    grads = {}
    for name, like in (("dq", q), ("dk", k), ("dv", k)):
        grads[name] = np.full(like.shape, 0x7FC0, np.uint16) \
            if p.dtype == "bf16" else np.full(like.shape, np.nan, np.float16)
    arrays.update(grads)
    for name, count in temps.items():
        arrays[name] = np.zeros(count, np.float32)
    if p.total_q and p.batch:
        _launch.run(steps, arrays, runtime)
    else:   # nothing attends: every gradient is zero
        for g in grads.values():
            g[...] = 0
    return grads["dq"], grads["dk"], grads["dv"]


def attention_backward(do, q, k, v, o, lse, *, causal: bool = False,
                       scale=None, deterministic: bool = True,
                       runtime=None, config=None):
    """The gradients ``(dq, dk, dv)`` of :func:`attention` for the output
    gradient ``do``, from the forward's output ``o`` and log-sum-exp
    ``lse`` (``return_lse=True``), the scores recomputed. Shapes and
    arguments as the forward's; grouped heads sum their query heads' dK
    and dV. ``deterministic`` (the default): dQ by a kernel of its own,
    so that the result is the same bit for bit on every run (no float
    atomics); ``False``: dQ is added up with atomics from the dK/dV
    kernel (less recomputation, the order of the additions free; slower
    on an H100, docs/benchmarks.md). ``config``: a
    ``BackwardConfig`` instead of the runtime's default tile shapes."""
    if is_torch(q):
        _torch_arguments("attention_backward", runtime, config)
        from ._attention import torch_ops
        return torch_ops.attention_backward(
            do, q, k, v, o, lse, causal=causal, scale=scale,
            deterministic=deterministic)
    c = Checker("attention_backward")
    p = bhsd_problem(c, q, k, v, causal, scale)
    b, sq, skv = p.batch, p.max_sq, p.max_skv
    check_grad_inputs(c, p, do, o, lse, (b, p.hq, sq, p.d), (b, p.hq, sq))
    arrays = dict(do=do, q=q, k=k, v=v, o=o, lse=lse,
                  cu_q=np.arange(b + 1, dtype=np.int32) * sq,
                  cu_k=np.arange(b + 1, dtype=np.int32) * skv)
    return _backward_numpy(c, p, arrays, runtime, deterministic, config)


def attention_varlen_backward(do, q, k, v, o, lse, cu_seqlens_q,
                              cu_seqlens_k, *, max_seqlen_q=None,
                              max_seqlen_k=None, causal: bool = False,
                              scale=None, deterministic: bool = True,
                              runtime=None, config=None):
    """The gradients ``(dq, dk, dv)`` of :func:`attention_varlen`, as
    :func:`attention_backward` (``lse`` of shape (Hq, total_q))."""
    if is_torch(q):
        _torch_arguments("attention_varlen_backward", runtime, config)
        from ._attention import torch_ops
        return torch_ops.attention_varlen_backward(
            do, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k,
            max_seqlen_q=max_seqlen_q, max_seqlen_k=max_seqlen_k,
            causal=causal, scale=scale, deterministic=deterministic)
    c = Checker("attention_varlen_backward")
    p, arrays = varlen_problem(c, q, k, v, cu_seqlens_q, cu_seqlens_k,
                               max_seqlen_q, max_seqlen_k, causal, scale)
    check_grad_inputs(c, p, do, o, lse, (p.total_q, p.hq, p.d),
                      (p.hq, p.total_q))
    arrays.update(do=do, o=o, lse=lse)
    return _backward_numpy(c, p, arrays, runtime, deterministic, config)
