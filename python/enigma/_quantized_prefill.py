"""The prefill form of the 4-bit product (docs/design/quantized-matmul.md):
the weights dequantised once into a temporary of x's dtype, then the
pipelined GEMM (``gemm_block`` with B stored n x k, the weights' own
layout).

At many rows of x the product's time grows with M while dequantising the
weights costs the same for any M (2.5 bytes of memory traffic per
weight), so from a few hundred rows on the GEMM's speed decides, and the
fused kernel (dequantising beside the products, ``_quantized``) is the
slower of the two. Decode and small batches keep the fused kernels.
"""

# No `from __future__ import annotations`: the kernels' annotations name
# dtypes of the enclosing functions, which a string annotation cannot see.

from ._dtypes import Scalar
from ._gemm import MmaConfig, gemm_block
from ._ir import fail
from ._kernel import kernel
from ._quantized import activation_dtype, enigma_f32, enigma_u32


class DequantizedGemmConfig:
    """:func:`enigma.quantized_matmul`'s prefill form: the weights are
    dequantised into a temporary ``N x K`` array of x's dtype (2 bytes a
    weight for 16-bit x, freed when the call returns), then multiplied by
    :func:`enigma.gemm_block` with ``gemm`` (an :class:`enigma.MmaConfig`;
    None: :func:`enigma.gemm_config_for` of the shape on the GPU's
    multiprocessors, or the target's default GEMM configuration off
    CUDA). Each weight is rounded to x's dtype before its product, as in
    the fused kernels."""

    __slots__ = ("gemm",)

    def __init__(self, gemm=None):
        if gemm is not None and not isinstance(gemm, MmaConfig):
            fail(f"DequantizedGemmConfig: gemm must be an enigma.MmaConfig "
                 f"or None, got {type(gemm).__name__}")
        self.gemm = gemm

    def __eq__(self, other):
        return isinstance(other, DequantizedGemmConfig) and \
            self.gemm == other.gemm

    def __hash__(self):
        return hash(("DequantizedGemmConfig", self.gemm))

    def __repr__(self) -> str:
        return f"DequantizedGemmConfig(gemm={self.gemm!r})"


def needs_workspace(config: MmaConfig) -> bool:
    """Whether ``config``'s GEMM kernel takes a float workspace and uint
    flags (split K summed in the kernel, or stream-K)."""
    return config.split_k > 1 or bool(config.stream_k)


def gemm_kernel(dtype, config: MmaConfig):
    """Kernel ``(A: T, B: T, [W: f32, F: u32,] M, N, K, C: T)``: ``C = A
    B^T`` for A ``M x K`` and B ``N x K`` of x's dtype ``T``; split-K and
    stream-K configurations take the workspace and zeroed flags of
    :func:`enigma.split_k_workspace` / :func:`enigma.stream_k_workspace`
    and sum their partials in the kernel, in a fixed order."""
    T = activation_dtype(dtype)
    u32 = Scalar(enigma_u32)
    if needs_workspace(config):
        @kernel
        def qmm_dequantized_workspace(A: T, B: T, W: enigma_f32,
                                      F: enigma_u32, M: u32, N: u32, K: u32,
                                      C: T):
            gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                       b_transposed=True, workspace=W, flags=F)
        return qmm_dequantized_workspace

    @kernel
    def qmm_dequantized(A: T, B: T, M: u32, N: u32, K: u32, C: T):
        gemm_block(A, B, C, m=M, n=N, k=K, config=config, b_transposed=True)
    return qmm_dequantized
