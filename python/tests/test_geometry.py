"""Geometric functions on float vectors (docs/reference/vectors.md) against
numpy float64 references of the formulas in the Metal specification."""

import numpy as np
import pytest

import enigma
from conftest import run_kernel

THREADS = 64


def _load(buf, i, lanes):
    return enigma.make_vec(*[buf[i + k] for k in range(lanes)])


def _store(buf, i, v, lanes):
    for k in range(lanes):
        buf[i + k] = enigma.vec_extract(v, k)


def _run(runtime, kernel, inputs, out_count, n):
    return run_kernel(runtime, enigma.compile(kernel), inputs, np.float32,
                      out_count, (n, 1, 1), (THREADS, 1, 1)).astype(np.float64)


@pytest.mark.parametrize("lanes", [2, 3, 4])
@pytest.mark.parametrize("n", [1, 130])
def test_dot_length_distance(runtime, rng, lanes, n):
    @enigma.kernel
    def scalars(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        a = _load(A, t * lanes, lanes)
        b = _load(B, t * lanes, lanes)
        C[t * 3] = enigma.dot(a, b)
        C[t * 3 + 1] = enigma.length(a)
        C[t * 3 + 2] = enigma.distance(a, b)

    a = rng.uniform(-3, 3, (n, lanes)).astype(np.float32)
    b = rng.uniform(-3, 3, (n, lanes)).astype(np.float32)
    out = _run(runtime, scalars, [a.ravel(), b.ravel()], 3 * n, n).reshape(n, 3)
    A, B = a.astype(np.float64), b.astype(np.float64)
    np.testing.assert_allclose(out[:, 0], (A * B).sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 1], np.linalg.norm(A, axis=1), rtol=1e-5)
    np.testing.assert_allclose(out[:, 2], np.linalg.norm(A - B, axis=1),
                               rtol=1e-5)


@pytest.mark.parametrize("lanes", [2, 3, 4])
def test_normalize_reflect_faceforward(runtime, rng, lanes):
    n = 97

    @enigma.kernel
    def vectors(A: enigma.f32, B: enigma.f32, R: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        i = _load(A, t * lanes, lanes)
        nrm = enigma.normalize(_load(B, t * lanes, lanes))
        ref = _load(R, t * lanes, lanes)
        base = t * (3 * lanes)
        _store(C, base, nrm, lanes)
        _store(C, base + lanes, enigma.reflect(i, nrm), lanes)
        _store(C, base + 2 * lanes, enigma.faceforward(nrm, i, ref), lanes)

    a = rng.uniform(-2, 2, (n, lanes)).astype(np.float32)
    b = rng.uniform(-2, 2, (n, lanes)).astype(np.float32)
    b[np.abs(b).sum(1) < 0.1] = 1.0
    r = rng.uniform(-2, 2, (n, lanes)).astype(np.float32)
    out = _run(runtime, vectors, [a.ravel(), b.ravel(), r.ravel()],
               3 * lanes * n, n).reshape(n, 3, lanes)
    A, B, R = (x.astype(np.float64) for x in (a, b, r))
    N = B / np.linalg.norm(B, axis=1, keepdims=True)
    refl = A - 2 * (N * A).sum(1, keepdims=True) * N
    face = np.where((R * A).sum(1, keepdims=True) < 0, N, -N)
    np.testing.assert_allclose(out[:, 0], N, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[:, 1], refl, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out[:, 2], face, rtol=1e-5, atol=1e-6)


def test_cross(runtime, rng):
    n = 200

    @enigma.kernel
    def cr(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        _store(C, t * 3, enigma.cross(_load(A, t * 3, 3), _load(B, t * 3, 3)), 3)

    a = rng.uniform(-3, 3, (n, 3)).astype(np.float32)
    b = rng.uniform(-3, 3, (n, 3)).astype(np.float32)
    out = _run(runtime, cr, [a.ravel(), b.ravel()], 3 * n, n).reshape(n, 3)
    ref = np.cross(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("lanes", [2, 3, 4])
def test_refract(runtime, rng, lanes):
    n = 300

    @enigma.kernel
    def rf(A: enigma.f32, B: enigma.f32, E: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        i = enigma.normalize(_load(A, t * lanes, lanes))
        nn = enigma.normalize(_load(B, t * lanes, lanes))
        _store(C, t * lanes, enigma.refract(i, nn, E[t]), lanes)

    a = rng.uniform(-2, 2, (n, lanes)).astype(np.float32) + 0.05
    b = rng.uniform(-2, 2, (n, lanes)).astype(np.float32) + 0.05
    eta = rng.uniform(0.3, 2.5, n).astype(np.float32)  # both TIR and not
    out = _run(runtime, rf, [a.ravel(), b.ravel(), eta], lanes * n,
               n).reshape(n, lanes)
    A = a.astype(np.float64)
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    N = b.astype(np.float64)
    N /= np.linalg.norm(N, axis=1, keepdims=True)
    e = eta.astype(np.float64)[:, None]
    d = (N * A).sum(1, keepdims=True)
    k = 1 - e * e * (1 - d * d)
    ref = np.where(k < 0, 0.0, e * A - (e * d + np.sqrt(np.maximum(k, 0))) * N)
    near = np.abs(k[:, 0]) < 1e-4   # the branch is ill-conditioned there
    np.testing.assert_allclose(out[~near], ref[~near], rtol=1e-4, atol=1e-4)
    assert (k < 0).any() and (k > 0).any()


def test_geometry_msl_and_errors():
    @enigma.kernel
    def g(A: enigma.f32, B: enigma.i32):
        v = enigma.make_float3(A[0], A[1], A[2])
        A[0] = enigma.length(enigma.cross(v, v))

    # Metal's own functions, not expansions of them.
    src = enigma.compile(g).metal_source
    assert "cross(v" in src and "length(v" in src and "float3(" in src
    assert "sqrt(" not in src

    def error_of(body):
        @enigma.kernel
        def bad(A: enigma.f32, B: enigma.i32):
            body(A, B)
        with pytest.raises(enigma.EnigmaError) as info:
            enigma.compile(bad)
        return str(info.value)

    f2 = lambda A: enigma.make_float2(A[0], A[1])  # noqa: E731
    f3 = lambda A: enigma.make_float3(A[0], A[1], A[2])  # noqa: E731
    assert "3-lane" in error_of(lambda A, B: enigma.cross(f2(A), f2(A)))
    assert "differ" in error_of(lambda A, B: enigma.dot(f2(A), f3(A)))
    assert "float vectors" in error_of(
        lambda A, B: enigma.length(enigma.make_vec(B[0], B[1])))
    assert "float vectors" in error_of(lambda A, B: enigma.normalize(A[0]))
    msg = error_of(lambda A, B: enigma.refract(f2(A), f2(A), f2(A)))
    assert "eta" in msg and "test_geometry.py:" in msg
