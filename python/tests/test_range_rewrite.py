"""`for i in enigma.range(...)` and plain variables carried through control
flow, by the source rewrite of prepare_kernel_function."""

import importlib.util
import inspect
import sys
import textwrap

import numpy as np
import pytest

import enigma
from conftest import run_kernel


def test_range_carries_variables(runtime, rng):
    m = 9

    @enigma.kernel
    def dot_rows(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        acc = 0.0
        for k in enigma.range(m):
            x = A[t * m + k] * B[k]
            acc = acc + x
        C[t] = acc

    for n in (1, 31, 200):
        a = rng.standard_normal(n * m).astype(np.float32)
        b = rng.standard_normal(m).astype(np.float32)
        out = run_kernel(runtime, enigma.compile(dot_rows), [a, b], np.float32,
                         n, (n, 1, 1), (32, 1, 1))
        ref = a.astype(np.float64).reshape(n, m) @ b.astype(np.float64)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_nested_ranges_and_traced_bounds(runtime, rng):
    @enigma.kernel
    def tri(A: enigma.f32, n: enigma.Scalar(enigma.i32), B: enigma.f32):
        t = enigma.thread_position_in_grid
        total = 0.0
        count = 0
        for i in enigma.range(n):
            row = 0.0
            for j in enigma.range(i + 1):
                row = row + A[i * n + j]
                count = count + 1
            total = total + row * enigma.metal_cast(t + 1, "float")
        B[t] = total + enigma.metal_cast(count, "float") * 1000.0

    for n in (0, 1, 6):
        a = rng.standard_normal(max(n * n, 1)).astype(np.float32)
        out = run_kernel(runtime, enigma.compile(tri), [a], np.float32, 4,
                         (4, 1, 1), (4, 1, 1), scalars={"n": n})
        m = a[:n * n].astype(np.float64).reshape(n, n)
        s = np.tril(m).sum()
        ref = [s * (t + 1) + 1000.0 * n * (n + 1) / 2 for t in range(4)]
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-3)


def test_variables_assigned_in_if_arms(runtime, rng):
    m = 12

    @enigma.kernel
    def clipped(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        pos = 0.0
        neg = 0.0
        for k in enigma.range(m):
            x = A[t * m + k]
            with enigma.if_(x > 0.0) as (then_b, else_b):
                with then_b:
                    pos = pos + x
                with else_b:
                    neg = neg - x
        last = 0.0
        with enigma.if_(pos > neg):
            last = pos
        B[t] = pos * 10.0 + neg + last

    n = 77
    a = rng.standard_normal(n * m).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(clipped), [a], np.float32, n,
                     (n, 1, 1), (32, 1, 1))
    r = a.astype(np.float64).reshape(n, m)
    pos = np.where(r > 0, r, 0).sum(axis=1)
    neg = -np.where(r > 0, 0, r).sum(axis=1)
    ref = pos * 10 + neg + np.where(pos > neg, pos, 0.0)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_while_with_plain_variables(runtime, rng):
    @enigma.kernel
    def collatz(A: enigma.u32, B: enigma.u32):
        t = enigma.thread_position_in_grid
        x = A[t]
        steps = enigma.metal_cast(0, "uint")
        with enigma.while_(lambda: x > 1):
            with enigma.if_((x & 1) == 0) as (even, odd):
                with even:
                    x = x >> 1
                with odd:
                    x = x * 3 + 1
            steps = steps + 1
        B[t] = steps

    def ref(v):
        s = 0
        while v > 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            s += 1
        return s

    n = 100
    a = rng.integers(1, 5000, n).astype(np.uint32)
    a[0] = 1
    out = run_kernel(runtime, enigma.compile(collatz), [a], np.uint32, n,
                     (n, 1, 1), (32, 1, 1))
    np.testing.assert_array_equal(out, [ref(int(v)) for v in a])


def test_barrier_inside_enigma_range(runtime, rng):
    steps = 4

    @enigma.kernel
    def rotate(X: enigma.f32, B: enigma.f32):
        lid = enigma.thread_position_in_threadgroup()
        size = enigma.threads_per_threadgroup()
        base = enigma.threadgroup_position_in_grid() * size
        acc = 0.0
        for s in enigma.range(steps):
            v = X[base + (lid + 1) % size]
            enigma.barrier("mem_device")
            X[base + lid] = v
            acc = acc + v
            enigma.barrier("mem_device")
        B[base + lid] = acc

    threads, groups = 8, 3
    x = rng.standard_normal(threads * groups).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(rotate), [x], np.float32, x.size,
                     (x.size, 1, 1), (threads, 1, 1))
    g = x.astype(np.float64).reshape(groups, threads)
    ref = sum(np.roll(g, -(s + 1), axis=1) for s in range(steps))
    np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5, atol=1e-5)


def test_unset_carried_variable_is_an_error():
    @enigma.kernel
    def no_init(A: enigma.f32):
        for k in enigma.range(4):
            total = A[k]
        A[0] = total

    # Reported where it is read (it has no value there, as Python would
    # say), naming the loop that assigns it.
    line = inspect.getsourcelines(no_init.__wrapped__)[1]
    with pytest.raises(enigma.EnigmaError,
                       match=rf"test_range_rewrite.py:{line + 4}: variable "
                             rf"'total' has no value here: .*loop at "
                             rf"\S*test_range_rewrite.py:{line + 2}\b"):
        enigma.compile(no_init)


def test_type_change_of_carried_variable_is_an_error():
    @enigma.kernel
    def int_then_float(A: enigma.f32):
        acc = 0
        for k in enigma.range(4):
            acc = acc + A[k]
        A[0] = acc

    with pytest.raises(enigma.EnigmaError, match="variable 'acc' is carried as i32"):
        enigma.compile(int_then_float)


def test_break_is_accepted_with_its_python_meaning(runtime):
    # Refused when break had no lowering; now the loop ends at the break
    # (test_loop_exits.py covers break, continue and return in depth).
    @enigma.kernel
    def breaking(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        s = 0.0
        for k in enigma.range(4):
            s = s + A[k]
            break
        B[t] = s

    a = np.array([3.0, 5.0, 7.0, 11.0], np.float32)
    out = run_kernel(runtime, enigma.compile(breaking), [a], np.float32, 2,
                     (2, 1, 1), (2, 1, 1))
    np.testing.assert_array_equal(out, [3.0, 3.0])


def test_errors_point_at_user_lines():
    @enigma.kernel
    def bad(A: enigma.f32):
        for k in enigma.range(4):
            A[k] = A[k] + "text"

    line = inspect.getsourcelines(bad.__wrapped__)[1]
    with pytest.raises(enigma.EnigmaError,
                       match=rf"test_range_rewrite.py:{line + 3}:"):
        enigma.compile(bad)


def test_user_exception_keeps_its_traceback():
    @enigma.kernel
    def raising(A: enigma.f32):
        for k in enigma.range(4):
            raise LookupError("mine")

    line = inspect.getsourcelines(raising.__wrapped__)[1]
    with pytest.raises(LookupError, match="mine") as info:
        enigma.compile(raising)
    last = info.traceback[-1]
    assert last.path.name == "test_range_rewrite.py"
    assert last.lineno + 1 == line + 3


def test_range_imported_from_enigma(tmp_path, runtime, rng):
    src = textwrap.dedent("""
        import enigma
        from enigma import range

        @enigma.kernel
        def cumulative(A: enigma.f32, B: enigma.f32):
            t = enigma.thread_position_in_grid
            s = 0.0
            for k in range(t + 1):
                s = s + A[k]
            B[t] = s
    """)
    path = tmp_path / "ranged_kernel.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("ranged_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["ranged_kernel"] = mod
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules["ranged_kernel"]
    n = 40
    a = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(mod.cumulative), [a], np.float32,
                     n, (n, 1, 1), (16, 1, 1))
    np.testing.assert_allclose(out, np.cumsum(a.astype(np.float64)),
                               rtol=1e-5, atol=1e-5)


def test_kernel_without_source_still_works(runtime, rng):
    ns = {"enigma": enigma}
    exec(compile("def twice(A: enigma.f32, B: enigma.f32):\n"
                 "    t = enigma.thread_position_in_grid\n"
                 "    B[t] = A[t] * 2.0\n", "<repl>", "exec"), ns)
    k = enigma.kernel(ns["twice"])
    a = rng.standard_normal(10).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(k), [a], np.float32, 10,
                     (10, 1, 1), (10, 1, 1))
    np.testing.assert_allclose(out, 2 * a.astype(np.float64), rtol=1e-6)

    exec(compile("def ranged(A: enigma.f32):\n"
                 "    for k in enigma.range(4):\n"
                 "        A[k] = 1.0\n", "<repl>", "exec"), ns)
    k = enigma.kernel(ns["ranged"])
    with pytest.raises(enigma.EnigmaError, match="enigma.for_range"):
        enigma.compile(k)


def test_closure_and_globals_stay_live(runtime):
    scale = [2.0]

    @enigma.kernel
    def scaled(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        acc = 0.0
        for k in enigma.range(3):
            acc = acc + A[t] * scale[0]
        B[t] = acc

    a = np.arange(8, dtype=np.float32)
    scale[0] = 5.0
    out = run_kernel(runtime, enigma.compile(scaled), [a], np.float32, 8,
                     (8, 1, 1), (8, 1, 1))
    np.testing.assert_allclose(out, a * 15.0)


def test_conditional_expression_in_loop_body(runtime):
    # `a if c else b` (a Python-level choice) inside an enigma.range body:
    # the loop check walked IfExp's `orelse`, an expression, as a list.
    flip = True

    @enigma.kernel
    def pick(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        acc = 0.0
        for k in enigma.range(2):
            acc = acc + (A[t] * 2.0 if flip else A[t])
        B[t] = acc

    a = np.arange(8, dtype=np.float32)
    out = run_kernel(runtime, enigma.compile(pick), [a], np.float32, 8,
                     (8, 1, 1), (8, 1, 1))
    np.testing.assert_allclose(out, a * 4.0)
