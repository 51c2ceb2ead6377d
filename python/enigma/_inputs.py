"""Inputs of the library functions (attention, quantized matmul, the
8-bit GEMM) as the function-call form binds them. The call form binds
every buffer in place, writeable, C-contiguous and on a 16-byte boundary
(Enigma's vector accesses assume it); an input that the kernels only read
may be none of these in a caller's hands (``np.load(mmap_mode="r")``,
``x[1:]`` of rows that are not a multiple of 16 bytes, a transposed
view), so it is copied instead of refused."""

from __future__ import annotations

import numpy as np

ALIGNMENT = 16


def bindable_input(x):
    """``x`` itself when the call form can bind it as it is, else a
    contiguous, writeable, aligned copy (numpy arrays and PyTorch
    tensors; anything else is returned unchanged)."""
    if isinstance(x, np.ndarray):
        if x.flags["C_CONTIGUOUS"] and x.flags.writeable and \
                x.ctypes.data % ALIGNMENT == 0:
            return x
        return np.array(x, order="C", copy=True)
    if type(x).__module__.split(".")[0] == "torch" and \
            hasattr(x, "data_ptr"):
        if not x.is_contiguous():
            x = x.contiguous()
        if x.numel() and x.data_ptr() % ALIGNMENT:
            x = x.clone()
        return x
    return x


_CUDA_DEVICES = {}   # device index -> (architecture number, multiprocessors)


def torch_cuda_device(torch, device) -> tuple:
    """(architecture number such as 90, multiprocessors) of PyTorch's CUDA
    ``device`` (a torch.device, an index or None for the current one),
    asked of PyTorch once per device: the library functions need them on
    every call, and PyTorch's queries cost microseconds each."""
    index = getattr(device, "index", device)
    if index is None:
        index = torch.cuda.current_device()
    found = _CUDA_DEVICES.get(index)
    if found is None:
        p = torch.cuda.get_device_properties(index)
        found = _CUDA_DEVICES[index] = (10 * p.major + p.minor,
                                        p.multi_processor_count)
    return found
