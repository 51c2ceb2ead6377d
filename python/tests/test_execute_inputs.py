"""What `execute` makes of its inputs, scalars and output shapes, checked
against what the numbers are and against the function-call form:

- a numpy array in the other byte order (`>f4`) is refused, never read as
  native bytes;
- a Python list (or tuple, range, nested regular list, a lone number) is
  converted element by element by the rules of scalars: numbers only,
  integers that fit an integer parameter, no float for an integer, 0/1 for
  a bool, finite values within half / bfloat range, bfloat16 values rounded
  to bfloat16 bits;
- an `output_shapes` entry whose byte count passes 64 bits is refused
  before anything runs;
- a scalar is accepted or refused, and converted, the same way by
  `execute(scalars=...)` and by the call form `kernel[grid](...)`.
"""

import fractions
import decimal
import struct

import numpy as np
import pytest

import enigma

NP = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16,
      "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
      "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
      "b1": np.bool_}


def _copy_kernel(dtype):
    T = getattr(enigma, dtype)

    @enigma.kernel
    def copy(A: T, C: T):
        t = enigma.thread_position_in_grid
        C[t] = A[t]
    return enigma.compile(copy)


def _copied(runtime, dtype, value, n):
    raw = runtime.execute(_copy_kernel(dtype), [value],
                          output_size=n * np.dtype(NP[dtype]).itemsize,
                          grid=n)
    return np.frombuffer(raw, NP[dtype])


# --------------------------------------------------------------------------
# Byte order
# --------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["f32", "i32", "u16", "f16", "i64"])
def test_a_big_endian_array_is_refused(runtime, rng, dtype):
    native = (rng.standard_normal(7) * 100).astype(NP[dtype])
    swapped = native.astype(native.dtype.newbyteorder(">"))
    np.testing.assert_array_equal(swapped, native)  # same values
    with pytest.raises(TypeError, match=r"input 0 \(A\) is a big-endian "
                       r"array \(>.*\); convert it to native byte order"):
        _copied(runtime, dtype, swapped, 7)
    # The call form refuses it too.
    out = np.zeros(7, NP[dtype])
    with pytest.raises(enigma.DispatchError):
        _copy_form(dtype)[7](swapped, out)
    np.testing.assert_array_equal(_copied(runtime, dtype, native, 7), native)


def test_one_byte_arrays_have_no_byte_order(runtime):
    data = np.arange(5, dtype=">u1")
    np.testing.assert_array_equal(_copied(runtime, "u8", data, 5), data)


# --------------------------------------------------------------------------
# Lists
# --------------------------------------------------------------------------

LIST_MISTAKES = [
    ("i32", ["1", "2"], r"input 0 \(A\): element 0 needs a number, got str"),
    ("f32", [1.0, "2.5"], r"element 1 needs a number, got str"),
    ("i32", [1, 2.5], r"element 1 cannot take 2\.5: a float is not an "
                      r"integer"),
    ("u8", [1, 300], r"element 1 cannot take 300: out of range for u8"),
    ("u8", [-1, 1], r"element 0 cannot take -1: out of range for u8"),
    ("i64", [2**63, 1], r"element 0 cannot take 9223372036854775808: out of "
                        r"range for i64"),
    ("u64", [2**64, 1], r"element 0: the integer 18446744073709551616 does "
                        r"not fit in 64 bits"),
    ("b1", [2, 0], r"element 0 cannot take 2: a bool takes True/False or "
                   r"0/1"),
    ("f16", [1e6, 1.0], r"element 0 cannot take 1000000\.0: out of range "
                        r"for f16"),
    ("bf16", [1e39, 1.0], r"element 0 cannot take 1e\+39: out of range for "
                          r"bf16"),
    ("f32", [None, 1.0], r"element 0 needs a number, got NoneType"),
    ("f32", [1 + 2j, 1.0], r"element 0 needs a number, got complex"),
    ("f32", [[1.0, 2.0], [3.0]], r"element 0 needs a number, got list"),
    ("i32", [fractions.Fraction(1, 2)], r"element 0 needs a number, got "
                                        r"Fraction"),
]


@pytest.mark.parametrize("dtype,value,pattern", LIST_MISTAKES,
                         ids=[f"{d}-{v!r}"[:40] for d, v, _ in LIST_MISTAKES])
def test_a_list_holds_numbers_its_parameter_can_take(runtime, dtype, value,
                                                     pattern):
    with pytest.raises(enigma.DispatchError, match=pattern):
        _copied(runtime, dtype, value, len(value))


def _bf16_bits(x):
    """float -> bfloat16 bits, round to nearest even."""
    bits = struct.unpack("<I", struct.pack("<f", np.float32(x)))[0]
    return (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16


LIST_VALUES = [
    ("i32", [1, -2, 2**31 - 1, -2**31, True], [1, -2, 2**31 - 1, -2**31, 1]),
    ("u64", [2**64 - 1, 0, np.uint64(7)], [2**64 - 1, 0, 7]),
    ("u8", (255, 0, np.int16(3)), [255, 0, 3]),
    ("i16", range(-3, 3), list(range(-3, 3))),
    ("b1", [True, False, 1, 0, np.True_], [1, 0, 1, 0, 1]),
    ("f32", [1, 0.1, -2.5, np.float16(0.5), True], None),
    ("f16", [65504.0, 0.1, -0.0, float("inf"), 1], None),
    ("bf16", [1.5, 2, 0.1, -3.3e38, float("inf")],
     [_bf16_bits(x) for x in [1.5, 2, 0.1, -3.3e38, float("inf")]]),
]


@pytest.mark.parametrize("dtype,value,want", LIST_VALUES,
                         ids=[d for d, _, _ in LIST_VALUES])
def test_a_list_is_converted_by_the_rules_of_scalars(runtime, dtype, value,
                                                     want):
    n = len(value)
    got = _copied(runtime, dtype, value, n)
    if want is None:  # float parameters: numpy rounds as Metal does
        want = np.array([float(v) for v in value]).astype(NP[dtype])
    np.testing.assert_array_equal(got, np.array(want, dtype=NP[dtype]))


def test_nested_regular_lists_and_lone_numbers(runtime):
    got = _copied(runtime, "i32", [[1, 2], [3, 4]], 4)
    np.testing.assert_array_equal(got, [1, 2, 3, 4])
    np.testing.assert_array_equal(_copied(runtime, "f32", 2.5, 1), [2.5])
    np.testing.assert_array_equal(_copied(runtime, "f32", np.float32(3), 1),
                                  [3.0])


def test_an_array_of_another_dtype_behind_the_array_protocol_is_refused(
        runtime):
    class Wrapped:  # any object that hands out a numpy array
        def __array__(self, dtype=None, copy=None):
            return np.arange(4, dtype=np.float64)
    with pytest.raises(TypeError, match=r"has numpy dtype float64 but "
                                        r"parameter A is f32"):
        _copied(runtime, "f32", Wrapped(), 4)


# --------------------------------------------------------------------------
# Output shapes
# --------------------------------------------------------------------------

@pytest.mark.parametrize("shape,dtype", [
    ((3, 6148914691236517206), "u8"),  # the int64 product wraps to 2
    ((2**62, 4), "u8"),                # wraps to 0
    ((2**32 + 1, 2**32 - 1), "u8"),    # wraps to -1
    ((2**62,), "f32"),                 # 2^64 bytes
    ((2**61,), "f32"),                 # 2^63 bytes, past numpy's largest
])
def test_output_shapes_past_64_bits_are_refused(runtime, shape, dtype):
    with pytest.raises(enigma.DispatchError,
                       match=r"output_shapes\[0\] = .* needs \d+ bytes, more "
                             r"than a 64-bit size"):
        runtime.execute(_copy_kernel("u8"), [np.zeros(4, np.uint8)], grid=4,
                        output_shapes=[shape], output_dtypes=[dtype])


@pytest.mark.parametrize("size", [2**64 - 1, 2**64 - 4096, 2**63])
def test_an_output_size_no_machine_has_is_refused_cleanly(runtime, size):
    """Rounding such a size up to whole pages wrapped to one page, which
    the kernel then wrote past (SIGSEGV on the CPU runtime): now a clean
    error on every runtime."""
    with pytest.raises((enigma.EnigmaRuntimeError, MemoryError),
                       match="out of memory|bad_alloc|failed"):
        runtime.execute(_copy_kernel("u8"), [np.zeros(4, np.uint8)], grid=4,
                        output_size=size)


def test_output_shapes_within_64_bits_still_work(runtime):
    out = runtime.execute(_copy_kernel("u8"), [np.arange(6, dtype=np.uint8)],
                          grid=6, output_shapes=[(2, 3)],
                          output_dtypes=["u8"])
    np.testing.assert_array_equal(out, np.arange(6).reshape(2, 3))


# --------------------------------------------------------------------------
# Scalars: execute and the call form agree
# --------------------------------------------------------------------------

def _copy_form(dtype):
    T = getattr(enigma, dtype)

    @enigma.kernel
    def copy_form(A: T, C: T):
        t = enigma.thread_position_in_grid
        C[t] = A[t]
    return copy_form


@enigma.kernel
def scalars_out(C: enigma.u32, b: enigma.Scalar(enigma.b1),
                i: enigma.Scalar(enigma.i32), f: enigma.Scalar(enigma.f32)):
    C[0] = enigma.metal_cast(b, "uint")
    C[1] = enigma.metal_cast(i, "uint")
    C[2] = enigma.as_type(f, "uint")


SCALAR_CASES = {
    "bools": (True, 1, 1.0),
    "numpy True for b1": (np.True_, 1, 1.0),
    "numpy False for b1": (np.False_, 1, 1.0),
    "numpy int for b1": (np.int8(1), 1, 1.0),
    "float for b1": (1.0, 1, 1.0),
    "numpy True for i32": (True, np.True_, 1.0),
    "numpy int64 for i32": (True, np.int64(-5), 1.0),
    "numpy uint64 past i32": (True, np.uint64(2**63), 1.0),
    "numpy float for i32": (True, np.float64(2.0), 1.0),
    "numpy float32 for f32": (True, 1, np.float32(1.5)),
    "numpy float16 for f32": (True, 1, np.float16(-0.5)),
    "numpy True for f32": (True, 1, np.True_),
    "int for f32": (True, 1, 3),
    "Fraction for f32": (True, 1, fractions.Fraction(1, 2)),
    "Decimal for f32": (True, 1, decimal.Decimal("1.5")),
    "complex for f32": (True, 1, 1 + 0j),
    "numpy complex for f32": (True, 1, np.complex64(1)),
    "0-d array for i32": (True, np.array(7), 1.0),
    "array for i32": (True, np.array([7]), 1.0),
    "string for i32": (True, "7", 1.0),
    "None for i32": (True, None, 1.0),
    "huge int for f32": (True, 1, 10**30),
}


def _by_execute(runtime, args):
    raw = runtime.execute(enigma.compile(scalars_out), [], output_size=12,
                          scalars=list(args))
    return list(np.frombuffer(raw, np.uint32))


def _by_call(args):
    out = np.zeros(3, np.uint32)
    scalars_out[1, 1](out, *args)
    return list(out)


def _outcome(run):
    try:
        return ("ok", run())
    except (enigma.DispatchError, TypeError) as e:
        return ("refused", type(e).__name__)


@pytest.mark.parametrize("name", sorted(SCALAR_CASES))
def test_execute_and_the_call_form_take_the_same_scalars(runtime, name):
    args = SCALAR_CASES[name]
    by_execute = _outcome(lambda: _by_execute(runtime, args))
    by_call = _outcome(lambda: _by_call(args))
    assert by_execute == by_call, (name, by_execute, by_call)
    assert by_execute[0] == "ok" or by_execute[1] == "DispatchError"


def test_numpy_scalars_convert_to_their_values(runtime):
    got = _by_execute(runtime, (np.True_, np.int64(-5), np.float16(-0.5)))
    assert got == [1, 2**32 - 5, struct.unpack("<I", struct.pack("<f", -0.5))[0]]
