"""function_constant(dtype, index): values given at dispatch with
execute(..., constants={index: (type_name, value)})."""

import numpy as np
import pytest

import enigma
from conftest import run_kernel


@enigma.kernel
def affine(a: enigma.f32, out: enigma.f32):
    scale = enigma.function_constant(enigma.i32, 0)
    shift = enigma.function_constant("float", 3)
    tid = enigma.thread_position_in_grid
    out[tid] = a[tid] * enigma.metal_cast(scale, "float") + shift


def test_one_compiled_kernel_two_constant_values(runtime, rng):
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(affine)
    assert "constant int enigma_fc_0 [[function_constant(0)]];" in \
        compiled.metal_source
    assert "constant float enigma_fc_3 [[function_constant(3)]];" in \
        compiled.metal_source
    results = []
    for scale, shift in [(3, 0.5), (-7, 1.25)]:
        out = run_kernel(runtime, compiled, [a], np.float32, n,
                         grid=(n, 1, 1), threads=(128, 1, 1),
                         constants={0: ("int", scale), 3: ("float", shift)})
        want = a.astype(np.float64) * scale + shift
        np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
        results.append(out)
    assert not np.array_equal(results[0], results[1])


def test_missing_constant_is_named(runtime):
    a = np.ones(4, dtype=np.float32)
    with pytest.raises(ValueError, match="function constant 3"):
        runtime.execute(enigma.compile(affine), [a], output_size=16,
                        grid=(4, 1, 1), threads=(4, 1, 1),
                        constants={0: ("int", 1)})


def test_constant_of_the_wrong_type_is_rejected(runtime):
    a = np.ones(4, dtype=np.float32)
    with pytest.raises(ValueError, match="function constant 0"):
        runtime.execute(enigma.compile(affine), [a], output_size=16,
                        grid=(4, 1, 1), threads=(4, 1, 1),
                        constants={0: ("float", 1.0), 3: ("float", 0.0)})


@enigma.kernel
def selected(a: enigma.u32, out: enigma.u32):
    flag = enigma.function_constant(enigma.b1, 1)
    mask = enigma.function_constant(enigma.u32, 2)
    mask_again = enigma.function_constant(enigma.u32, 2)  # same constant
    tid = enigma.thread_position_in_grid
    v = a[tid] & (mask | mask_again)
    out[tid] = enigma.metal_cast(flag, "uint") * v + (v ^ mask)


@pytest.mark.parametrize("flag,mask", [(True, 0xFFFF0000), (False, 0x0F0F0F0F),
                                       (True, 0)])
def test_bool_and_uint_constants(runtime, rng, flag, mask):
    n = 257
    a = rng.integers(0, 2**32, size=n, dtype=np.uint32)
    out = run_kernel(runtime, enigma.compile(selected), [a], np.uint32, n,
                     grid=(n, 1, 1), threads=(64, 1, 1),
                     constants={1: ("bool", flag), 2: ("uint", mask)})
    v = a & np.uint32(mask)
    with np.errstate(over="ignore"):
        want = np.uint32(int(flag)) * v + (v ^ np.uint32(mask))
    np.testing.assert_array_equal(out, want)


def test_artifact_lists_the_constants():
    compiled = enigma.compile(selected)
    assert sorted(compiled._artifact.constants) == [(1, "b1"), (2, "u32")]


def test_one_index_with_two_types_is_an_error():
    @enigma.kernel
    def clash(out: enigma.f32):
        a = enigma.function_constant(enigma.f32, 0)
        b = enigma.function_constant(enigma.i32, 0)
        out[0] = a

    with pytest.raises(enigma.EnigmaError,
                       match=r"test_function_constants.py:\d+:.*another dtype"):
        enigma.compile(clash)


@pytest.mark.parametrize("dtype,index", [(enigma.u64, 0), (enigma.bf16, 0),
                                         (enigma.f32, -1), (enigma.f32, 1.5),
                                         (enigma.f32, 70000)])
def test_bad_declaration_is_an_enigma_error(dtype, index):
    @enigma.kernel
    def bad(out: enigma.f32):
        out[0] = enigma.function_constant(dtype, index)

    with pytest.raises(enigma.EnigmaError, match="test_function_constants.py"):
        enigma.compile(bad)
