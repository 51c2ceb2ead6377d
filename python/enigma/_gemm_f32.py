"""Float operands in :func:`enigma.gemm_block` with TF32 allowed, as
warpgroup products (docs/design/tf32.md).

Hopper's ``wgmma`` multiplies tf32 operands only when both are K-major in
shared memory: A stored ``m x k`` (not ``a_transposed``) and B stored
``n x k`` (``b_transposed``). Then gemm_block runs its float tiles as the
16-bit ones run: four simdgroups of 16 rows multiply one 64-row A tile by
the whole B tile (``enigma.mma(..., warpgroup=True)``), the products stay
in flight from one K step to the next, and with ``warp_specialized`` a
producer warpgroup fills the ring with the Tensor Memory Accelerator. A
stage's rows are 32 floats (128 bytes, the 128-byte swizzle's row), so
``bk`` is 32: half the K of a 16-bit stage of the same bytes.

A B stored ``k x n`` (N-major) keeps ``mma.sync`` m16n8k8 products.
"""

from __future__ import annotations

from ._dtypes import as_dtype
from ._gemm import MmaConfig

__all__ = ["tf32_gemm_configs"]


def tf32_gemm_configs(warp_specialized: bool = True) -> list:
    """CUDA configurations of :func:`gemm_block` for float operands with
    ``allow_tf32=True`` and ``b_transposed=True``, all of
    :func:`enigma.tf32_warpgroup_shape` (the rule, beside the 16-bit one in
    _gemm), the expected winners first (two consumer warpgroups on 128 x
    256, then smaller blocks for smaller products);
    each fits 227 KiB of threadgroup memory. ``warp_specialized`` (the
    default) lists those of the pipelined mainloop (a producer warpgroup
    with the TMA), else those of the classic one."""
    if not isinstance(warp_specialized, bool):
        from ._ir import fail
        fail("tf32_gemm_configs: warp_specialized must be a bool, got "
             f"{warp_specialized!r}")
    if not warp_specialized:
        return [MmaConfig(128, 256, 32, 8, 1, 4),
                MmaConfig(128, 128, 32, 8, 1, 4),
                MmaConfig(64, 128, 32, 4, 1, 4)]

    def ws(*shape, **options):
        return MmaConfig(*shape, warp_specialized=True, **options)
    configs = [ws(128, 256, 32, 8, 1, 4, persistent=True),
               ws(128, 256, 32, 8, 1, 4),
               ws(256, 128, 32, 16, 1, 4, persistent=True),
               ws(128, 128, 32, 8, 1, 6, persistent=True),
               ws(64, 256, 32, 4, 1, 5, persistent=True),
               ws(64, 128, 32, 4, 1, 8)]
    f32 = as_dtype("f32")
    return [c for c in configs if c.smem_bytes(f32) <= 227 * 1024]
