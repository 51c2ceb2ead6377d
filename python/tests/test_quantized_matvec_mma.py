"""The decode kernel of 4-bit weights on the matrix hardware
(``QmvMmaConfig``: weights dequantised into the A fragment with
``enigma.mma_gather``, x staged in threadgroup memory in the permuted
order of each 32-value chunk) on every backend under test, against the
float64 product of the dequantised weights (``check_product`` of
test_quantized.py: the weights rounded to x's dtype for the products, as
the other matrix kernels do). Sizes: 1, odd and 16 rows of x; N odd and
not a multiple of the 64 rows of a threadgroup; K a multiple of the group
but not of the staged span (chunks past K) and K over several spans (float
partial sums added by the second kernel). Outputs are poisoned first.
"""

import numpy as np
import pytest

import enigma
from enigma._quantized_matvec_mma import PERMUTE, QmvMmaConfig
from test_quantized import (check_product, encode, product, qa,  # noqa: F401
                            weights)

FORMATS = [("bf16", 32), ("bf16", 64), ("bf16", 128), ("f16", 64)]


@pytest.mark.parametrize("dtype,group_size", FORMATS)
@pytest.mark.parametrize("m", [1, 5, 16])
@pytest.mark.parametrize("staged", [True, False])
def test_one_span(qa, rng, dtype, group_size, m, staged):
    """K of 5 groups: within one threadgroup's span (one launch; most
    chunks of the step past K) up to group size 64, two spans at 128. N =
    37: one threadgroup, rows past N read row N - 1. (A span of 512 keeps
    within Metal's 32 KiB of threadgroup memory; off CUDA the words are
    not staged whatever the configuration says.) Staged: the words,
    scales and biases of the span come into threadgroup memory first."""
    product(qa, rng, m, 37, 5 * group_size, group_size, dtype,
            QmvMmaConfig(span=512, staged=staged))


@pytest.mark.parametrize("dtype,group_size", FORMATS)
@pytest.mark.parametrize("m", [1, 5, 16])
@pytest.mark.parametrize("staged", [True, False])
def test_pairs_one_span(qa, rng, dtype, group_size, m, staged):
    """pairs=True (two codes per bit operation into the 16-bit A operand,
    scales and biases applied to each group's float sums): as
    test_one_span, against the same float64 reference."""
    product(qa, rng, m, 37, 5 * group_size, group_size, dtype,
            QmvMmaConfig(span=512, staged=staged, pairs=True))


@pytest.mark.parametrize("dtype,group_size", [("bf16", 64), ("f16", 32),
                                              ("bf16", 128)])
def test_pairs_spans_and_shapes(qa, rng, dtype, group_size):
    """pairs=True over 3 spans and a half (float partial sums), N over two
    threadgroups; then 4 parts of K, 8 row blocks, and K of 33 groups with
    the span chosen per shape."""
    product(qa, rng, 7, 45, 7 * 128 + group_size, group_size, dtype,
            QmvMmaConfig(row_groups=2, parts=2, chunks=4, span=256,
                         pairs=True))
    for shape in ((1, 4, 4), (8, 1, 8), (2, 3, 4)):
        product(qa, rng, 16, 130, 33 * group_size, group_size, dtype,
                QmvMmaConfig(*shape, pairs=True))


def test_pairs_need_whole_groups_per_step(qa, rng):
    with pytest.raises(enigma.EnigmaError, match="whole groups of 128"):
        product(qa, rng, 1, 16, 256, 128, "bf16",
                QmvMmaConfig(chunks=2, pairs=True))


def test_pairs_permutation():
    """Each lane's four pair columns of a row hold nibbles (s, s + 4) of
    one word; PAIRS_PERMUTE is a permutation whose logical pairs (2 j,
    2 j + 1) are physical values 4 apart in one word."""
    from enigma._quantized_matvec_mma import PAIRS_PERMUTE
    assert sorted(PAIRS_PERMUTE) == list(range(32))
    for j in range(16):
        lo, hi = PAIRS_PERMUTE[2 * j], PAIRS_PERMUTE[2 * j + 1]
        assert hi == lo + 4 and lo // 8 == hi // 8 and lo % 8 < 4


@pytest.mark.parametrize("dtype,group_size", [("bf16", 64), ("f16", 128)])
def test_spans_split_k(qa, rng, dtype, group_size):
    """K over 3 spans and a half (float partial sums, then their sum),
    N over two threadgroups, 7 rows of x."""
    config = QmvMmaConfig(row_groups=2, parts=2, chunks=2, span=256)
    product(qa, rng, 7, 45, 896, group_size, dtype, config)


@pytest.mark.parametrize("shape", [(1, 1, 1), (8, 1, 2), (1, 4, 4),
                                   (2, 3, 2)])
def test_threadgroup_shapes(qa, rng, shape):
    """One simdgroup per threadgroup; 8 row blocks; 4 parts of K (their
    sums added in threadgroup memory); 3 parts (threads that outnumber
    the sums); the span chosen per shape."""
    row_groups, parts, chunks = shape
    product(qa, rng, 16, 130, 2048 + 64, 64, "bf16",
            QmvMmaConfig(row_groups, parts, chunks))


def test_batch_shape_and_default_span(qa, rng):
    product(qa, rng, 12, 23, 4096, 64, "bf16", QmvMmaConfig(), shape=(3, 4))


def test_permutation_puts_a_lanes_codes_in_one_word():
    """The CUDA fragment layout gives lane c (of four per row) columns 2c,
    2c + 1, 2c + 8, ... of a 32-value chunk; PERMUTE sends them to word c,
    each nibble once."""
    assert sorted(PERMUTE) == list(range(32))
    for c in range(4):
        logical = [2 * c + e + 8 * s for s in range(4) for e in range(2)]
        assert {PERMUTE[L] // 8 for L in logical} == {c}


def test_for_shape_and_checks():
    c = QmvMmaConfig()
    assert c.span is None and c.threads == 256 and c.step_span == 512
    # 64 blocks of 64 rows for N = 4096: K split so that about three
    # threadgroups per multiprocessor run.
    s = c.for_shape(4096, 4096, 132)
    assert s.span == 1024 and s.splits(4096) == 4
    assert c.for_shape(28672, 4096, 132).span == 2048
    assert c.for_shape(4096, 14336, 132).span == 2048
    assert c.for_shape(16, 64, 132).span == 512
    assert c.for_shape(4096, 4096, 132, max_span=512).span == 512
    assert QmvMmaConfig(span=512).for_shape(64, 64, 1).span == 512
    with pytest.raises(enigma.EnigmaError, match="multiple of parts"):
        QmvMmaConfig(span=100)
    with pytest.raises(enigma.EnigmaError, match="row_groups must be"):
        QmvMmaConfig(row_groups=0)
    with pytest.raises(enigma.EnigmaError, match="for_shape first"):
        c.splits(4096)


def test_refuses_what_it_cannot_multiply(rng):
    x = np.zeros((17, 64), np.float16)
    w_q = np.zeros((8, 8), np.uint32)
    s = np.ones((8, 1), np.float16)
    with pytest.raises(ValueError, match="at most 16 rows"):
        enigma.quantized_matmul(x, w_q, s, s, group_size=64,
                                config=QmvMmaConfig())
    with pytest.raises(ValueError, match="f16 or bf16"):
        enigma.quantized_matmul(x[:1].astype(np.float32), w_q,
                                s.astype(np.float32), s.astype(np.float32),
                                group_size=64, config=QmvMmaConfig())


def test_cuda_source_gathers_and_hoists():
    """The CUDA text: the products take A from registers (mma_sync on a
    fragment), the words come by gathers, and every decode of a step
    waits on the xor of all its loads (the loads stay ahead)."""
    from enigma._quantized_matvec_mma import matvec_mma_kernel
    config = QmvMmaConfig().for_shape(4096, 4096, 132)
    cuda = enigma.compile(matvec_mma_kernel("bf16", 64, config, True),
                          emit_only=True).cuda_source
    gathers = [i for i in range(len(cuda))
               if cuda.startswith("enigma_mma_gather<", i)]
    assert len(gathers) == 3 * config.chunks
    assert gathers[-1] < cuda.index("as_type<float>")
    assert "enigma_mma_reg" in cuda or "enigma_mma_sync" in cuda


@pytest.mark.parametrize("dtype,group_size", [("bf16", 32), ("f16", 64)])
def test_staged_kernel_on_every_runtime(runtime, rng, dtype, group_size):
    """The staged kernel itself (quantized_matmul stages only on CUDA),
    launched directly with a configuration within Metal's 32 KiB: words,
    scales and biases of 32 rows and a 256-value span in threadgroup
    memory, K over two spans and a part (float partial sums), N odd."""
    from enigma._quantized_matvec_mma import matvec_mma_kernel
    from test_quantized import (check_product, decode, encode, weights)
    if runtime.name not in ("cpu", "metal-host"):
        pytest.skip("host arrays; CUDA runs the staged kernel through "
                    "quantized_matmul")
    m, n, k = 6, 45, 640
    config = QmvMmaConfig(row_groups=2, parts=1, chunks=4, span=256)
    w = weights(rng, n, k, group_size, dtype)
    w_q, scales, biases = enigma.quantize(encode(w, dtype), group_size,
                                          runtime=runtime)
    x = encode(rng.standard_normal((m, k)), dtype)
    splits = config.splits(k)
    partial = np.full((splits, m, n), np.nan, np.float32)
    kernel = matvec_mma_kernel(dtype, group_size, config, True)
    kernel.launch(**config.launch(n, k))(x, w_q, scales, biases, partial,
                                         m, n, k, runtime=runtime)
    total = partial.astype(np.float64).sum(0)
    check_product(encode(total, dtype), x, w_q, scales, biases, group_size,
                  dtype)
    assert np.isfinite(decode(encode(total, dtype), dtype)).all()


def test_pairs_halve_the_k_loop_on_hopper(monkeypatch):
    """The paired decode's reason to exist, read from the SASS (sm_90a,
    NVRTC; where cuobjdump is found): no spills, and its K loop (16 rows
    of x, group 64) holds at most 0.6 times the instructions of the
    dequantising loop, with no FADD or F2FP (the codes are neither
    unbiased nor converted per weight), both staged and not."""
    from conftest import pipeline_sass
    from enigma._quantized_matvec_mma import matvec_mma_kernel
    tool_module = pipeline_sass()
    tool = tool_module.cuobjdump()
    if tool is None:
        pytest.skip("cuobjdump is not installed here")
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    for staged in (False, True):
        loops = {}
        for pairs in (False, True):
            config = QmvMmaConfig(span=1024, staged=staged, pairs=pairs)
            source = enigma.compile(
                matvec_mma_kernel("bf16", 64, config, True)).cuda_source
            try:
                sass, _, _ = tool_module.sass_of(source, tool)
            except enigma.BackendUnavailableError:
                pytest.skip("NVRTC is not installed here")
            assert not tool_module.uses_local_memory(sass), config
            key, body = tool_module.k_loop(sass)
            assert key == "HMMA" and body, config
            loops[pairs] = body
        text = "\n".join(loops[True])
        assert len(loops[True]) <= 0.6 * len(loops[False]), \
            (staged, len(loops[True]), len(loops[False]))
        assert "FADD" not in text and "F2FP" not in text, staged


@pytest.mark.parametrize("pairs", [False, True])
def test_sums_in_the_kernel(qa, rng, pairs):
    """sum_in_kernel=True: K over 3 spans and a half, the last threadgroup
    of each block adds the float partials in split order; the result is
    the two-launch form's bit for bit, twice in a row, and within the
    float64 reference's bound."""
    w = weights(rng, 45, 896, 64, "bf16")
    w_q, scales, biases = enigma.quantize(qa.put(w, "bf16"), 64)
    x = encode(rng.standard_normal((7, 896)), "bf16")
    base = QmvMmaConfig(row_groups=2, parts=2, chunks=2, span=256,
                        pairs=pairs)
    results = []
    for config in (base, base.replace(sum_in_kernel=True),
                   base.replace(sum_in_kernel=True)):
        out = qa.poisoned((7, 45), "bf16")
        y = enigma.quantized_matmul(qa.put(x, "bf16"), w_q, scales, biases,
                                    group_size=64, out=out, config=config)
        results.append(np.array(qa.get(y)))
    check_product(results[1], x, qa.get(w_q), qa.get(scales),
                  qa.get(biases), 64, "bf16")
    assert np.array_equal(results[0], results[1])
    assert np.array_equal(results[1], results[2])
