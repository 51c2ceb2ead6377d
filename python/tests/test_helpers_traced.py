"""Functions a kernel calls are traced exactly as the kernel body
(docs/reference/control-flow.md, "Helper functions"): enigma.range loops,
variables carried through if_ and loops, break / continue / return, in
helpers of the same module, of other modules, nested and closures, methods
and lambdas. References are plain Python over the same data."""

import importlib.util
import inspect
import sys
import textwrap

import numpy as np
import pytest

import enigma


def run(runtime, kernel, inputs, outputs, grid, threads=None, **scalars):
    compiled = enigma.compile(kernel)
    threads = threads or (min(grid, 32), 1, 1)
    got = runtime.execute(
        compiled, inputs, grid=(grid, 1, 1), threads=threads,
        scalars=scalars or None,
        output_shapes=[(max(n, 1),) for n, _ in outputs],
        output_dtypes=[d for _, d in outputs])
    return got if isinstance(got, list) else [got]


# --------------------------------------------------------------------------
# The kernel body's constructs, in a helper
# --------------------------------------------------------------------------

def dot_row(A, B, row, n):
    acc = 0.0
    for k in enigma.range(n):
        acc = acc + A[row * n + k] * B[k]
    return acc


def clipped_parts(x):
    pos = 0.0
    neg = 0.0
    with enigma.if_(x > 0.0) as (then_b, else_b):
        with then_b:
            pos = x
        with else_b:
            neg = -x
    return pos, neg


@enigma.kernel
def uses_helpers(A: enigma.f32, B: enigma.f32, n: enigma.Scalar(enigma.u32),
                 P: enigma.f32, Q: enigma.f32):
    t = enigma.thread_position_in_grid
    d = dot_row(A, B, t, n)
    pos, neg = clipped_parts(d)
    P[t] = pos
    Q[t] = neg


@pytest.mark.parametrize("n", [0, 1, 13])
def test_range_and_if_assignments_in_helpers(runtime, rng, n):
    rows = 29
    a = rng.standard_normal(max(rows * n, 1)).astype(np.float32)
    b = rng.standard_normal(max(n, 1)).astype(np.float32)
    p, q = run(runtime, uses_helpers, [a, b],
               [(rows, np.float32), (rows, np.float32)], rows, n=n)
    d = a[:rows * n].astype(np.float64).reshape(rows, n) @ \
        b[:n].astype(np.float64)
    np.testing.assert_allclose(p, np.where(d > 0, d, 0), rtol=1e-5,
                               atol=1e-5)
    np.testing.assert_allclose(q, np.where(d > 0, 0, -d), rtol=1e-5,
                               atol=1e-5)


def inner_sum(A, start, count):
    s = 0.0
    for k in enigma.range(count):
        s = s + A[start + k]
    return s


def outer_max_window(A, n, width):
    best = -1.0e30
    for start in enigma.range(n - width + 1):
        s = inner_sum(A, start, width)          # a helper in a helper
        with enigma.if_(s > best):
            best = s
    return best


@enigma.kernel
def window(A: enigma.f32, n: enigma.Scalar(enigma.u32), B: enigma.f32):
    t = enigma.thread_position_in_grid
    B[t] = outer_max_window(A, n, t + 1)


def test_nested_helpers(runtime, rng):
    n, threads = 19, 8
    a = rng.standard_normal(n).astype(np.float32)
    (out,) = run(runtime, window, [a], [(threads, np.float32)], threads, n=n)
    a64 = a.astype(np.float64)
    for w in range(1, threads + 1):
        ref = max(a64[s:s + w].sum() for s in range(n - w + 1))
        np.testing.assert_allclose(out[w - 1], ref, rtol=1e-5, atol=1e-5)


def test_helper_with_the_kernels_variable_names(runtime, rng):
    # The helper's `acc` is its own, though the kernel carries an `acc`
    # through the loop the helper is called in; the helper is called twice.
    def scaled_sum(A, n, scale):
        acc = 0.0
        for k in enigma.range(n):
            acc = acc + A[k] * scale
        return acc

    @enigma.kernel
    def k(A: enigma.f32, n: enigma.Scalar(enigma.u32), B: enigma.f32):
        t = enigma.thread_position_in_grid
        acc = 0.0
        for i in enigma.range(t + 1):
            acc = acc + scaled_sum(A, n, 2.0) + scaled_sum(A, i, 1.0)
        B[t] = acc

    n, threads = 7, 9
    a = rng.standard_normal(n).astype(np.float32)
    (out,) = run(runtime, k, [a], [(threads, np.float32)], threads, n=n)
    c = np.cumsum(np.concatenate([[0.0], a.astype(np.float64)]))
    for t in range(threads):
        ref = sum(2 * c[n] + c[min(i, n)] for i in range(t + 1))
        np.testing.assert_allclose(out[t], ref, rtol=1e-5, atol=1e-4)


# --------------------------------------------------------------------------
# Where helpers come from
# --------------------------------------------------------------------------

HELPER_MODULE = '''
import enigma


def count_above(A, n, limit):
    count = 0
    for k in enigma.range(n):
        with enigma.if_(A[k] > limit):
            count = count + 1
    return count


class Smoother:
    def __init__(self, weight):
        self.weight = weight

    def run(self, A, n):
        s = 0.0
        for k in enigma.range(n):
            s = s * (1.0 - self.weight) + A[k] * self.weight
        return s
'''


@pytest.fixture
def helper_module(tmp_path):
    path = tmp_path / "trace_helper_module.py"
    path.write_text(textwrap.dedent(HELPER_MODULE))
    spec = importlib.util.spec_from_file_location("trace_helper_module",
                                                  path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["trace_helper_module"] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules["trace_helper_module"]


def test_helpers_from_another_module_and_methods(runtime, rng,
                                                 helper_module):
    smoother = helper_module.Smoother(0.25)

    @enigma.kernel
    def k(A: enigma.f32, n: enigma.Scalar(enigma.u32), C: enigma.i32,
          S: enigma.f32):
        t = enigma.thread_position_in_grid
        C[t] = helper_module.count_above(A, n, enigma.metal_cast(t, "float")
                                         * 0.25)
        S[t] = smoother.run(A, n)

    n, threads = 23, 12
    a = rng.standard_normal(n).astype(np.float32)
    count, smooth = run(runtime, k, [a],
                        [(threads, np.int32), (threads, np.float32)],
                        threads, n=n)
    np.testing.assert_array_equal(
        count, [(a > np.float32(t * 0.25)).sum() for t in range(threads)])
    s = bound = 0.0
    for v in a.astype(np.float64):
        s = s * 0.75 + v * 0.25
        bound = bound * 0.75 + abs(v) * 0.25
    # float32 rounding of each step, relative to the terms' sizes (the
    # sum may cancel to near zero)
    np.testing.assert_allclose(smooth, np.full(threads, s), rtol=1e-5,
                               atol=n * 2.0 ** -23 * bound)


def test_closures_nested_functions_and_lambdas(runtime, rng):
    bias = [0.5]

    def make_accumulator(scale):
        def accumulate(A, n):
            s = 0.0
            for k in enigma.range(n):
                s = s + A[k] * scale + bias[0]
            return s
        return accumulate

    acc3 = make_accumulator(3.0)
    twice = lambda A, n: acc3(A, n) * 2.0  # noqa: E731  (a lambda helper)

    @enigma.kernel
    def k(A: enigma.f32, n: enigma.Scalar(enigma.u32), B: enigma.f32):
        t = enigma.thread_position_in_grid

        def local_max(m):          # defined in the kernel body
            best = A[0]
            for i in enigma.range(m):
                with enigma.if_(A[i] > best):
                    best = A[i]
            return best

        B[t] = twice(A, n) + local_max(t + 1)

    n, threads = 11, 11
    a = rng.standard_normal(n).astype(np.float32)
    (out,) = run(runtime, k, [a], [(threads, np.float32)], threads, n=n)
    a64 = a.astype(np.float64)
    base = 2 * (3 * a64.sum() + 0.5 * n)
    ref = [base + a64[:t + 1].max() for t in range(threads)]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-4)


def _doubled(v):
    return v * 2.0


def _through_a_nested_helper(x, n):
    # Once this helper is rewritten, the call of _doubled in `inner` reads
    # the rewrite's runtime as a free variable; rewriting `inner` when it
    # is called must not bind that name twice.
    def inner(v):
        s = v
        for _ in enigma.range(n):
            s = _doubled(s)
        return s + 1.0
    return inner(x)


def test_nested_function_of_a_helper_calling_another_helper(runtime, rng):
    @enigma.kernel
    def k(A: enigma.f32, n: enigma.Scalar(enigma.u32), B: enigma.f32):
        t = enigma.thread_position_in_grid
        B[t] = _through_a_nested_helper(A[t], n)

    threads = 7
    a = rng.standard_normal(threads).astype(np.float32)
    (out,) = run(runtime, k, [a], [(threads, np.float32)], threads, n=3)
    np.testing.assert_allclose(out, a.astype(np.float64) * 8 + 1, rtol=1e-6)


def test_helper_without_readable_source_names_the_rule():
    namespace = {"enigma": enigma}
    exec(compile("def ranged(A, n):\n"
                 "    s = 0.0\n"
                 "    for k in enigma.range(n):\n"
                 "        s = s + A[k]\n"
                 "    return s\n", "<repl>", "exec"), namespace)
    ranged = namespace["ranged"]

    @enigma.kernel
    def k(A: enigma.f32, n: enigma.Scalar(enigma.u32)):
        A[0] = ranged(A, n)

    with pytest.raises(enigma.EnigmaError,
                       match=r"(?s)enigma.range can only be.*'ranged' is "
                             r"called from a kernel but Python cannot read "
                             r"its source"):
        enigma.compile(k)


def test_helper_without_constructs_runs_as_written(runtime, rng):
    namespace = {"enigma": enigma}
    exec(compile("def cube(x):\n    return x * x * x\n", "<repl>", "exec"),
         namespace)
    cube = namespace["cube"]

    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        B[t] = cube(A[t])

    a = rng.standard_normal(33).astype(np.float32)
    (out,) = run(runtime, k, [a], [(33, np.float32)], 33)
    np.testing.assert_allclose(out, a.astype(np.float64) ** 3, rtol=1e-5)


# --------------------------------------------------------------------------
# Returning from inside run-time constructs
# --------------------------------------------------------------------------

def clamp_index(i, n):
    with enigma.if_(i >= n):
        return n - 1
    return i


def find(A, n, key):
    for k in enigma.range(n):
        with enigma.if_(A[k] == key):
            return enigma.metal_cast(k, "int")
    return -1


def min_and_where(A, n):
    best = A[0]
    where = 0
    for k in enigma.range(n):
        with enigma.if_(A[k] < -100.0):
            return A[k], -1             # a sentinel ends the search
        with enigma.if_(A[k] < best):
            best = A[k]
            where = k
    return best, where


@enigma.kernel
def returning(A: enigma.f32, n: enigma.Scalar(enigma.u32), K: enigma.f32,
              I: enigma.u32, F: enigma.i32, M: enigma.f32, W: enigma.i32):
    t = enigma.thread_position_in_grid
    I[t] = clamp_index(t, n)
    F[t] = find(K, n, A[t])
    m, w = min_and_where(A, t + 1)
    M[t] = m
    W[t] = w


def test_helpers_return_from_ifs_and_loops(runtime, rng):
    n, threads = 10, 16
    a = rng.standard_normal(threads).astype(np.float32)
    a[12] = -500.0
    keys = np.concatenate([a[3:6], rng.standard_normal(n - 3)]).astype(
        np.float32)
    i, f, m, w = run(runtime, returning, [a, keys],
                     [(threads, np.uint32), (threads, np.int32),
                      (threads, np.float32), (threads, np.int32)],
                     threads, n=n)
    np.testing.assert_array_equal(i, np.minimum(np.arange(threads), n - 1))
    np.testing.assert_array_equal(
        f, [next((k for k in range(n) if keys[k] == a[t]), -1)
            for t in range(threads)])
    for t in range(threads):
        best, where = a[0], 0
        for k in range(t + 1):
            if a[k] < -100.0:
                best, where = a[k], -1
                break
            if a[k] < best:
                best, where = a[k], k
        assert (m[t], w[t]) == (best, where), t


def test_a_helper_that_may_end_without_its_value_is_an_error():
    def positive_or_nothing(x):
        with enigma.if_(x > 0.0):
            return x
        y = x * 2.0  # noqa: F841  (falls off the end here)

    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = positive_or_nothing(A[1])

    with pytest.raises(enigma.EnigmaError,
                       match=r"function 'positive_or_nothing' returns a "
                             r"value from inside a run-time if_ or loop but "
                             r"may also reach its end"):
        enigma.compile(k)


def test_bare_returns_in_helpers(runtime, rng):
    def store_positive(B, t, x):
        with enigma.if_(x <= 0.0):
            return
        B[t] = x

    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32):
        t = enigma.thread_position_in_grid
        store_positive(B, t, A[t])
        B[t] = B[t] + 1.0

    a = rng.standard_normal(40).astype(np.float32)
    (out,) = run(runtime, k, [a], [(40, np.float32)], 40)
    np.testing.assert_allclose(out, np.where(a > 0, a + 1.0, 1.0),
                               rtol=1e-6)


# --------------------------------------------------------------------------
# Names bound only in a branch taken at trace time
# --------------------------------------------------------------------------

def make_kernel(debug):
    @enigma.kernel
    def k(A: enigma.f32, n: enigma.Scalar(enigma.u32), B: enigma.f32):
        t = enigma.thread_position_in_grid
        total = 0.0
        for i in enigma.range(n):
            if debug:
                last = A[i]          # bound only when the trace takes it
            total = total + A[i]
        if debug:
            B[t] = total + last
        else:
            B[t] = total
    return k


def test_names_of_an_untaken_python_branch_are_not_demanded(runtime, rng):
    a = rng.standard_normal(6).astype(np.float32)
    (out,) = run(runtime, make_kernel(False), [a], [(4, np.float32)], 4, n=6)
    # A float sum of 6 terms is within 6 * 2^-24 * sum |a| of the exact one
    # (relative to the sum itself it is not: the terms may cancel).
    bound = 6 * 2.0**-24 * np.abs(a.astype(np.float64)).sum()
    np.testing.assert_allclose(out, np.full(4, a.astype(np.float64).sum()),
                               rtol=0, atol=bound)
    # Taken, `last` is carried out of the loop without a value before it:
    # the message says so where it is read.
    k = make_kernel(True)
    line = inspect.getsourcelines(make_kernel)[1]
    with pytest.raises(enigma.EnigmaError,
                       match=rf"test_helpers_traced.py:{line + 10}: variable "
                             r"'last' has no value here: it is first "
                             r"assigned inside the loop"):
        enigma.compile(k)


def test_python_semantics_of_names_bound_in_both_arms(runtime, rng):
    def helper(x, with_sign):
        with enigma.if_(x > 0.0) as (pos, neg):
            with pos:
                r = x
                if with_sign:
                    s = 1.0
            with neg:
                r = -x
                if with_sign:
                    s = -1.0
        if with_sign:
            return r * s
        return r

    @enigma.kernel
    def k(A: enigma.f32, B: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        B[t] = helper(A[t], False)
        C[t] = helper(A[t], True)

    a = rng.standard_normal(25).astype(np.float32)
    b, c = run(runtime, k, [a], [(25, np.float32), (25, np.float32)], 25)
    np.testing.assert_array_equal(b, np.abs(a))
    np.testing.assert_array_equal(c, a)


def test_a_name_bound_in_one_arm_only_says_so():
    @enigma.kernel
    def k(A: enigma.f32):
        with enigma.if_(A[0] > 0.0):
            x = A[1]
        A[2] = x

    line = inspect.getsourcelines(k.__wrapped__)[1]
    with pytest.raises(enigma.EnigmaError,
                       match=rf"test_helpers_traced.py:{line + 4}: variable "
                             r"'x' has no value here: it is assigned only in "
                             r"the then arm of the if_ at \S+:" +
                             str(line + 2)):
        enigma.compile(k)
