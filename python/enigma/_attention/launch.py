"""Running the launches of an attention call: on arrays in place (the
function-call form: PyTorch tensors on CPU or CUDA, numpy arrays on the
CPU runtime), or through ``runtime.execute`` where the call form does not
run (the MSL host runtime, numpy arrays on a GPU runtime)."""

from __future__ import annotations

import os

import numpy as np

from .._inputs import bindable_input, torch_cuda_device

from .._compile import compile as compile_kernel
from .._runtime import CpuRuntime, CudaRuntime

# Threadgroup memory a runtime gives one threadgroup (docs/reference/
# cooperation.md): Metal's 32 KiB there and on the MSL host runtime.
_METAL_LIMIT = 32 * 1024
_LIMIT = 232448


def threadgroup_memory_limit(runtime) -> int:
    """Bytes of threadgroup memory a kernel may use on ``runtime`` (None:
    the CPU runtime of the call form)."""
    name = getattr(runtime, "name", "cpu")
    return _METAL_LIMIT if name in ("metal", "metal-host") else _LIMIT


def runtime_name(runtime) -> str:
    return getattr(runtime, "name", "cpu")


class Target:
    """Where PyTorch tensors run (``name`` as a runtime's: "cpu" or
    "cuda"), for the choice of tile shapes; the call form picks the
    runtime itself."""

    def __init__(self, name: str):
        self.name = name


def cores(runtime, device=None) -> int:
    """Processors the launches spread over: the GPU's multiprocessors
    (from PyTorch where it is installed; 132, an H100's, otherwise), the
    host's cores for the host runtimes."""
    if runtime_name(runtime) == "cuda" or (device is not None and
                                           str(device).startswith("cuda")):
        try:
            import torch
            index = getattr(runtime, "device", None)
            if device is not None and getattr(device, "index", None) \
                    is not None:
                index = device.index
            return torch_cuda_device(torch, index or 0)[1]
        except Exception:   # noqa: BLE001 - no torch, no device: a guess
            return 132
    return os.cpu_count() or 1


class Step:
    """One launch: ``kernel.launch(grid=grid, threads=threads)`` with its parameters by name
    (a string names an array of the call, anything else is the value);
    ``outputs`` are the buffers it writes."""

    def __init__(self, kernel, grid, threads, args: dict, outputs=()):
        self.kernel, self.grid, self.threads = kernel, grid, threads
        self.args, self.outputs = args, tuple(outputs)


_compiled = {}


def compiled(kernel):
    """``enigma.compile(kernel)``, once per kernel."""
    if kernel not in _compiled:
        _compiled[kernel] = compile_kernel(kernel)
    return _compiled[kernel]


def in_place(arrays: dict, runtime) -> bool:
    """Whether the call form can run on these arrays with ``runtime``."""
    first = next(iter(arrays.values()))
    if type(first).__module__.split(".")[0] == "torch":
        return runtime is None or isinstance(runtime, (CpuRuntime,
                                                       CudaRuntime))
    return runtime is None or isinstance(runtime, CpuRuntime)


def run(steps, arrays: dict, runtime=None):
    """Runs ``steps`` in order on ``arrays`` (name -> array), writing each
    step's outputs into the arrays of those names."""
    # The inputs are only read: a read-only or misaligned one is copied
    # (the outputs, made by the entry points, are bound as they are).
    arrays = {name: bindable_input(a) for name, a in arrays.items()}
    direct = in_place(arrays, runtime)
    for step in steps:
        values = [arrays[v] if isinstance(v, str) else v
                  for v in (step.args[p.name] for p in step.kernel.params)]
        if direct:
            launcher = step.kernel.launch(grid=step.grid,
                                          threads=step.threads)
            if runtime is None:
                launcher(*values)
            else:
                launcher(*values, runtime=runtime)
            continue
        params = step.kernel.params
        inputs = [v for p, v in zip(params, values)
                  if p.kind == "buffer" and p.name not in step.outputs]
        scalars = {p.name: v for p, v in zip(params, values)
                   if p.kind != "buffer"}
        outs = [arrays[step.args[name]] for name in step.outputs]
        raw = runtime.execute(compiled(step.kernel), inputs,
                              output_sizes=[o.nbytes for o in outs],
                              grid=step.grid, threads=step.threads,
                              scalars=scalars)
        for out, data in zip(outs, raw):
            np.copyto(out, np.frombuffer(data, out.dtype).reshape(out.shape))
