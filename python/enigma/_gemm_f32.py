"""Float operands in :func:`enigma.gemm_block` with TF32 allowed, as
warpgroup products (docs/design/tf32.md).

Hopper's ``wgmma`` multiplies tf32 operands only when both are K-major in
shared memory: A stored ``m x k`` (not ``a_transposed``) and B ``n x k``
in the stage. Then gemm_block runs its float tiles as the 16-bit ones
run: four simdgroups of 16 rows multiply one 64-row A tile by the whole B
tile (``enigma.mma(..., warpgroup=True)``), the products stay in flight
from one K step to the next, and with ``warp_specialized`` a producer
warpgroup fills the ring. A stage's rows are 32 floats (128 bytes, the
128-byte swizzle's row), so ``bk`` is 32: half the K of a 16-bit stage of
the same bytes.

A B stored ``n x k`` (``b_transposed``) reaches the stage through the
Tensor Memory Accelerator; a B stored ``k x n`` through a transposing
stage copy (``stage_copy(..., transpose=True)``: the producer warpgroup
loads B's rows and stores them K-major), so only the warp-specialised
mainloop runs it as warpgroup products; the classic mainloop keeps
``mma.sync`` m16n8k8 products for it.
"""

from __future__ import annotations

from ._dtypes import as_dtype
from ._gemm import MmaConfig

__all__ = ["tf32_gemm_configs"]


def tf32_gemm_configs(warp_specialized: bool = True,
                      b_transposed: bool = True) -> list:
    """CUDA configurations of :func:`gemm_block` for float operands with
    ``allow_tf32=True``, all of :func:`enigma.tf32_warpgroup_shape` (the
    rule, beside the 16-bit one in _gemm), the expected winners first (two
    consumer warpgroups on 128 x 256, then smaller blocks for smaller
    products); each fits 227 KiB of threadgroup memory.
    ``warp_specialized`` (the default) lists those of the pipelined
    mainloop (a producer warpgroup), else those of the classic one.
    ``b_transposed=True`` (the default): for B stored ``n x k`` (the TMA
    copies its tiles); ``False``: for B stored ``k x n``, whose tiles the
    producer warpgroup copies transposed (warp-specialised configurations
    of at most 256 consumer threads only: the producer's registers beside
    512 are too few)."""
    from ._ir import fail
    for name, value in (("warp_specialized", warp_specialized),
                        ("b_transposed", b_transposed)):
        if not isinstance(value, bool):
            fail(f"tf32_gemm_configs: {name} must be a bool, got {value!r}")
    if not b_transposed and not warp_specialized:
        fail("tf32_gemm_configs: a B stored k x n reaches TF32 warpgroup "
             "products only through the warp-specialised mainloop (its "
             "producer copies B transposed); use warp_specialized=True")
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
    if not b_transposed:   # 512 consumers leave the producer 24 registers
        configs = [c for c in configs if c.threads <= 256]
    f32 = as_dtype("f32")
    return [c for c in configs if c.smem_bytes(f32) <= 227 * 1024]
