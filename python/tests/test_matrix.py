"""Matrix types (docs/reference/cooperation.md): enigma.Matrix, make_matrix,
matrix_from_buffer, store, matmul / @, transpose, determinant.

Metal's layout: a floatCxR has C columns of R-lane vectors and is stored
column-major, so element (column c, row r) is at offset c * R + r. In numpy a
batch stored as shape (n, C, R) is, per item, the TRANSPOSE of the
mathematical R x C matrix: ``math = stored.swapaxes(-1, -2)``. References are
numpy float64 on the float32 inputs."""

import itertools
import math
import sys

import numpy as np
import pytest

import enigma
from conftest import run_kernel

THREADS = 64
N = 100        # matrices per dispatch; leaves a partial threadgroup
EPS32 = 2.0 ** -24


def _math(stored):
    """(n, C, R) column-major storage -> (n, R, C) mathematical matrices."""
    return np.swapaxes(stored, -1, -2)


def _run(runtime, kernel, inputs, out_count, n=N):
    return run_kernel(runtime, enigma.compile(kernel), inputs, np.float32,
                      out_count, (n, 1, 1), (THREADS, 1, 1)).astype(np.float64)


def _random(rng, *shape):
    return rng.uniform(-2, 2, shape).astype(np.float32)


# (a_cols, a_rows, b_cols): a is a_cols x a_rows, b is b_cols x a_cols.
PRODUCT_SHAPES = [(2, 2, 2), (3, 3, 3), (4, 4, 4), (3, 2, 3), (3, 2, 4),
                  (2, 3, 3), (4, 2, 2)]


@pytest.mark.parametrize("use_operator", [False, True])
@pytest.mark.parametrize("ka,ra,cb", PRODUCT_SHAPES)
def test_matrix_matrix_product(runtime, rng, ka, ra, cb, use_operator):
    kb = ka          # b's rows equal a's columns

    @enigma.kernel
    def product(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        a = enigma.matrix_from_buffer(A, t * (ka * ra), ka, ra)
        b = enigma.matrix_from_buffer(B, t * (cb * kb), cb, kb)
        c = a @ b if use_operator else enigma.matmul(a, b)
        assert (c.cols, c.rows) == (cb, ra)
        c.store(C, t * (cb * ra))

    a = _random(rng, N, ka, ra)
    b = _random(rng, N, cb, kb)
    out = _run(runtime, product, [a.ravel(), b.ravel()], N * cb * ra)
    ref = _math(a).astype(np.float64) @ _math(b).astype(np.float64)
    # Stored result: (n, cb, ra) column-major = transpose of the math result.
    np.testing.assert_allclose(out.reshape(N, cb, ra), _math(ref),
                               rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cols,rows", [(2, 2), (3, 3), (4, 4), (3, 2), (2, 4)])
def test_matrix_vector_products(runtime, rng, cols, rows):
    @enigma.kernel
    def products(M: enigma.f32, V: enigma.f32, W: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        m = enigma.matrix_from_buffer(M, t * (cols * rows), cols, rows)
        v = enigma.make_vec(*[V[t * cols + k] for k in range(cols)])
        w = enigma.make_vec(*[W[t * rows + k] for k in range(rows)])
        mv = m @ v                       # floatCxR * floatC -> floatR
        wm = enigma.matmul(w, m)         # floatR * floatCxR -> floatC
        assert mv.lanes == rows and wm.lanes == cols
        base = t * (rows + cols)
        for k in range(rows):
            C[base + k] = enigma.vec_extract(mv, k)
        for k in range(cols):
            C[base + rows + k] = enigma.vec_extract(w @ m, k)

    m = _random(rng, N, cols, rows)
    v = _random(rng, N, cols)
    w = _random(rng, N, rows)
    out = _run(runtime, products, [m.ravel(), v.ravel(), w.ravel()],
               N * (rows + cols)).reshape(N, rows + cols)
    M = _math(m).astype(np.float64)
    ref_mv = np.einsum("nrc,nc->nr", M, v.astype(np.float64))
    ref_wm = np.einsum("nr,nrc->nc", w.astype(np.float64), M)
    np.testing.assert_allclose(out[:, :rows], ref_mv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, rows:], ref_wm, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cols,rows", [(2, 2), (3, 2), (4, 3), (2, 4), (4, 4)])
def test_transpose_columns_and_store(runtime, rng, cols, rows):
    @enigma.kernel
    def trans(M: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        # Built from columns with make_matrix; m[c] and m.columns agree.
        cs = [enigma.make_vec(*[M[t * (cols * rows) + c * rows + r]
                                for r in range(rows)]) for c in range(cols)]
        m = enigma.make_matrix(*cs)
        assert len(m.columns) == cols and m[cols - 1] is m.columns[-1]
        mt = enigma.transpose(m)
        assert (mt.cols, mt.rows) == (rows, cols)
        mt.store(C, t * (2 * cols * rows))
        # A round trip through the buffer layout: column c of m, lane r.
        for c in range(cols):
            for r in range(rows):
                C[t * (2 * cols * rows) + cols * rows + c * rows + r] = \
                    enigma.vec_extract(m[c], r)

    m = _random(rng, N, cols, rows)
    out = _run(runtime, trans, [m.ravel()], N * 2 * cols * rows)
    out = out.reshape(N, 2, cols * rows)
    # transpose(m) is rows x cols; stored column-major it is (n, rows, cols),
    # i.e. the numpy transpose of the storage of m. Exact: only data moves.
    np.testing.assert_array_equal(out[:, 0].reshape(N, rows, cols),
                                  np.swapaxes(m, 1, 2))
    np.testing.assert_array_equal(out[:, 1].reshape(N, cols, rows), m)


def _abs_permanent(M):
    """Sum over permutations of |product of entries|: the sum of the
    magnitudes of every term of the determinant's expansion."""
    n = M.shape[0]
    return sum(math.prod(abs(M[i, p[i]]) for i in range(n))
               for p in itertools.permutations(range(n)))


@pytest.mark.parametrize("n", [2, 3, 4])
def test_determinant(runtime, rng, n):
    @enigma.kernel
    def det(M: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        C[t] = enigma.determinant(
            enigma.matrix_from_buffer(M, t * (n * n), n, n))

    m = _random(rng, N, n, n)
    m[0] = np.eye(n, dtype=np.float32) * 2     # det 2^n, exactly
    m[1, 1] = m[1, 0]                          # equal columns: det 0
    out = _run(runtime, det, [m.ravel()], N)
    M = _math(m).astype(np.float64)
    ref = np.linalg.det(M)
    # Tolerance: the kernel evaluates a cofactor expansion in float32 on
    # float32 inputs. Every rounding is relative (<= 2^-24) and at most
    # 2n - 1 operations (4x4: minor mul+sub, product, 5 sums) lie between an
    # input and the result, so the error is bounded by about
    # (2n - 1) * 2^-24 times the sum of the magnitudes of all n! terms (the
    # permanent of |M|) -- an absolute bound, needed because the terms
    # cancel. 4n * 2^-24 * perm(|M|) doubles that bound for slack (FMA
    # contraction on a backend skips roundings, so it stays within it).
    tol = np.array([4 * n * EPS32 * _abs_permanent(x) for x in M])
    err = np.abs(out - ref)
    assert np.all(err <= tol), (
        f"max error {err.max():.3g}, worst excess {np.max(err - tol):.3g}")
    assert out[0] == 2.0 ** n
    # The singular matrix's det is only within tol of 0, not exactly 0: a
    # backend may contract a*d - c*b into fma(a, d, -(c*b)), leaving the
    # rounding error of c*b.


def test_determinant_of_product_and_transpose(runtime, rng):
    # det(a @ b) == det(a) det(b) and det(transpose(a)) == det(a).
    @enigma.kernel
    def identities(M: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        a = enigma.matrix_from_buffer(M, t * 18, 3, 3)
        b = enigma.matrix_from_buffer(M, t * 18 + 9, 3, 3)
        C[t * 3] = enigma.determinant(a @ b)
        C[t * 3 + 1] = enigma.determinant(a) * enigma.determinant(b)
        C[t * 3 + 2] = enigma.determinant(enigma.transpose(a)) - \
            enigma.determinant(a)

    m = _random(rng, N, 18)
    out = _run(runtime, identities, [m.ravel()], 3 * N).reshape(N, 3)
    scale = np.abs(out[:, 1]) + 1.0
    np.testing.assert_array_less(np.abs(out[:, 0] - out[:, 1]), 1e-4 * scale)
    # Same expansion on transposed lanes: only rounding order differs.
    np.testing.assert_array_less(np.abs(out[:, 2]), 1e-5 * scale * 10)


def test_half_matrix(runtime, rng):
    @enigma.kernel
    def half_mv(M: enigma.f16, V: enigma.f16, C: enigma.f32):
        t = enigma.thread_position_in_grid
        m = enigma.matrix_from_buffer(M, t * 4, 2, 2)
        v = enigma.make_vec(V[t * 2], V[t * 2 + 1])
        r = m @ v
        assert r.dtype == enigma.f16 and m.type_name == "half2x2"
        C[t * 2] = r.x
        C[t * 2 + 1] = r.y

    m = rng.uniform(-1, 1, (N, 2, 2)).astype(np.float16)
    v = rng.uniform(-1, 1, (N, 2)).astype(np.float16)
    out = _run(runtime, half_mv, [m.ravel(), v.ravel()], 2 * N).reshape(N, 2)
    ref = np.einsum("nrc,nc->nr", _math(m).astype(np.float64),
                    v.astype(np.float64))
    np.testing.assert_allclose(out, ref, atol=4e-3)   # half: 2^-11 steps


# --------------------------------------------------------------------------
# Errors name the user's line
# --------------------------------------------------------------------------

def _trace_error(body):
    @enigma.kernel
    def bad(A: enigma.f32, B: enigma.i32):
        body(A, B)

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(bad)
    return str(info.value)


def _m(A, cols, rows):
    return enigma.matrix_from_buffer(A, 0, cols, rows)


def _where():
    """'test_matrix.py:<line>' of the caller's line."""
    return f"test_matrix.py:{sys._getframe(1).f_lineno}"


def test_errors_name_user_line():
    at, msg = _where(), _trace_error(lambda A, B: enigma.matmul(_m(A, 3, 2), _m(A, 3, 2)))  # noqa: E501
    assert at in msg and "float3x2 * float3x2" in msg and "rows (2)" in msg

    at, msg = _where(), _trace_error(lambda A, B: _m(A, 2, 2) @ _m(A, 2, 3))
    assert at in msg and "columns (2)" in msg

    at, msg = _where(), _trace_error(lambda A, B: enigma.determinant(_m(A, 3, 2)))  # noqa: E501
    assert at in msg and "square" in msg and "float3x2" in msg

    at, msg = _where(), _trace_error(
        lambda A, B: _m(A, 3, 2) @ enigma.make_float2(1.0))
    assert "3-lane vector" in msg and "float3x2 * float2" in msg

    at, msg = _where(), _trace_error(
        lambda A, B: enigma.make_float3(1.0) @ _m(A, 3, 2))
    assert "2-lane vector" in msg


def test_construction_errors():
    msg = _trace_error(lambda A, B: enigma.make_matrix(
        enigma.make_float2(A[0]), enigma.make_float3(A[1])))
    assert "equal lanes" in msg and "test_matrix.py:" in msg
    msg = _trace_error(lambda A, B: enigma.make_matrix(
        enigma.make_vec(B[0], B[1]), enigma.make_vec(B[2], B[3])))
    assert "float or half vector" in msg
    msg = _trace_error(lambda A, B: enigma.make_matrix(
        enigma.make_float2(A[0])))
    assert "2, 3 or 4 column vectors" in msg
    msg = _trace_error(lambda A, B: enigma.matrix_from_buffer(A, 0, 5, 2))
    assert "cols must be 2, 3 or 4" in msg
    msg = _trace_error(lambda A, B: enigma.matrix_from_buffer(B, 0, 2, 2))
    assert "float or half elements" in msg
    msg = _trace_error(lambda A, B: _m(A, 2, 3)[2])
    assert "out of range" in msg and "float2x3" in msg
    msg = _trace_error(lambda A, B: enigma.transpose(enigma.make_float2(A[0])))
    assert "takes a Matrix" in msg
    msg = _trace_error(lambda A, B: enigma.matmul(
        enigma.make_float2(A[0]), enigma.make_float2(A[0])))
    assert "at least one Matrix" in msg


def test_numbers_are_not_columns():
    with pytest.raises(enigma.EnigmaError, match="traced float vector"):
        enigma.make_matrix(1.0, 2.0)
