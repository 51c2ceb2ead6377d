"""enigma.mma_halves: the 16-bit halves of a fragment of 32-bit words, on
every backend under test. The reference is the rule of the docs written
out in numpy: word (r, c) with c = 8 b + 2 i + h gives elements (r, j) and
(r, j + 1) with j = 16 b + 8 h + 2 i, low half first; and a product whose
A operand is such halves equals numpy's float64 product of the same
values (pairs land where the tensor cores read them on CUDA)."""

import numpy as np
import pytest

import enigma
from conftest import run_kernel

U32 = enigma.Scalar(enigma.u32)


def _expected(words, dtype):
    """numpy's statement of the rule: (M, N) uint32 -> (M, 2N) 16-bit."""
    m, n = words.shape
    out = np.zeros((m, 2 * n), np.uint16)
    for c in range(n):
        b, i, h = c // 8, (c % 8) // 2, c % 2
        j = 16 * b + 8 * h + 2 * i
        out[:, j] = words[:, c] & 0xFFFF
        out[:, j + 1] = words[:, c] >> 16
    return out


def _bf16_to_f64(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


@pytest.mark.parametrize("rows,cols", [(16, 16), (32, 48), (16, 64)])
@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_halves_land_by_the_rule(runtime, rng, rows, cols, dtype):
    words = rng.integers(0, 2**32, size=(rows, cols), dtype=np.uint32)
    half_type = enigma.bf16 if dtype == "bf16" else enigma.f16

    @enigma.kernel
    def halves(W: enigma.u32, Y: half_type):
        index = enigma.mma_iota(0, rows, cols) * cols + \
            enigma.mma_iota(1, rows, cols)
        h = enigma.mma_halves(enigma.mma_gather(W, index), dtype)
        enigma.mma_store(h, Y, ld=2 * cols)

    out = run_kernel(runtime, enigma.compile(halves), [words], np.uint16,
                     rows * 2 * cols, (32, 1, 1), (32, 1, 1))
    assert np.array_equal(out.reshape(rows, 2 * cols),
                          _expected(words, dtype))


def test_float_words_and_a_product_of_the_halves(runtime, rng):
    """Float words (their bits) too; and the halves as the A operand of a
    product: 16 x 64 bfloat values times a 64 x 16 tile, against float64."""
    rows, cols = 16, 32
    a = rng.standard_normal((rows, 2 * cols)).astype(np.float32)
    a_bits = (a.view(np.uint32) >> 16).astype(np.uint16)   # bfloat, truncated
    # Words whose halves are a's bfloat values, columns by the rule.
    words = np.zeros((rows, cols), np.uint32)
    for c in range(cols):
        b, i, h = c // 8, (c % 8) // 2, c % 2
        j = 16 * b + 8 * h + 2 * i
        words[:, c] = a_bits[:, j].astype(np.uint32) | \
            (a_bits[:, j + 1].astype(np.uint32) << 16)
    words_f = words.view(np.float32)
    x = rng.standard_normal((2 * cols, 16)).astype(np.float32)
    x_bits = (x.view(np.uint32) >> 16).astype(np.uint16)

    @enigma.kernel
    def product(W: enigma.f32, X: enigma.bf16, Y: enigma.f32):
        xs = enigma.threadgroup_alloc(enigma.bf16, 2 * cols * 16)
        t = enigma.thread_index_in_threadgroup()
        for e in enigma.range_constexpr(2 * cols * 16 // 32):
            xs[t + 32 * e] = X[t + 32 * e]
        enigma.barrier()
        index = enigma.mma_iota(0, rows, cols) * cols + \
            enigma.mma_iota(1, rows, cols)
        h = enigma.mma_halves(enigma.mma_gather(W, index), "bf16")
        acc = enigma.mma(enigma.mma_zeros(rows, 16), h,
                         enigma.mma_operand(xs, ld=16))
        enigma.mma_store(acc, Y, ld=16)

    out = run_kernel(runtime, enigma.compile(product), [words_f, x_bits],
                     np.float32, rows * 16, (32, 1, 1), (32, 1, 1))
    want = _bf16_to_f64(a_bits) @ _bf16_to_f64(x_bits)
    scale = np.abs(_bf16_to_f64(a_bits)) @ np.abs(_bf16_to_f64(x_bits))
    err = np.abs(out.reshape(rows, 16) - want)
    assert (err <= 2 * 64 * 2.0**-24 * scale + 1e-30).all(), err.max()


def test_halves_errors():
    @enigma.kernel
    def not_words(Y: enigma.f32):
        h = enigma.mma_halves(enigma.mma_zeros(16, 16, "bf16"), "bf16")
        enigma.mma_store(h, Y, ld=32)
    with pytest.raises(enigma.EnigmaError, match="32-bit words"):
        enigma.compile(not_words)

    @enigma.kernel
    def to_float(Y: enigma.f32):
        h = enigma.mma_halves(enigma.mma_zeros(16, 16, "uint"), "float")
        enigma.mma_store(h, Y, ld=32)
    with pytest.raises(enigma.EnigmaError, match="half or bfloat"):
        enigma.compile(to_float)

    @enigma.kernel
    def scalar(Y: enigma.f32):
        enigma.mma_halves(enigma.thread_index_in_threadgroup(), "bf16")
    with pytest.raises(enigma.EnigmaError, match="fragment"):
        enigma.compile(scalar)
