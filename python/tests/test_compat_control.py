"""Programs of the original Enigma DSL that keep Python containers across
traced control flow: lists (and dicts, tuples, nested lists) whose elements
are assigned inside ``enigma.range`` / ``for_range`` / ``if_`` / ``while_``
and read afterwards are carried like variables. Every other way for a value
computed inside a loop or branch to leave it (object attributes, closures,
containers the rewrite cannot see) is an EnigmaError at the line that uses
it, never an MLIR verifier message."""

import inspect
import re
import textwrap

import numpy as np
import pytest

import enigma
from conftest import run_kernel


def _line_of(fn, text):
    """Absolute line number of the first source line of ``fn`` containing
    ``text``."""
    lines, first = inspect.getsourcelines(fn)
    for k, line in enumerate(lines):
        if text in line:
            return first + k
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def _no_verifier_text(message: str):
    assert "dominate" not in message and "verification failed" not in message


# --------------------------------------------------------------------------
# Lists carried through enigma.range (the original's rewrite carries them)
# --------------------------------------------------------------------------

def test_list_elements_assigned_in_enigma_range(runtime, rng):
    K = 3

    @enigma.kernel
    def partial_sums(A: enigma.f32, n: enigma.Scalar(enigma.u32),
                     Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        acc = [enigma.metal_cast(0.0, "float") for _ in range(K)]
        for i in enigma.range(n):
            for j in enigma.range_constexpr(K):
                acc[j] = acc[j] + A[(tid * n + i) * K + j] * float(j + 1)
        for j in enigma.range_constexpr(K):
            Out[tid * K + j] = acc[j]

    compiled = enigma.compile(partial_sums)
    for threads, n in ((1, 1), (37, 5), (64, 0)):
        a = rng.standard_normal(max(threads * n * K, 1)).astype(np.float32)
        out = run_kernel(runtime, compiled, [a], np.float32, threads * K,
                         (threads, 1, 1), (32, 1, 1), scalars=[n])
        r = a[:threads * n * K].astype(np.float64).reshape(threads, n, K)
        ref = (r.sum(axis=1) * np.arange(1, K + 1)).reshape(-1)
        np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_online_softmax_lists_like_the_original_sdpa(runtime, rng):
    """The pattern of the original's benchmark_sdpa example: running max,
    sum and weighted sum per head kept in lists updated in an enigma.range
    loop through a range_constexpr loop, then read after it."""
    H, T = 2, 7

    @enigma.kernel
    def attend(S: enigma.f32, V: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        m = [S[tid * H * T + h * T] for h in range(H)]
        l = [enigma.metal_cast(0.0, "float") for _ in range(H)]
        o = [enigma.metal_cast(0.0, "float") for _ in range(H)]
        for t in enigma.range(T):
            for h in enigma.range_constexpr(H):
                s = S[tid * H * T + h * T + t]
                new_m = enigma.fmax(m[h], s)
                alpha = enigma.exp(m[h] - new_m)
                p = enigma.exp(s - new_m)
                l[h] = enigma.fma(l[h], alpha, p)
                o[h] = enigma.fma(V[t], p, o[h] * alpha)
                m[h] = new_m
        for h in enigma.range_constexpr(H):
            Out[tid * H + h] = o[h] / l[h]

    threads = 45
    s = rng.standard_normal(threads * H * T).astype(np.float32)
    v = rng.standard_normal(T).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(attend), [s, v], np.float32,
                     threads * H, (threads, 1, 1), (16, 1, 1))
    r = s.astype(np.float64).reshape(threads, H, T)
    w = np.exp(r - r.max(axis=2, keepdims=True))
    ref = (w @ v.astype(np.float64)) / w.sum(axis=2)
    np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5, atol=1e-5)


def test_list_of_python_numbers_and_augmented_assignment(runtime, rng):
    @enigma.kernel
    def moments(A: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        stats = [0.0, 0.0, 0]
        for i in enigma.range(6):
            x = A[tid * 6 + i]
            stats[0] += x
            stats[1] += x * x
            stats[2] += 1
        Out[tid * 2] = stats[0] / enigma.metal_cast(stats[2], "float")
        Out[tid * 2 + 1] = stats[1]

    threads = 33
    a = rng.standard_normal(threads * 6).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(moments), [a], np.float32,
                     threads * 2, (threads, 1, 1), (8, 1, 1))
    r = a.astype(np.float64).reshape(threads, 6)
    ref = np.stack([r.mean(axis=1), (r * r).sum(axis=1)], axis=1)
    np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5, atol=1e-5)


def test_list_aliases_see_the_carried_values(runtime, rng):
    @enigma.kernel
    def aliased(A: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        acc = [0.0, 0.0]
        same = acc
        for i in enigma.range(5):
            acc[0] = acc[0] + A[tid * 5 + i]
            acc[1] = enigma.fmax(acc[1], A[tid * 5 + i])
        Out[tid * 2] = same[0]
        Out[tid * 2 + 1] = same[1]

    threads = 20
    a = rng.standard_normal(threads * 5).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(aliased), [a], np.float32,
                     threads * 2, (threads, 1, 1), (32, 1, 1))
    r = a.astype(np.float64).reshape(threads, 5)
    ref = np.stack([r.sum(axis=1), np.maximum(r.max(axis=1), 0.0)], axis=1)
    np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5, atol=1e-5)


# --------------------------------------------------------------------------
# for_range, if_ and while_ with lists, dicts, tuples, nested lists
# --------------------------------------------------------------------------

def test_list_in_for_range_and_if_arms(runtime, rng):
    @enigma.kernel
    def min_max(A: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        mm = [A[tid * 9], A[tid * 9]]
        with enigma.for_range(1, 9) as i:
            x = A[tid * 9 + i]
            with enigma.if_(enigma.cmp_lt(x, mm[0])) as (then_b, else_b):
                with then_b:
                    mm[0] = x
                with else_b:
                    with enigma.if_(enigma.cmp_gt(x, mm[1])):
                        mm[1] = x
        Out[tid * 2] = mm[0]
        Out[tid * 2 + 1] = mm[1]

    for threads in (1, 70):
        a = rng.standard_normal(threads * 9).astype(np.float32)
        out = run_kernel(runtime, enigma.compile(min_max), [a], np.float32,
                         threads * 2, (threads, 1, 1), (32, 1, 1))
        r = a.reshape(threads, 9)
        ref = np.stack([r.min(axis=1), r.max(axis=1)], axis=1)
        np.testing.assert_array_equal(out, ref.reshape(-1))


def test_list_assigned_in_a_one_armed_if(runtime, rng):
    @enigma.kernel
    def clamp_first(A: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        v = [A[tid], A[tid] * 2.0]
        with enigma.if_(enigma.cmp_lt(v[0], 0.0)):
            v[0] = enigma.metal_cast(0.0, "float")
            v[1] = v[1] + 100.0
        Out[tid * 2] = v[0]
        Out[tid * 2 + 1] = v[1]

    n = 50
    a = rng.standard_normal(n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(clamp_first), [a], np.float32,
                     2 * n, (n, 1, 1), (16, 1, 1))
    a64 = a.astype(np.float64)
    ref = np.stack([np.maximum(a64, 0), np.where(a64 < 0, 2 * a64 + 100,
                                                  2 * a64)], axis=1)
    np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-6, atol=1e-6)


def test_dict_tuple_and_nested_list_carried(runtime, rng):
    @enigma.kernel
    def mixed(A: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        d = {"sum": 0.0, "max": A[tid * 4]}
        pair = (0.0, 0)
        grid = [[0.0, 0.0], [0.0, 0.0]]
        for i in enigma.range(4):
            x = A[tid * 4 + i]
            d["sum"] = d["sum"] + x
            d["max"] = enigma.fmax(d["max"], x)
            pair = (pair[0] + x * x, pair[1] + 1)
            grid[0][1] = grid[0][1] + x * 2.0
            grid[1][0] = grid[1][0] - x
        Out[tid * 6] = d["sum"]
        Out[tid * 6 + 1] = d["max"]
        Out[tid * 6 + 2] = pair[0]
        Out[tid * 6 + 3] = enigma.metal_cast(pair[1], "float")
        Out[tid * 6 + 4] = grid[0][1]
        Out[tid * 6 + 5] = grid[1][0] + grid[0][0] + grid[1][1]

    threads = 41
    a = rng.standard_normal(threads * 4).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(mixed), [a], np.float32,
                     threads * 6, (threads, 1, 1), (32, 1, 1))
    r = a.astype(np.float64).reshape(threads, 4)
    ref = np.stack([r.sum(1), r.max(1), (r * r).sum(1), np.full(threads, 4.0),
                    2 * r.sum(1), -r.sum(1)], axis=1)
    np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5, atol=1e-5)


def test_list_of_vectors_carried(runtime, rng):
    @enigma.kernel
    def vec_acc(A: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        acc = [enigma.make_float2(0.0, 0.0), enigma.make_float2(1.0, 1.0)]
        for i in enigma.range(3):
            v = enigma.make_float2(A[tid * 6 + 2 * i], A[tid * 6 + 2 * i + 1])
            acc[0] = acc[0] + v
            acc[1] = acc[1] * v
        Out[tid * 4] = acc[0].x
        Out[tid * 4 + 1] = acc[0].y
        Out[tid * 4 + 2] = acc[1].x
        Out[tid * 4 + 3] = acc[1].y

    threads = 9
    a = rng.standard_normal(threads * 6).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(vec_acc), [a], np.float32,
                     threads * 4, (threads, 1, 1), (4, 1, 1))
    r = a.astype(np.float64).reshape(threads, 3, 2)
    ref = np.concatenate([r.sum(axis=1), r.prod(axis=1)], axis=1)
    np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5, atol=1e-5)


def test_list_in_while_loop_condition_and_body(runtime, rng):
    @enigma.kernel
    def count_up(A: enigma.u32, Out: enigma.u32):
        tid = enigma.thread_position_in_grid
        st = [enigma.metal_cast(0, "uint"), enigma.metal_cast(0, "uint")]
        with enigma.while_(lambda: enigma.cmp_lt(st[0], A[tid])):
            st[0] = st[0] + 1
            st[1] = st[1] + st[0]
        Out[tid] = st[1]

    n = 40
    a = rng.integers(0, 30, n).astype(np.uint32)
    out = run_kernel(runtime, enigma.compile(count_up), [a], np.uint32, n,
                     (n, 1, 1), (8, 1, 1))
    np.testing.assert_array_equal(out, a * (a + 1) // 2)


def test_list_in_nested_enigma_ranges(runtime, rng):
    @enigma.kernel
    def rows_cols(A: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        s = [0.0, 0.0]
        for i in enigma.range(3):
            for j in enigma.range(4):
                s[0] = s[0] + A[tid * 12 + i * 4 + j]
            s[1] = s[1] + A[tid * 12 + i * 4]
        Out[tid * 2] = s[0]
        Out[tid * 2 + 1] = s[1]

    threads = 25
    a = rng.standard_normal(threads * 12).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(rows_cols), [a], np.float32,
                     threads * 2, (threads, 1, 1), (32, 1, 1))
    r = a.astype(np.float64).reshape(threads, 3, 4)
    ref = np.stack([r.sum(axis=(1, 2)), r[:, :, 0].sum(axis=1)], axis=1)
    np.testing.assert_allclose(out, ref.reshape(-1), rtol=1e-5, atol=1e-5)


def test_carried_list_msl_has_loop_carried_values():
    @enigma.kernel
    def two_sums(A: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        acc = [0.0, 0.0]
        for i in enigma.range(8):
            acc[0] = acc[0] + A[i]
            acc[1] = acc[1] + A[i] * A[i]
        Out[tid] = acc[0] + acc[1]

    compiled = enigma.compile(two_sums, emit_only=True)
    # Both elements are iter_args of one scf.for, printed as two variables
    # the MSL loop updates.
    assert re.search(r"scf\.for .* iter_args\(%\w+ = %\w+, %\w+ = %\w+\)"
                     r" -> \(f32, f32\)", compiled.mlir_source)
    msl = compiled.metal_source
    assert re.search(r"float (v\d+) = 0\.0f;\n  float (v\d+) = 0\.0f;\n"
                     r"  for \(", msl)


# --------------------------------------------------------------------------
# What cannot be carried: an EnigmaError at the user's line
# --------------------------------------------------------------------------

def test_list_that_changes_length_is_an_error():
    @enigma.kernel
    def grows(A: enigma.f32, Out: enigma.f32):
        vals = [A[0]]
        for i in enigma.range(4):
            vals[0] = vals[0] + A[i]
            vals.append(A[i])
        Out[0] = vals[0]

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(grows, emit_only=True)
    message = str(info.value)
    _no_verifier_text(message)
    assert "test_compat_control.py:" in message
    assert "'vals'" in message and "length" in message


def test_value_escaping_through_an_attribute_is_an_error():
    class Box:
        pass

    @enigma.kernel
    def via_attribute(A: enigma.f32, Out: enigma.f32):
        box = Box()
        box.total = A[0]
        for i in enigma.range(4):
            box.total = box.total + A[i]
        Out[0] = box.total  # the use

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(via_attribute, emit_only=True)
    message = str(info.value)
    _no_verifier_text(message)
    line = _line_of(via_attribute.__wrapped__, "# the use")
    loop = _line_of(via_attribute.__wrapped__, "enigma.range(4)")
    assert f"test_compat_control.py:{line}:" in message
    assert f":{loop}" in message and "loop" in message


def test_value_escaping_through_a_closure_is_an_error():
    @enigma.kernel
    def via_closure(A: enigma.f32, Out: enigma.f32):
        total = A[0]

        def add(x):
            nonlocal total
            total = total + x

        for i in enigma.range(4):
            add(A[i])
        Out[0] = total  # the use

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(via_closure, emit_only=True)
    message = str(info.value)
    _no_verifier_text(message)
    line = _line_of(via_closure.__wrapped__, "# the use")
    assert f"test_compat_control.py:{line}:" in message


def test_value_escaping_an_if_arm_through_an_attribute_is_an_error():
    class Box:
        pass

    @enigma.kernel
    def from_branch(A: enigma.f32, Out: enigma.f32):
        box = Box()
        with enigma.if_(enigma.cmp_gt(A[0], 0.0)):
            box.v = A[1] * 2.0
        Out[0] = box.v  # the use

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(from_branch, emit_only=True)
    message = str(info.value)
    _no_verifier_text(message)
    line = _line_of(from_branch.__wrapped__, "# the use")
    assert f"test_compat_control.py:{line}:" in message
    assert "branch" in message


def test_value_from_while_condition_used_in_body_is_an_error():
    @enigma.kernel
    def cond_leak(A: enigma.u32, Out: enigma.u32):
        seen = {}

        def cond():
            seen["x"] = A[0] + 1
            return enigma.cmp_lt(seen["x"], 10)

        with enigma.while_(cond):
            Out[0] = seen["x"]  # the use

    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(cond_leak, emit_only=True)
    message = str(info.value)
    _no_verifier_text(message)
    line = _line_of(cond_leak.__wrapped__, "# the use")
    assert f"test_compat_control.py:{line}:" in message
    assert "condition" in message


def test_unreadable_source_list_escape_is_an_error(tmp_path):
    """Without source (a kernel made by exec), nothing is rewritten: the
    list escape is still an EnigmaError at the use, naming the loop."""
    source = textwrap.dedent("""
        import enigma

        @enigma.kernel
        def no_source(A: enigma.f32, Out: enigma.f32):
            acc = [A[0]]
            with enigma.for_range(0, 4) as i:
                acc[0] = acc[0] + A[i]
            Out[0] = acc[0]
        """)
    namespace = {}
    exec(compile(source, "<generated kernel>", "exec"), namespace)
    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(namespace["no_source"], emit_only=True)
    message = str(info.value)
    _no_verifier_text(message)
    assert "<generated kernel>:9:" in message
    assert "loop" in message and ":7" in message


def test_for_range_takes_dtype_and_init_positionally(runtime, rng):
    """The original's signature: for_range(lo, hi, step=1, dtype, init)."""
    @enigma.kernel
    def positional(A: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        with enigma.for_range(0, 5, 1, "int", [0.0]) as (i, carry):
            carry[0] = carry[0] + A[tid * 5 + i]
        Out[tid] = carry[0]

    threads = 10
    a = rng.standard_normal(threads * 5).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(positional), [a], np.float32,
                     threads, (threads, 1, 1), (8, 1, 1))
    np.testing.assert_allclose(out, a.astype(np.float64).reshape(threads, 5)
                               .sum(axis=1), rtol=1e-5, atol=1e-5)
