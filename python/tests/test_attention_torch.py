"""The attention ops of enigma.torch (torch.ops.enigma.attention, ...):
results against float64 PyTorch, autograd against float64 autograd,
torch.compile(fullgraph=True), the deterministic mode, CUDA graphs, and
the checks of the arguments. CPU tensors run on the CPU backend; CUDA
tensors where PyTorch has a GPU (scripts/gpu_run.sh)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import enigma.attention as ea  # noqa: E402
import enigma.torch as et  # noqa: E402
from _attention_reference import check_grads, reference_grads  # noqa: E402


def devices():
    found = ["cpu"]
    if torch.cuda.is_available():
        found.append("cuda")
    return found


def compile_backend(device):
    # Inductor needs a C++ toolchain for CPU graphs; aot_eager traces the
    # same graph (fake tensors, functionalisation, the autograd split).
    return "aot_eager" if device == "cpu" else "inductor"


def reference(q, k, v, causal, scale=None):
    """float64 attention of (B, H, S, D) tensors (grouped heads, bottom-
    right causal mask, rows without keys give 0), differentiable."""
    group = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(group, 1)
    v = v.repeat_interleave(group, 1)
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    s = q @ k.transpose(-1, -2) * scale
    if causal:
        sq, skv = q.shape[2], k.shape[2]
        allowed = torch.arange(skv)[None, :] <= \
            torch.arange(sq)[:, None] + skv - sq
        s = s.masked_fill(~allowed.to(s.device), float("-inf"))
    return torch.softmax(s, -1).nan_to_num(0.0) @ v


def inputs(shapes, dtype, device, seed):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(s, generator=g).to(dtype).to(device)
            .requires_grad_() for s in shapes]


def gradient_of(o, rng):
    """A random dO for ``o`` from the test's seed (replayable)."""
    g = torch.Generator().manual_seed(int(rng.integers(1 << 30)))
    return torch.randn(o.shape, generator=g).to(o.dtype).to(o.device)


def packed(x):
    """A (B, H, S, D) or (total, H, D) tensor as float64 numpy (total, H,
    D) and the row ranges of its batches."""
    x = x.detach().double().cpu()
    if x.dim() == 3:
        return x.numpy(), None
    b, h, s, d = x.shape
    return (x.transpose(1, 2).reshape(b * s, h, d).numpy(),
            [slice(i * s, (i + 1) * s) for i in range(b)])


def check_autograd(tensors, do, rows=None, causal=False, grads=None):
    """The gradients autograd left in ``tensors`` (q, k, v), or ``grads``,
    against float64 autograd, within the bounds of the backward's 16-bit
    rounding (_attention_reference)."""
    (q, rows_q), (k, rows_k), (v, _), (g, _) = (packed(x) for x in
                                                (*tensors, do))
    if rows is not None:
        rows_q, rows_k = rows
    want, bounds = reference_grads(q, k, v, g, rows_q, rows_k, causal,
                                   q.shape[-1] ** -0.5)
    if grads is None:
        grads = [x.grad for x in tensors]
    check_grads([packed(g)[0] for g in grads], want, bounds)


def close(got, want, what, rel=2.0**-6):
    """Element-wise |got - want| <= rel (|want| + mean |want|): a few
    16-bit roundings, while a wrong mask, head or block is off by the
    size of the values."""
    got, want = got.double().cpu(), want.double().cpu()
    bound = rel * (want.abs() + want.abs().mean())
    bad = int(((got - want).abs() > bound).sum())
    assert bad == 0, (f"{what}: {bad} of {want.numel()} elements, worst "
                      f"{(got - want).abs().max().item():.4g}")


@pytest.mark.parametrize("device", devices())
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("causal", [False, True])
def test_attention_op_and_autograd(device, dtype, causal, rng):
    q, k, v = inputs([(2, 4, 37, 64), (2, 2, 50, 64), (2, 2, 50, 64)],
                     dtype, device, int(rng.integers(1 << 30)))
    o, lse = et.attention(q, k, v, causal=causal, return_lse=True)
    assert o.dtype == dtype and o.device == q.device
    assert lse.shape == (2, 4, 37)
    want = reference(*(x.detach().double().cpu() for x in (q, k, v)), causal)
    close(o, want, "o")
    do = gradient_of(o, rng)
    o.backward(do)
    check_autograd((q, k, v), do, causal=causal)
    # enigma.attention takes the tensors too, through the same op.
    assert torch.equal(ea.attention(q, k, v, causal=causal), o)


@pytest.mark.parametrize("device", devices())
def test_varlen_op_and_autograd(device, rng):
    lengths_q, lengths_k = [5, 0, 33, 2], [7, 3, 40, 0]
    cu_q = torch.tensor(np.concatenate([[0], np.cumsum(lengths_q)]),
                        dtype=torch.int32, device=device)
    cu_k = torch.tensor(np.concatenate([[0], np.cumsum(lengths_k)]),
                        dtype=torch.int32, device=device)
    q, k, v = inputs([(40, 4, 64), (50, 1, 64), (50, 1, 64)],
                     torch.bfloat16, device, int(rng.integers(1 << 30)))
    o = et.attention_varlen(q, k, v, cu_q, cu_k, max_seqlen_q=33,
                            max_seqlen_k=40, causal=True)
    do = gradient_of(o, rng)
    o.backward(do)
    rows = [[slice(int(c[b]), int(c[b + 1])) for b in range(4)]
            for c in (cu_q, cu_k)]
    for b in range(4):
        want = reference(*(x.detach()[r].double().cpu().transpose(0, 1)[None]
                           for x, r in ((q, rows[0][b]), (k, rows[1][b]),
                                        (v, rows[1][b]))), True)
        close(o[rows[0][b]].transpose(0, 1)[None], want,
              f"o of sequence {b}")
    check_autograd((q, k, v), do, rows, causal=True)


@pytest.mark.parametrize("device", devices())
def test_paged_op(device, rng):
    page, pages = 16, 9
    q = torch.randn(3, 4, 64, dtype=torch.float16, device=device)
    k_cache = torch.randn(pages, page, 2, 64, dtype=torch.float16,
                          device=device)
    v_cache = torch.randn_like(k_cache)
    table = torch.tensor([[4, 0, 7], [2, 8, 1]], dtype=torch.int32,
                         device=device)
    lengths = torch.tensor([40, 20], dtype=torch.int32, device=device)
    cu_q = torch.tensor([0, 1, 3], dtype=torch.int32, device=device)
    o = et.attention_paged(q, k_cache, v_cache, table, lengths, cu_q,
                           causal=True)
    for b, rows in ((0, slice(0, 1)), (1, slice(1, 3))):
        n = int(lengths[b])
        keys = [k_cache[int(p)] for p in table[b]]
        vals = [v_cache[int(p)] for p in table[b]]
        kb = torch.cat(keys)[:n].transpose(0, 1)[None].double().cpu()
        vb = torch.cat(vals)[:n].transpose(0, 1)[None].double().cpu()
        want = reference(q[rows].transpose(0, 1)[None].double().cpu(), kb,
                         vb, True)
        close(o[rows].transpose(0, 1)[None], want, f"sequence {b}")
    bad = table.clone()
    bad[1, 1] = 9
    with pytest.raises(ValueError, match=r"enigma.torch.attention_paged: "
                       r"block_table\[1\] names page 9"):
        et.attention_paged(q, k_cache, v_cache, bad, lengths, cu_q)
    bad[1, 1] = 8
    bad[1, 2] = -1     # past the sequence's 20 keys: never read
    et.attention_paged(q, k_cache, v_cache, bad, lengths, cu_q)


@pytest.mark.parametrize("device", devices())
def test_compile_fullgraph_with_backward(device, rng):
    q, k, v = inputs([(1, 4, 30, 64), (1, 1, 30, 64), (1, 1, 30, 64)],
                     torch.bfloat16, device, int(rng.integers(1 << 30)))

    def f(q, k, v):
        return (et.attention(torch.sin(q), k, v, causal=True) * 2).float() \
            .square().sum()

    compiled = torch.compile(f, fullgraph=True,
                             backend=compile_backend(device))
    got = compiled(q, k, v)
    grads = torch.autograd.grad(got, (q, k, v))
    want = f(q, k, v)
    expect = torch.autograd.grad(want, (q, k, v))
    assert torch.allclose(got, want, rtol=1e-3)
    # dQ is added up with atomics: the last bits may differ between runs.
    for g, e, name in zip(grads, expect, ("dq", "dk", "dv")):
        close(g, e.double(), name, rel=2.0**-7)


@pytest.mark.parametrize("device", devices())
def test_compile_fullgraph_varlen(device, rng):
    cu = torch.tensor([0, 3, 20], dtype=torch.int32, device=device)
    q, k, v = inputs([(20, 2, 64), (20, 2, 64), (20, 2, 64)],
                     torch.float16, device, int(rng.integers(1 << 30)))

    def f(q, k, v):
        return et.attention_varlen(q, k, v, cu, cu, max_seqlen_q=17,
                                   max_seqlen_k=17) + 1

    compiled = torch.compile(f, fullgraph=True,
                             backend=compile_backend(device))
    assert torch.equal(compiled(q, k, v), f(q, k, v))


@pytest.mark.parametrize("device", devices())
def test_deterministic_backward(device, rng):
    """Autograd runs the deterministic backward whether or not PyTorch's
    deterministic algorithms are on; the atomic form, asked for by name,
    agrees to its roundings."""
    q, k, v = inputs([(1, 2, 70, 64), (1, 2, 90, 64), (1, 2, 90, 64)],
                     torch.bfloat16, device, int(rng.integers(1 << 30)))
    do = gradient_of(q, rng)
    runs = []
    for flag in (True, False, False):
        torch.use_deterministic_algorithms(flag)
        try:
            o = et.attention(q, k, v, causal=True)
            runs.append(torch.autograd.grad(o, (q, k, v), do))
        finally:
            torch.use_deterministic_algorithms(False)
    for run in runs[1:]:
        for a, b in zip(runs[0], run):
            assert torch.equal(a, b)
    o, lse = et.attention(q, k, v, causal=True, return_lse=True)
    explicit = et.attention_backward(do, q, k, v, o, lse, causal=True)
    for a, b in zip(runs[0], explicit):
        assert torch.equal(a, b)
    atomic = et.attention_backward(do, q, k, v, o, lse, causal=True,
                                   deterministic=False)
    # Roundings of their own each (dQ: 16-bit P in the atomic path's dS,
    # float P in the dQ kernel's; summation orders): both within the
    # backward's error model of the float64 gradients.
    for grads in (runs[0], atomic):
        check_autograd((q, k, v), do, causal=True, grads=grads)


@pytest.mark.parametrize("device", devices())
def test_argument_mistakes_name_the_argument(device):
    q = torch.zeros(1, 4, 8, 64, dtype=torch.bfloat16, device=device)
    with pytest.raises(ValueError, match=r"enigma.torch.attention: k is f16 "
                       r"but q is bf16"):
        et.attention(q, q.half(), q.half())
    with pytest.raises(ValueError, match="q has 4 heads and k 3"):
        k = torch.zeros(1, 3, 8, 64, dtype=torch.bfloat16, device=device)
        et.attention(q, k, k)
    with pytest.raises(ValueError, match="k is not contiguous"):
        t = torch.zeros(1, 4, 64, 8, dtype=torch.bfloat16, device=device)
        et.attention(q, t.transpose(2, 3), q)
    with pytest.raises(ValueError, match="v must be bfloat16.* got f32"):
        et.attention(q, q, q.float())
    if device == "cuda":
        with pytest.raises(ValueError, match=r"k is on cpu but the other "
                           r"arguments are on cuda:0"):
            et.attention(q, q.cpu(), q.cpu())
    cu = torch.tensor([0, 5, 3], dtype=torch.int32)
    p = torch.zeros(5, 2, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="cu_seqlens_q decreases"):
        et.attention_varlen(p, p, p, cu, cu, max_seqlen_q=5, max_seqlen_k=5)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_graph_capture_and_replay(rng):
    """Forward and paged decode captured in one CUDA graph and replayed on
    new inputs copied into the captured tensors."""
    dev = "cuda"
    q = torch.randn(2, 8, 1, 128, dtype=torch.bfloat16, device=dev)
    k = torch.randn(2, 2, 300, 128, dtype=torch.bfloat16, device=dev)
    v = torch.randn_like(k)
    k_cache = torch.randn(20, 64, 2, 128, dtype=torch.bfloat16, device=dev)
    v_cache = torch.randn_like(k_cache)
    table = torch.tensor([[3, 1, 9, 4, 0], [7, 2, 5, 6, 8]],
                         dtype=torch.int32, device=dev)
    lengths = torch.tensor([300, 190], dtype=torch.int32, device=dev)
    cu = torch.arange(3, dtype=torch.int32, device=dev)
    qp = q[:, :, 0].contiguous()

    def step():
        return (et.attention(q, k, v, num_splits=3),
                et.attention_paged(qp, k_cache, v_cache, table, lengths, cu,
                                   max_seqlen_q=1))

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        step()                       # compile and warm up
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out, out_paged = step()
    for _ in range(2):
        q.copy_(torch.randn_like(q))
        k.copy_(torch.randn_like(k))
        qp.copy_(q[:, :, 0])
        graph.replay()
        torch.cuda.synchronize()
        close(out, reference(q.double().cpu(), k.double().cpu(),
                             v.double().cpu(), False), "graph forward")
        eager = et.attention_paged(qp, k_cache, v_cache, table, lengths, cu)
        close(out_paged, eager.double(), "graph paged")
