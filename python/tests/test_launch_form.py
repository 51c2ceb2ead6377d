"""The function-call form ``kernel[n](a, b, c, n)`` and
``kernel.launch(grid=... | threadgroups=..., threads=...)(...)``
(docs/reference/launch.md): arrays bound in place, scalars by position or
keyword, the runtime chosen from the arrays, compile once per signature,
and the mistakes it refuses. On the CPU backend with numpy arrays; on CUDA
with PyTorch tensors (CuPy and JAX at the end, where installed)."""

import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import enigma
from conftest import CallArrays as Arrays


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32,
               n: enigma.Scalar(enigma.u32)):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        C[i] = A[i] + B[i]


@enigma.kernel
def axpy(X: enigma.f32, Y: enigma.f32, a: enigma.Scalar(enigma.f32),
         n: enigma.Scalar(enigma.u32)):
    """Y = a * X + Y: reads and writes Y in place."""
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        Y[i] = a * X[i] + Y[i]


@enigma.kernel
def unguarded_copy(A: enigma.f32, C: enigma.f32):
    i = enigma.thread_position_in_grid
    C[i] = A[i]


@enigma.kernel
def where_am_i(P: enigma.u32, w: enigma.Scalar(enigma.u32),
               h: enigma.Scalar(enigma.u32)):
    """Each thread of a 2-D grid writes its x, y and its threadgroup's
    width and height."""
    x = enigma.thread_position_in_grid_xyz("x")
    y = enigma.thread_position_in_grid_xyz("y")
    with enigma.if_((x < w) & (y < h)):
        k = (y * w + x) * 4
        P[k] = x
        P[k + 1] = y
        P[k + 2] = enigma.threads_per_threadgroup("x")
        P[k + 3] = enigma.threads_per_threadgroup("y")


@enigma.kernel
def bf16_double(A: enigma.bf16, C: enigma.f32, n: enigma.Scalar(enigma.u32)):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        C[i] = enigma.metal_cast(A[i], "float") * 2.0


@enigma.kernel
def rows_of(M: enigma.f32, cols: enigma.Scalar(enigma.u32, multiple_of=4)):
    i = enigma.thread_position_in_grid
    M[i] = enigma.metal_cast(cols, "float")


@enigma.kernel
def gather(A: enigma.f32, I: enigma.u64, C: enigma.f32,
           n: enigma.Scalar(enigma.u32)):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        C[i] = A[I[i]]


@pytest.mark.parametrize("n", [1, 255, 1000, (1 << 16) + 3])
def test_vector_add_in_place(arrays, rng, n):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    c = arrays.put(np.full(n, np.nan, np.float32))  # poisoned
    da, db = arrays.put(a), arrays.put(b)
    assert vector_add.launch(grid=n, threads=256)(da, db, c, n) is None
    expected = (a.astype(np.float64) + b.astype(np.float64)).astype(
        np.float32)
    np.testing.assert_array_equal(arrays.get(c), expected)
    # The inputs are the caller's arrays, read in place and left as they were.
    np.testing.assert_array_equal(arrays.get(da), a)


def test_numpy_arrays_are_written_in_place():
    """The CPU backend binds the numpy array's own memory: the same object
    holds the result, and nothing else is cleared."""
    n = 100
    a, b = np.arange(n, dtype=np.float32), np.ones(n, np.float32)
    c = np.full(n + 4, -7.0, np.float32)
    address = c.ctypes.data
    vector_add[n](a, b, c, n)
    assert c.ctypes.data == address
    np.testing.assert_array_equal(c[:n], a + 1)
    np.testing.assert_array_equal(c[n:], -7.0)  # past n: untouched


def test_buffers_are_not_cleared_and_scalars_by_keyword(arrays, rng):
    n = 777
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    dx, dy = arrays.put(x), arrays.put(y)
    axpy.launch(grid=n, threads=128)(dx, dy, n=n, a=np.float32(0.5))
    axpy.launch(grid=n, threads=128)(dx, dy, 2.0, np.uint32(n))  # numpy
    expected = np.float32(2.0) * x + (np.float32(0.5) * x + y)
    np.testing.assert_allclose(arrays.get(dy), expected, rtol=1e-6)
    assert arrays.get(dy).dtype == np.float32


@pytest.mark.parametrize("w,h", [(1, 1), (13, 5), (40, 33)])
def test_two_dimensional_grid_and_default_threads(arrays, w, h):
    p = arrays.put(np.full(w * h * 4, 0xFFFFFFFF, np.uint32))
    where_am_i.launch(grid=(w, h), threads=(8, 4))(p, w, h)
    got = arrays.get(p).reshape(h, w, 4)
    ys, xs = np.mgrid[0:h, 0:w]
    np.testing.assert_array_equal(got[..., 0], xs)
    np.testing.assert_array_equal(got[..., 1], ys)

    def group_size(position, extent, size):
        """Threads of the group holding `position` along one dimension (the
        edge group is partial, as Metal reports it)."""
        return np.minimum(size, extent - position // size * size)
    np.testing.assert_array_equal(got[..., 2], group_size(xs, w, 8))
    np.testing.assert_array_equal(got[..., 3], group_size(ys, h, 4))
    # grid= alone: 16 x 16 threadgroups for a 2-D grid...
    where_am_i.launch(grid=(w, h))(p, w, h)
    got = arrays.get(p).reshape(h, w, 4)
    np.testing.assert_array_equal(got[..., 2], group_size(xs, w, 16))
    np.testing.assert_array_equal(got[..., 3], group_size(ys, h, 16))
    # ... and threads=None says the same.
    where_am_i.launch(grid=(w, h), threads=None)(p, w, h)
    got = arrays.get(p).reshape(h, w, 4)
    np.testing.assert_array_equal(got[..., 2], group_size(xs, w, 16))


def test_one_dimensional_default_is_256_threads():
    n = 600
    p = np.zeros(n * 4, np.uint32)
    where_am_i[n](p, n, 1)
    sizes = p.reshape(n, 4)[:, 2]
    assert (sizes[:512] == 256).all() and (sizes[512:] == n - 512).all()


def test_bf16_takes_uint16_bits(arrays, rng):
    n = 300
    values = rng.standard_normal(n).astype(np.float32)
    bits = (values.view(np.uint32) >> 16).astype(np.uint16)  # truncated
    c = arrays.put(np.full(n, np.nan, np.float32))
    bf16_double[n](arrays.put(bits, bf16=True), c, n)
    expected = (bits.astype(np.uint32) << 16).view(np.float32) * 2
    np.testing.assert_array_equal(arrays.get(c), expected)


def test_second_call_does_not_recompile(monkeypatch):
    @enigma.kernel
    def once(A: enigma.f32):
        A[enigma.thread_position_in_grid] = 3.0

    a = np.zeros(64, np.float32)
    compiles = []
    import enigma._compile as compile_module
    real = compile_module.compile
    monkeypatch.setattr(compile_module, "compile",
                        lambda *args, **kw: compiles.append(1) or
                        real(*args, **kw))
    once.launch(grid=64, threads=32)(a)
    once.launch(grid=64, threads=32)(a)
    once.launch(grid=64, threads=64)(a)   # another launch shape
    once.launch(threadgroups=2, threads=32)(a)
    once[32](a)
    assert compiles == [1]
    assert once._calls.form.targets == [(-1, True)]
    assert (a == 3).all()


def test_explicit_runtime_and_use_runtime():
    n = 50
    a, b = np.ones(n, np.float32), np.full(n, 2.0, np.float32)
    c = np.zeros(n, np.float32)
    mine = enigma.CpuRuntime()
    vector_add[n](a, b, c, n)
    # Other tests may have loaded it on runtimes of their own.
    explicit_before = vector_add._calls.form.targets.count((-1, False))
    vector_add[n](a, b, c, n, runtime=mine)
    with enigma.use_runtime(mine) as chosen:
        assert chosen is mine
        vector_add[n](a, b, c, n)
        with enigma.use_runtime(enigma.CpuRuntime()):
            vector_add[n](a, b, c, n)
        vector_add[n](a, b, c, n)
    vector_add[n](a, b, c, n)
    assert (c == 3).all()
    targets = vector_add._calls.form.targets
    # mine, and the nested one
    assert targets.count((-1, False)) == explicit_before + 2
    assert (-1, True) in targets
    with pytest.raises(TypeError, match="Enigma runtime"):
        enigma.use_runtime("cpu")


def test_mistakes_name_the_parameter_and_the_array():
    n = 16
    a, b, c = (np.zeros(n, np.float32) for _ in range(3))
    cases = [
        (lambda: vector_add[n](a, b.astype(np.float64), c, n),
         r"argument B \(f32 buffer\) is a numpy.ndarray of float64, shape "
         r"\(16,\).*takes float32 arrays"),
        (lambda: vector_add[n](a, b, np.zeros(2 * n, np.float32)[::2], n),
         r"argument C \(f32 buffer\).*not contiguous"),
        (lambda: vector_add[n](np.asfortranarray(np.zeros((4, 4), np.float32)),
                               b, c, n),
         r"argument A .*not contiguous"),
        (lambda: vector_add[n](a, np.broadcast_to(np.float32(1), (n,)), c, n),
         r"argument B .*(read-only|not contiguous)"),
        (lambda: vector_add[n](a, b, c),
         r"takes 4 arguments; no value was given for n \(u32 scalar\)"),
        (lambda: vector_add[n](a, b, c, n, 5),
         r"takes 4 arguments \(A \(f32 buffer\), .*\) but 5 were given"),
        (lambda: vector_add[n](a, b, c, m=3),
         r"no parameter named 'm'"),
        (lambda: vector_add[n](a, b, c, n, n=3),
         r"parameter n was given twice"),
        (lambda: vector_add[n](a, b, [0.0] * n, n),
         r"argument C \(f32 buffer\) is a list; a buffer parameter takes an "
         r"array"),
        (lambda: vector_add[n](a, b, c, "16"),
         r"scalar parameter n \(u32 scalar\) takes a number, got str"),
        (lambda: vector_add[n](a, b, c, -1),
         r"scalar parameter n \(u32\) cannot take -1"),
        (lambda: vector_add[n](a, b, c, 2**70),
         r"does not fit in 64 bits"),
        (lambda: vector_add[n](a, b, c, 1.5),
         r"a float is not an integer"),
        (lambda: rows_of[8](np.zeros(8, np.float32), 6),
         r"cols \(u32\) is declared a multiple of 4 \(multiple_of\), got 6"),
        (lambda: vector_add[n](a, b, np.zeros(n + 1, np.float32)[1:], n),
         r"argument C .*16-byte boundary"),
        (lambda: vector_add[0](a, b, c, n), r"grid \(0, 1, 1\)"),
        (lambda: vector_add.launch(grid=n, threads=2048)(a, b, c, n),
         r"more than the maximum"),
        (lambda: unguarded_copy[n + 1](a, c),
         r"the load of A at .*test_launch_form.py:\d+ reaches index 16"),
        (lambda: vector_add[n](a, b, c, n, runtime=NotARuntime()),
         r"runs on CpuRuntime, MetalHostRuntime and CudaRuntime, not "
         r"NotARuntime"),
        (lambda: vector_add[n](a, b, c, n, runtime="cuda"),
         r"runtime= takes an Enigma runtime"),
    ]
    for call, pattern in cases:
        with pytest.raises(enigma.DispatchError, match=pattern):
            call()
    assert not c.any()  # nothing ran


class NotARuntime:
    """Has a _core, as runtimes do, but is none of those the form runs on."""

    def __init__(self):
        self._core = enigma.CpuRuntime()._core
        self.name = "none"


def test_mistakes_in_the_brackets():
    a = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match="threads must be an int"):
        vector_add.launch(grid=4, threads="4")
    with pytest.raises(ValueError, match="threads must have 1 to 3"):
        vector_add.launch(grid=4, threads=(1, 1, 1, 1))
    with pytest.raises(ValueError, match="grid 5 has a dimension|outside"):
        vector_add.launch(grid=-5)

    @enigma.kernel
    def untyped(A, B):
        pass
    with pytest.raises(enigma.EnigmaError, match="unannotated parameters"):
        untyped[4](a, a)


# What each refused spelling must offer, in the user's own numbers.
_BRACKET_CASES = [
    # k[w, h] and k[(w, h)]: Python passes both as the tuple (w, h).
    ((13, 5), [r"vector_add\[13, 5\]: the brackets take one int",
               r"kernel\[a, b\] and kernel\[\(a, b\)\] alike",
               r"vector_add\.launch\(grid=\(13, 5\)\)\(\.\.\.\) +# a grid of "
               r"13 x 5 threads",
               r"vector_add\.launch\(threadgroups=\(13, 5\)\)\(\.\.\.\) +# 13 x 5 "
               r"threadgroups of 16 x 16 threads \(Triton's 2-D grid",
               r"vector_add\.launch\(threadgroups=13, threads=5\)\(\.\.\.\) +# "
               r"13 threadgroups of 5 threads \(CUDA's <<<13, 5>>>",
               r"vector_add\.launch\(grid=13, threads=5\)\(\.\.\.\) +# 13 "
               r"threads in threadgroups of 5"]),
    ((1000, 256), [r"vector_add\.launch\(threadgroups=1000, threads=256\)",
                   r"vector_add\.launch\(grid=1000, threads=256\)"]),
    ((7,), [r"vector_add\[\(7,\)\]", r"vector_add\[7\]\(\.\.\.\) +# a 1-D grid",
            r"vector_add\.launch\(threadgroups=7\)\(\.\.\.\) +# 7 threadgroups "
            r"of 256 threads"]),
    (((40, 33), (8, 4)),
     [r"vector_add\.launch\(grid=\(40, 33\), threads=\(8, 4\)\)",
      r"vector_add\.launch\(threadgroups=\(40, 33\), threads=\(8, 4\)\)"
      r"\(\.\.\.\) +# 40 x 33 threadgroups of 8 x 4 threads"]),
    (((40, 33), None), [r"vector_add\.launch\(grid=\(40, 33\)\)\(\.\.\.\)"]),
    ((2, 3, 4), [r"vector_add\.launch\(grid=\(2, 3, 4\)\)",
                 r"vector_add\.launch\(threadgroups=\(2, 3, 4\)\)"]),
    ([64], [r"vector_add\[\[64\]\]", r"vector_add\[64\]\(\.\.\.\)"]),
    ("64", [r"vector_add\['64'\]: the brackets take one int",
            r"vector_add\.launch\(grid=\(w, h\), threads=\(16, 16\)\)"]),
    (64.0, [r"vector_add\[64\.0\]"]),
    ((1, 2, 3, 4), [r"Got \(1, 2, 3, 4\)"]),
]


@pytest.mark.parametrize("key,patterns", _BRACKET_CASES)
def test_brackets_take_one_int_and_show_the_launches_meant(key, patterns):
    """A grid in the brackets could mean a 2-D grid (Triton), threadgroups
    and threads (CUDA, Numba) or the old grid and threads: each refused
    spelling is an EnigmaError at the user's line that spells every
    reading with the numbers given. Nothing is compiled or run."""
    with pytest.raises(enigma.EnigmaError) as info:
        vector_add[key]
    message = str(info.value)
    assert re.match(r".*test_launch_form\.py:\d+: ", message), message
    for pattern in patterns:
        assert re.search(pattern, message), (pattern, message)


def test_the_two_spellings_of_a_tuple_are_refused_alike():
    """k[(w, h)] and k[w, h] are one call to Python: the one a Triton user
    writes for a 2-D grid is not read as grid w, threads h any more."""
    w, h = 40, 33
    p = np.full(w * h * 4, 0xFFFFFFFF, np.uint32)
    for launch in (lambda: where_am_i[(w, h)], lambda: where_am_i[w, h]):
        with pytest.raises(enigma.EnigmaError,
                           match=r"where_am_i\.launch\(threadgroups="
                                 r"\(40, 33\)\)"):
            launch()(p, w, h)
    assert (p == 0xFFFFFFFF).all()
    # The launch a Triton user meant: 40 x 33 threadgroups cover the grid.
    where_am_i.launch(threadgroups=(w, h), threads=(1, 1))(p, w, h)
    got = p.reshape(h, w, 4)
    ys, xs = np.mgrid[0:h, 0:w]
    np.testing.assert_array_equal(got[..., 0], xs)
    np.testing.assert_array_equal(got[..., 1], ys)


@pytest.mark.parametrize("tg,threads", [((3, 2), (8, 4)), (5, 64),
                                        ((2, 2, 2), None)])
def test_threadgroups_count_groups_of_threads(arrays, tg, threads):
    """launch(threadgroups=G, threads=T) runs G threadgroups of T threads:
    the grid is G x T threads, every group whole."""
    launcher = where_am_i.launch(threadgroups=tg, threads=threads)
    tg3 = tuple(tg) + (1,) * (3 - len(tg)) if isinstance(tg, tuple) \
        else (tg, 1, 1)
    expected_threads = {None: (8, 8, 4)}.get(threads) or (
        tuple(threads) + (1,) * (3 - len(threads))
        if isinstance(threads, tuple) else (threads, 1, 1))
    assert launcher.threads == expected_threads
    assert launcher.grid == tuple(g * t for g, t in zip(tg3,
                                                         expected_threads))
    w, h = launcher.grid[0], launcher.grid[1]
    p = arrays.put(np.full(w * h * 4, 0xFFFFFFFF, np.uint32))
    launcher(p, w, h)
    got = arrays.get(p).reshape(h, w, 4)
    # Only the z = 0 layer writes; every group is whole.
    np.testing.assert_array_equal(got[..., 2], expected_threads[0])
    np.testing.assert_array_equal(got[..., 3], expected_threads[1])


def test_launch_takes_keywords_and_one_of_grid_or_threadgroups():
    cases = [
        (lambda: vector_add.launch(1000, 256),
         [r"test_launch_form\.py:\d+: vector_add\.launch\(1000, 256\): "
          r"launch\(\) takes keywords only",
          r"vector_add\.launch\(threadgroups=1000, threads=256\)",
          r"vector_add\.launch\(grid=1000, threads=256\)"]),
        (lambda: vector_add.launch(threads=64),
         [r"takes exactly one of grid= .* and threadgroups= .*got neither"]),
        (lambda: vector_add.launch(grid=64, threadgroups=2),
         [r"got both"]),
        (lambda: vector_add.launch(grid=64, block=32),
         [r"got block=: the threadgroup size is threads= here"]),
        (lambda: vector_add.launch(grid=64, vec_width=4),
         [r"compile options go to enigma\.compile.*"
          r"enigma\.compile\(kernel, vec_width=\.\.\.\)\.launch"]),
        (lambda: vector_add.launch(grid=64, runtime=enigma.CpuRuntime()),
         [r"the runtime goes to the call"]),
        (lambda: vector_add.launch(grid=64, stream=0),
         [r"got stream=: it takes grid= or threadgroups=, threads= and "
          r"constants="]),
    ]
    for call, patterns in cases:
        with pytest.raises(enigma.EnigmaError) as info:
            call()
        for pattern in patterns:
            assert re.search(pattern, str(info.value)), (pattern,
                                                         str(info.value))
    with pytest.raises(ValueError, match=r"past 2\^32-1"):
        vector_add.launch(threadgroups=1 << 31, threads=4)


def test_repeated_spellings_give_the_kept_launcher():
    """The hot path: a repeated kernel[n] or launch(...) is one dictionary
    lookup, giving the same C++ launcher object."""
    assert vector_add[100] is vector_add[100]
    assert vector_add[np.int64(100)] is vector_add[100]
    first = vector_add.launch(grid=(10, 10), threads=(16, 16))
    assert first is vector_add.launch(grid=(10, 10), threads=(16, 16))
    assert first.grid == (10, 10, 1) and first.threads == (16, 16, 1)
    assert type(first).__name__ == "Launcher"
    assert vector_add.launch(threadgroups=(10, 10)) is \
        vector_add.launch(threadgroups=(10, 10))
    assert vector_add.launch(threadgroups=(10, 10)).grid == (160, 160, 1)


def test_unhashable_keys_and_many_grids():
    a, b, c = (np.ones(8, np.float32) for _ in range(3))
    vector_add.launch(grid=[8], threads=[4])(a, b, c, 8)  # lists: not kept
    for n in range(1, 600):           # ever new grids: the cache stays small
        vector_add[n](a, b, c, min(n, 8))
    assert len(vector_add._launchers) <= 256
    assert (c == 2).all()


def test_bounds_checked_mode(monkeypatch):
    """ENIGMA_BOUNDS_CHECK is read when a kernel is first launched."""
    @enigma.kernel
    def checked_gather(A: enigma.f32, I: enigma.u64, C: enigma.f32,
                       n: enigma.Scalar(enigma.u32)):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < n):
            C[i] = A[I[i]]

    monkeypatch.setenv("ENIGMA_BOUNDS_CHECK", "1")
    a = np.arange(10, dtype=np.float32)
    index = np.array([0, 3, 12, 1], np.uint64)
    c = np.full(4, -1.0, np.float32)
    with pytest.raises(enigma.BoundsCheckError,
                       match=r"out-of-bounds load at .*test_launch_form.py"
                             r":\d+: index 12 of A, which has 10 elements"):
        checked_gather[4](a, index, c, 4)
    np.testing.assert_array_equal(c, [0, 3, 0, 1])  # the bad load gave 0
    index[2] = 9
    checked_gather[4](a, index, c, 4)
    np.testing.assert_array_equal(c, [0, 3, 9, 1])


def test_a_faulting_kernel_raises_and_the_form_keeps_working():
    a = np.arange(16, dtype=np.float32)
    index = np.full(4, 1 << 40, np.uint64)
    c = np.zeros(4, np.float32)
    with pytest.raises(enigma.KernelFaultError, match="enigma_kernel_gather"):
        gather[4](a, index, c, 4)
    index[:] = [5, 4, 3, 2]
    gather[4](a, index, c, 4)
    np.testing.assert_array_equal(c, [5, 4, 3, 2])


def test_threads_may_call_concurrently(rng):
    import threading
    n = 4096
    a = rng.standard_normal(n).astype(np.float32)
    outs = [np.zeros(n, np.float32) for _ in range(4)]
    errors = []

    def work(out):
        try:
            for _ in range(20):
                vector_add.launch(grid=n, threads=128)(a, a, out, n)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=work, args=(o,)) for o in outs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for out in outs:
        np.testing.assert_array_equal(out, a + a)


def test_argument_handling_cost_is_small():
    """A CPU-only micro-benchmark of the form's own work: a launch through
    it costs at most a few microseconds more than PreparedKernel's
    dispatch_async of the same kernel (which skips argument handling).
    docs/design/launch-form.md has the numbers."""
    import time
    n = 32
    a, b, c = (np.ones(n, np.float32) for _ in range(3))
    prepared = enigma.CpuRuntime().prepare(enigma.compile(vector_add),
                                           [a, b], n * 4, scalars=[n])
    launch = vector_add.launch(grid=n, threads=32)

    def best(fn, count=2000):
        fn()
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for _ in range(count):
                fn()
            times.append((time.perf_counter() - start) / count)
        return min(times) * 1e6
    form = best(lambda: vector_add.launch(grid=n, threads=32)(a, b, c, n))
    bracket = best(lambda: vector_add[n](a, b, c, n))
    direct = best(lambda: prepared.dispatch_async((n, 1, 1), (32, 1, 1)))
    cached = best(lambda: launch(a, b, c, n))
    print(f"call form {form:.2f} us (kernel[n]: {bracket:.2f} us), launcher "
          f"kept {cached:.2f} us, prepared dispatch_async {direct:.2f} us")
    assert form - direct < 20  # generous: 2 shared cores are noisy
    assert bracket - direct < 20


# --- CuPy and JAX (CUDA machines) --------------------------------------------

def _cuda_runtime_or_skip():
    try:
        return enigma.CudaRuntime()
    except RuntimeError:
        pytest.skip("no CUDA device")


def test_cupy_arrays_on_the_current_stream(rng):
    cp = pytest.importorskip("cupy")
    _cuda_runtime_or_skip()
    n = 1 << 20
    a = rng.standard_normal(n).astype(np.float32)
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        da = cp.asarray(a)
        db = cp.zeros(n, np.float32)
        c = cp.full(n, np.nan, np.float32)
        for _ in range(3):
            db += da  # producer work queued on the side stream
        vector_add[n](da, db, c, n)
        stream.synchronize()
    np.testing.assert_allclose(cp.asnumpy(c), 4 * a, rtol=1e-6)
    # Later launches read CuPy's current stream again (through its C
    # function once the first launch found it): another side stream.
    other = cp.cuda.Stream(non_blocking=True)
    with other:
        e = cp.full(n, np.nan, np.float32)
        for _ in range(3):
            db += da
        vector_add[n](da, db, e, n)
        other.synchronize()
    np.testing.assert_allclose(cp.asnumpy(e), 7 * a, rtol=1e-6)
    with pytest.raises(enigma.DispatchError, match="different places"):
        vector_add[n](da, np.zeros(n, np.float32), c, n)


def test_cupy_arrays_seen_again_and_new_ones(rng):
    """The same CuPy arrays launched on again, then new ones of other sizes
    and dtypes, which may take a dead array's address: every launch sees
    its own arguments (the call form remembers arrays it has read)."""
    cp = pytest.importorskip("cupy")
    _cuda_runtime_or_skip()
    for n in (1000, 3000, 17, 1000, 4096):
        a = cp.asarray(rng.standard_normal(n).astype(np.float32))
        b = cp.asarray(rng.standard_normal(n).astype(np.float32))
        c = cp.full(n, np.nan, np.float32)
        for _ in range(2):
            vector_add[n](a, b, c, n)
        np.testing.assert_array_equal(cp.asnumpy(c),
                                      cp.asnumpy(a) + cp.asnumpy(b))
        del a, b, c
    wide = cp.zeros(64, np.float64)
    with pytest.raises(enigma.DispatchError, match="float32"):
        vector_add[64](wide, wide, wide, 64)
    strided = cp.zeros(128, np.float32)[::2]
    for _ in range(2):
        with pytest.raises(enigma.DispatchError, match="contiguous"):
            vector_add[64](strided, strided, strided, 64)

    class Tagged(cp.ndarray):
        pass

    t = cp.arange(256, dtype=np.float32).view(Tagged)
    out = cp.zeros(256, np.float32)
    vector_add[256](t, t, out, 256)
    np.testing.assert_array_equal(cp.asnumpy(out),
                                  2 * np.arange(256, dtype=np.float32))


def test_jax_arrays_run_synchronously(rng):
    jax = pytest.importorskip("jax")
    _cuda_runtime_or_skip()
    try:
        device = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX has no GPU")
    n = 513
    a = rng.standard_normal(n).astype(np.float32)
    da = jax.device_put(a, device)
    c = jax.device_put(np.zeros(n, np.float32), device)
    vector_add[n](da, da, c, n)
    np.testing.assert_array_equal(np.asarray(c), a + a)


def test_cuda_device_selection_in_a_subprocess():
    """CudaRuntime(device=i) for every device, and the form on arrays of
    device 1 (when there is one): the launch leaves PyTorch's current
    device as it was."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device")
    script = textwrap.dedent("""
        import numpy as np, torch, enigma
        from test_launch_form import vector_add
        n = 1000
        for d in range(torch.cuda.device_count()):
            rt = enigma.CudaRuntime(device=d)
            a = np.arange(n, dtype=np.float32)
            out = np.frombuffer(rt.execute(enigma.compile(vector_add),
                [a, a], n * 4, grid=n, threads=128, scalars=[n]), np.float32)
            assert (out == 2 * a).all(), d
            t = torch.arange(n, dtype=torch.float32, device=f"cuda:{d}")
            c = torch.empty_like(t)
            before = torch.cuda.current_device()
            vector_add[n](t, t, c, n)
            assert torch.cuda.current_device() == before
            assert torch.equal(c, 2 * t), d
        print("ok", torch.cuda.device_count())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                          text=True, timeout=600,
                          cwd=os.path.dirname(__file__))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ok")
