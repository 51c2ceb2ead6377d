"""PyTorch integration: an Enigma kernel as a ``torch.library`` custom op.

    import enigma, enigma.torch, torch

    @enigma.kernel
    def scale(X: enigma.f32, Y: enigma.f32, k: enigma.Scalar(enigma.f32),
              n: enigma.Scalar(enigma.u32)):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < n):
            Y[i] = X[i] * k

    scale_op = enigma.torch.custom_op(
        "mylib::scale", scale,
        outputs={"Y": lambda X, k, n: torch.empty_like(X)},
        grid=lambda n, **_: n, threads=256)

    y = scale_op(x, 2.0, x.numel())        # also torch.ops.mylib.scale
    y = torch.compile(f, fullgraph=True)(x)  # no graph break

The op runs the kernel with the function-call form
(``kernel.launch(grid=..., threads=...)(...)``), so it queues on PyTorch's
current stream (CUDA graphs capture it) and runs on CPU tensors through the
CPU backend.
docs/reference/launch.md has the reference.
"""

from __future__ import annotations

import inspect

import torch

from ._ir import EnigmaError
from ._kernel import KernelDefinition
# Attention as ops (torch.ops.enigma.attention, ...): docs/reference/
# attention.md.
from ._attention.torch_ops import (  # noqa: F401
    attention, attention_backward, attention_paged, attention_varlen,
    attention_varlen_backward)

_SCALAR_SCHEMA = {"b1": "bool", "f32": "float", "f16": "float",
                  "bf16": "float"}


def _call(spec, values):
    """``spec`` itself, or, if callable, its value for the op's arguments
    (given by parameter name)."""
    return spec(**values) if callable(spec) else spec


def _check_names(kernel, names, what, buffers):
    for name in names:
        if name not in buffers:
            raise EnigmaError(
                f"custom_op: {what} names {name!r}, which is not a buffer "
                f"parameter of kernel '{kernel.__name__}' (its buffers: "
                f"{', '.join(buffers) or 'none'})")


def custom_op(name, kernel, *, grid, threads=None, mutates_args=(),
              outputs=None, fake=None, backward=None, setup_context=None,
              device_types=None):
    """Registers ``kernel`` as the ``torch.library`` custom op ``name``
    (``"namespace::op"``) and returns it (a callable; also reachable as
    ``torch.ops.namespace.op``).

    - The op's arguments are the kernel's parameters in order, less those
      named in ``outputs``: buffers are Tensors, scalars are ``int``
      (``SymInt``), ``float`` or ``bool``.
    - ``mutates_args``: the buffer parameters the kernel writes that the
      caller passes in (written in place, as ``torch.library`` requires to
      be declared).
    - ``outputs``: ``{parameter: allocate}`` for buffers the op makes and
      returns (one Tensor, or a tuple in parameter order); ``allocate``
      takes the op's arguments by name and returns a new Tensor (e.g.
      ``lambda X, **_: torch.empty_like(X)``). It also serves as the fake
      (meta) implementation ``torch.compile`` traces with, unless ``fake``
      (called like the op) is given.
    - ``grid`` and ``threads``: as in ``kernel.launch(grid=...,
      threads=...)`` (``grid`` counts threads), each a value or a function
      of the arguments by name (outputs included); ``threads=None`` takes
      the call form's default.
    - ``backward`` and ``setup_context``: an autograd formula, passed to
      ``register_autograd`` (the backward may call other Enigma ops).

    Tensors the kernel only reads are made contiguous first; written ones
    must be contiguous. Kernels that read function constants cannot be
    registered."""
    if not isinstance(kernel, KernelDefinition):
        raise EnigmaError(f"custom_op takes an @enigma.kernel, got {kernel!r}")
    params = kernel.params
    if any(p.kind == "jit" for p in params):
        raise EnigmaError(f"custom_op: kernel '{kernel.__name__}' has "
                          "unannotated parameters; annotate its buffers and "
                          "scalars")
    buffers = [p.name for p in params if p.kind == "buffer"]
    outputs = dict(outputs or {})
    if isinstance(mutates_args, str):
        mutates_args = (mutates_args,)
    mutates_args = tuple(mutates_args)
    _check_names(kernel, mutates_args, "mutates_args", buffers)
    _check_names(kernel, outputs, "outputs", buffers)
    both = set(mutates_args) & set(outputs)
    if both:
        raise EnigmaError(f"custom_op: {sorted(both)} cannot be both mutated "
                          "arguments and outputs")
    for out, allocate in outputs.items():
        if not callable(allocate):
            raise EnigmaError(f"custom_op: outputs[{out!r}] must be a "
                              "function of the op's arguments that returns a "
                              "new Tensor")

    inputs = [p for p in params if p.name not in outputs]
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    schema_args = []
    for p in inputs:
        if p.kind == "buffer":
            alias = f"({next(letters)}!)" if p.name in mutates_args else ""
            schema_args.append(f"Tensor{alias} {p.name}")
        else:
            kind = _SCALAR_SCHEMA.get(p.dtype.name, "SymInt")
            schema_args.append(f"{kind} {p.name}")
    returns = [p.name for p in params if p.name in outputs]
    returned = ("()" if not returns else "Tensor" if len(returns) == 1
                else "(" + ", ".join("Tensor" for _ in returns) + ")")
    schema = f"({', '.join(schema_args)}) -> {returned}"
    input_names = [p.name for p in inputs]
    read_only = {p.name for p in inputs
                 if p.kind == "buffer" and p.name not in mutates_args}

    def bind(args, kwargs):
        values = dict(zip(input_names, args))
        values.update(kwargs)
        return values

    def allocate(values):
        return {out: outputs[out](**values) for out in returns}

    def run(*args, **kwargs):
        values = bind(args, kwargs)
        for tensor in read_only:
            values[tensor] = values[tensor].contiguous()
        made = allocate(values)
        values.update(made)
        launch = _call(grid, values)
        block = _call(threads, values)
        kernel.launch(grid=launch, threads=block)(
            *[values[p.name] for p in params])
        if not returns:
            return None
        result = tuple(made[out] for out in returns)
        return result[0] if len(result) == 1 else result

    run.__name__ = name.split("::")[-1]
    run.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
         for n in input_names])
    op = torch.library.custom_op(name, run, mutates_args=mutates_args,
                                 device_types=device_types, schema=schema)
    if fake is not None:
        op.register_fake(fake)
    elif returns:
        def fake_outputs(*args, **kwargs):
            made = allocate(bind(args, kwargs))
            result = tuple(made[out] for out in returns)
            return result[0] if len(result) == 1 else result
        op.register_fake(fake_outputs)
    if backward is not None:
        op.register_autograd(backward, setup_context=setup_context)
    elif setup_context is not None:
        raise EnigmaError("custom_op: setup_context goes with backward")
    return op
