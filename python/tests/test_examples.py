"""The example kernels of examples/python/, run on
every backend under test against their float64 numpy references, with
fresh random inputs and edge sizes.

Tolerances live next to each reference, in the example's ``check_output``
(or ``check_sum``), with the reasoning:

* elementwise f32 (stencil): rtol 1e-5 plus an absolute floor for outputs
  that cancel to ~0;
* row reductions (RMSNorm, softmax): rtol 2e-5, because the sums are added
  in another order than numpy's (strided per thread, then a 32-lane tree,
  then the simdgroup partials) and all terms are positive;
* the tree reduction: |error| <= 2 * depth * 2**-24 * sum(|x|);
* matmul: |error| <= 2 * K * 2**-24 * (|A| @ |B|), element by element;
* attention: rtol 1e-4 + 1e-5 * max|V| (exps and one rescaling per key);
* histogram: exact.
"""

import numpy as np
import pytest

from conftest import load_example

# Other test files import the loader under this name.
_load = load_example


def _prepared_roundtrip(runtime, module, x, dtype, shape):
    """run_prepared -> one dispatch -> check, as the benchmarks use it."""
    prepared, grid, threads, check = module.run_prepared(runtime, x)
    try:
        prepared.dispatch(grid, threads)
        out = np.frombuffer(prepared.read_output(), dtype=dtype)
        check(out.reshape(shape))
    finally:
        prepared.release()


# --------------------------------------------------------------------------
# stencil
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 3, 255, 256, 257, 4097])
def test_stencil(runtime, rng, n):
    ex = load_example("stencil")
    x = rng.standard_normal(n).astype(np.float32)
    ex.check_output(ex.run(runtime, x), x)


def test_stencil_edges_copy_input(runtime):
    ex = load_example("stencil")
    x = np.arange(10, dtype=np.float32) ** 2
    y = ex.run(runtime, x)
    assert y[0] == x[0] and y[-1] == x[-1]
    # interior of i**2 with weights 1/4 1/2 1/4 is i**2 + 1/2, exactly
    np.testing.assert_array_equal(y[1:-1], x[1:-1] + 0.5)


def test_stencil_prepared(runtime, rng):
    ex = load_example("stencil")
    x = rng.standard_normal(10_001).astype(np.float32)
    _prepared_roundtrip(runtime, ex, x, np.float32, x.shape)


# --------------------------------------------------------------------------
# RMSNorm and softmax (one threadgroup per row)
# --------------------------------------------------------------------------

ROW_SHAPES = [(1, 1), (3, 1), (2, 31), (4, 255), (3, 256), (2, 257),
              (2, 4097), (17, 1000)]


@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_rmsnorm(runtime, rng, shape):
    ex = load_example("rmsnorm")
    x = rng.standard_normal(shape).astype(np.float32)
    ex.check_output(ex.run(runtime, x), x)


@pytest.mark.parametrize("name", ["rmsnorm", "softmax"])
@pytest.mark.parametrize("vec", [1, 4])
def test_row_kernels_both_load_widths(runtime, rng, name, vec):
    # Rows divisible by 4 use float4 loads (vec_width=4) by default; both
    # compilations must agree with the reference.
    ex = load_example(name)
    x = rng.standard_normal((5, 1028)).astype(np.float32)
    ex.check_output(ex.run(runtime, x, vec=vec), x)


def test_rmsnorm_scaled_rows(runtime, rng):
    ex = load_example("rmsnorm")
    x = rng.standard_normal((6, 300)).astype(np.float32)
    x *= np.array([1e-3, 1e-1, 1, 10, 1e3, 1e4], np.float32)[:, None]
    ex.check_output(ex.run(runtime, x), x)


def test_rmsnorm_prepared(runtime, rng):
    ex = load_example("rmsnorm")
    x = rng.standard_normal((33, 513)).astype(np.float32)
    _prepared_roundtrip(runtime, ex, x, np.float32, x.shape)


@pytest.mark.parametrize("shape", ROW_SHAPES)
def test_softmax(runtime, rng, shape):
    ex = load_example("softmax")
    x = (3 * rng.standard_normal(shape)).astype(np.float32)
    ex.check_output(ex.run(runtime, x), x)


def test_softmax_is_stable_for_large_values(runtime, rng):
    # exp(1000) overflows f32: only a max-subtracting softmax survives.
    ex = load_example("softmax")
    x = (rng.standard_normal((4, 300)) * 50 + 1000).astype(np.float32)
    x[1] -= 2000  # a row of large negative values
    y = ex.run(runtime, x)
    assert np.all(np.isfinite(y))
    ex.check_output(y, x)
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("vec", [1, 4])
def test_softmax_with_negative_infinity(runtime, rng, vec):
    """Masked entries (-inf) give 0; a thread that sees only -inf must not
    turn the row's sum into NaN (the online rescaling's exp(-inf - -inf))."""
    ex = load_example("softmax")
    x = (3 * rng.standard_normal((6, 1000))).astype(np.float32)
    x[0, :] = -np.inf
    x[0, 517] = 1.5            # one live entry: softmax 1 there
    x[1, ::3] = -np.inf
    x[2, :600] = -np.inf       # whole threads see only -inf
    y = ex.run(runtime, x, vec=vec)
    ex.check_output(y, x)
    assert y[0, 517] == 1.0 and np.count_nonzero(y[0]) == 1


def test_softmax_prepared(runtime, rng):
    ex = load_example("softmax")
    x = rng.standard_normal((33, 513)).astype(np.float32)
    _prepared_roundtrip(runtime, ex, x, np.float32, x.shape)


# --------------------------------------------------------------------------
# tree reduction
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 2, 255, 256, 257, 4097, 65536, 100_003])
def test_reduction(runtime, rng, n):
    ex = load_example("reduction")
    x = rng.standard_normal(n).astype(np.float32)
    ex.check_sum(ex.reduce_sum(runtime, x), x)


def test_reduction_partials(runtime, rng):
    # One pass gives one partial per group of 256, the last group partial.
    ex = load_example("reduction")
    x = rng.standard_normal(1000).astype(np.float32)
    partials = ex.one_pass(runtime, x)
    assert partials.shape == (4,)
    for g in range(4):
        ex.check_sum(partials[g], x[g * 256:(g + 1) * 256])


def test_reduction_exact_for_integers(runtime):
    ex = load_example("reduction")
    x = np.ones(70_001, np.float32)
    assert ex.reduce_sum(runtime, x) == 70_001.0


def test_reduction_prepared(runtime, rng):
    ex = load_example("reduction")
    x = rng.standard_normal(50_000).astype(np.float32)
    groups = -(-x.size // ex.THREADS)
    _prepared_roundtrip(runtime, ex, x, np.float32, (groups,))


# --------------------------------------------------------------------------
# histogram
# --------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["global", "shared"])
@pytest.mark.parametrize("n", [1, 255, 256, 4097, 100_003])
def test_histogram(runtime, rng, variant, n):
    ex = load_example("histogram")
    values = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    ex.check_output(ex.run(runtime, values, variant), values, repeats=1)


@pytest.mark.parametrize("variant", ["global", "shared"])
def test_histogram_one_hot_bin(runtime, variant):
    # Every thread hits the same counter: the worst contention.
    ex = load_example("histogram")
    values = np.full(50_000, 0xABCD_EF07, np.uint32)
    counts = ex.run(runtime, values, variant)
    assert counts[7] == 50_000 and counts.sum() == 50_000


def test_histogram_prepared(runtime, rng):
    ex = load_example("histogram")
    values = rng.integers(0, 2**32, size=30_000, dtype=np.uint32)
    _prepared_roundtrip(runtime, ex, values, np.uint32, (ex.BINS,))


# --------------------------------------------------------------------------
# tiled matmul
# --------------------------------------------------------------------------

@pytest.mark.parametrize("mnk", [(1, 1, 1), (37, 29, 41), (16, 16, 16),
                                 (1, 100, 3), (65, 1, 33), (48, 80, 64),
                                 (5, 7, 300)])
def test_matmul(runtime, rng, mnk):
    ex = load_example("matmul")
    m, n, k = mnk
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    ex.check_output(ex.run(runtime, a, b), a, b)


def test_matmul_prepared(runtime, rng):
    ex = load_example("matmul")
    a = rng.standard_normal((40, 50)).astype(np.float32)
    b = rng.standard_normal((50, 30)).astype(np.float32)
    _prepared_roundtrip(runtime, ex, (a, b), np.float32, (40, 30))


# --------------------------------------------------------------------------
# online-softmax attention
# --------------------------------------------------------------------------

@pytest.mark.parametrize("d", [32, 64])
@pytest.mark.parametrize("queries,keys", [(1, 1), (1, 100), (4, 1),
                                          (37, 129), (5, 1000)])
def test_attention(runtime, rng, d, queries, keys):
    ex = load_example("attention")
    q = rng.standard_normal((queries, d)).astype(np.float32)
    k = rng.standard_normal((keys, d)).astype(np.float32)
    v = rng.standard_normal((keys, d)).astype(np.float32)
    ex.check_output(ex.run(runtime, q, k, v), q, k, v)


def test_attention_register_tensor(runtime, rng):
    # The same kernel with the query slice in an enigma.register_tensor.
    ex = load_example("attention")
    q, k, v = (rng.standard_normal(s).astype(np.float32)
               for s in ((7, 64), (50, 64), (50, 64)))
    ex.check_output(ex.run(runtime, q, k, v, registers=True), q, k, v)


def test_attention_large_scores(runtime, rng):
    # Scores of hundreds: exp would overflow without the running maximum.
    # Small integer Q and K make every score exact in f32 (|q.k| < 2**24,
    # and 1/sqrt(64) is a power of two), so only the softmax is tested.
    ex = load_example("attention")
    q = rng.integers(-16, 17, size=(8, 64)).astype(np.float32)
    k = rng.integers(-16, 17, size=(200, 64)).astype(np.float32)
    v = rng.standard_normal((200, 64)).astype(np.float32)
    o = ex.run(runtime, q, k, v)
    assert np.all(np.isfinite(o))
    ex.check_output(o, q, k, v)


def test_attention_prepared(runtime, rng):
    ex = load_example("attention")
    q, k, v = (rng.standard_normal(s).astype(np.float32)
               for s in ((9, 32), (70, 32), (70, 32)))
    _prepared_roundtrip(runtime, ex, (q, k, v), np.float32, q.shape)


def test_attention_rejects_bad_head_size():
    ex = load_example("attention")
    with pytest.raises(ValueError):
        ex.make_kernel(48)


# --------------------------------------------------------------------------
# every example's main() runs as a script would (small sizes)
# --------------------------------------------------------------------------

@pytest.mark.parametrize("name,args", [
    ("stencil", (1000,)), ("rmsnorm", (8, 300)), ("softmax", (8, 300)),
    ("reduction", (5000,)), ("histogram", (5000,)), ("matmul", (20, 30, 40)),
    ("attention", (6, 50, 32)),
])
def test_example_main(name, args, capsys):
    ex = load_example(name)
    assert ex.main(*args) == 0
    assert capsys.readouterr().out.rstrip().endswith("pass")
