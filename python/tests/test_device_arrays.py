"""Zero-copy device arrays (PyTorch, CuPy) bound to kernel buffers in place
on CudaRuntime, and the errors every runtime gives for them. The CUDA tests
run where ENIGMA_TEST_BACKENDS names cuda and torch / cupy are installed."""

import numpy as np
import pytest

import enigma


@enigma.kernel
def add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    i = enigma.thread_position_in_grid
    C[i] = A[i] + B[i]


@enigma.kernel
def scale_bf16(A: enigma.bf16, C: enigma.f32):
    i = enigma.thread_position_in_grid
    C[i] = enigma.metal_cast(A[i], "float") * 2.0


@enigma.kernel
def accumulate(A: enigma.i32, C: enigma.i32):
    i = enigma.thread_position_in_grid
    C[i] = C[i] + A[i]


class FakeCudaArray:
    """Looks like a CUDA array to the protocol check, without a GPU."""
    __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4",
                                "data": (0x1000, False), "version": 3}


def _cuda_only(runtime):
    if runtime.name != "cuda":
        pytest.skip("device arrays are CUDA memory")


@pytest.fixture
def torch_cuda(runtime):
    _cuda_only(runtime)
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch has no CUDA device")
    return torch


# --- every backend ---------------------------------------------------------

def test_host_runtime_refuses_device_arrays(runtime):
    if runtime.name == "cuda":
        pytest.skip("CudaRuntime binds device arrays")
    compiled = enigma.compile(add)
    with pytest.raises(enigma.DispatchError, match=r"input 0 \(A\).*CUDA memory"):
        runtime.execute(compiled, [FakeCudaArray(), np.ones(4, np.float32)],
                        16, grid=4, threads=4)


def test_outputs_must_be_device_arrays(runtime):
    compiled = enigma.compile(add)
    a = np.ones(4, np.float32)
    with pytest.raises(enigma.DispatchError, match=r"output 0 \(C\).*device arrays"):
        runtime.execute(compiled, [a, a], grid=4, threads=4,
                        outputs=[np.zeros(4, np.float32)])


def test_outputs_and_sizes_are_exclusive(runtime):
    compiled = enigma.compile(add)
    a = np.ones(4, np.float32)
    with pytest.raises(enigma.DispatchError, match="not both"):
        runtime.execute(compiled, [a, a], 16, grid=4, threads=4,
                        outputs=[FakeCudaArray()])


def test_dispatch_async_shapes(runtime, rng):
    """The fast launch path parses shapes in C++ and words errors as the
    other dispatch calls do."""
    n = 37
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    prepared = runtime.prepare(enigma.compile(add), [a, b], 4 * n)
    prepared.dispatch_async((n, 1, 1), (8, 1, 1))
    prepared.dispatch_async([n], 8)          # lists and ints go the slow way
    prepared.dispatch_async((n,), (8,))
    prepared.synchronize()
    np.testing.assert_array_equal(
        np.frombuffer(prepared.read_output(), np.float32), a + b)
    with pytest.raises(ValueError, match="grid"):
        prepared.dispatch_async((-1, 1, 1), (8, 1, 1))
    with pytest.raises(TypeError, match="threads"):
        prepared.dispatch_async((n, 1, 1), "eight")
    with pytest.raises(ValueError, match="1 to 3"):
        prepared.dispatch_async((n, 1, 1, 1), (8, 1, 1))
    with pytest.raises(enigma.DispatchError, match="zero dimension"):
        prepared.dispatch_async((0, 1, 1), (8, 1, 1))
    prepared.release()


# --- CUDA ------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 1000, 1 << 20])
def test_torch_inputs_and_outputs_in_place(runtime, torch_cuda, rng, n):
    torch = torch_cuda
    a = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    b = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    a_before, b_before = a.clone(), b.clone()
    c = torch.full((n,), float("nan"), device="cuda")
    result = runtime.execute(enigma.compile(add), [a, b], grid=n, threads=256,
                             outputs=[c])
    assert result == [c]
    expected = (a_before.double() + b_before.double()).float()
    assert torch.equal(c, expected)
    assert torch.equal(a, a_before) and torch.equal(b, b_before)


def test_mixed_host_and_device_inputs(runtime, torch_cuda, rng):
    torch = torch_cuda
    n = 513
    a = rng.standard_normal(n).astype(np.float32)
    b = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    raw = runtime.execute(enigma.compile(add), [a, b], 4 * n, grid=n,
                          threads=64)
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32),
                                  a + b.cpu().numpy())


def test_outputs_are_not_cleared(runtime, torch_cuda, rng):
    """A bound existing buffer keeps its contents, as in Metal."""
    torch = torch_cuda
    n = 300
    a = torch.from_numpy(rng.integers(-50, 50, n, dtype=np.int32)).cuda()
    c = torch.from_numpy(rng.integers(-50, 50, n, dtype=np.int32)).cuda()
    before = c.clone()
    runtime.execute(enigma.compile(accumulate), [a], grid=n, threads=32,
                    outputs=c)
    assert torch.equal(c, before + a)


def test_bfloat16_through_dlpack(runtime, torch_cuda, rng):
    # PyTorch offers no __cuda_array_interface__ for bfloat16: DLPack it is.
    torch = torch_cuda
    n = 777
    a = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    a16 = a.to(torch.bfloat16)
    c = torch.empty(n, device="cuda")
    runtime.execute(enigma.compile(scale_bf16), [a16], grid=n, threads=128,
                    outputs=[c])
    assert torch.equal(c, a16.float() * 2)


def test_producer_stream_is_waited_for(runtime, torch_cuda, rng):
    """Inputs written on a non-default stream are complete before the
    kernel reads them."""
    torch = torch_cuda
    n = 1 << 22
    side = torch.cuda.Stream()
    x = torch.from_numpy(rng.standard_normal(n).astype(np.float32)).cuda()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(20_000_000)  # keep the producer busy
        a = x * 3
        b = x + 1
        c = torch.empty_like(x)
        runtime.execute(enigma.compile(add), [a, b], grid=n, threads=256,
                        outputs=[c])
    torch.cuda.synchronize()
    assert torch.equal(c, a + b)


def test_prepared_device_arrays_async(runtime, torch_cuda, rng):
    torch = torch_cuda
    n = 4096
    a = torch.from_numpy(rng.integers(-9, 9, n, dtype=np.int32)).cuda()
    c = torch.zeros(n, dtype=torch.int32, device="cuda")
    prepared = runtime.prepare(enigma.compile(accumulate), [a], outputs=[c])
    del a  # the prepared kernel keeps the array alive
    for _ in range(10):
        prepared.dispatch_async((n, 1, 1), (128, 1, 1))
    prepared.synchronize()
    expected = prepared._keep_alive[0] * 10
    assert torch.equal(c, expected)
    # read_output still works on an in-place output
    np.testing.assert_array_equal(
        np.frombuffer(prepared.read_output(), np.int32), expected.cpu().numpy())
    prepared.release()


def test_cupy_arrays(runtime, rng):
    _cuda_only(runtime)
    cp = pytest.importorskip("cupy")
    n = 1001
    a = cp.asarray(rng.standard_normal(n).astype(np.float32))
    b = cp.asarray(rng.standard_normal(n).astype(np.float32))
    c = cp.full(n, cp.nan, dtype=cp.float32)
    runtime.execute(enigma.compile(add), [a, b], grid=n, threads=128,
                    outputs=[c])
    np.testing.assert_array_equal(cp.asnumpy(c), cp.asnumpy(a) + cp.asnumpy(b))


def test_device_array_errors(runtime, torch_cuda):
    torch = torch_cuda
    compiled = enigma.compile(add)
    a = torch.ones(64, 2, device="cuda")
    with pytest.raises(enigma.DispatchError, match="not contiguous"):
        runtime.execute(compiled, [a[:, 0], a[:, 1]], 256, grid=64,
                        threads=64)
    d = torch.ones(64, dtype=torch.float64, device="cuda")
    with pytest.raises(enigma.DispatchError, match=r"input 0 \(A\)"):
        runtime.execute(compiled, [d, d], 256, grid=64, threads=64)
    f = torch.ones(64, device="cuda")
    with pytest.raises(enigma.DispatchError, match=r"output 0 \(C\)"):
        runtime.execute(compiled, [f, f], grid=64, threads=64,
                        outputs=[torch.ones(64, dtype=torch.int32,
                                            device="cuda")])
    with pytest.raises(enigma.DispatchError, match="not CUDA memory"):
        runtime.execute(compiled, [FakeCudaArray(), f[:4]], 16, grid=4,
                        threads=4)
