"""The attention kernels as PyTorch ops (``torch.ops.enigma.*``), with
fake implementations for ``torch.compile`` and autograd formulas:

* ``enigma::attention(q, k, v, causal, scale, num_splits) -> (o, lse)``,
  (B, H, S, D) tensors;
* ``enigma::attention_varlen(q, k, v, cu_q, cu_k, max_q, max_k, causal,
  scale, num_splits) -> (o, lse)``, (total, H, D) tensors;
* ``enigma::attention_paged(...)``: a paged cache (no autograd);
* ``enigma::attention_backward`` and ``enigma::attention_varlen_backward``:
  ``(dq, dk, dv)``, what the first two's autograd formulas call.

Each op runs its launches with the function-call form, on the tensors'
device and PyTorch's current stream, with no host synchronisation on
CUDA (CUDA graphs capture it). Values of integer tensors (offsets, block
tables) are read for the checks only where that costs no synchronisation
(CPU tensors), or for the paged op when ``check_values`` asks for it
outside a graph capture; the kernels never read outside their tensors
whatever the values."""

from __future__ import annotations

import math

import torch

from . import launch, plans
from .checks import Checker
from .inputs import (bhsd_problem, check_grad_inputs, paged_problem,
                     varlen_problem)


def _target(x):
    return launch.Target("cuda" if x.device.type == "cuda" else "cpu")


def _i32(n, device):
    return torch.zeros(n, dtype=torch.int32, device=device)


def _arange(b, step, device):
    return torch.arange(0, (b + 1) * step, step, dtype=torch.int32,
                        device=device) if step else _i32(b + 1, device)


def _forward(c, p, arrays, num_splits, o_shape, lse_shape, q):
    target = _target(q)
    steps, temps = plans.forward_plan(
        c, target, p, num_splits=None if num_splits < 0 else num_splits,
        cores=launch.cores(target, q.device))
    o = torch.empty(o_shape, dtype=q.dtype, device=q.device)
    lse = torch.empty(lse_shape, dtype=torch.float32, device=q.device)
    arrays.update(o=o, lse=lse)
    for name, count in temps.items():
        arrays[name] = torch.empty(count, dtype=torch.float32,
                                   device=q.device)
    if p.total_q and p.batch:
        launch.run(steps, arrays)
    return o, lse


def _backward(c, p, arrays, deterministic, q, k):
    target = _target(q)
    steps, temps = plans.backward_plan(c, target, p,
                                       deterministic=deterministic)
    grads = dict(dq=torch.empty_like(q), dk=torch.empty_like(k),
                 dv=torch.empty_like(k))
    arrays.update(grads)
    for name, count in temps.items():   # the dQ accumulator starts at 0
        arrays[name] = torch.zeros(count, dtype=torch.float32,
                                   device=q.device)
    if p.total_q and p.batch:
        launch.run(steps, arrays)
    else:
        for g in grads.values():
            g.zero_()
    return grads["dq"], grads["dk"], grads["dv"]


def _splits(num_splits):
    return -1 if num_splits is None else int(num_splits)


# --- (B, H, S, D) ------------------------------------------------------------

@torch.library.custom_op("enigma::attention", mutates_args=())
def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               causal: bool, scale: float,
               num_splits: int) -> tuple[torch.Tensor, torch.Tensor]:
    c = Checker("enigma.torch.attention")
    p = bhsd_problem(c, q, k, v, causal, scale)
    arrays = dict(q=q, k=k, v=v, cu_q=_arange(p.batch, p.max_sq, q.device),
                  cu_k=_arange(p.batch, p.max_skv, q.device),
                  table=_i32(1, q.device), lengths=_i32(1, q.device))
    return _forward(c, p, arrays, num_splits, q.shape,
                    (p.batch, p.hq, p.max_sq), q)


@_attention.register_fake
def _(q, k, v, causal, scale, num_splits):
    bhsd_problem(Checker("enigma.torch.attention"), q, k, v, causal, scale)
    b, h, s, _ = q.shape
    return torch.empty_like(q), q.new_empty((b, h, s), dtype=torch.float32)


@torch.library.custom_op("enigma::attention_backward", mutates_args=())
def _attention_backward(do: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                        v: torch.Tensor, o: torch.Tensor, lse: torch.Tensor,
                        causal: bool, scale: float, deterministic: bool
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    c = Checker("enigma.torch.attention_backward")
    p = bhsd_problem(c, q, k, v, causal, scale)
    check_grad_inputs(c, p, do, o, lse, tuple(q.shape),
                      (p.batch, p.hq, p.max_sq))
    arrays = dict(do=do, q=q, k=k, v=v, o=o, lse=lse,
                  cu_q=_arange(p.batch, p.max_sq, q.device),
                  cu_k=_arange(p.batch, p.max_skv, q.device))
    return _backward(c, p, arrays, deterministic, q, k)


@_attention_backward.register_fake
def _(do, q, k, v, o, lse, causal, scale, deterministic):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _save(ctx, tensors, **values):
    ctx.save_for_backward(*tensors)
    for name, value in values.items():
        setattr(ctx, name, value)


def _setup_bhsd(ctx, inputs, output):
    q, k, v, causal, scale, _ = inputs
    o, lse = output
    _save(ctx, (q, k, v, o, lse), causal=causal, scale=scale)
    ctx.mark_non_differentiable(lse)


def _grad_bhsd(ctx, grad_o, grad_lse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = torch.ops.enigma.attention_backward(
        grad_o.contiguous(), q, k, v, o, lse, ctx.causal, ctx.scale, True)
    return dq, dk, dv, None, None, None


_attention.register_autograd(_grad_bhsd, setup_context=_setup_bhsd)


# --- (total, H, D) with cumulative offsets -------------------------------

@torch.library.custom_op("enigma::attention_varlen", mutates_args=())
def _attention_varlen(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                      cu_q: torch.Tensor, cu_k: torch.Tensor, max_q: int,
                      max_k: int, causal: bool, scale: float,
                      num_splits: int) -> tuple[torch.Tensor, torch.Tensor]:
    c = Checker("enigma.torch.attention_varlen")
    p, arrays = varlen_problem(c, q, k, v, cu_q, cu_k, max_q, max_k, causal,
                               scale, read_values=q.device.type == "cpu")
    arrays.update(table=_i32(1, q.device), lengths=_i32(1, q.device))
    return _forward(c, p, arrays, num_splits, q.shape, (p.hq, p.total_q), q)


@_attention_varlen.register_fake
def _(q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, num_splits):
    varlen_problem(Checker("enigma.torch.attention_varlen"), q, k, v, cu_q,
                   cu_k, max_q, max_k, causal, scale, read_values=False)
    return torch.empty_like(q), q.new_empty((q.shape[1], q.shape[0]),
                                            dtype=torch.float32)


@torch.library.custom_op("enigma::attention_varlen_backward", mutates_args=())
def _attention_varlen_backward(
        do: torch.Tensor, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
        o: torch.Tensor, lse: torch.Tensor, cu_q: torch.Tensor,
        cu_k: torch.Tensor, max_q: int, max_k: int, causal: bool,
        scale: float, deterministic: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    c = Checker("enigma.torch.attention_varlen_backward")
    p, arrays = varlen_problem(c, q, k, v, cu_q, cu_k, max_q, max_k, causal,
                               scale, read_values=q.device.type == "cpu")
    check_grad_inputs(c, p, do, o, lse, tuple(q.shape), (p.hq, p.total_q))
    arrays.update(do=do, o=o, lse=lse)
    return _backward(c, p, arrays, deterministic, q, k)


@_attention_varlen_backward.register_fake
def _(do, q, k, v, o, lse, cu_q, cu_k, max_q, max_k, causal, scale,
      deterministic):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _setup_varlen(ctx, inputs, output):
    q, k, v, cu_q, cu_k, max_q, max_k, causal, scale, _ = inputs
    o, lse = output
    _save(ctx, (q, k, v, o, lse, cu_q, cu_k), causal=causal, scale=scale,
          max_q=max_q, max_k=max_k)
    ctx.mark_non_differentiable(lse)


def _grad_varlen(ctx, grad_o, grad_lse):
    q, k, v, o, lse, cu_q, cu_k = ctx.saved_tensors
    dq, dk, dv = torch.ops.enigma.attention_varlen_backward(
        grad_o.contiguous(), q, k, v, o, lse, cu_q, cu_k, ctx.max_q,
        ctx.max_k, ctx.causal, ctx.scale, True)
    return dq, dk, dv, None, None, None, None, None, None, None


_attention_varlen.register_autograd(_grad_varlen,
                                    setup_context=_setup_varlen)


# --- paged cache ---------------------------------------------------------

@torch.library.custom_op("enigma::attention_paged", mutates_args=())
def _attention_paged(q: torch.Tensor, k_cache: torch.Tensor,
                     v_cache: torch.Tensor, block_table: torch.Tensor,
                     seqlens_k: torch.Tensor, cu_q: torch.Tensor,
                     max_q: int, causal: bool, scale: float,
                     num_splits: int, check_values: bool
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    c = Checker("enigma.torch.attention_paged")
    read = check_values and not (q.device.type == "cuda" and
                                 torch.cuda.is_current_stream_capturing())
    p, arrays = paged_problem(c, q, k_cache, v_cache, block_table, seqlens_k,
                              cu_q, max_q, causal, scale, check_values=read)
    return _forward(c, p, arrays, num_splits, q.shape, (p.hq, p.total_q), q)


@_attention_paged.register_fake
def _(q, k_cache, v_cache, block_table, seqlens_k, cu_q, max_q, causal,
      scale, num_splits, check_values):
    paged_problem(Checker("enigma.torch.attention_paged"), q, k_cache,
                  v_cache, block_table, seqlens_k, cu_q, max_q, causal,
                  scale, check_values=False)
    return torch.empty_like(q), q.new_empty((q.shape[1], q.shape[0]),
                                            dtype=torch.float32)


# --- the Python entry points ----------------------------------------------

def _scale(entry, scale, d):
    """The scale as the ops take it (a float; a 0-d tensor too); the op
    checks that it is positive and finite."""
    if scale is None:
        return 1.0 / math.sqrt(d)
    try:
        return float(scale)
    except (TypeError, ValueError):
        Checker(f"enigma.torch.{entry}").fail(
            f"scale must be a positive finite number, got {scale!r}")


def _flag(entry, name, value):
    return Checker(f"enigma.torch.{entry}").flag(name, value)


def _longest(cu):
    """The longest sequence of the offsets ``cu`` (reads them: a
    synchronisation for CUDA tensors)."""
    if cu.numel() < 2:
        return 0
    return int((cu[1:] - cu[:-1]).max().item())


def _mask(entry, causal, scale, d):
    """(causal, scale) as the ops take them, checked."""
    return _flag(entry, "causal", causal), _scale(entry, scale, d)


def _result(entry, o, lse, return_lse):
    return (o, lse) if _flag(entry, "return_lse", return_lse) else o


def attention(q, k, v, *, causal=False, scale=None, return_lse=False,
              num_splits=None):
    """``torch.ops.enigma.attention`` on (B, H, S, D) tensors (see
    ``enigma.attention.attention``); differentiable in q, k and v."""
    o, lse = torch.ops.enigma.attention(
        q, k, v, *_mask("attention", causal, scale, q.shape[-1]),
        _splits(num_splits))
    return _result("attention", o, lse, return_lse)


def attention_varlen(q, k, v, cu_seqlens_q, cu_seqlens_k, *,
                     max_seqlen_q=None, max_seqlen_k=None, causal=False,
                     scale=None, return_lse=False, num_splits=None):
    """``torch.ops.enigma.attention_varlen`` on (total, H, D) tensors (see
    ``enigma.attention.attention_varlen``); differentiable in q, k and v.
    Give ``max_seqlen_q`` / ``max_seqlen_k`` under ``torch.compile`` and in
    CUDA graphs: left out, they are read from the offsets."""
    if max_seqlen_q is None:
        max_seqlen_q = _longest(cu_seqlens_q)
    if max_seqlen_k is None:
        max_seqlen_k = _longest(cu_seqlens_k)
    o, lse = torch.ops.enigma.attention_varlen(
        q, k, v, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q),
        int(max_seqlen_k),
        *_mask("attention_varlen", causal, scale, q.shape[-1]),
        _splits(num_splits))
    return _result("attention_varlen", o, lse, return_lse)


def attention_paged(q, k_cache, v_cache, block_table, seqlens_k,
                    cu_seqlens_q, *, max_seqlen_q=None, causal=False,
                    scale=None, return_lse=False, num_splits=None,
                    check_values=True):
    """``torch.ops.enigma.attention_paged`` (see
    ``enigma.attention.attention_paged``); not differentiable."""
    if max_seqlen_q is None:
        max_seqlen_q = _longest(cu_seqlens_q)
    o, lse = torch.ops.enigma.attention_paged(
        q, k_cache, v_cache, block_table, seqlens_k, cu_seqlens_q,
        int(max_seqlen_q),
        *_mask("attention_paged", causal, scale, q.shape[-1]),
        _splits(num_splits),
        _flag("attention_paged", "check_values", check_values))
    return _result("attention_paged", o, lse, return_lse)


def attention_backward(do, q, k, v, o, lse, *, causal=False, scale=None,
                       deterministic=True):
    """``torch.ops.enigma.attention_backward``: ``(dq, dk, dv)``."""
    return torch.ops.enigma.attention_backward(
        do, q, k, v, o, lse,
        *_mask("attention_backward", causal, scale, q.shape[-1]),
        _flag("attention_backward", "deterministic", deterministic))


def attention_varlen_backward(do, q, k, v, o, lse, cu_seqlens_q,
                              cu_seqlens_k, *, max_seqlen_q=None,
                              max_seqlen_k=None, causal=False, scale=None,
                              deterministic=True):
    """``torch.ops.enigma.attention_varlen_backward``: ``(dq, dk, dv)``."""
    if max_seqlen_q is None:
        max_seqlen_q = _longest(cu_seqlens_q)
    if max_seqlen_k is None:
        max_seqlen_k = _longest(cu_seqlens_k)
    return torch.ops.enigma.attention_varlen_backward(
        do, q, k, v, o, lse, cu_seqlens_q, cu_seqlens_k, int(max_seqlen_q),
        int(max_seqlen_k),
        *_mask("attention_varlen_backward", causal, scale, q.shape[-1]),
        _flag("attention_varlen_backward", "deterministic", deterministic))
