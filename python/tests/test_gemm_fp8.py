"""enigma.gemm_fp8 and enigma.gemm_fp8_block (docs/reference/fp8.md): the
scaled 8-bit float GEMM on each runtime, per-tensor, per-row/column and
per-block (1 x 128 for A, 128 x 128 for B) scales, every output type, at
edge sizes (M = 1, odd sizes, K not a multiple of any tile or of the scale
block), against numpy float64 computed from the dequantised operands (the
8-bit values decoded by the formats' definition in test_fp8.py, not by
Enigma); outputs poisoned before each run; bad inputs refused clearly."""

import numpy as np
import pytest

import enigma
from test_fp8 import as_float, ref_decode

BLOCK = 128
DECODE = {fmt: np.array([as_float(ref_decode(b, fmt)) for b in range(256)])
          for fmt in ("f8e4m3", "f8e5m2")}
FP8_MAX = {"f8e4m3": 448.0, "f8e5m2": 57344.0}
# Relative rounding of each output type (half an ulp of the significand).
OUT_REL = {"f32": 2.0**-24, "f16": 2.0**-11, "bf16": 2.0**-8,
           "f8e4m3": 2.0**-4, "f8e5m2": 2.0**-3}
POISON = {"f32": (np.float32, np.nan), "f16": (np.float16, np.nan),
          "bf16": (np.uint16, 0x7FC1), "f8e4m3": (np.uint8, 0x7F),
          "f8e5m2": (np.uint8, 0x7F)}


def random_bits(rng, shape, fmt):
    """Random finite 8-bit patterns of moderate size (exponents near 0, both
    signs, subnormals and zeros included)."""
    finite = [b for b in range(256) if np.isfinite(DECODE[fmt][b])
              and abs(DECODE[fmt][b]) <= 16]
    return rng.choice(np.array(finite, np.uint8), size=shape)


def scales_for(rng, scaling, m, n, k):
    kb, nb = -(-k // BLOCK), -(-n // BLOCK)
    shapes = {"tensor": ((1,), (1,)), "row": ((m,), (n,)),
              "block": ((m, kb), (nb, kb))}[scaling]
    return tuple(rng.uniform(0.05, 2.0, s).astype(np.float32) for s in shapes)


def dequantised(a, b, sa, sb, fa, fb, scaling, k):
    """float64 A and B with their scales applied."""
    A = DECODE[fa][a]
    B = DECODE[fb][b]
    sa64, sb64 = sa.astype(np.float64), sb.astype(np.float64)
    if scaling == "tensor":
        return A * sa64[0], B * sb64[0]
    if scaling == "row":
        return A * sa64[:, None], B * sb64[:, None]
    n = B.shape[0]
    sa_full = np.repeat(sa64, BLOCK, axis=1)[:, :k]
    sb_full = np.repeat(np.repeat(sb64, BLOCK, axis=0), BLOCK, axis=1)[:n, :k]
    return A * sa_full, B * sb_full


def decode_out(c, out):
    c = np.asarray(c)
    if out == "bf16":
        return (c.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if out in DECODE:
        return DECODE[out][c]
    return c.astype(np.float64)


def assert_close(got, A, B, out, runtime, scale_out=1.0):
    want = (A @ B.T) * scale_out
    if out in FP8_MAX:
        want = np.clip(want, -FP8_MAX[out], FP8_MAX[out])
    k = A.shape[1]
    # f32 sums (each K block's partial sum scaled and added for block
    # scales); Hopper's 8-bit tensor-core sums keep fewer bits.
    e = 2.0**-10 if runtime.name == "cuda" else (2 * k + 8) * 2.0**-24
    bound = OUT_REL[out] * np.abs(want) + \
        e * abs(scale_out) * (np.abs(A) @ np.abs(B).T) + 1e-30
    if out == "f16":
        bound += 2.0**-25
    elif out in FP8_MAX:   # subnormal outputs: half the smallest step
        bound += 2.0**-10 if out == "f8e4m3" else 2.0**-17
    err = np.abs(got - want)
    bad = ~(err <= bound)
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} elements wrong; first at "
        f"{np.argwhere(bad)[0]}: got {got[bad][0]}, want {want[bad][0]}")


class Arrays:
    """Operands where the runtime reads them: numpy for the host runtimes,
    PyTorch CUDA tensors for CUDA."""

    def __init__(self, runtime):
        self.torch = None
        if runtime.name == "cuda":
            self.torch = pytest.importorskip("torch")
            if not self.torch.cuda.is_available():
                pytest.skip("PyTorch has no CUDA device")
            self.device = f"cuda:{runtime.device}"

    def put(self, x):
        x = np.ascontiguousarray(x)
        if self.torch is None:
            return x.copy()
        if x.dtype == np.uint16:
            return self.torch.from_numpy(x.view(np.int16).copy()).view(
                self.torch.bfloat16).to(self.device)
        return self.torch.from_numpy(x.copy()).to(self.device)

    def out(self, out, m, n):
        dtype, value = POISON[out]
        host = np.full((m, n), value, dtype)
        if self.torch is None:
            return host
        t = self.put(host)
        if out in FP8_MAX:
            t = t.view({"f8e4m3": self.torch.float8_e4m3fn,
                        "f8e5m2": self.torch.float8_e5m2}[out])
        return t

    def get(self, x):
        if self.torch is None:
            return np.asarray(x)
        self.torch.cuda.synchronize()
        if x.dtype == self.torch.bfloat16:
            return x.view(self.torch.int16).cpu().numpy().view(np.uint16)
        if x.element_size() == 1:
            return x.view(self.torch.uint8).cpu().numpy()
        return x.cpu().numpy()


def run(runtime, rng, m, n, k, scaling, out, fa="f8e4m3", fb="f8e4m3",
        config=None, scale_out=None, amax=False):
    arr = Arrays(runtime)
    a = random_bits(rng, (m, k), fa)
    b = random_bits(rng, (n, k), fb)
    sa, sb = scales_for(rng, scaling, m, n, k)
    c = arr.out(out, m, n)
    result = enigma.gemm_fp8(arr.put(a), arr.put(b), arr.put(sa),
                             arr.put(sb), out_dtype=out, a_dtype=fa,
                             b_dtype=fb, out=c, config=config,
                             scale_out=scale_out, amax=amax,
                             runtime=runtime)
    got_amax = None
    if amax:
        result, got_amax = result
    assert result is c
    A, B = dequantised(a, b, sa, sb, fa, fb, scaling, k)
    assert_close(decode_out(arr.get(c), out), A, B, out, runtime,
                 1.0 if scale_out is None else scale_out)
    return A, B, got_amax


CASES = [  # (m, n, k, scaling, out)
    (1, 33, 40, "tensor", "bf16"),
    (37, 70, 300, "tensor", "f32"),
    (1, 5, 129, "row", "f16"),
    (45, 66, 161, "row", "bf16"),
    (3, 130, 257, "block", "f32"),
    (70, 129, 200, "block", "bf16"),
    (2, 1, 1, "block", "f16"),
]


@pytest.mark.parametrize("m,n,k,scaling,out", CASES)
def test_gemm_fp8_matches_dequantised_float64(runtime, rng, m, n, k,
                                              scaling, out):
    run(runtime, rng, m, n, k, scaling, out)


@pytest.mark.parametrize("fa,fb", [("f8e5m2", "f8e4m3"),
                                   ("f8e4m3", "f8e5m2")])
def test_mixed_formats(runtime, rng, fa, fb):
    run(runtime, rng, 19, 40, 96, "row", "f32", fa=fa, fb=fb)


@pytest.mark.parametrize("out", ["f8e4m3", "f8e5m2"])
def test_fp8_output_with_amax(runtime, rng, out):
    A, B, amax = run(runtime, rng, 21, 35, 140, "tensor", out,
                     scale_out=0.25, amax=True)
    want = float(np.abs(A @ B.T).max())
    # Hopper's 8-bit products accumulate with fewer bits than f32 (the
    # products' tolerance, 2^-10 relative, bounds max |C| too).
    rel = 2.0 ** -10 if runtime.name == "cuda" else 1e-5
    assert abs(amax - want) <= rel * want


def test_fp8_output_saturates(runtime, rng):
    """A large scale_out pushes results past 448: they saturate, not NaN."""
    run(runtime, rng, 9, 17, 64, "tensor", "f8e4m3", scale_out=1e4)


@pytest.mark.parametrize("scaling", ["tensor", "block"])
def test_warpgroup_configuration(runtime, rng, scaling):
    """A configuration of warpgroup products (wgmma on Hopper; the same
    result elsewhere), with a partial block of rows and columns and a
    partial K tile. Three stages keep a product in flight across the
    barrier (two on the MSL host runtime: Metal's 32 KiB)."""
    stages = 2 if runtime.name == "metal-host" else 3
    config = enigma.MmaConfig(64, 64, 128, 4, 1, stages)
    assert enigma.fp8_warpgroup_shape(config)
    run(runtime, rng, 70, 100, 300, scaling, "bf16", config=config)


def test_tuned_configs_fit_and_run(runtime, rng):
    """The first configuration of each target's list runs (the default)."""
    target = {"cuda": "cuda"}.get(runtime.name, "cpu" if runtime.name ==
                                  "cpu" else "metal")
    for scaling in enigma.FP8_SCALINGS:
        configs = enigma.gemm_fp8_configs(target, scaling)
        assert configs, scaling
        if scaling == "block":
            assert all(c.bk == 128 and 128 % c.bn == 0 for c in configs)


def test_scale_arrays_may_be_read_only_or_numbers(rng):
    """Per-tensor scales as Python numbers, a row scale of one value
    broadcast (M = 1), read-only scale arrays."""
    rt = enigma.CpuRuntime()
    a = random_bits(rng, (1, 40), "f8e4m3")
    b = random_bits(rng, (6, 40), "f8e4m3")
    sb = np.linspace(0.5, 1.5, 6).astype(np.float32)
    sb.flags.writeable = False
    c = enigma.gemm_fp8(a, b, np.float32(0.5), sb, out_dtype="f32",
                        runtime=rt)
    A = DECODE["f8e4m3"][a] * 0.5
    B = DECODE["f8e4m3"][b] * sb[:, None].astype(np.float64)
    assert_close(c, A, B, "f32", rt)
    c2 = enigma.gemm_fp8(a, b, 2.0, 0.75, out_dtype="f32", runtime=rt)
    assert_close(c2, DECODE["f8e4m3"][a] * 2.0, DECODE["f8e4m3"][b] * 0.75,
                 "f32", rt)


# --- bad input -----------------------------------------------------------

def _operands(rng, m=4, n=8, k=32):
    return random_bits(rng, (m, k), "f8e4m3"), random_bits(rng, (n, k),
                                                           "f8e4m3")


@pytest.mark.parametrize("sa_shape,sb_shape", [
    ((3,), (8,)),        # A's row scales: M is 4
    ((4,), (7,)),        # B's row scales: N is 8
    ((4, 2), (1, 1)),    # A's blocks: K = 32 has one block of 128
    ((4, 1), (2, 1)),    # B's blocks: N = 8 has one block of 128
    ((2, 2), (2, 2)),
])
def test_bad_scale_shapes_are_refused(rng, sa_shape, sb_shape):
    a, b = _operands(rng)
    with pytest.raises(enigma.DispatchError, match="fit no scaling"):
        enigma.gemm_fp8(a, b, np.ones(sa_shape, np.float32),
                        np.ones(sb_shape, np.float32),
                        runtime=enigma.CpuRuntime())


def test_bad_operands_are_refused(rng):
    a, b = _operands(rng)
    rt = enigma.CpuRuntime()
    one = np.ones(1, np.float32)
    with pytest.raises(enigma.DispatchError, match="same K"):
        enigma.gemm_fp8(a, b[:, :16], one, one, runtime=rt)
    with pytest.raises(enigma.DispatchError, match="8-bit floats"):
        enigma.gemm_fp8(a.astype(np.float32), b, one, one, runtime=rt)
    with pytest.raises(enigma.DispatchError, match="out_dtype"):
        enigma.gemm_fp8(a, b, one, one, out_dtype="i32", runtime=rt)
    with pytest.raises(enigma.DispatchError, match="scale_out"):
        enigma.gemm_fp8(a, b, one, one, out_dtype="bf16", scale_out=2.0,
                        runtime=rt)
    with pytest.raises(enigma.DispatchError, match="float32"):
        enigma.gemm_fp8(a, b, np.ones(1, np.int32), one, runtime=rt)
    with pytest.raises(enigma.DispatchError, match="2-D"):
        enigma.gemm_fp8(a.reshape(-1), b, one, one, runtime=rt)
    # A misspelt format names the argument and the two formats.
    for wrong in ("f8e3m4", "f16", 3):
        with pytest.raises(enigma.DispatchError,
                           match=r"gemm_fp8: b_dtype must be enigma\.f8e4m3 "
                                 r"or enigma\.f8e5m2, got"):
            enigma.gemm_fp8(a, b, one, one, b_dtype=wrong, runtime=rt)
    with pytest.raises(enigma.DispatchError, match="must be 4 x 8"):
        enigma.gemm_fp8(a, b, one, one, out=np.empty((8, 4), np.uint16),
                        runtime=rt)
    a, b = _operands(rng, k=200)
    with pytest.raises(enigma.EnigmaError, match="block scaling"):
        enigma.gemm_fp8(a, b, np.ones((4, 2), np.float32),
                        np.ones((1, 2), np.float32),
                        config=enigma.MmaConfig(32, 32, 64, 1, 1, 2),
                        runtime=rt)

    # (Warp-specialised configurations run: test_gemm_fp8_pipelined.py.)
    with pytest.raises(enigma.EnigmaError, match="split_k"):
        enigma.gemm_fp8(a, b, 1.0, 1.0, config=enigma.MmaConfig(
            128, 128, 128, 8, 1, 4, warp_specialized=True, split_k=2),
            runtime=rt)


# --- the example ------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["--m", "1", "--n", "40", "--k", "72"],
    ["--m", "33", "--n", "131", "--k", "300", "--scaling", "block"],
    ["--m", "20", "--n", "24", "--k", "100", "--scaling", "row", "--out",
     "f8e4m3", "--amax", "--scale-out", "0.5", "--a-format", "f8e5m2"],
])
def test_example_cli(runtime, args, capsys):
    if runtime.name == "cuda":
        torch = pytest.importorskip("torch")
        if not torch.cuda.is_available():
            pytest.skip("PyTorch has no CUDA device")
    from test_examples import _load
    module = _load("gemm_fp8")
    assert module.main(args + ["--runtime", runtime.name]) == 0
    assert ": pass" in capsys.readouterr().out


def test_torch_float8_tensors(rng):
    """PyTorch float8 tensors (their own formats, no a_dtype) in, a tensor
    of the output dtype out (CPU tensors here; CUDA ones in the GPU run
    through the runtime fixture's cases)."""
    torch = pytest.importorskip("torch")
    a_bits = random_bits(rng, (5, 40), "f8e4m3")
    b_bits = random_bits(rng, (7, 40), "f8e5m2")
    a = torch.from_numpy(a_bits).view(torch.float8_e4m3fn)
    b = torch.from_numpy(b_bits).view(torch.float8_e5m2)
    sb = torch.from_numpy(rng.uniform(0.5, 2, 7).astype(np.float32))
    c = enigma.gemm_fp8(a, b, torch.tensor([0.5]), sb, out_dtype="f8e4m3",
                        runtime=enigma.CpuRuntime())
    assert c.dtype == torch.float8_e4m3fn and tuple(c.shape) == (5, 7)
    A = DECODE["f8e4m3"][a_bits] * 0.5
    B = DECODE["f8e5m2"][b_bits] * sb.numpy()[:, None].astype(np.float64)
    assert_close(DECODE["f8e4m3"][c.view(torch.uint8).numpy()], A, B,
                 "f8e4m3", enigma.CpuRuntime())
    with pytest.raises(enigma.DispatchError, match="a_dtype says"):
        enigma.gemm_fp8(a, b, 1.0, 1.0, a_dtype="f8e5m2")


def test_cuda_graph_capture_with_number_scales(rng):
    """Scales given as Python numbers and no scale_out: nothing in the call
    copies from the host and waits (which each call did, doubling its time
    at 4096^3, and which a CUDA graph cannot capture); captured and
    replayed on new operands copied into the captured ones."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device for PyTorch")
    m, n, k = 33, 70, 160
    bits = [random_bits(rng, s, "f8e4m3") for s in ((m, k), (n, k))]
    a, b = (torch.from_numpy(x).view(torch.float8_e4m3fn).cuda()
            for x in bits)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        enigma.gemm_fp8(a, b, 0.5, 2.0)       # compile and warm up
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = enigma.gemm_fp8(a, b, 0.5, 2.0)
    for _ in range(2):
        bits = [random_bits(rng, s, "f8e4m3") for s in ((m, k), (n, k))]
        a.copy_(torch.from_numpy(bits[0]).view(torch.float8_e4m3fn))
        b.copy_(torch.from_numpy(bits[1]).view(torch.float8_e4m3fn))
        c.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        got = decode_out(c.view(torch.int16).cpu().numpy().view(np.uint16),
                         "bf16")
        assert_close(got, DECODE["f8e4m3"][bits[0]] * 0.5,
                     DECODE["f8e4m3"][bits[1]] * 2.0, "bf16",
                     enigma.CudaRuntime())
