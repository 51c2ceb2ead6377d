"""break, continue and return in run-time loops and branches, and `while`
statements on traced tests (docs/reference/control-flow.md, "Leaving loops
early"), with the meaning Python gives them. References are plain Python
loops over the same data (float64 where arithmetic happens); sizes include
0, 1, odd counts and loops that never break."""

import inspect

import numpy as np
import pytest

import enigma


def run(runtime, kernel, inputs, outputs, grid, threads=None, **scalars):
    """Compiles and runs ``kernel``; ``outputs`` is a list of (count,
    dtype); returns the output arrays."""
    compiled = enigma.compile(kernel)
    threads = threads or (min(grid, 32), 1, 1)
    got = runtime.execute(
        compiled, inputs, grid=(grid, 1, 1), threads=threads,
        scalars=scalars or None,
        output_shapes=[(max(n, 1),) for n, _ in outputs],
        output_dtypes=[d for _, d in outputs])
    return got if isinstance(got, list) else [got]


# --------------------------------------------------------------------------
# for ... in enigma.range
# --------------------------------------------------------------------------

@enigma.kernel
def first_negative(A: enigma.f32, n: enigma.Scalar(enigma.u32),
                   B: enigma.u32, S: enigma.f32):
    t = enigma.thread_position_in_grid
    found = n
    total = 0.0
    for k in enigma.range(n):
        x = A[t * n + k]
        with enigma.if_(x < 0.0):
            found = enigma.metal_cast(k, "uint")
            break
        total = total + x          # only before the first negative one
    B[t] = found
    S[t] = total


@pytest.mark.parametrize("n", [0, 1, 7, 40])
def test_break_leaves_the_loop(runtime, rng, n):
    rows = 37
    a = rng.standard_normal(max(rows * n, 1)).astype(np.float32)
    a[:n] = np.abs(a[:n])  # row 0 never breaks
    found, total = run(runtime, first_negative, [a],
                       [(rows, np.uint32), (rows, np.float32)], rows, n=n)
    for r in range(rows):
        row = a[r * n:(r + 1) * n].astype(np.float64)
        k = next((k for k, x in enumerate(row) if x < 0), n)
        assert found[r] == k
        np.testing.assert_allclose(total[r], row[:k].sum(), rtol=1e-5,
                                   atol=1e-5)


@enigma.kernel
def positive_sums(A: enigma.f32, n: enigma.Scalar(enigma.u32),
                  B: enigma.f32, C: enigma.u32):
    t = enigma.thread_position_in_grid
    s = 0.0
    skipped = enigma.metal_cast(0, "uint")
    for k in enigma.range(n):
        x = A[t * n + k]
        with enigma.if_(x < 0.0):
            skipped = skipped + 1
            continue
        s = s + x
    B[t] = s
    C[t] = skipped


@pytest.mark.parametrize("n", [0, 1, 9])
def test_continue_skips_the_rest_of_the_iteration(runtime, rng, n):
    rows = 45
    a = rng.standard_normal(max(rows * n, 1)).astype(np.float32)
    s, skipped = run(runtime, positive_sums, [a],
                     [(rows, np.float32), (rows, np.uint32)], rows, n=n)
    m = a[:rows * n].astype(np.float64).reshape(rows, n)
    np.testing.assert_allclose(s, np.where(m > 0, m, 0).sum(axis=1),
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(skipped, (m < 0).sum(axis=1))


@enigma.kernel
def search_with_else(A: enigma.i32, n: enigma.Scalar(enigma.u32),
                     key: enigma.Scalar(enigma.i32), B: enigma.i32):
    t = enigma.thread_position_in_grid
    where = -1
    visited = 0
    for k in enigma.range(n):
        visited = visited + 1
        with enigma.if_(A[t * n + k] % 3 == 0):
            continue                 # multiples of 3 are not looked at
        with enigma.if_(A[t * n + k] == key + enigma.metal_cast(t, "int")):
            where = k
            break
    else:
        where = -2                   # no break: the key is missing
    B[t] = where * 1000 + visited


def test_continue_break_and_else_together(runtime, rng):
    rows, n, key = 64, 11, 5
    a = rng.integers(0, 30, rows * n).astype(np.int32)
    (out,) = run(runtime, search_with_else, [a], [(rows, np.int32)], rows,
                 n=n, key=key)
    for r in range(rows):
        where, visited = -2, 0
        for k in range(n):
            visited += 1
            v = int(a[r * n + k])
            if v % 3 == 0:
                continue
            if v == key + r:
                where = k
                break
        else:
            where = -2
        assert out[r] == where * 1000 + visited, r


@enigma.kernel
def nested_breaks(A: enigma.f32, n: enigma.Scalar(enigma.u32),
                  B: enigma.u32):
    t = enigma.thread_position_in_grid
    count = enigma.metal_cast(0, "uint")
    for i in enigma.range(n):
        with enigma.if_(A[i] > 1.5):
            break                    # the outer loop
        for j in enigma.range(n):
            with enigma.if_(A[j] < A[i]):
                continue
            with enigma.if_(j > t):
                break                # the inner loop only
            count = count + 1
    B[t] = count


def test_nested_loops_each_leave_their_own(runtime, rng):
    n, threads = 13, 16
    a = rng.standard_normal(n).astype(np.float32)
    a[9] = 2.0
    (out,) = run(runtime, nested_breaks, [a], [(threads, np.uint32)],
                 threads, n=n)
    for t in range(threads):
        count = 0
        for i in range(n):
            if a[i] > 1.5:
                break
            for j in range(n):
                if a[j] < a[i]:
                    continue
                if j > t:
                    break
                count += 1
        assert out[t] == count, t


def test_break_outside_if_and_under_python_if(runtime, rng):
    # An unconditional break ends the loop in its first iteration; one
    # under a Python if runs only when the trace takes that branch.
    def make(stop_early):
        @enigma.kernel
        def k(A: enigma.f32, n: enigma.Scalar(enigma.u32), B: enigma.f32):
            t = enigma.thread_position_in_grid
            s = 0.0
            for i in enigma.range(n):
                s = s + A[i]
                if stop_early:
                    break
            B[t] = s
        return k

    a = rng.standard_normal(8).astype(np.float32)
    (early,) = run(runtime, make(True), [a], [(4, np.float32)], 4, n=8)
    (full,) = run(runtime, make(False), [a], [(4, np.float32)], 4, n=8)
    np.testing.assert_allclose(early, np.full(4, a[0]), rtol=1e-6)
    np.testing.assert_allclose(full, np.full(4, a.astype(np.float64).sum()),
                               rtol=1e-5)


# --------------------------------------------------------------------------
# Loops unrolled at trace time
# --------------------------------------------------------------------------

@enigma.kernel
def unrolled_with_runtime_break(A: enigma.f32, B: enigma.f32):
    t = enigma.thread_position_in_grid
    s = 0.0
    for h in enigma.range_constexpr(6):
        x = A[t * 6 + h]
        with enigma.if_(x < -1.0):
            break
        with enigma.if_(x < 0.0):
            continue
        s = s + x * (h + 1)
    B[t] = s


def test_break_and_continue_of_an_unrolled_loop(runtime, rng):
    rows = 50
    a = rng.standard_normal(rows * 6).astype(np.float32)
    (out,) = run(runtime, unrolled_with_runtime_break, [a],
                 [(rows, np.float32)], rows)
    for r in range(rows):
        s = 0.0
        for h in range(6):
            x = float(a[r * 6 + h])
            if x < -1.0:
                break
            if x < 0.0:
                continue
            s += x * (h + 1)
        np.testing.assert_allclose(out[r], s, rtol=1e-5, atol=1e-5)


def test_python_break_of_an_unrolled_loop_stays_python():
    # Not under a run-time construct: Python's own break, at trace time.
    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.thread_position_in_grid
        for h in range(100):
            if h == 3:
                break
            A[t * 4 + h] = 1.0

    source = enigma.compile(k, emit_only=True).metal_source
    assert source.count("= 1.0f;") == 3
    assert "while" not in source


# --------------------------------------------------------------------------
# while statements
# --------------------------------------------------------------------------

@enigma.kernel
def collatz_capped(A: enigma.u32, cap: enigma.Scalar(enigma.u32),
                   B: enigma.u32):
    t = enigma.thread_position_in_grid
    x = A[t]
    steps = enigma.metal_cast(0, "uint")
    while x > 1:
        with enigma.if_((x & 1) == 0) as (even, odd):
            with even:
                x = x >> 1
            with odd:
                x = x * 3 + 1
        steps = steps + 1
        with enigma.if_(steps >= cap):
            break
    else:
        steps = steps + 1000         # reached 1 without the cap
    B[t] = steps


def test_while_on_a_traced_test_with_break_and_else(runtime, rng):
    n, cap = 70, 25
    a = rng.integers(1, 200, n).astype(np.uint32)
    a[0], a[1] = 1, 27
    (out,) = run(runtime, collatz_capped, [a], [(n, np.uint32)], n, cap=cap)
    for i, v in enumerate(a):
        v, steps = int(v), 0
        while v > 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            steps += 1
            if steps >= cap:
                break
        else:
            steps += 1000
        assert out[i] == steps, i


@enigma.kernel
def skip_odd_digits(A: enigma.u32, B: enigma.u32):
    t = enigma.thread_position_in_grid
    x = A[t]
    kept = enigma.metal_cast(0, "uint")
    scale = enigma.metal_cast(1, "uint")
    while x != 0:
        d = x % 10
        x = x / 10
        with enigma.if_((d & 1) == 1):
            continue
        kept = kept + d * scale
        scale = scale * 10
    B[t] = kept


def test_while_with_continue_tests_again(runtime, rng):
    n = 60
    a = rng.integers(0, 10**8, n).astype(np.uint32)
    a[0] = 0
    (out,) = run(runtime, skip_odd_digits, [a], [(n, np.uint32)], n)
    for i, v in enumerate(a):
        v, kept, scale = int(v), 0, 1
        while v != 0:
            d, v = v % 10, v // 10
            if d & 1:
                continue
            kept += d * scale
            scale *= 10
        assert out[i] == kept


def test_while_on_python_values_is_unrolled():
    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.thread_position_in_grid
        h = 0
        while h < 10:
            h += 1
            if h % 2:
                continue
            A[t * 10 + h] = 2.0
            if h == 6:
                break

    source = enigma.compile(k, emit_only=True).metal_source
    assert source.count("= 2.0f;") == 3
    assert "while" not in source


def test_while_test_that_turns_traced_is_an_error():
    @enigma.kernel
    def k(A: enigma.f32):
        x = 0.0
        while x < 4.0:
            x = x + A[0]

    line = inspect.getsourcelines(k.__wrapped__)[1]
    with pytest.raises(enigma.EnigmaError,
                       match=rf"test_loop_exits.py:{line + 3}: the test of "
                             "this while loop was a Python value"):
        enigma.compile(k)


# --------------------------------------------------------------------------
# return
# --------------------------------------------------------------------------

@enigma.kernel
def guarded_scale(A: enigma.f32, n: enigma.Scalar(enigma.u32),
                  B: enigma.f32):
    t = enigma.thread_position_in_grid
    with enigma.if_(t >= n):
        return
    x = A[t]
    with enigma.if_(x < 0.0):
        B[t] = -1.0
        return
    B[t] = x * 2.0


@pytest.mark.parametrize("n", [0, 1, 31, 64])
def test_early_return_from_a_kernel(runtime, rng, n):
    grid = 64
    a = rng.standard_normal(grid).astype(np.float32)
    (out,) = run(runtime, guarded_scale, [a], [(grid, np.float32)], grid,
                 n=n)
    ref = np.where(a < 0, -1.0, a.astype(np.float64) * 2)
    ref[n:] = 0.0  # not written
    np.testing.assert_allclose(out, ref, rtol=1e-6)


@enigma.kernel
def stop_at_sentinel(A: enigma.i32, n: enigma.Scalar(enigma.u32),
                     B: enigma.i32):
    t = enigma.thread_position_in_grid
    total = 0
    for k in enigma.range(n):
        v = A[t * n + k]
        with enigma.if_(v == 0):
            B[t] = total
            return                   # leaves both the loop and the kernel
        total = total + v
    B[t] = -total


def test_return_inside_a_loop(runtime, rng):
    rows, n = 40, 12
    a = rng.integers(-5, 6, rows * n).astype(np.int32)
    (out,) = run(runtime, stop_at_sentinel, [a], [(rows, np.int32)], rows,
                 n=n)
    for r in range(rows):
        total, ref = 0, None
        for v in a[r * n:(r + 1) * n]:
            if v == 0:
                ref = total
                break
            total += int(v)
        assert out[r] == (ref if ref is not None else -total)


@enigma.kernel
def return_in_for_range(A: enigma.f32, n: enigma.Scalar(enigma.u32),
                        B: enigma.u32):
    t = enigma.thread_position_in_grid
    B[t] = n
    with enigma.for_range(0, n) as k:
        with enigma.if_(A[k] > enigma.metal_cast(t, "float")):
            B[t] = enigma.metal_cast(k, "uint")
            return


def test_return_inside_for_range_ends_it(runtime, rng):
    n, threads = 17, 20
    a = (rng.random(n) * 25).astype(np.float32)
    (out,) = run(runtime, return_in_for_range, [a], [(threads, np.uint32)],
                 threads, n=n)
    for t in range(threads):
        assert out[t] == next((k for k in range(n) if a[k] > t), n)


# --------------------------------------------------------------------------
# What is refused
# --------------------------------------------------------------------------

def test_break_cannot_leave_a_with_loop():
    with pytest.raises(enigma.EnigmaError,
                       match=r"test_loop_exits.py:\d+: break inside `with "
                             r"enigma.for_range` cannot leave it"):
        @enigma.kernel
        def k(A: enigma.f32):
            for h in range(2):
                with enigma.for_range(4) as i:
                    A[i] = 1.0
                    break


def test_barrier_after_a_divergent_break_is_refused():
    # The break depends on the thread: the threads of a group leave at
    # different iterations, so a barrier later in the loop is not reached
    # by all. The dialect refuses it, naming the barrier and the break.
    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.thread_index_in_threadgroup()
        for i in enigma.range(8):
            with enigma.if_(t == i):
                break
            enigma.barrier()
            A[t] = 1.0

    line = inspect.getsourcelines(k.__wrapped__)[1]
    with pytest.raises(enigma.EnigmaError,
                       match=rf"(?s)test_loop_exits.py:{line + 6}: error: "
                             r"enigma.barrier\(\) is under control flow "
                             r"that depends on the thread's position.*"
                             rf"test_loop_exits.py:{line + 4}: note"):
        enigma.compile(k, emit_only=True)


@enigma.kernel
def tiles_until_negative(A: enigma.f32, n: enigma.Scalar(enigma.u32),
                         B: enigma.f32):
    # The break depends only on data every thread reads alike: the loop
    # (a while loop now) may hold barriers, on every backend.
    tile = enigma.threadgroup_alloc(enigma.f32, 32)
    t = enigma.thread_index_in_threadgroup()
    s = 0.0
    for i in enigma.range(n):
        with enigma.if_(A[i * 32] < 0.0):
            break
        tile[t] = A[i * 32 + t]
        enigma.barrier()
        s = s + tile[31 - t] * enigma.metal_cast(i + 1, "float")
        enigma.barrier()
    B[t] = s


@pytest.mark.parametrize("stop", [0, 3, None])
def test_barriers_in_a_loop_with_a_uniform_break(runtime, rng, stop):
    n = 6
    a = rng.standard_normal(32 * n).astype(np.float32)
    a[::32] = np.abs(a[::32]) + 0.1
    if stop is not None:
        a[32 * stop] = -1.0
    (out,) = run(runtime, tiles_until_negative, [a], [(32, np.float32)], 32,
                 (32, 1, 1), n=n)
    rows = n if stop is None else stop
    tiles = a[:32 * rows].astype(np.float64).reshape(rows, 32)[:, ::-1]
    ref = (tiles * np.arange(1, rows + 1)[:, None]).sum(axis=0)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_mixed_value_and_bare_returns_are_refused():
    def helper(x):
        with enigma.if_(x > 0.0):
            return
        return x

    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = helper(A[0])

    line = inspect.getsourcelines(helper)[1]
    with pytest.raises(enigma.EnigmaError,
                       match=rf"test_loop_exits.py:{line + 2}: function "
                             r"'helper' returns None \(a bare return\) at "
                             r"one return and a value at another from inside "
                             r"a run-time if_ or loop"):
        enigma.compile(k)


def test_plain_python_functions_keep_their_meaning(runtime):
    # A helper of Python values (a while loop, bare and valued returns)
    # called at trace time runs as Python: nothing of it is run-time.
    def largest_power_of_two(n, limit):
        if n < 1:
            return
        p = 1
        while p * 2 <= n:
            if p * 2 > limit:
                return p
            p *= 2
        return p

    @enigma.kernel
    def k(B: enigma.u32):
        t = enigma.thread_position_in_grid
        B[t] = largest_power_of_two(1000, 64) + t * 0
        assert largest_power_of_two(0, 64) is None

    (out,) = run(runtime, k, [], [(4, np.uint32)], 4)
    np.testing.assert_array_equal(out, [64] * 4)
