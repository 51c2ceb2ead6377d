"""PyTorch: the function-call form on tensors (CPU tensors on the CPU
backend, CUDA tensors on CUDA: in place, on the current stream, no host
synchronisation) and Enigma kernels as torch.library custom ops
(torch.compile without graph breaks, CUDA graphs, autograd). Skipped
without torch; the CUDA tests run on the GPU machine
(scripts/gpu_run.sh)."""

import itertools

import numpy as np
import pytest

import enigma

torch = pytest.importorskip("torch")
import enigma.torch as et  # noqa: E402

_names = itertools.count()


def op_name(base):
    """A fresh op name per registration (ops live until the process ends)."""
    return f"enigma_tests::{base}_{next(_names)}"


@enigma.kernel
def scale(X: enigma.f32, Y: enigma.f32, k: enigma.Scalar(enigma.f32),
          n: enigma.Scalar(enigma.u32)):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        Y[i] = X[i] * k


@enigma.kernel
def add_into(A: enigma.f32, B: enigma.f32, n: enigma.Scalar(enigma.u32)):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        A[i] = A[i] + B[i]


@enigma.kernel
def sum_and_diff(A: enigma.f32, B: enigma.f32, S: enigma.f32, D: enigma.f32,
                 n: enigma.Scalar(enigma.u32)):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        S[i] = A[i] + B[i]
        D[i] = A[i] - B[i]


@enigma.kernel
def bf16_to_f32(A: enigma.bf16, C: enigma.f32, n: enigma.Scalar(enigma.u32)):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        C[i] = enigma.metal_cast(A[i], "float")


def devices():
    """CPU always; CUDA where torch has it."""
    found = ["cpu"]
    if torch.cuda.is_available():
        found.append("cuda")
    return found


def compile_backend(device):
    # Inductor needs a compiler toolchain for CPU code; aot_eager traces
    # the same graph (fake tensors, functionalisation) without generating
    # code. On CUDA the default backend runs.
    return "aot_eager" if device == "cpu" else "inductor"


def randn(n, device, generator_seed):
    g = torch.Generator().manual_seed(generator_seed)
    return torch.randn(n, generator=g).to(device)


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("n", [1, 1000, (1 << 18) + 1])
def test_call_form_on_tensors_in_place(device, n, rng):
    x = randn(n, device, int(rng.integers(1 << 30)))
    y = torch.full((n,), float("nan"), device=device)
    scale.launch(grid=n, threads=256)(x, y, 1.5, n)
    expected = (x.double() * 1.5).float()
    assert torch.equal(y, expected)
    # bfloat16 tensors bind to bf16 parameters.
    h = x.to(torch.bfloat16)
    c = torch.empty(n, device=device)
    bf16_to_f32[n](h, c, n)
    assert torch.equal(c, h.float())


@pytest.mark.parametrize("device", devices())
def test_tensor_mistakes(device):
    x = torch.zeros(16, device=device)
    with pytest.raises(enigma.DispatchError,
                       match=r"argument X \(f32 buffer\) is a torch.Tensor of "
                             r"torch.float64.*takes float32 arrays"):
        scale[16](x.double(), x, 1.0, 16)
    with pytest.raises(enigma.DispatchError, match="not contiguous"):
        scale[8](torch.zeros(4, 4, device=device).t(), x, 1.0, 8)
    with pytest.raises(enigma.DispatchError, match="16-byte boundary"):
        scale[8](x[1:9], x, 1.0, 8)
    if device == "cuda":
        with pytest.raises(enigma.DispatchError,
                           match=r"different places: X \(f32 buffer\) is a "
                                 r"torch.Tensor.*host memory.*CUDA device"):
            scale[16](torch.zeros(16), x, 1.0, 16)


# --- custom ops ----------------------------------------------------------------

def make_scale_op():
    return et.custom_op(op_name("scale"), scale,
                        outputs={"Y": lambda X, **_: torch.empty_like(X)},
                        grid=lambda n, **_: n, threads=128)


@pytest.mark.parametrize("device", devices())
def test_custom_op_with_an_output(device, rng):
    op = make_scale_op()
    n = 1000
    x = randn(n, device, int(rng.integers(1 << 30)))
    y = op(x, 2.5, n)
    assert y.shape == x.shape and y.device == x.device
    assert torch.equal(y, (x.double() * 2.5).float())
    namespace, name = op._qualname.split("::")
    again = getattr(getattr(torch.ops, namespace), name)(x, 3.0, n)
    assert torch.equal(again, (x.double() * 3.0).float())
    # Read-only inputs are made contiguous for the kernel.
    strided = torch.stack([x, x], 1)[:, 0]
    assert torch.equal(op(strided, 2.0, n), x * 2)


@pytest.mark.parametrize("device", devices())
def test_custom_op_under_torch_compile_without_graph_breaks(device, rng):
    op = make_scale_op()
    mutate = et.custom_op(op_name("add_into"), add_into, mutates_args=("A",),
                          grid=lambda n, **_: n)

    def f(x, acc):
        y = op(torch.sin(x), 2.0, x.numel())
        mutate(acc, y, x.numel())
        return y * 3, acc

    n = 777
    x = randn(n, device, int(rng.integers(1 << 30)))
    acc = torch.ones(n, device=device)
    compiled = torch.compile(f, fullgraph=True, backend=compile_backend(device))
    y, out = compiled(x, acc)
    ref_y = torch.sin(x) * 2.0
    torch.testing.assert_close(y, ref_y * 3)
    torch.testing.assert_close(acc, 1 + ref_y)
    assert out is acc
    explanation = torch._dynamo.explain(f)(x, torch.ones(n, device=device))
    assert explanation.graph_break_count == 0


@pytest.mark.parametrize("device", devices())
def test_custom_op_with_two_outputs_and_a_fake(device):
    calls = []

    def fake(A, B, n):
        calls.append(1)
        return torch.empty_like(A), torch.empty_like(A)

    op = et.custom_op(op_name("sum_and_diff"), sum_and_diff,
                      outputs={"S": lambda A, **_: torch.empty_like(A),
                               "D": lambda A, **_: torch.empty_like(A)},
                      grid=lambda n, **_: n, fake=fake)
    a = torch.arange(10.0, device=device)
    b = torch.ones(10, device=device)
    s, d = op(a, b, 10)
    assert torch.equal(s, a + 1) and torch.equal(d, a - 1)
    s, d = torch.compile(lambda a, b: op(a, b, 10), fullgraph=True,
                         backend=compile_backend(device))(a, b)
    assert torch.equal(s, a + 1) and calls


@pytest.mark.parametrize("device", devices())
def test_custom_op_with_an_enigma_backward(device):
    def setup_context(ctx, inputs, output):
        ctx.k = inputs[1]

    def backward(ctx, grad):
        grad = grad.contiguous()
        out = torch.empty_like(grad)
        scale[grad.numel()](grad, out, ctx.k, grad.numel())  # dY/dX = k
        return out, None, None

    op = et.custom_op(op_name("scale_grad"), scale,
                      outputs={"Y": lambda X, **_: torch.empty_like(X)},
                      grid=lambda n, **_: n, backward=backward,
                      setup_context=setup_context)
    x = torch.linspace(-1, 1, 50, device=device, requires_grad=True)
    y = op(x, 4.0, 50)
    (y * torch.arange(50.0, device=device)).sum().backward()
    assert torch.equal(x.grad, 4.0 * torch.arange(50.0, device=device))


def test_custom_op_mistakes():
    with pytest.raises(enigma.EnigmaError, match="not a buffer parameter"):
        et.custom_op(op_name("bad"), scale, grid=1, mutates_args=("k",))
    with pytest.raises(enigma.EnigmaError, match="both mutated"):
        et.custom_op(op_name("bad"), scale, grid=1, mutates_args=("Y",),
                     outputs={"Y": lambda **_: None})
    with pytest.raises(enigma.EnigmaError, match="takes an @enigma.kernel"):
        et.custom_op(op_name("bad"), lambda x: x, grid=1)


# --- CUDA: streams, graphs ---------------------------------------------------------

cuda_only = pytest.mark.skipif(not torch.cuda.is_available(),
                               reason="needs a CUDA device")


@cuda_only
def test_launch_follows_a_producer_on_a_side_stream():
    """The kernel is queued on the caller's current stream: it runs after
    the producer queued before it there, and the host does not wait."""
    n = 1 << 22
    x = torch.zeros(n, device="cuda")
    y = torch.full((n,), float("nan"), device="cuda")
    side = torch.cuda.Stream()
    scale[n](y, y, 1.0, n)  # compiled and loaded before the timed part
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000_000)  # keeps the stream busy ~1 s
        x.fill_(3.0)                    # the producer
        scale[n](x, y, 2.0, n)          # must see x == 3
        assert not side.query(), "the launch waited for the GPU"
    side.synchronize()
    assert torch.equal(y, torch.full_like(y, 6.0))
    # And on the default stream of another context of use:
    scale[n](y, x, 0.5, n)
    torch.cuda.synchronize()
    assert torch.equal(x, torch.full_like(x, 3.0))


@cuda_only
def test_cuda_graph_captures_100_launches():
    n = 4096
    acc = torch.zeros(n, device="cuda")
    step = torch.arange(n, dtype=torch.float32, device="cuda")
    add_into[n](acc, step, n)  # load before capturing
    acc.zero_()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(100):
            add_into.launch(grid=n, threads=128)(acc, step, n)
    acc.zero_()
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(acc, step * 100)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(acc, step * 200)


@cuda_only
def test_custom_op_in_a_captured_graph():
    op = make_scale_op()
    x = torch.randn(1000, device="cuda")
    y = op(x, 2.0, 1000)  # warm up (loads the kernel)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = op(x, 2.0, 1000)
    x.copy_(torch.arange(1000.0, device="cuda"))
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(y, torch.arange(1000.0, device="cuda") * 2)


@cuda_only
def test_launch_cost_stays_on_the_host_side():
    """Many launches queue without waiting (the GPU is kept busy first)."""
    import time
    n = 32
    a = torch.zeros(n, device="cuda")
    b = torch.ones(n, device="cuda")
    add_into[n](a, b, n)
    torch.cuda.synchronize()
    torch.cuda._sleep(500_000_000)
    start = time.perf_counter()
    for _ in range(1000):
        add_into[n](a, b, n)
    host = time.perf_counter() - start
    assert not torch.cuda.current_stream().query()
    torch.cuda.synchronize()
    assert torch.equal(a, torch.full_like(a, 1001.0))
    print(f"host time per launch: {host / 1000 * 1e6:.2f} us")
