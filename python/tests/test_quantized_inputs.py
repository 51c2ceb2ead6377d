"""What a first user of enigma.quantize / quantized_matmul passes from
docs/reference/quantized.md alone: float32 activations through the
default tile shapes on every runtime, and read-only arrays (np.load with
mmap_mode="r", arrays of frozen buffers), checked against float64 numpy."""

import numpy as np
import pytest

import enigma
from conftest import misaligned
from enigma import quantized as eq


@pytest.fixture
def host_runtime(runtime):
    """The host runtimes: numpy arrays run there (CUDA takes CUDA tensors,
    test_quantized.py and test_gemm_fp8.py cover those)."""
    if runtime.name not in ("cpu", "metal-host"):
        pytest.skip("numpy arrays run on the host runtimes")
    return runtime


def reference_dequantize(w_q, scales, biases, group_size):
    """float64 w_hat from the format's definition (lowest nibble first)."""
    words = np.asarray(w_q).view(np.uint32)
    shifts = 4 * np.arange(8, dtype=np.uint32)
    codes = ((words[..., None] >> shifts) & 15).reshape(
        *words.shape[:-1], words.shape[-1] * 8).astype(np.float64)
    s = np.repeat(np.asarray(scales, np.float64), group_size, axis=-1)
    b = np.repeat(np.asarray(biases, np.float64), group_size, axis=-1)
    return s * codes + b


@pytest.mark.parametrize("m", [5, 17, 65])
@pytest.mark.parametrize("group_size", [32, 128])
def test_float32_default_tiles_fit_every_runtime(host_runtime, rng, m,
                                                 group_size):
    """The default matrix-product tiles take float32 activations within
    the runtime's threadgroup memory (the MSL host runtime's 32 KiB: the
    16-bit tile shapes are twice as large in float32)."""
    n, k = 9, 256
    w = rng.standard_normal((n, k)).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w_q, scales, biases = enigma.quantize(w, group_size=group_size,
                                          runtime=host_runtime)
    out = np.full((m, n), np.nan, np.float32)
    y = enigma.quantized_matmul(x, w_q, scales, biases,
                                group_size=group_size, out=out,
                                runtime=host_runtime)
    want = x.astype(np.float64) @ reference_dequantize(
        w_q, scales, biases, group_size).T
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("m", [1, 5, 17, 65, 129])
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("target", ["cuda", "metal", "cpu"])
def test_default_config_fits_the_target(m, dtype, target):
    """Every default tile shape keeps to its target's threadgroup memory
    (32 KiB on Metal and the host lists, 227 KiB on CUDA) for every
    activation dtype, staged words included."""
    config = eq.default_config(m, target, dtype=dtype)
    if isinstance(config, eq.QmvConfig):
        return
    limit = 227 * 1024 if target == "cuda" else 32 * 1024
    words = config.stages * config.bn * config.bk // 2
    assert config.smem_bytes(dtype) + words <= limit, config


def test_default_config_without_dtype_is_unchanged():
    assert eq.default_config(17, "metal") == \
        eq.quantized_matmul_configs("metal")["medium"]


def test_read_only_inputs(host_runtime, rng):
    """Inputs a kernel only reads may be read-only numpy arrays (they are
    copied; the caller's arrays stay as they were)."""
    w = rng.standard_normal((8, 64)).astype(np.float32)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    w.setflags(write=False)
    x.setflags(write=False)
    w_q, scales, biases = enigma.quantize(w, group_size=32,
                                          runtime=host_runtime)
    for a in (w_q, scales, biases):
        a.setflags(write=False)
    w_hat = enigma.dequantize(w_q, scales, biases, group_size=32,
                              runtime=host_runtime)
    want_hat = reference_dequantize(w_q, scales, biases, 32)
    np.testing.assert_allclose(w_hat, want_hat, rtol=1e-6, atol=1e-6)
    y = enigma.quantized_matmul(x, w_q, scales, biases, group_size=32,
                                runtime=host_runtime)
    np.testing.assert_allclose(y, x.astype(np.float64) @ want_hat.T,
                               rtol=1e-5, atol=1e-4)
    assert not x.flags.writeable and not w_q.flags.writeable


def test_read_only_out_is_named():
    x = np.ones((2, 64), np.float32)
    w_q, scales, biases = enigma.quantize(np.ones((4, 64), np.float32),
                                          group_size=64)
    out = np.zeros((2, 4), np.float32)
    out.setflags(write=False)
    with pytest.raises(ValueError, match="out is read-only"):
        enigma.quantized_matmul(x, w_q, scales, biases, out=out)


@pytest.mark.parametrize("m", [1, 5])
def test_misaligned_inputs(host_runtime, rng, m):
    w = rng.standard_normal((8, 64)).astype(np.float32)
    x = rng.standard_normal((m, 64)).astype(np.float32)
    w_q, scales, biases = enigma.quantize(misaligned(w), group_size=32,
                                          runtime=host_runtime)
    want_q = enigma.quantize(w, group_size=32, runtime=host_runtime)
    for got, want in zip((w_q, scales, biases), want_q):
        np.testing.assert_array_equal(got, want)
    y = enigma.quantized_matmul(misaligned(x), misaligned(w_q), scales,
                                misaligned(biases), group_size=32,
                                runtime=host_runtime)
    want = x.astype(np.float64) @ reference_dequantize(
        w_q, scales, biases, 32).T
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-4)


def test_first_example_of_the_reference_runs_as_written():
    """docs/reference/quantized.md's first block, executed as it stands
    (CUDA tensors where PyTorch has a GPU, CPU tensors elsewhere)."""
    import pathlib
    pytest.importorskip("torch")
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" /
            "reference" / "quantized.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    scope = {}
    exec(compile(block, "quantized.md", "exec"), scope)
    x, y, w_hat = scope["x"], scope["y"], scope["w_hat"]
    assert scope["w_q"].shape == (4096, 512) and y.shape == (1, 4096)
    want = x.double() @ w_hat.double().T
    # bfloat16's rounding of y, and of w_hat (dequantize rounds to the
    # weights' dtype; the matrix-vector kernel multiplies the unrounded
    # values), each weight by at most 2^-9 of itself.
    scale = x.double().abs() @ w_hat.double().abs().T
    err = (y.double() - want).abs()
    assert bool((err <= 2.0**-8 * want.abs() + 2.0**-9 * scale).all())
