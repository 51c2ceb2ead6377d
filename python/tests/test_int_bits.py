"""Integer and bit functions (docs/reference/math.md) at every width, signed
and unsigned, against exact Python-integer references."""

import numpy as np
import pytest

import enigma
from _math_helpers import (INT_TYPES, NUMPY_OF, SIZES, int_range,
                           random_ints, run_map)

IDS = [t.name for t in INT_TYPES]


def pattern(v, bits):
    """The unsigned bit pattern of a Python int of width `bits`."""
    return int(v) & ((1 << bits) - 1)


def from_pattern(p, t):
    lo, _, bits = int_range(t)
    if lo < 0 and p >> (bits - 1):
        return p - (1 << bits)
    return p


def wrap(v, t):
    return from_pattern(pattern(v, int_range(t)[2]), t)


def as_array(values, t):
    return np.array([int(v) for v in values], dtype=NUMPY_OF[t])


def unsigned_of(t):
    return {enigma.i8: enigma.u8, enigma.i16: enigma.u16,
            enigma.i32: enigma.u32, enigma.i64: enigma.u64}.get(t, t)


def check(out, expect, t):
    np.testing.assert_array_equal(out, as_array(expect, t))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", INT_TYPES, ids=IDS)
def test_saturating_and_mulhi(runtime, rng, t, n):
    lo, hi, bits = int_range(t)
    a, b, c = (random_ints(rng, t, n) for _ in range(3))
    A, B, C = ([int(v) for v in arr] for arr in (a, b, c))
    sat = lambda v: min(max(v, lo), hi)  # noqa: E731
    check(run_map(runtime, enigma.add_sat, [a, b], t),
          [sat(x + y) for x, y in zip(A, B)], t)
    check(run_map(runtime, enigma.sub_sat, [a, b], t),
          [sat(x - y) for x, y in zip(A, B)], t)
    check(run_map(runtime, enigma.mad_sat, [a, b, c], t),
          [sat(x * y + z) for x, y, z in zip(A, B, C)], t)
    check(run_map(runtime, enigma.mul_hi, [a, b], t),
          [wrap((x * y) >> bits, t) for x, y in zip(A, B)], t)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", INT_TYPES, ids=IDS)
def test_min_max_clamp_absdiff(runtime, rng, t, n):
    a, b, c = (random_ints(rng, t, n) for _ in range(3))
    A, B, C = ([int(v) for v in arr] for arr in (a, b, c))
    check(run_map(runtime, enigma.imin, [a, b], t),
          [min(x, y) for x, y in zip(A, B)], t)
    check(run_map(runtime, enigma.imax, [a, b], t),
          [max(x, y) for x, y in zip(A, B)], t)
    lo_, hi_ = np.minimum(b, c), np.maximum(b, c)
    check(run_map(runtime, enigma.iclamp, [a, lo_, hi_], t),
          [min(max(x, int(l)), int(h)) for x, l, h in zip(A, lo_, hi_)], t)
    check(run_map(runtime, enigma.clamp, [a, lo_, hi_], t),
          [min(max(x, int(l)), int(h)) for x, l, h in zip(A, lo_, hi_)], t)
    u = unsigned_of(t)
    check(run_map(runtime, enigma.abs_diff, [a, b], u),
          [abs(x - y) for x, y in zip(A, B)], u)
    check(run_map(runtime, enigma.abs_diff_unary, [a], u),
          [abs(x) for x in A], u)
    check(run_map(runtime, enigma.abs, [a], t), [wrap(abs(x), t) for x in A],
          t)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", INT_TYPES, ids=IDS)
def test_bits(runtime, rng, t, n):
    _, _, bits = int_range(t)
    a = random_ints(rng, t, n)
    P = [pattern(v, bits) for v in a]
    check(run_map(runtime, enigma.popcount, [a], t),
          [bin(p).count("1") for p in P], t)
    check(run_map(runtime, enigma.clz, [a], t),
          [bits - p.bit_length() for p in P], t)
    check(run_map(runtime, enigma.ctz, [a], t),
          [bits if p == 0 else (p & -p).bit_length() - 1 for p in P], t)
    check(run_map(runtime, enigma.reverse_bits, [a], t),
          [from_pattern(int(format(p, f"0{bits}b")[::-1], 2), t) for p in P],
          t)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", INT_TYPES, ids=IDS)
def test_rotate(runtime, rng, t, n):
    _, _, bits = int_range(t)
    v = random_ints(rng, t, n)
    i = random_ints(rng, t, n)  # any count, negative ones included

    def rot(x, k):
        p, s = pattern(x, bits), pattern(k, bits) % bits
        return from_pattern(((p << s) | (p >> (bits - s))) & ((1 << bits) - 1)
                            if s else p, t)
    check(run_map(runtime, enigma.rotate, [v, i], t),
          [rot(x, k) for x, k in zip(v, i)], t)


def _fields(rng, bits, n):
    offset = rng.integers(0, bits + 1, size=n)
    count = np.array([rng.integers(0, bits - o + 1) for o in offset])
    offset[0], count[0] = 0, bits  # the whole word
    if n > 1:
        offset[1], count[1] = bits, 0  # an empty field at the very top
    return offset.astype(np.uint32), count.astype(np.uint32)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("t", INT_TYPES, ids=IDS)
def test_extract_insert_bits(runtime, rng, t, n):
    lo, _, bits = int_range(t)
    x, y = random_ints(rng, t, n), random_ints(rng, t, n)
    off, cnt = _fields(rng, bits, n)

    def extract(v, o, c):
        if c == 0:
            return 0
        field = (pattern(v, bits) >> int(o)) & ((1 << int(c)) - 1)
        if lo < 0 and field >> (int(c) - 1):
            field -= 1 << int(c)  # sign-extended for signed types
        return wrap(field, t)

    def insert(base, ins, o, c):
        mask = ((1 << int(c)) - 1) << int(o)
        p = (pattern(base, bits) & ~mask) | ((pattern(ins, bits) << int(o))
                                             & mask)
        return from_pattern(p & ((1 << bits) - 1), t)

    out = run_map(runtime, enigma.extract_bits, [x, off, cnt], t,
                  in_types=[t, enigma.u32, enigma.u32])
    check(out, [extract(*a) for a in zip(x, off, cnt)], t)
    out = run_map(runtime, enigma.insert_bits, [x, y, off, cnt], t,
                  in_types=[t, t, enigma.u32, enigma.u32])
    check(out, [insert(*a) for a in zip(x, y, off, cnt)], t)


def test_extract_bits_constant_field(runtime):
    x = np.array([0xF0, 0x80, 0x7F], dtype=np.int32)
    out = run_map(runtime, lambda v: enigma.extract_bits(v, 4, 4), [x],
                  enigma.i32)
    np.testing.assert_array_equal(out, [-1, -8, 7])
    xs = np.array([0xF0, 0x80, 0x7F], dtype=np.uint8).view(np.int8)
    out = run_map(runtime, lambda v: enigma.extract_bits(v, 4, 4), [xs],
                  enigma.i8)
    np.testing.assert_array_equal(out, [-1, -8, 7])
    xu = xs.view(np.uint8)
    out = run_map(runtime, lambda v: enigma.extract_bits(v, 4, 4), [xu],
                  enigma.u8)
    np.testing.assert_array_equal(out, [15, 8, 7])


def test_clz_of_zero_is_the_width(runtime):
    for t, w in ((enigma.u8, 8), (enigma.i16, 16), (enigma.u32, 32),
                 (enigma.i64, 64)):
        z = np.zeros(3, dtype=NUMPY_OF[t])
        np.testing.assert_array_equal(run_map(runtime, enigma.clz, [z], t),
                                      [w] * 3)
        np.testing.assert_array_equal(run_map(runtime, enigma.ctz, [z], t),
                                      [w] * 3)


def test_mixed_types_and_numbers(runtime, rng):
    a = random_ints(rng, enigma.u8, 100)
    # u8 with an i32 promotes to i32 (the wider type)
    b = random_ints(rng, enigma.i32, 100)
    out = run_map(runtime, enigma.imax, [a, b], enigma.i32)
    np.testing.assert_array_equal(out, np.maximum(a.astype(np.int64), b))
    out = run_map(runtime, lambda v: enigma.add_sat(v, 200), [a], enigma.u8)
    np.testing.assert_array_equal(out, np.minimum(a.astype(np.int64) + 200,
                                                  255))


def _compile_error(body, t=enigma.i32):
    @enigma.kernel
    def k(A: t, C: t):
        i = enigma.thread_position_in_grid
        C[i] = body(A[i])
    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(k, emit_only=True)
    return str(info.value)


def test_errors():
    msg = _compile_error(lambda v: enigma.extract_bits(v, 30, 4))
    assert "test_int_bits.py" in msg and "does not fit" in msg
    msg = _compile_error(lambda v: enigma.insert_bits(v, v, 40, 1))
    assert "beyond" in msg
    msg = _compile_error(lambda v: enigma.popcount(v), enigma.f32)
    assert "integer" in msg and "test_int_bits.py" in msg
    msg = _compile_error(lambda v: enigma.clz(v > 0))
    assert "integer" in msg
