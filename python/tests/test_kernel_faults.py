"""A kernel that faults never kills the interpreter (docs/runtimes.md,
"Kernels that fault"; docs/design/cpu-faults.md).

On the CPU an invalid access raises SIGSEGV in the thread running the
kernel; the runtime catches it, stops the dispatch and raises
enigma.KernelFaultError. On CUDA an illegal address poisons the context;
the runtime resets it and raises the same error. Either way the runtime
keeps working, and ``execute`` (which works on copies) runs the dispatch
again in bounds-checked mode to name the access and its file:line.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import enigma

# Far outside any buffer: 4 TiB past it (unmapped, or not even a canonical
# address on x86-64; unmapped on a GPU).
FAR = 1 << 40

_CHILD = "ENIGMA_TEST_FAULT_CHILD"


def _ran_in_child(runtime, request):
    """On CUDA a fault ends CUDA for the whole process (the other libraries
    of the process included): there the test runs in a process of its own,
    and this one only checks that it passed. Returns True when it did so."""
    if runtime.name != "cuda" or os.environ.get(_CHILD):
        return False
    env = dict(os.environ, **{_CHILD: "1", "ENIGMA_TEST_BACKENDS": "cuda"})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         request.node.nodeid], cwd=str(request.config.rootpath), env=env,
        capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    if " passed" not in done.stdout:
        pytest.skip("in its own process: " + done.stdout.strip()[-300:])
    return True


@enigma.kernel
def gather(idx: enigma.u64, A: enigma.f32, C: enigma.f32):
    t = enigma.thread_position_in_grid
    C[t] = A[idx[t]]  # the faulting load


@enigma.kernel
def scatter(idx: enigma.u64, C: enigma.f32):
    t = enigma.thread_position_in_grid
    C[idx[t]] = 1.0  # the faulting store


@enigma.kernel
def add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    t = enigma.thread_position_in_grid
    C[t] = A[t] + B[t]


def _line_of(marker):
    with open(__file__) as f:
        for number, text in enumerate(f, 1):
            if marker in text and "_line_of" not in text:
                return number
    raise AssertionError(marker)


def _check_add_works(runtime, rng, n=1000):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    raw = runtime.execute(enigma.compile(add), [a, b], output_size=4 * n,
                          grid=n, threads=64)
    assert np.array_equal(np.frombuffer(raw, np.float32), a + b)


def _check_works_after_a_fault(runtime, rng, n=1000):
    """The runtime works on; CUDA says to restart the process, and the
    process and its CPU runtime work on."""
    if runtime.name != "cuda":
        _check_add_works(runtime, rng, n)
        return
    with pytest.raises(enigma.EnigmaRuntimeError,
                       match="restart the process"):
        _check_add_works(runtime, rng, n)
    with pytest.raises(enigma.EnigmaRuntimeError,
                       match="restart the process"):
        enigma.CudaRuntime()
    _check_add_works(enigma.CpuRuntime(), rng, n)


def _fault_names_the_backend(runtime, message):
    if runtime.name == "cpu":
        assert "faulted on the CPU: SIGSEGV" in message, message
    elif runtime.name == "metal-host":
        assert "faulted on the MSL host runtime: SIGSEGV" in message, message
    else:
        assert "CUDA_ERROR_ILLEGAL_ADDRESS" in message, message
        assert "restart the process" in message, message


def test_out_of_bounds_load_raises_with_its_location(runtime, request, rng):
    if _ran_in_child(runtime, request):
        return
    n = 300
    a = rng.standard_normal(n).astype(np.float32)
    idx = np.arange(n, dtype=np.uint64)
    bad = int(rng.integers(0, n))
    idx[bad] = FAR
    with pytest.raises(enigma.KernelFaultError) as caught:
        runtime.execute(enigma.compile(gather), [idx, a], output_size=4 * n,
                        grid=n, threads=32)
    message = str(caught.value)
    assert isinstance(caught.value, enigma.EnigmaRuntimeError)
    assert isinstance(caught.value, RuntimeError)
    assert message.startswith("kernel enigma_kernel_gather")
    _fault_names_the_backend(runtime, message)
    # The bounds-checked re-run names the access, its line and the thread.
    line = _line_of("# the faulting load")
    assert ("Run again in bounds-checked mode, it reports:" in message
            or "Run again in bounds-checked mode on the CPU, it reports:"
            in message and runtime.name == "cuda"), message
    assert "out-of-bounds load at " in message
    assert f"test_kernel_faults.py:{line}: index" in message
    assert f"index {FAR} of A, which has {n} elements" in message
    assert f"thread ({bad}, 0, 0)" in message
    _check_works_after_a_fault(runtime, rng)


def test_out_of_bounds_store_in_one_thread_grid(runtime, request, rng):
    """A single threadgroup runs on the calling thread, not on a worker."""
    if _ran_in_child(runtime, request):
        return
    idx = np.array([FAR], dtype=np.uint64)
    with pytest.raises(enigma.KernelFaultError) as caught:
        runtime.execute(enigma.compile(scatter), [idx], output_size=4,
                        grid=1, threads=1)
    message = str(caught.value)
    _fault_names_the_backend(runtime, message)
    line = _line_of("# the faulting store")
    assert "out-of-bounds store at " in message
    assert f"test_kernel_faults.py:{line}: index {FAR} of C" in message
    _check_works_after_a_fault(runtime, rng)


@pytest.mark.parametrize("past", [0, 1000, 100_000])
def test_store_just_past_the_end_of_an_output_faults_on_the_host(rng, past):
    """The CPU runtimes map the buffers they allocate with guard pages
    after them (lib/Runtime/Cpu/GuardedMemory.h): an index a little past
    the end, which no pre-dispatch check sees (it comes from a buffer),
    faults there instead of writing into the heap, where it killed the
    process later."""
    n = 256   # 1024 bytes: the buffer ends on the guard
    for rt in (enigma.CpuRuntime(), enigma.MetalHostRuntime()):
        idx = np.array([n + past], dtype=np.uint64)
        with pytest.raises(enigma.KernelFaultError) as caught:
            rt.execute(enigma.compile(scatter), [idx], output_size=4 * n,
                       grid=1, threads=1)
        message = str(caught.value)
        assert "SIGSEGV" in message, message
        assert f"index {n + past} of C, which has {n} elements" in message
        _check_add_works(rt, rng)


@pytest.mark.parametrize("backend", ["CpuRuntime", "MetalHostRuntime"])
def test_store_past_a_small_array_bound_in_place_faults(backend):
    """The call form binds the caller's arrays in place; a small numpy
    array lives in the malloc heap, where a store just past its end wrote
    into the next chunk and the process died later, in free ("corrupted
    size vs. prev_size"). Small arrays now go through guarded copies: the
    store faults, and the process lives on."""
    script = textwrap.dedent(f"""
        import numpy as np, enigma
        rt = enigma.{backend}()

        @enigma.kernel
        def shifted(A: enigma.f32, B: enigma.f32,
                    off: enigma.Scalar(enigma.u32)):
            i = enigma.thread_position_in_grid
            B[i + off] = A[i] * 2.0

        for past in (1, 16, 1000, 1 << 20):
            a = np.arange(16, dtype=np.float32)
            b = np.zeros(16, np.float32)
            try:
                shifted[16](a, b, past, runtime=rt)
                print("no fault", past)
            except enigma.KernelFaultError as e:
                assert "SIGSEGV" in str(e), str(e)
                print("fault", past)
            shifted[16](a, b, 0, runtime=rt)   # in bounds: still in place
            assert (b == 2 * a).all(), b
            del a, b
        import gc; gc.collect()
        print("survived", flush=True)
    """)
    done = subprocess.run([sys.executable, "-c", script], env=dict(os.environ),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, (done.returncode, done.stdout,
                                  done.stderr[-3000:])
    assert done.stdout.split() == ["fault", "1", "fault", "16", "fault",
                                   "1000", "fault", str(1 << 20),
                                   "survived"], done.stdout


def test_many_faults_in_a_row_leave_the_runtime_working(runtime, request,
                                                       rng):
    """Every worker faults, many times over: no thread, lock or memory
    is lost, and the next dispatch is right (CUDA: one fault ends it)."""
    if runtime.name == "cuda":
        pytest.skip("the first fault ends CUDA for the process")
    if _ran_in_child(runtime, request):
        return
    n = 64 * 257
    idx = np.full(n, FAR, dtype=np.uint64)
    a = np.zeros(16, dtype=np.float32)
    compiled = enigma.compile(gather)
    tasks_before = len(os.listdir("/proc/self/task"))
    for _ in range(40 if runtime.name == "cpu" else 5):
        with pytest.raises(enigma.KernelFaultError,
                           match="enigma_kernel_gather"):
            runtime.prepare(compiled, [idx, a], output_size=4 * n).dispatch(
                grid=n, threads=64)
    if runtime.name == "cpu":
        assert len(os.listdir("/proc/self/task")) == tasks_before
    _check_add_works(runtime, rng, n)


def test_prepared_dispatch_says_how_to_find_the_access(runtime, request):
    if _ran_in_child(runtime, request):
        return
    n = 128
    idx = np.arange(n, dtype=np.uint64)
    idx[7] = FAR
    prepared = runtime.prepare(enigma.compile(scatter), [idx],
                               output_size=4 * n)
    with pytest.raises(enigma.KernelFaultError) as caught:
        prepared.dispatch(grid=n, threads=32)
    message = str(caught.value)
    assert "enigma_kernel_scatter" in message
    assert "bounds_check=True" in message
    # No re-run: the buffers are the caller's.
    assert "Run again" not in message


def test_queued_fault_is_reported(runtime, request):
    """Raised by dispatch_async on the CPU, by synchronize on CUDA."""
    if _ran_in_child(runtime, request):
        return
    n = 128
    idx = np.arange(n, dtype=np.uint64)
    idx[7] = FAR
    prepared = runtime.prepare(enigma.compile(scatter), [idx],
                               output_size=4 * n)
    with pytest.raises(enigma.KernelFaultError,
                       match="kernel enigma_kernel_scatter"):
        prepared.dispatch_async(grid=n, threads=32)
        prepared.synchronize()


def test_a_prepared_kernel_keeps_working_after_a_fault_on_the_cpu(rng):
    runtime = enigma.CpuRuntime()
    n = 512
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    prepared = runtime.prepare(enigma.compile(add), [a, b], output_size=4 * n)
    idx = np.full(4, FAR, dtype=np.uint64)
    with pytest.raises(enigma.KernelFaultError):
        runtime.execute(enigma.compile(scatter), [idx], output_size=16,
                        grid=4, threads=4)
    prepared.dispatch(grid=n, threads=64)
    assert np.array_equal(np.frombuffer(prepared.read_output(), np.float32),
                          a + b)


def test_bounds_checked_kernel_that_faults_is_not_run_again(runtime, request):
    """A kernel compiled in bounds-checked mode does not fault on its
    out-of-bounds accesses: it reports them (BoundsCheckError)."""
    if _ran_in_child(runtime, request):
        return
    idx = np.array([0, FAR], dtype=np.uint64)
    compiled = enigma.compile(scatter, bounds_check=True)
    with pytest.raises(enigma.BoundsCheckError, match="out-of-bounds store"):
        runtime.execute(compiled, [idx], output_size=8, grid=2, threads=2)


def test_rerun_that_finds_nothing_says_so(runtime, request, rng):
    """The re-run's other outcome: no out-of-bounds access (here the kernel
    run again is a correct one in place of the faulting one)."""
    if _ran_in_child(runtime, request):
        return
    compiled = enigma.compile(scatter)

    @enigma.kernel
    def in_bounds(idx: enigma.u64, C: enigma.f32):
        t = enigma.thread_position_in_grid
        C[t] = 1.0

    compiled._bounds_check_source = (in_bounds, 0)
    idx = np.array([0, FAR], dtype=np.uint64)
    with pytest.raises(enigma.KernelFaultError) as caught:
        runtime.execute(compiled, [idx], output_size=8, grid=2, threads=2)
    assert "it found no out-of-bounds access" in str(caught.value)
    _check_works_after_a_fault(runtime, rng)


def test_faults_outside_kernels_still_end_the_process(tmp_path):
    """The handlers pass faults of other code on: with faulthandler on, it
    prints the traceback, then the process dies of the signal."""
    script = textwrap.dedent("""
        import ctypes, faulthandler, numpy as np, enigma
        rt = enigma.CpuRuntime()

        @enigma.kernel
        def scatter(idx: enigma.u64, C: enigma.f32):
            t = enigma.thread_position_in_grid
            C[idx[t]] = 1.0

        try:
            rt.execute(enigma.compile(scatter),
                       [np.array([1 << 40], np.uint64)], output_size=4)
        except enigma.KernelFaultError:
            print("caught the kernel's fault", flush=True)
        faulthandler.enable()
        ctypes.string_at(0)  # a fault in the interpreter's own code
        print("survived")
    """)
    env = dict(os.environ)
    done = subprocess.run([sys.executable, "-c", script], env=env,
                          capture_output=True, text=True, timeout=300)
    assert "caught the kernel's fault" in done.stdout, done.stderr[-3000:]
    assert "survived" not in done.stdout
    assert done.returncode == -11, (done.returncode, done.stderr[-3000:])
    assert "Fatal Python error: Segmentation fault" in done.stderr


def test_cuda_after_a_fault_says_to_restart(runtime, request, rng):
    """CUDA keeps an illegal address for the whole process: kernels and
    buffers made before the fault, and new runtimes, all say to restart
    the process; nothing crashes, and the CPU runtime works on."""
    if runtime.name != "cuda":
        pytest.skip("CUDA only")
    if _ran_in_child(runtime, request):
        return
    n = 256
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    _check_add_works(runtime, rng)  # loaded before the fault
    prepared = runtime.prepare(enigma.compile(add), [a, b], output_size=4 * n)
    idx = np.full(n, FAR, dtype=np.uint64)
    with pytest.raises(enigma.KernelFaultError) as caught:
        runtime.execute(enigma.compile(scatter), [idx], output_size=4 * n,
                        grid=n, threads=64)
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in str(caught.value)
    with pytest.raises(enigma.EnigmaRuntimeError,
                       match="restart the process"):
        prepared.dispatch(grid=n, threads=64)
    _check_works_after_a_fault(runtime, rng)


def test_cuda_arrays_bound_in_place_are_not_run_again(runtime, request):
    """An output bound in place may hold what the faulting kernel wrote:
    the dispatch is not run again."""
    if runtime.name != "cuda":
        pytest.skip("device arrays")
    if _ran_in_child(runtime, request):
        return
    torch = pytest.importorskip("torch")
    idx = np.full(64, FAR, dtype=np.uint64)
    out = torch.zeros(64, dtype=torch.float32, device="cuda")
    with pytest.raises(enigma.KernelFaultError) as caught:
        runtime.execute(enigma.compile(scatter), [idx], grid=64, threads=64,
                        outputs=[out])
    assert "Run again" not in str(caught.value)
    assert "bounds_check=True" in str(caught.value)


def test_cpu_stack_overflow_is_named(rng):
    """The CPU keeps a value that lives across a barrier in a 1024-slot
    array on the stack (docs/design/cpu-execution.md): 2,300 of them
    (9 MiB) overflow the thread's 8 MiB stack. That is a KernelFaultError saying
    so, and the runtime keeps working; a kernel with few of them computes."""

    def make(count):
        @enigma.kernel
        def many(A: enigma.f32, B: enigma.f32):
            g = enigma.thread_position_in_grid
            vals = [A[g] * float(k + 1) for k in range(count)]
            enigma.barrier()
            acc = A[g]
            for v in vals:
                acc = acc + v
            B[g] = acc
        return enigma.compile(many)

    runtime = enigma.CpuRuntime()
    a = rng.standard_normal(64).astype(np.float32)
    # prepare + dispatch: no bounds-checked re-run (it would fault too)
    prepared = runtime.prepare(make(2300), [a], output_size=a.nbytes)
    with pytest.raises(enigma.KernelFaultError, match="stack overflow") as e:
        prepared.dispatch(grid=64, threads=64)
    assert "keep fewer values alive across barriers" in str(e.value)
    out = np.frombuffer(runtime.execute(make(8), [a], output_size=a.nbytes,
                                        grid=64, threads=64), np.float32)
    want = a.astype(np.float64) * (1 + sum(range(1, 9)))
    np.testing.assert_allclose(out, want, rtol=1e-5)
