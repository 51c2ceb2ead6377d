"""Mistakes in the 4-bit quantized calls (enigma.quantize, dequantize,
quantized_matmul and their configurations; docs/reference/quantized.md):
each a clear error naming the argument, raised before anything runs.
The results themselves: test_quantized.py."""

import numpy as np
import pytest

import enigma
from enigma.quantized import QmmConfig, QmvConfig
from test_quantized import F32, from_bf16, to_bf16


@pytest.fixture
def packed():
    rng = np.random.default_rng(0)
    w = to_bf16(rng.standard_normal((6, 128)))
    w_q, scales, biases = enigma.quantize(w, 64)
    x = to_bf16(rng.standard_normal((2, 128)))
    return x, w_q, scales, biases


def test_scales_of_the_wrong_shape(packed):
    x, w_q, scales, biases = packed
    with pytest.raises(ValueError, match=r"scales has shape \(6, 1\).*"
                       r"needs \(6, 2\)"):
        enigma.quantized_matmul(x, w_q, scales[:, :1].copy(), biases)
    with pytest.raises(ValueError, match="biases has shape"):
        enigma.quantized_matmul(x, w_q, scales, biases[:5].copy())
    with pytest.raises(ValueError, match="scales has shape"):
        enigma.dequantize(w_q, scales, biases, group_size=32)


def test_group_size_that_does_not_divide_k(packed):
    x, w_q, scales, biases = packed
    w = to_bf16(np.ones((4, 96), F32))
    with pytest.raises(ValueError, match=r"group_size 64 does not divide.*"
                       r"K = 96"):
        enigma.quantize(w, 64)
    with pytest.raises(ValueError, match=r"group_size 128 does not divide "
                       r"K = 96"):
        enigma.quantized_matmul(to_bf16(np.ones((1, 96), F32)),
                                w_q[:, :12].copy(), scales, biases,
                                group_size=128)
    with pytest.raises(ValueError, match=r"group_size must be one of "
                       r"\(32, 64, 128\), got 16"):
        enigma.quantized_matmul(x, w_q, scales, biases, group_size=16)
    with pytest.raises(ValueError, match="bits must be 4"):
        enigma.quantize(w, 32, bits=8)


def test_packed_weights_of_the_wrong_length(packed):
    x, w_q, scales, biases = packed
    with pytest.raises(ValueError, match=r"x has K = 128 .* w_q holds 8 "
                       r"words per row, K = 64: packed weights of the wrong "
                       r"length"):
        enigma.quantized_matmul(x, w_q[:, :8].copy(), scales[:, :1].copy(),
                                biases[:, :1].copy())
    with pytest.raises(ValueError, match=r"w_q must be 2-D"):
        enigma.quantized_matmul(x, w_q.reshape(-1), scales, biases)


def test_wrong_dtypes_and_places(packed):
    x, w_q, scales, biases = packed
    with pytest.raises(TypeError, match=r"w_q must hold uint32"):
        enigma.quantized_matmul(x, w_q.astype(np.float32), scales, biases)
    with pytest.raises(TypeError, match=r"x must hold float32"):
        enigma.quantized_matmul(x.astype(np.int64), w_q, scales, biases)
    # int32 is a valid word type, viewed as uint32: the error still names
    # the dtype the caller passed.
    with pytest.raises(TypeError, match=r"x must hold float32.*got int32$"):
        enigma.quantized_matmul(x.astype(np.int32), w_q, scales, biases)
    with pytest.raises(TypeError, match=r"w must hold float32.*got int32$"):
        enigma.quantize(np.ones((4, 64), np.int32), 32)
    with pytest.raises(TypeError, match=r"scales must hold float32.*got "
                       r"int32$"):
        enigma.dequantize(w_q, scales.astype(np.int32),
                          biases.astype(np.int32), group_size=64)
    with pytest.raises(TypeError, match=r"w_q must hold uint32.*got "
                       r"float16$"):
        enigma.dequantize(np.zeros(w_q.shape, np.float16), scales, biases,
                          group_size=64)
    with pytest.raises(TypeError, match=r"scales are bf16 and biases f32; "
                       r"they must have one dtype"):
        enigma.quantized_matmul(x, w_q, scales, from_bf16(biases))
    with pytest.raises(TypeError, match=r"scales and biases are bf16 but x "
                       r"is f32"):
        enigma.quantized_matmul(from_bf16(x), w_q, scales, biases)
    with pytest.raises(TypeError, match=r"x must be a numpy array or a "
                       r"torch.Tensor, got list"):
        enigma.quantized_matmul([[1.0]], w_q, scales, biases)
    with pytest.raises(ValueError, match=r"transpose must be True"):
        enigma.quantized_matmul(x, w_q, scales, biases, transpose=False)
    with pytest.raises(ValueError, match=r"out must be a bf16 array of "
                       r"shape \(2, 6\)"):
        enigma.quantized_matmul(x, w_q, scales, biases,
                                out=np.zeros((2, 5), np.uint16))
    with pytest.raises(TypeError, match=r"config must be a QmvConfig, a "
                       r"QmvMmaConfig, a QmmConfig or a "
                       r"DequantizedGemmConfig"):
        enigma.quantized_matmul(x, w_q, scales, biases, config=(16, 32))


def test_inputs_that_want_gradients():
    """No backward: a torch input that requires grad while autograd records
    is refused (its gradient would silently be missing); under no_grad it
    runs. The PyTorch op runs and refuses the backward itself."""
    torch = pytest.importorskip("torch")
    import enigma.torch
    w_q, scales, biases = enigma.quantize(torch.randn(6, 64), 32)
    x = torch.randn(2, 64, requires_grad=True)
    with pytest.raises(ValueError, match=r"x requires grad, but "
                       r"quantized_matmul has no backward"):
        enigma.quantized_matmul(x, w_q, scales, biases, group_size=32)
    with torch.no_grad():
        assert enigma.quantized_matmul(x, w_q, scales, biases,
                                       group_size=32).shape == (2, 6)
    y = torch.ops.enigma.quantized_matmul(x, w_q, scales, biases, 32)
    with pytest.raises(RuntimeError, match="no autograd formula"):
        y.sum().backward()


def test_bad_configurations():
    with pytest.raises(enigma.EnigmaError, match=r"multiples of 16"):
        QmmConfig(16, 24, 64, 1, 1, 2)
    with pytest.raises(enigma.EnigmaError, match=r"bk must be a multiple "
                       r"of 32"):
        QmmConfig(16, 32, 48, 1, 1, 2)
    with pytest.raises(enigma.EnigmaError, match=r"rows must be an int"):
        QmvConfig(rows=0)
    with pytest.raises(enigma.EnigmaError, match=r"chunks must be an int "
                       r"from 1 to 8"):
        QmvConfig(chunks=9)
    with pytest.raises(enigma.EnigmaError, match=r"k_split must be an int"):
        QmvConfig(k_split=True)
    with pytest.raises(enigma.EnigmaError, match=r"2048 threads"):
        QmvConfig(simdgroups=8, k_split=8)
    with pytest.raises(enigma.EnigmaError, match=r"hoist_loads must be a "
                       r"bool"):
        QmvConfig(hoist_loads=1)


