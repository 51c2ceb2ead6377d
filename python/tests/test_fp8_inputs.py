"""What a first user of the 8-bit float functions passes from
docs/reference/fp8.md alone: sliced (non-contiguous) and read-only
operands, empty products, numbers as scales, PyTorch tensors of other
dtypes to fp8_encode, tensors whose own 8-bit format contradicts the one
named; results against float64 numpy."""

import numpy as np
import pytest

import enigma
from conftest import misaligned

FORMATS = {"f8e4m3": enigma.f8e4m3, "f8e5m2": enigma.f8e5m2}


@pytest.fixture
def host_runtime(runtime):
    """The host runtimes: numpy arrays run there (CUDA takes CUDA tensors,
    test_quantized.py and test_gemm_fp8.py cover those)."""
    if runtime.name not in ("cpu", "metal-host"):
        pytest.skip("numpy arrays run on the host runtimes")
    return runtime


def operand(rng, shape, fmt="f8e4m3"):
    """(uint8 bits, float64 values) of random 8-bit floats."""
    x = rng.standard_normal(shape).astype(np.float32)
    bits = enigma.fp8_encode(x, FORMATS[fmt], saturate=True)
    return bits, enigma.fp8_decode(bits, FORMATS[fmt]).astype(np.float64)


def test_sliced_and_read_only_operands(host_runtime, rng):
    """A column slice of a wider matrix, a Fortran-order array and a
    read-only array are operands like any other (copied before the
    launch; the caller's arrays are not changed)."""
    a, af = operand(rng, (9, 96))
    b, bf = operand(rng, (13, 96))
    before = a.copy()
    c = enigma.gemm_fp8(a[:, 16:80], b[:, 16:80], 1.0, 0.5, out_dtype="f32",
                        runtime=host_runtime)
    np.testing.assert_allclose(c, af[:, 16:80] @ bf[:, 16:80].T * 0.5,
                               rtol=1e-6, atol=1e-5)
    fortran = np.asfortranarray(a)
    fortran.setflags(write=False)
    c = enigma.gemm_fp8(fortran, b, 1.0, 1.0, out_dtype="f32",
                        runtime=host_runtime)
    np.testing.assert_allclose(c, af @ bf.T, rtol=1e-6, atol=1e-5)
    np.testing.assert_array_equal(a, before)


@pytest.mark.parametrize("m, n, k", [(0, 5, 64), (5, 0, 64), (5, 7, 0)])
@pytest.mark.parametrize("out_dtype", ["f32", "bf16", "f8e4m3"])
def test_empty_products(host_runtime, m, n, k, out_dtype):
    """No rows or columns: an empty C; K = 0: a sum of nothing, zeros
    (and an amax of 0)."""
    a = np.zeros((m, k), np.uint8)
    b = np.zeros((n, k), np.uint8)
    c, amax = enigma.gemm_fp8(a, b, 1.0, 1.0, out_dtype=out_dtype,
                              amax=True, runtime=host_runtime)
    assert c.shape == (m, n)
    assert not np.any(c) and amax == 0.0
    out = np.full((m, n), 0x7F, c.dtype)
    assert enigma.gemm_fp8(a, b, 2.0, 2.0, out_dtype=out_dtype, out=out,
                           runtime=host_runtime) is out
    assert not np.any(out)
    with pytest.raises(enigma.DispatchError, match="out must hold"):
        enigma.gemm_fp8(a, b, 1.0, 1.0, out_dtype=out_dtype,
                        out=np.zeros((m, n), np.float64), runtime=host_runtime)


def test_python_numbers_as_scales(host_runtime, rng):
    a, af = operand(rng, (4, 32))
    b, bf = operand(rng, (6, 32))
    c = enigma.gemm_fp8(a, b, 2, 1, out_dtype="f32", runtime=host_runtime)
    np.testing.assert_allclose(c, 2 * af @ bf.T, rtol=1e-6, atol=1e-5)
    with pytest.raises(enigma.DispatchError, match="scale_a"):
        enigma.gemm_fp8(a, b, True, 1.0)


def test_wrong_config_and_out_dtype_are_named(rng):
    a, _ = operand(rng, (4, 32))
    with pytest.raises(enigma.DispatchError, match="config must be an "
                                                   "enigma.MmaConfig"):
        enigma.gemm_fp8(a, a, 1.0, 1.0, config="fast")
    with pytest.raises(enigma.DispatchError,
                       match="out_dtype must be one of bf16, f16, f32"):
        enigma.gemm_fp8(a, a, 1.0, 1.0, out_dtype="f64")


def test_fp8_encode_takes_torch_tensors_of_every_float_dtype():
    """"other inputs are first converted to float32": a bfloat16 or
    float16 tensor too (exactly, so the bits are those of its values)."""
    torch = pytest.importorskip("torch")
    values = np.array([1.0, -3.25, 0.0078125, 300.0, -1000.0], np.float32)
    for dtype in (torch.bfloat16, torch.float16, torch.float64):
        t = torch.from_numpy(values).to(dtype)
        for fmt, saturate in ((enigma.f8e4m3, False), (enigma.f8e5m2, True)):
            np.testing.assert_array_equal(
                enigma.fp8_encode(t, fmt, saturate=saturate),
                enigma.fp8_encode(t.float().numpy(), fmt, saturate=saturate))


def test_fp8_decode_takes_bit_patterns_only():
    """int8 or bool arrays hold numbers, not bit patterns: decoding their
    bytes would give other numbers than they hold, silently."""
    for values in (np.array([1, -3], np.int8), np.array([True, False])):
        with pytest.raises(enigma.EnigmaError, match="takes 8-bit patterns"):
            enigma.fp8_decode(values, enigma.f8e4m3)
    np.testing.assert_array_equal(
        enigma.fp8_decode(np.array([0x38, 0xb8], np.uint8), enigma.f8e4m3),
        [1.0, -1.0])


def test_fp8_decode_refuses_a_tensor_of_the_other_format():
    """A PyTorch float8 tensor carries its format: decoding it as the
    other one would give other numbers, silently."""
    torch = pytest.importorskip("torch")
    t = torch.tensor([1.5, -2.0]).to(torch.float8_e5m2)
    with pytest.raises(enigma.EnigmaError, match="float8_e5m2.*f8e4m3"):
        enigma.fp8_decode(t, enigma.f8e4m3)
    np.testing.assert_array_equal(enigma.fp8_decode(t, enigma.f8e5m2),
                                  [1.5, -2.0])


def test_misaligned_operands(host_runtime, rng):
    a, af = operand(rng, (5, 40))
    b, bf = operand(rng, (6, 40))
    c = enigma.gemm_fp8(misaligned(a), misaligned(b), 1.0, 1.0,
                        out_dtype="f32", runtime=host_runtime)
    np.testing.assert_allclose(c, af @ bf.T, rtol=1e-6, atol=1e-5)
