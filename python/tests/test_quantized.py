"""4-bit weight-only quantized matrices (enigma.quantize, dequantize,
quantized_matmul; docs/reference/quantized.md) on every backend under test,
against numpy references written from the format's definition:

* quantize: MLX's affine quantisation in float32 (the reference below),
  compared bit for bit (words, scales and biases);
* dequantize: ``T(fma(scale, q, bias))``, computed exactly in float64 and
  rounded (bit for bit);
* quantized_matmul: float64 ``x @ w_hat.T`` from the dequantised values,
  within the final rounding to x's dtype, the rounding of the dequantised
  weights to x's dtype on the matrix hardware (``2^-9 (|x| @ |w_hat|.T)``
  for bfloat16), and float accumulation error ``2 (K + 2) 2^-24 (|x| @
  (15 |scale| + |bias|))`` (the kernels add ``scale * sum(x q) + bias *
  sum(x)`` or products of dequantised values).

Sizes are small and odd: one row of x, N odd, K a multiple of the group
but not of the tiles or of the matrix-vector kernel's 1024-value step;
every group size; bf16, f16 and f32. Outputs are poisoned first. Arrays
come from the ``arrays`` fixture: numpy on the host runtimes, PyTorch CUDA
tensors on CUDA.
"""

import numpy as np
import pytest

import enigma
from enigma.quantized import DequantizedGemmConfig, QmmConfig, QmvConfig

F32 = np.float32


# --------------------------------------------------------------------------
# Element types: bfloat16 as uint16 bits
# --------------------------------------------------------------------------

def to_bf16(x):
    u = np.ascontiguousarray(x, F32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(F32)


def encode(x, dtype):
    """float array -> the host array of ``dtype`` (bf16: uint16 bits)."""
    if dtype == "bf16":
        return to_bf16(x)
    return np.asarray(x, {"f16": np.float16, "f32": F32}[dtype])


def decode(a, dtype):
    """host array of ``dtype`` -> float64."""
    if dtype == "bf16":
        return from_bf16(a).astype(np.float64)
    return np.asarray(a).astype(np.float64)


class Arrays:
    """The ``arrays`` fixture with bfloat16 and uint32 kept exact."""

    def __init__(self, arrays):
        self.arrays = arrays

    def put(self, a, dtype=None):
        if a.dtype == np.uint32:      # torch's usual words: int32
            a = a.view(np.int32)
        return self.arrays.put(a, bf16=dtype == "bf16")

    def get(self, a):
        torch = self.arrays.torch
        if torch is None or not isinstance(a, torch.Tensor):
            return np.asarray(a)
        torch.cuda.synchronize()
        if a.dtype == torch.bfloat16:
            return a.view(torch.int16).cpu().numpy().view(np.uint16)
        if a.dtype in (torch.int32, getattr(torch, "uint32", None)):
            return a.view(torch.int32).cpu().numpy().view(np.uint32)
        return a.cpu().numpy()

    def poisoned(self, shape, dtype):
        nan = np.full(shape, np.nan, F32)
        return self.put(encode(nan, dtype), dtype)


@pytest.fixture
def qa(arrays):
    return Arrays(arrays)


# --------------------------------------------------------------------------
# The format, from its definition
# --------------------------------------------------------------------------

def reference_quantize(w, group_size):
    """MLX's affine quantisation of the float32 values ``w`` (N, K):
    (words uint32 (N, K/8), scales, biases float32 (N, K/gs)) before the
    scales and biases are rounded to w's dtype."""
    n, k = w.shape
    g = np.asarray(w, F32).reshape(n, k // group_size, group_size)
    w_max = g.max(-1, keepdims=True)
    w_min = g.min(-1, keepdims=True)
    delta = np.maximum((w_max - w_min) / F32(15), F32(1e-7))
    at_min = np.abs(w_min) > np.abs(w_max)
    scale = np.where(at_min, delta, -delta).astype(F32)
    edge = np.where(at_min, w_min, w_max).astype(F32)
    q0 = np.rint(edge / scale)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.where(q0 != 0, edge / q0, scale).astype(F32)
    bias = np.where(q0 == 0, F32(0), edge).astype(F32)
    q = np.clip(np.rint((g - bias) / scale), 0, 15).astype(np.uint32)
    return pack(q.reshape(n, k)), scale.reshape(n, -1), bias.reshape(n, -1)


def pack(codes):
    """(N, K) codes 0..15 -> (N, K/8) words, code 8j + p at bits 4p of
    word j."""
    n, k = codes.shape
    c = np.asarray(codes, np.uint32).reshape(n, k // 8, 8)
    words = np.zeros((n, k // 8), np.uint32)
    for p in range(8):
        words |= c[:, :, p] << np.uint32(4 * p)
    return words


def unpack(words):
    """(N, K/8) words -> (N, K) codes."""
    words = np.asarray(words, np.uint32)
    codes = [(words >> np.uint32(4 * p)) & np.uint32(15) for p in range(8)]
    return np.stack(codes, -1).reshape(words.shape[0], -1)


def reference_dequantize(words, scales, biases, group_size, dtype):
    """float64 ``scale * q + bias`` (exact for these inputs)."""
    s = decode(scales, dtype).repeat(group_size, 1)
    b = decode(biases, dtype).repeat(group_size, 1)
    return s * unpack(words) + b


def round_to(x, dtype):
    """float64 -> float32 -> dtype, as the kernels round (the float64
    value is exact, so its float32 rounding is the fma's)."""
    return decode(encode(np.asarray(x, F32), dtype), dtype)


def weights(rng, n, k, group_size, dtype):
    """Random weights with the special groups of the algorithm in the first
    rows: a constant group, an all-negative group (its minimum is the
    edge), a group of zeros (the scale is eps and q0 = 0: bias 0)."""
    w = rng.standard_normal((n, k)).astype(F32)
    gs = group_size
    w[0, :gs] = 0.75
    if n > 1:
        w[1, :gs] = -np.abs(w[1, :gs]) - 0.5
    if n > 2:
        w[2, :gs] = 0.0
    return encode(w, dtype)


DTYPES = ["bf16", "f16", "f32"]
GROUPS = [32, 64, 128]
# (dtype, group size): every group size in bf16, every dtype at 64.
FORMATS = [("bf16", 32), ("bf16", 64), ("bf16", 128), ("f16", 64),
           ("f32", 64)]


# --------------------------------------------------------------------------
# quantize / dequantize
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,group_size", FORMATS)
def test_quantize_matches_the_reference(qa, rng, dtype, group_size):
    n, k = 7, 3 * group_size
    w = weights(rng, n, k, group_size, dtype)
    w_q, scales, biases = enigma.quantize(qa.put(w, dtype), group_size)
    words, s, b = reference_quantize(decode(w, dtype).astype(F32), group_size)
    np.testing.assert_array_equal(qa.get(w_q), words)
    np.testing.assert_array_equal(qa.get(scales), encode(s, dtype))
    np.testing.assert_array_equal(qa.get(biases), encode(b, dtype))
    # The special groups took their branches.
    assert decode(qa.get(biases), dtype)[2, 0] == 0.0
    assert decode(qa.get(scales), dtype)[2, 0] == decode(
        encode(np.float32(-1e-7), dtype), dtype)
    assert decode(qa.get(scales), dtype)[1, 0] > 0     # the minimum's side
    assert (unpack(words)[0, :group_size] == unpack(words)[0, 0]).all()


@pytest.mark.parametrize("dtype,group_size", FORMATS)
def test_quantize_carries_nan_and_infinity_into_their_groups(qa, rng, dtype,
                                                            group_size):
    """A NaN or an infinite weight makes its group's scale and bias NaN, so
    the whole group dequantises to NaN (numpy's max and min propagate NaN,
    and so does MLX's format), instead of a NaN becoming the group's
    smallest value and looking like a weight. Other groups are untouched."""
    n, k = 4, 2 * group_size
    w = weights(rng, n, k, group_size, dtype)
    plain = decode(w, dtype).astype(F32)
    bad = plain.copy()
    bad[0, 3] = np.nan                       # group (0, 0)
    bad[1, group_size + 5] = np.inf          # group (1, 1)
    bad[2, 0] = -np.inf                      # group (2, 0)
    bad_groups = [(0, 0), (1, 1), (2, 0)]
    w_q, scales, biases = enigma.quantize(qa.put(encode(bad, dtype), dtype),
                                          group_size)
    words, s, b = reference_quantize(plain, group_size)
    got_s = decode(qa.get(scales), dtype)
    got_b = decode(qa.get(biases), dtype)
    for r in range(n):
        for g in range(k // group_size):
            if (r, g) in bad_groups:
                assert np.isnan(got_s[r, g]) and np.isnan(got_b[r, g]), \
                    (r, g, got_s[r, g], got_b[r, g])
            else:
                assert got_s[r, g] == decode(encode(s[r, g], dtype), dtype)
                assert got_b[r, g] == decode(encode(b[r, g], dtype), dtype)
                cols = slice(g * group_size, (g + 1) * group_size)
                np.testing.assert_array_equal(unpack(qa.get(w_q))[r, cols],
                                              unpack(words)[r, cols])
    back = decode(qa.get(enigma.dequantize(w_q, scales, biases, group_size)),
                  dtype)
    for r, g in bad_groups:
        assert np.isnan(back[r, g * group_size:(g + 1) * group_size]).all()
    assert np.isfinite(back[3]).all()


@pytest.mark.parametrize("dtype,group_size", FORMATS)
def test_dequantize_matches_the_definition(qa, rng, dtype, group_size):
    n, k = 5, 2 * group_size
    words = rng.integers(0, 2**32, (n, k // 8), dtype=np.uint64).astype(
        np.uint32)
    words[0, 0] = 0xFFFFFFFF
    words[0, 1] = 0
    scales = encode(rng.uniform(-0.5, 0.5, (n, k // group_size)), dtype)
    biases = encode(rng.uniform(-2, 2, (n, k // group_size)), dtype)
    out = qa.poisoned((n, k), dtype)
    got = enigma.dequantize(qa.put(words), qa.put(scales, dtype),
                            qa.put(biases, dtype), group_size, out=out)
    assert got is out
    want = round_to(reference_dequantize(words, scales, biases, group_size,
                                         dtype), dtype)
    np.testing.assert_array_equal(decode(qa.get(out), dtype), want)


@pytest.mark.parametrize("dtype,group_size", FORMATS)
def test_quantize_dequantize_round_trip(qa, rng, dtype, group_size):
    """Every value comes back within half a step of its group's grid
    ``bias + scale * (0..15)`` once clipped to the grid's range, which
    misses the group's values by less than a step (MLX puts 0 on the grid,
    so the range can end short of the far extreme); plus the rounding of
    scale, bias and result to the dtype."""
    n, k = 9, 4 * group_size
    w = weights(rng, n, k, group_size, dtype)
    w_q, scales, biases = enigma.quantize(qa.put(w, dtype), group_size)
    w_hat = decode(qa.get(enigma.dequantize(w_q, scales, biases,
                                            group_size)), dtype)
    s = decode(qa.get(scales), dtype).repeat(group_size, 1)
    b = decode(qa.get(biases), dtype).repeat(group_size, 1)
    u = {"bf16": 2.0**-8, "f16": 2.0**-11, "f32": 2.0**-24}[dtype]
    slack = u * (16 * np.abs(s) + np.abs(b) + np.abs(w_hat)) + 1e-30
    w64 = decode(w, dtype)
    inside = np.clip(w64, np.minimum(b, b + 15 * s), np.maximum(b, b + 15 * s))
    err = np.abs(w_hat - inside)
    assert (err <= 0.5 * np.abs(s) + slack).all(), f"worst {err.max()}"
    cut = np.abs(w64 - inside)
    assert (cut <= 1.1 * np.abs(s) + slack).all(), f"worst cut {cut.max()}"


# --------------------------------------------------------------------------
# quantized_matmul
# --------------------------------------------------------------------------

def check_product(y, x, words, scales, biases, group_size, dtype):
    w_hat = reference_dequantize(words, scales, biases, group_size, dtype)
    xs = decode(x, dtype).reshape(-1, w_hat.shape[1])
    want = xs @ w_hat.T
    got = decode(y, dtype).reshape(want.shape)
    s = np.abs(decode(scales, dtype)).repeat(group_size, 1)
    b = np.abs(decode(biases, dtype)).repeat(group_size, 1)
    k = w_hat.shape[1]
    u = {"bf16": 2.0**-8, "f16": 2.0**-11, "f32": 0.0}[dtype]
    bound = u * np.abs(want) + u / 2 * (np.abs(xs) @ np.abs(w_hat).T) + \
        2 * (k + 2) * 2.0**-24 * (np.abs(xs) @ (15 * s + b).T) + 1e-30
    err = np.abs(got - want)
    bad = ~(err <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements out "
                           f"of tolerance, worst {np.nanmax(err)}")


def product(qa, rng, m, n, k, group_size, dtype, config=None, shape=None):
    w = weights(rng, n, k, group_size, dtype)
    w_q, scales, biases = enigma.quantize(qa.put(w, dtype), group_size)
    x = encode(rng.standard_normal((m, k)), dtype)
    if shape is not None:
        x = x.reshape(shape + (k,))
    out = qa.poisoned(x.shape[:-1] + (n,), dtype)
    y = enigma.quantized_matmul(qa.put(x, dtype), w_q, scales, biases,
                                group_size=group_size, out=out,
                                config=config)
    assert y is out
    check_product(qa.get(y), x, qa.get(w_q), qa.get(scales),
                  qa.get(biases), group_size, dtype)
    return qa.get(y)


@pytest.mark.parametrize("dtype,group_size", FORMATS)
def test_matvec_one_row(qa, rng, dtype, group_size):
    """M = 1, odd N, K a multiple of the group below one 1024-value step."""
    product(qa, rng, 1, 37, 5 * group_size if group_size < 128 else 384,
            group_size, dtype, QmvConfig(rows=4, simdgroups=2))


@pytest.mark.parametrize("rows,simdgroups", [(1, 1), (8, 2)])
def test_matvec_several_rows_and_steps(qa, rng, rows, simdgroups):
    """Rows of x as threadgroups, K over two steps (1088 = 17 x 64), N not
    a multiple of the rows per threadgroup."""
    product(qa, rng, 3, 19, 1088, 64, "bf16", QmvConfig(rows, simdgroups))


# The matrix-vector kernel with K split over simdgroups and several chunks
# per lane and step: (rows, simdgroups, k_split, chunks).
SPLIT_MATVECS = [(8, 1, 4, 1), (3, 2, 3, 2), (1, 1, 2, 3)]


@pytest.mark.parametrize("dtype,group_size", FORMATS)
@pytest.mark.parametrize("shape", SPLIT_MATVECS)
def test_matvec_split_along_k(qa, rng, dtype, group_size, shape):
    """K split over simdgroups whose sums meet in threadgroup memory: M =
    1 and 3, N odd and below / above the rows of a threadgroup, K of one
    group (fewer chunks than lanes: most lanes read chunk 0 with scale 0)
    and K of 37 groups (a step and a part, chunks past K)."""
    config = QmvConfig(*shape)
    for m, n, k in ((1, 5, group_size), (3, 29, 37 * group_size)):
        product(qa, rng, m, n, k, group_size, dtype, config)


@pytest.mark.parametrize("m", [1, 16, 17])
def test_matvec_many_rows_of_x(qa, rng, m):
    """The matrix-vector kernel forced on 16 and 17 rows of x (one
    threadgroup row per row of x), K over several steps."""
    product(qa, rng, m, 13, 2112, 64, "bf16", QmvConfig(4, 1, 2, 2))


def test_matvec_hoisted_loads_change_nothing(qa, rng):
    """Loading every word, scale and bias of a step first (the default) is
    the same arithmetic as loading each where it is used: the outputs
    agree bit for bit, for one and for four simdgroups along K."""
    n, k, gs = 21, 40 * 64, 64
    w = weights(rng, n, k, gs, "bf16")
    w_q, scales, biases = enigma.quantize(qa.put(w, "bf16"), gs)
    x = qa.put(encode(rng.standard_normal((3, k)), "bf16"), "bf16")
    for shape in ((4, 2, 1, 1), (8, 1, 4, 1)):
        got = []
        for hoist in (True, False):
            out = qa.poisoned((3, n), "bf16")
            enigma.quantized_matmul(x, w_q, scales, biases, group_size=gs,
                                    out=out,
                                    config=QmvConfig(*shape, hoist))
            got.append(qa.get(out))
        assert np.array_equal(got[0], got[1]), shape


@pytest.mark.parametrize("dtype,group_size", FORMATS)
def test_matmul_tiles(qa, rng, dtype, group_size):
    """Matrix products of 16-row tiles: M below the tile, N odd, K not a
    multiple of bk (K tile edges masked). bk = 96 (rows of no power of two:
    no swizzle) where K would otherwise be a multiple; f32 in 16 x 16
    tiles (Metal's 32 KiB)."""
    k = {32: 160, 64: 320, 128: 640}[group_size]
    if dtype == "f32":
        config = QmmConfig(16, 16, 96, 1, 1, 2, splits=1)
    else:
        bk = 96 if group_size == 128 else 128
        config = QmmConfig(16, 32, bk, 1, 2, 2, splits=1)
    assert k % config.bk
    product(qa, rng, 5, 37, k, group_size, dtype, config)


@pytest.mark.parametrize("splits", [2, 3])
def test_matmul_split_along_k(qa, rng, splits):
    """Float partial sums of K tiles over threadgroups, added by a second
    kernel: 5 K tiles in 2 or 3 splits (uneven)."""
    product(qa, rng, 7, 45, 320, 64, "bf16",
            QmmConfig(16, 32, 64, 1, 2, 2, splits=splits))


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_matmul_warpgroup_tiles(qa, rng, dtype):
    """The warpgroup shape (wgmma on Hopper; 3 stages: asynchronous
    products) with a partial row block, two column blocks (the second
    partial) and more threads than weight chunks (N block 64 x K tile 64
    = 128 chunks of 32 values for 256 threads). Its 78 KiB of threadgroup
    memory are beyond Metal's."""
    if qa.arrays.runtime.name == "metal-host":
        pytest.skip("warpgroup tiles need more than Metal's 32 KiB")
    product(qa, rng, 70, 93, 192, 32, dtype,
            QmmConfig(128, 64, 64, 8, 1, 3, splits=1))


@pytest.mark.parametrize("stages", [3, 5])
def test_matmul_deep_rings(qa, rng, stages):
    """X's tiles and the packed words in rings of 3 and 5 stages, the
    dequantised weights in 2 (synchronous products): 11 K tiles, so the
    rings wrap several times; M = 17 (a second, partial row block)."""
    config = QmmConfig(16, 32, 64, 1, 2, stages, splits=1)
    assert config.weight_stages("bf16") == 2
    assert config.smem_bytes("bf16") == (stages * 16 + 2 * 32) * 64 * 2
    product(qa, rng, 17, 45, 704, 64, "bf16", config)


def test_matmul_deep_ring_split_shorter_than_the_ring(qa, rng):
    """A 5-stage ring (4 tiles ahead) over splits of 2 K tiles (5 tiles in
    3 splits): the copies past a split's last tile are not made."""
    product(qa, rng, 9, 45, 320, 64, "bf16",
            QmmConfig(16, 32, 64, 1, 2, 5, splits=3))


def test_matmul_warpgroup_deep_ring(qa, rng):
    """Asynchronous warpgroup products with 4 stages of X and words and 3
    of dequantised weights (a product may still read the stage before
    the previous one), 5 K tiles."""
    if qa.arrays.runtime.name == "metal-host":
        pytest.skip("warpgroup tiles need more than Metal's 32 KiB")
    config = QmmConfig(128, 64, 64, 8, 1, 4, splits=1)
    assert config.asynchronous("bf16") and config.weight_stages("bf16") == 3
    product(qa, rng, 130, 70, 320, 64, "bf16", config)


@pytest.mark.parametrize("m,config", [
    (16, None),                                   # decode: split K
    (16, QmmConfig(16, 64, 128, 1, 4, 2, splits=1)),
    (1, QmvConfig(8, 4)),
    (1, None),                                    # K split over 4
    (4, QmvConfig(8, 1, 4, 2)),
    (3, QmvConfig(8, 2, hoist_loads=False)),      # the first version
    (16, QmmConfig(16, 64, 128, 1, 4, 8)),        # deep word rings
    (300, QmmConfig(128, 256, 64, 8, 1, 5)),
    (300, QmmConfig(64, 256, 64, 4, 1, 3)),       # prefill tiles
    (300, QmmConfig(256, 128, 64, 16, 1, 3)),
    (300, None)])
def test_cuda_benchmark_tiles(qa, rng, m, config):
    """The CUDA defaults and the benchmark's tile shapes at sizes no tile
    divides (N = 1000, K = 4160: 65 groups of 64, K tiles of 64 and 128
    with a partial last one), on the GPU only: the host runtimes would
    take minutes."""
    if qa.arrays.runtime.name != "cuda":
        pytest.skip("the CUDA tile shapes, at sizes too slow on the host")
    product(qa, rng, m, 1000, 4160, 64, "bf16", config)


# The prefill form (DequantizedGemmConfig): the weights dequantised into a
# temporary, then gemm_block with B stored n x k. The target's default
# GEMM, and warp-specialised blocks splitting K (partials summed in the
# kernel) or running stream-K (K 32: three stages fit Metal's 32 KiB).
_WS = dict(warp_specialized=True)
PREFILL_GEMMS = {
    "default": None,
    "split-k": enigma.MmaConfig(64, 64, 32, 4, 1, 3, split_k=2, **_WS),
    "stream-k": enigma.MmaConfig(64, 64, 32, 4, 1, 3, persistent=True,
                                 stream_k=3, **_WS),
}


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("gemm", PREFILL_GEMMS)
def test_dequantized_gemm(qa, rng, dtype, gemm):
    """M 1 and 67 (odd, past one 64-row block), N odd, K a multiple of the
    group but not of the GEMM's K step, groups of 32 and 64."""
    config = DequantizedGemmConfig(PREFILL_GEMMS[gemm])
    product(qa, rng, 1, 23, 96, 32, dtype, config)
    product(qa, rng, 67, 71, 320, 64, dtype, config)


def test_dequantized_gemm_float32_and_batch_shape(qa, rng):
    """float32 x (the target's float GEMM) as a (3, 5) batch of rows."""
    product(qa, rng, 15, 9, 128, 64, "f32", DequantizedGemmConfig(),
            shape=(3, 5))


def test_dequantized_gemm_is_the_cuda_prefill_default():
    """CUDA takes the prefill form for many rows of 16-bit x (not for
    float32, nor below PREFILL_DEQUANTIZE_ROWS, nor off CUDA)."""
    rows = enigma.quantized.PREFILL_DEQUANTIZE_ROWS
    default = enigma.quantized.default_config
    assert default(rows, "cuda") == DequantizedGemmConfig()
    assert default(4096, "cuda", dtype="f16") == DequantizedGemmConfig()
    assert isinstance(default(rows - 1, "cuda"), QmmConfig)
    assert isinstance(default(4096, "cuda", dtype="f32"), QmmConfig)
    assert isinstance(default(4096, "metal"), QmmConfig)


def test_dequantized_gemm_config_checks_its_argument():
    with pytest.raises(enigma.EnigmaError, match="MmaConfig or None"):
        DequantizedGemmConfig("large")
    assert "gemm=None" in repr(DequantizedGemmConfig())


def test_matmul_default_configs_and_batch_shape(qa, rng):
    """No config: the defaults of the target for 1, 9 and 40 rows of x,
    here as a (2, 20) batch."""
    for m in (1, 9):
        product(qa, rng, m, 23, 256, 64, "bf16")
    product(qa, rng, 40, 23, 256, 64, "bf16", shape=(2, 20))


def test_default_config_choice():
    assert isinstance(enigma.quantized.default_config(1), QmvConfig)
    assert isinstance(enigma.quantized.default_config(16), QmmConfig)
    big = enigma.quantized.quantized_matmul_configs("cuda")["large"]
    assert big.warpgroup("bf16") and big.bm == 128
    for target in ("metal", "cpu"):
        for m in (16, 64, 4096):
            c = enigma.quantized.default_config(m, target)
            # Metal's 32 KiB: activations, weights and staged words.
            assert c.smem_bytes("bf16") + c.stages * c.bn * c.bk // 2 \
                <= 32 * 1024


def test_empty_product_and_torch_tensors_keep_their_kind(rng):
    torch = pytest.importorskip("torch")
    w = torch.randn(6, 64, dtype=torch.float16)
    w_q, scales, biases = enigma.quantize(w, 32)
    assert w_q.dtype == torch.int32 and w_q.shape == (6, 8)
    assert scales.dtype == torch.float16 and scales.shape == (6, 2)
    x = torch.randn(0, 64, dtype=torch.float16)
    y = enigma.quantized_matmul(x, w_q, scales, biases, group_size=32)
    assert y.shape == (0, 6) and y.dtype == torch.float16
    x = torch.randn(3, 64, dtype=torch.float16)
    y = enigma.quantized_matmul(x, w_q, scales, biases, group_size=32)
    w_hat = enigma.dequantize(w_q, scales, biases, 32)
    want = x.double() @ w_hat.double().T
    assert (y.double() - want).abs().max() <= 2.0**-10 * want.abs().max()


# --------------------------------------------------------------------------
# The generated sources
# --------------------------------------------------------------------------

def test_sources_stream_wide_words_and_stage_tiles():
    """What the kernels are made of, in every flavour: 16-byte loads of the
    packed words and simd sums (matrix-vector); cp.async copies of X and
    of the words, and matrix products (matrix)."""
    from enigma import _quantized as kernels
    from enigma import _quantized_matvec as matvec
    mv = enigma.compile(matvec.matvec_kernel("bf16", 64, QmvConfig()),
                        emit_only=True)
    for source, vector in ((mv.cuda_source, "uint4 v"),
                           (mv.metal_source, "device uint4*"),
                           (mv.cpp_source, "enigma_vector_load<uint4>")):
        assert vector in source
        assert "simd_sum" in source
    # The CUDA default: the 8 rows' 16-byte loads of a step come before
    # the first decoded code, whose magic depends on all of them; the
    # parts of K meet in threadgroup memory.
    config = enigma.quantized.default_config(1, "cuda")
    cuda = enigma.compile(matvec.matvec_kernel("bf16", 64, config),
                          emit_only=True).cuda_source
    loads = [i for i in range(len(cuda))
             if cuda.startswith("*(uint4*)(Wq + ", i)]
    assert len(loads) == config.rows * config.chunks == 8
    assert loads[-1] < cuda.index("as_type<float>")
    assert "__shared__" in cuda and "__syncthreads" in cuda
    first = enigma.compile(matvec.matvec_kernel(
        "bf16", 64, QmvConfig(8, 2, hoist_loads=False)),
        emit_only=True).cuda_source
    assert first.index("as_type<float>") < \
        first.rindex("*(uint4*)(Wq + ")
    mm = enigma.compile(kernels.matmul_kernel(
        "bf16", 64, QmmConfig(128, 256, 64, 8, 1, 3), False), emit_only=True)
    cuda = mm.cuda_source
    assert cuda.count("enigma_copy_tile_async<") >= 2     # X and words
    # The warpgroup product (wgmma on sm_90a), asynchronous.
    assert "enigma_mma_sync<64, 64, false" in cuda
    assert "enigma_mma_wait" in cuda
    assert "__launch_bounds__(256)" in cuda
    assert "simdgroup_multiply_accumulate" in mm.metal_source


def test_every_cuda_default_is_emitted():
    """The CUDA defaults' kernels are generated here (the suite's last
    step compiles every generated CUDA text with NVRTC for sm_90a): the
    matrix-vector kernel in each dtype, the tiles with and without a
    split."""
    from enigma import _quantized as kernels
    from enigma import _quantized_matvec as matvec
    configs = enigma.quantized.quantized_matmul_configs("cuda")
    for dtype in DTYPES:
        source = enigma.compile(matvec.matvec_kernel(
            dtype, 64, configs["qmv"]), emit_only=True).cuda_source
        assert "__syncthreads" in source
    for name in ("small", "medium", "large"):
        for split in (False, True):
            source = enigma.compile(kernels.matmul_kernel(
                "bf16", 64, configs[name], split), emit_only=True).cuda_source
            assert "enigma_copy_tile_async<" in source


def test_the_check_catches_wrong_results(rng):
    """check_product fails for the mistakes a kernel could make: two
    output columns swapped, the nibbles read high first."""
    n, k, gs = 9, 128, 64
    w = weights(rng, n, k, gs, "bf16")
    w_q, scales, biases = enigma.quantize(w, gs)
    x = to_bf16(rng.standard_normal((2, k)))
    y = enigma.quantized_matmul(x, w_q, scales, biases, group_size=gs)
    check_product(y, x, w_q, scales, biases, gs, "bf16")
    swapped = y[:, [1, 0] + list(range(2, n))]
    with pytest.raises(AssertionError):
        check_product(swapped, x, w_q, scales, biases, gs, "bf16")
    reversed_nibbles = pack(unpack(w_q).reshape(n, -1, 8)[:, :, ::-1]
                            .reshape(n, k))
    with pytest.raises(AssertionError):
        check_product(y, x, reversed_nibbles, scales, biases, gs, "bf16")


# --------------------------------------------------------------------------
# examples/python/quantized_matmul.py
# --------------------------------------------------------------------------

def _example():
    import importlib.util
    import pathlib
    import sys
    key = "enigma_example_quantized_matmul"
    if key not in sys.modules:
        path = pathlib.Path(__file__).resolve().parents[2] / "examples" / \
            "python" / "quantized_matmul.py"
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[key] = module
    return sys.modules[key]


@pytest.mark.parametrize("m,n,k,group_size", [(1, 33, 128, 32),
                                              (20, 65, 384, 128)])
def test_example_run(runtime, rng, m, n, k, group_size):
    ex = _example()
    w = to_bf16(rng.standard_normal((n, k)))
    x = to_bf16(rng.standard_normal((m, k)))
    y, w_q, scales, biases = ex.run(runtime, x, w, group_size)
    ex.check_output(y, x, w_q, scales, biases, group_size, "bf16")
    bad = y.copy()
    # An exponent bit (x2 or x0.5) of the largest output: a small one may
    # sit inside the check's absolute tolerance either way.
    values = (bad.astype(np.uint32) << 16).view(np.float32)
    bad.flat[int(np.argmax(np.abs(values)))] ^= 0x0100
    with pytest.raises(AssertionError):
        ex.check_output(bad, x, w_q, scales, biases, group_size, "bf16")


def test_example_main(capsys):
    ex = _example()
    assert ex.main(3, 20, 128, 64, "f16") == 0
    assert capsys.readouterr().out.rstrip().endswith("pass")
    args = ex.parse_args(["5", "6", "64", "--group-size", "32", "--dtype",
                          "f32", "--runtime", "metal-host"])
    assert (args.m, args.n, args.k, args.group_size, args.dtype,
            args.runtime) == (5, 6, 64, 32, "f32", "metal-host")


def test_torch_op(rng):
    """enigma.torch.quantized_matmul: torch.ops.enigma.quantized_matmul
    gives the function's result and passes torch.library.opcheck (schema,
    fake tensor, autograd registration)."""
    torch = pytest.importorskip("torch")
    import enigma.torch
    w = torch.from_numpy(rng.standard_normal((10, 128)).astype(F32))
    w_q, scales, biases = enigma.quantize(w, 64)
    x = torch.from_numpy(rng.standard_normal((3, 128)).astype(F32))
    y = torch.ops.enigma.quantized_matmul(x, w_q, scales, biases, 64)
    assert torch.equal(y, enigma.quantized_matmul(x, w_q, scales, biases,
                                                  group_size=64))
    assert torch.equal(enigma.torch.quantized_matmul(x, w_q, scales, biases,
                                                     64), y)
    torch.library.opcheck(torch.ops.enigma.quantized_matmul.default,
                          (x, w_q, scales, biases, 64))
