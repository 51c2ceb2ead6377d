"""Control flow (docs/reference/control-flow.md) on the CPU backend (and
CUDA where ENIGMA_TEST_BACKENDS names it), against numpy float64
references."""

import numpy as np
import pytest

import enigma
from conftest import run_kernel


def test_for_range_carry_sum(runtime, rng):
    m = 7

    @enigma.kernel
    def row_sum(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        with enigma.for_range(0, m, init=[0.0]) as (k, acc):
            acc[0] = acc[0] + A[t * m + k]
        B[t] = acc[0]

    for n in (1, 33, 257):
        a = rng.standard_normal(n * m).astype(np.float32)
        out = run_kernel(runtime, enigma.compile(row_sum), [a], np.float32, n,
                         (n, 1, 1), (32, 1, 1))
        ref = a.astype(np.float64).reshape(n, m).sum(axis=1)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_for_range_traced_bounds_and_step(runtime, rng):
    @enigma.kernel
    def strided(A: enigma.f32, n: enigma.Scalar(enigma.i32), B: enigma.f32):
        t = enigma.thread_position_in_grid
        with enigma.for_range(enigma.metal_cast(t, "int"), n, 3,
                              init=[0.0, 0]) as (k, c):
            c[0] = c[0] + A[k]
            c[1] = c[1] + 1
        B[t] = c[0] + enigma.metal_cast(c[1], "float") * 1000.0

    for n in (0, 1, 10, 64):
        a = rng.standard_normal(max(n, 1)).astype(np.float32)
        threads = 8
        out = run_kernel(runtime, enigma.compile(strided), [a], np.float32,
                         threads, (threads, 1, 1), (threads, 1, 1),
                         scalars={"n": n})
        ref = [a[t:n:3].astype(np.float64).sum() + 1000.0 * len(range(t, n, 3))
               for t in range(threads)]
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)


def test_for_range_errors():
    @enigma.kernel
    def float_bound(A: enigma.f32):
        with enigma.for_range(0, 2.5) as i:
            A[i] = 1.0

    with pytest.raises(enigma.EnigmaError, match=r"test_control_flow.py:\d+:.*"
                       r"upper bound must be an integer"):
        enigma.compile(float_bound)

    @enigma.kernel
    def float_value_bound(A: enigma.f32):
        with enigma.for_range(0, A[0]) as i:
            A[i] = 1.0

    with pytest.raises(enigma.EnigmaError, match="must be an integer"):
        enigma.compile(float_value_bound)

    @enigma.kernel
    def carry_kind_change(A: enigma.f32):
        with enigma.for_range(0, 4, init=[0]) as (i, c):
            c[0] = A[i]

    with pytest.raises(enigma.EnigmaError, match=r"carry\[0\] is carried as i32"):
        enigma.compile(carry_kind_change)


def test_if_single_and_two_armed(runtime, rng):
    @enigma.kernel
    def one_arm(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        B[t] = 5.0
        with enigma.if_(A[t] > 0.0):
            B[t] = A[t] * 2.0

    @enigma.kernel
    def two_arms(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        with enigma.if_(A[t] > 0.0) as (then_b, else_b):
            with then_b:
                B[t] = A[t] * 2.0
            with else_b:
                B[t] = -A[t]

    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    a64 = a.astype(np.float64)
    out = run_kernel(runtime, enigma.compile(one_arm), [a], np.float32, n,
                     (n, 1, 1), (64, 1, 1))
    np.testing.assert_allclose(out, np.where(a64 > 0, 2 * a64, 5.0), rtol=1e-6)
    ck = enigma.compile(two_arms)
    assert "} else {" in ck.metal_source
    out = run_kernel(runtime, ck, [a], np.float32, n, (n, 1, 1), (64, 1, 1))
    np.testing.assert_allclose(out, np.where(a64 > 0, 2 * a64, -a64), rtol=1e-6)


def test_carry_assigned_in_branch_is_conditional(runtime, rng):
    m = 16

    @enigma.kernel
    def positive_sum(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        with enigma.for_range(0, m, init=[0.0, 0]) as (k, c):
            x = A[t * m + k]
            with enigma.if_(x > 0.0) as (then_b, else_b):
                with then_b:
                    c[0] = c[0] + x
                with else_b:
                    c[1] = c[1] + 1
        B[t] = c[0] - enigma.metal_cast(c[1], "float")

    n = 100
    a = rng.standard_normal(n * m).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(positive_sum), [a], np.float32, n,
                     (n, 1, 1), (32, 1, 1))
    r = a.astype(np.float64).reshape(n, m)
    ref = np.where(r > 0, r, 0).sum(axis=1) - (r <= 0).sum(axis=1)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_if_errors():
    @enigma.kernel
    def not_bool(A: enigma.f32):
        with enigma.if_(A[0]):
            A[0] = 1.0

    with pytest.raises(enigma.EnigmaError, match="must be a bool"):
        enigma.compile(not_bool)

    @enigma.kernel
    def else_twice(A: enigma.f32):
        with enigma.if_(A[0] > 0.0) as (then_b, else_b):
            with else_b:
                A[0] = 1.0
            with else_b:
                A[0] = 2.0

    with pytest.raises(enigma.EnigmaError, match="else_b can be entered once"):
        enigma.compile(else_twice)


def test_user_exception_propagates_unchanged():
    @enigma.kernel
    def boom(A: enigma.f32):
        with enigma.for_range(0, 4) as i:
            with enigma.if_(A[i] > 0.0):
                raise KeyError("from the user")

    with pytest.raises(KeyError, match="from the user") as info:
        enigma.compile(boom)
    assert info.traceback[-1].path.name == "test_control_flow.py"


def test_while_with_carry(runtime, rng):
    @enigma.kernel
    def steps(A: enigma.u32, B: enigma.u32):
        t = enigma.thread_position_in_grid
        limit = A[t]
        with enigma.while_(lambda c: c[1] < limit,
                           init=[enigma.metal_cast(0, "uint"),
                                 enigma.metal_cast(1, "uint")]) as c:
            c[0] = c[0] + 1
            c[1] = c[1] * 2
        B[t] = c[0]

    n = 300
    a = rng.integers(0, 1 << 20, n).astype(np.uint32)
    a[:3] = [0, 1, 2]
    ck = enigma.compile(steps)
    assert "while (true) {" in ck.metal_source
    out = run_kernel(runtime, ck, [a], np.uint32, n, (n, 1, 1), (64, 1, 1))
    ref = [next(k for k in range(64) if 2 ** k >= int(x)) for x in a]
    np.testing.assert_array_equal(out, ref)


def test_load_if_never_reads_out_of_bounds(runtime, rng):
    @enigma.kernel
    def padded(A: enigma.f32, n: enigma.Scalar(enigma.u32), B: enigma.f32):
        t = enigma.thread_position_in_grid
        B[t] = enigma.load_if(A, t, t < n, default=-7.0)

    for n, grid in ((1, 64), (37, 64), (64, 64)):
        a = rng.standard_normal(n).astype(np.float32)
        ck = enigma.compile(padded)
        assert "if (" not in ck.metal_source.split("{", 1)[1]  # no branch
        out = run_kernel(runtime, ck, [a], np.float32, grid, (grid, 1, 1),
                         (32, 1, 1), scalars={"n": n})
        ref = np.full(grid, -7.0)
        ref[:n] = a
        np.testing.assert_array_equal(out, ref.astype(np.float32))


def test_store_if(runtime, rng):
    @enigma.kernel
    def masked(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        enigma.store_if(B, t, A[t] * 3.0, A[t] < 0.0)

    n = 513
    a = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(masked), [a], np.float32, n,
                     (n, 1, 1), (128, 1, 1))
    a64 = a.astype(np.float64)
    np.testing.assert_allclose(out, np.where(a64 < 0, 3 * a64, 0.0), rtol=1e-6)


def test_register_tensor(runtime, rng):
    @enigma.kernel
    def outer(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        r = enigma.register_tensor((4, 4), "float", fill=1.0)
        for i in enigma.range_constexpr(4):
            for j in enigma.range_constexpr(4):
                r[i, j] = r[i, j] + A[t * 4 + i] * A[t * 4 + j]
        acc = r[0, 0]
        for i in enigma.range_constexpr(4):
            for j in enigma.range_constexpr(4):
                if (i, j) != (0, 0):
                    acc = acc + r[i, j] * float(i + 1)
        B[t] = acc

    n = 50
    a = rng.standard_normal(n * 4).astype(np.float32)
    ck = enigma.compile(outer)
    out = run_kernel(runtime, ck, [a], np.float32, n, (n, 1, 1), (32, 1, 1))
    v = a.astype(np.float64).reshape(n, 4)
    r = 1.0 + v[:, :, None] * v[:, None, :]
    ref = (r * np.arange(1, 5)[None, :, None]).sum(axis=(1, 2))
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_register_tensor_errors():
    @enigma.kernel
    def dynamic(A: enigma.f32):
        t = enigma.thread_position_in_grid
        r = enigma.register_tensor(4)
        r[t] = 1.0

    with pytest.raises(enigma.EnigmaError, match=r"test_control_flow.py:\d+:.*"
                       "indexed by constants"):
        enigma.compile(dynamic)

    @enigma.kernel
    def out_of_range(A: enigma.f32):
        r = enigma.register_tensor((2, 3))
        A[0] = r[1, 3]

    with pytest.raises(enigma.EnigmaError, match="out of range"):
        enigma.compile(out_of_range)


def test_range_constexpr_rejects_traced_values():
    @enigma.kernel
    def bad(A: enigma.f32, n: enigma.Scalar(enigma.i32)):
        for i in enigma.range_constexpr(n):
            A[i] = 0.0

    with pytest.raises(enigma.EnigmaError, match="Python integers"):
        enigma.compile(bad)


@pytest.mark.parametrize("threads", [1, 5, 32, 64])
def test_barrier_inside_for_range(runtime, rng, threads):
    steps = 5

    @enigma.kernel
    def rotate(X: enigma.f32, B: enigma.f32):
        lid = enigma.thread_position_in_threadgroup()
        size = enigma.threads_per_threadgroup()
        base = enigma.threadgroup_position_in_grid() * size
        with enigma.for_range(0, steps):
            v = X[base + (lid + 1) % size]
            enigma.barrier("mem_device")
            X[base + lid] = v + 1.0
            enigma.barrier("mem_device")
        B[base + lid] = X[base + lid]

    groups = 3
    n = groups * threads
    x = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(rotate), [x], np.float32, n,
                     (n, 1, 1), (threads, 1, 1))
    g = x.astype(np.float64).reshape(groups, threads)
    ref = np.roll(g, -steps, axis=1) + steps
    np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-6)


def test_barrier_inside_uniform_if(runtime, rng):
    @enigma.kernel
    def shift(X: enigma.f32, flag: enigma.Scalar(enigma.u32), B: enigma.f32):
        lid = enigma.thread_position_in_threadgroup()
        size = enigma.threads_per_threadgroup()
        base = enigma.threadgroup_position_in_grid() * size
        with enigma.if_(flag != 0):
            v = X[base + (size - 1 - lid)]
            enigma.barrier("mem_device")
            X[base + lid] = v
            enigma.barrier("mem_device")
        B[base + lid] = X[base + lid]

    threads, groups = 16, 4
    x = rng.standard_normal(threads * groups).astype(np.float32)
    ck = enigma.compile(shift)
    for flag in (0, 1):
        out = run_kernel(runtime, ck, [x], np.float32, x.size, (x.size, 1, 1),
                         (threads, 1, 1), scalars={"flag": flag})
        g = x.reshape(groups, threads)
        ref = g[:, ::-1] if flag else g
        np.testing.assert_array_equal(out, ref.reshape(-1))


def test_barrier_inside_a_uniform_while(runtime, rng):
    # The CPU backend runs a while loop holding a barrier once per
    # threadgroup, its test read from the first thread (it was refused
    # before): each iteration reverses a tile through threadgroup memory.
    @enigma.kernel
    def looping(X: enigma.f32, n: enigma.Scalar(enigma.u32), B: enigma.f32):
        lid = enigma.thread_position_in_threadgroup()
        base = enigma.threadgroup_position_in_grid() * 16
        tile = enigma.threadgroup_alloc(enigma.f32, 16)
        acc = 0.0
        with enigma.while_(lambda c: c[0] < n,
                           init=[enigma.metal_cast(0, "uint")]) as c:
            tile[lid] = X[c[0] * 64 + base + lid] * enigma.metal_cast(
                c[0] + 1, "float")
            enigma.barrier()
            acc = acc + tile[15 - lid]
            enigma.barrier()
            c[0] = c[0] + 1
        B[base + lid] = acc

    ck = enigma.compile(looping)
    for n in (0, 1, 5):
        x = rng.standard_normal(64 * max(n, 1)).astype(np.float32)
        out = run_kernel(runtime, ck, [x], np.float32, 64, (64, 1, 1),
                         (16, 1, 1), scalars={"n": n})
        g = x[:64 * n].astype(np.float64).reshape(n, 4, 16)[:, :, ::-1]
        ref = (g * np.arange(1, n + 1)[:, None, None]).sum(axis=0)
        np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5,
                                   atol=1e-5)


def test_register_tensor_across_barrier(runtime, rng):
    @enigma.kernel
    def keep(X: enigma.f32, B: enigma.f32):
        lid = enigma.thread_position_in_threadgroup()
        size = enigma.threads_per_threadgroup()
        base = enigma.threadgroup_position_in_grid() * size
        r = enigma.register_tensor(2)
        r[0] = X[base + lid]
        enigma.barrier("mem_device")
        X[base + lid] = 0.0
        enigma.barrier("mem_device")
        r[1] = X[base + (lid + 1) % size]
        B[base + lid] = r[0] + r[1]

    x = rng.standard_normal(64).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(keep), [x], np.float32, 64,
                     (64, 1, 1), (16, 1, 1))
    np.testing.assert_array_equal(out, x)


def test_two_armed_if_nested_in_if(runtime, rng):
    # Regression: the arm names of an inner two-armed if_ were taken for
    # variables carried by the outer if_.
    @enigma.kernel
    def nested(A: enigma.f32, C: enigma.f32, n: enigma.Scalar(enigma.u32)):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < n):
            with enigma.if_(i == 0) as (first, rest):
                with first:
                    C[i] = -1.0
                with rest:
                    C[i] = A[i] * 2.0

    size, n = 37, 30
    a = rng.standard_normal(size).astype(np.float32)
    out = np.frombuffer(runtime.execute(enigma.compile(nested), [a], size * 4,
                                        grid=size, threads=16, scalars=[n]),
                        np.float32)
    expected = np.zeros(size, np.float32)
    expected[1:n] = a[1:n] * 2
    expected[0] = -1
    np.testing.assert_array_equal(out, expected)


@enigma.kernel
def vector_in_branches(A: enigma.f32, C: enigma.f32):
    # v is a float4 (vec_width=4): it stays one through both arms; the
    # scalar assigned in the else arm fills every lane.
    t = enigma.thread_position_in_grid
    v = A[t]
    with enigma.if_(t % 3 == 0) as (then_b, else_b):
        with then_b:
            v = v * 2.0
        with else_b:
            with enigma.if_(t % 3 == 1):
                v = -1.5
    for _ in enigma.range(2):
        v = v + 0.25
    C[t] = v


@pytest.mark.parametrize("vectors", [1, 7, 130])
def test_vector_carried_by_if_and_loop(runtime, rng, vectors):
    compiled = enigma.compile(vector_in_branches, vec_width=4)
    a = rng.standard_normal(4 * vectors).astype(np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, 4 * vectors,
                     (vectors, 1, 1), (64, 1, 1))
    rows = a.astype(np.float64).reshape(vectors, 4)
    t = np.arange(vectors)[:, None]
    ref = np.where(t % 3 == 0, rows * 2, np.where(t % 3 == 1, -1.5, rows))
    # Each + 0.25 rounds to float32 (the doubling is exact): replay that.
    quarter = np.float32(0.25)
    np.testing.assert_array_equal(out.reshape(vectors, 4),
                                  ref.astype(np.float32) + quarter + quarter)


def test_vector_lane_mismatch_in_branch_is_an_error():
    @enigma.kernel
    def k(A: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        s = A[t].x
        with enigma.if_(t > 0):
            s = A[t]           # a float4 into a carried float
        C[t] = s

    with pytest.raises(enigma.EnigmaError,
                       match=r"variable 's' is carried as a f32 scalar but is "
                             r"assigned a 4-lane f32 vector"):
        enigma.compile(k, vec_width=4)


@enigma.kernel
def load_if_vectors(A: enigma.f32, n: enigma.Scalar(enigma.u32),
                    C: enigma.f32):
    t = enigma.thread_position_in_grid
    near = enigma.load_if(A, t, t < n, 7.5)       # default fills the lanes
    never = enigma.load_if(A, t, False, -2.0)
    C[t] = near + never


def test_load_if_on_a_vector_buffer(runtime, rng):
    vectors = 9
    n = int(rng.integers(0, vectors + 1))
    compiled = enigma.compile(load_if_vectors, vec_width=4)
    a = rng.standard_normal(4 * vectors).astype(np.float32)
    out = run_kernel(runtime, compiled, [a], np.float32, 4 * vectors,
                     (vectors, 1, 1), (4, 1, 1), scalars=[n])
    rows = a.reshape(vectors, 4)
    t = np.arange(vectors)[:, None]
    want = np.where(t < n, rows, np.float32(7.5)) + np.float32(-2.0)
    np.testing.assert_array_equal(out.reshape(vectors, 4), want)
