"""Operators on traced values (docs/language.md) on every element type,
checked against numpy references that follow C / Metal semantics:

* integer ``/`` and ``//`` truncate toward zero; ``%`` takes the dividend's
  sign; + - * and unary - wrap around; shifts by amounts below the width,
  ``>>`` arithmetic for signed types;
* float ``//`` is ``floor(a / b)``, ``%`` is ``fmod``; half and bfloat
  arithmetic rounds every result to the type (IEEE round to nearest even);
* comparisons give bool values, signed/unsigned by the operand type.

Promotion of Python numbers and of mixed types is described in
docs/language.md; the tests below pin it down.
"""

import numpy as np
import pytest

import enigma
from conftest import run_kernel

INT_TYPES = ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"]
FLOAT_TYPES = ["f32", "f16", "bf16"]
NP = {"i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16,
      "i32": np.int32, "u32": np.uint32, "i64": np.int64, "u64": np.uint64,
      "f32": np.float32, "f16": np.float16, "bf16": np.uint16, "b1": np.bool_}
SIZES = [1, 255, 257, 2**20]
PAD = 3  # elements past the grid; they must stay zero
THREADS = 256


# --------------------------------------------------------------------------
# bfloat16 on the host: uint16 bit patterns
# --------------------------------------------------------------------------

def f32_to_bf16_bits(x):
    """Round float32 values to bfloat16 (nearest even); returns uint16 bits."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_bits_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(
        np.float32)


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------

def dt(name):
    return getattr(enigma, name)


def run(runtime, compiled, inputs, n, out_names, out_types, scalars=None):
    """Runs with grid n and one output per name (n + PAD elements each);
    returns {name: array of n}, asserting the padding stayed zero."""
    sizes = [(n + PAD) * np.dtype(NP[t]).itemsize for t in out_types]
    raws = runtime.execute(compiled, inputs, grid=(n, 1, 1),
                           threads=(THREADS, 1, 1), output_sizes=sizes,
                           scalars=scalars)
    assert len(raws) == len(out_names)
    result = {}
    for name, t, raw in zip(out_names, out_types, raws):
        arr = np.frombuffer(raw, dtype=NP[t])
        assert arr.size == n + PAD
        assert not arr[n:].any(), f"{name}: elements past the grid written"
        result[name] = arr[:n]
    return result


def random_ints(rng, t, n):
    info = np.iinfo(NP[t])
    a = rng.integers(info.min, info.max, size=n, endpoint=True, dtype=NP[t])
    edges = [info.min, info.max, 0, 1]
    if info.min < 0:
        edges += [-1, info.min + 1]
    k = min(n, len(edges))
    a[:k] = np.array(edges[:k], dtype=NP[t])
    return a


def c_div(a, b):
    """C division (toward zero) in the arrays' own dtype."""
    r = np.fmod(a, b)
    return ((a - r) // b).astype(a.dtype)


def assert_same(got, want, name, t):
    if t in ("f32", "f16", "bf16") and got.dtype != np.bool_:
        gb = got.view(np.uint16 if t != "f32" else np.uint32)
        wb = want.view(np.uint16 if t != "f32" else np.uint32)
        bad = np.flatnonzero(gb != wb)
    else:
        bad = np.flatnonzero(got != want)
    assert bad.size == 0, (f"{name} ({t}) differs at {bad[:5]}: got "
                           f"{got[bad[:5]]}, want {want[bad[:5]]}")


# --------------------------------------------------------------------------
# Integers
# --------------------------------------------------------------------------

INT_OUTS = ["add", "sub", "mul", "div", "fdiv", "rem", "neg", "band", "bor",
            "bxor", "inv", "shl", "shr", "lt", "le", "gt", "ge", "eq", "ne"]
_int_kernels = {}


def int_kernel(t):
    if t not in _int_kernels:
        T, B = dt(t), enigma.b1

        def int_ops(A: T, Bv: T, S: T, add: T, sub: T, mul: T, div: T,
                    fdiv: T, rem: T, neg: T, band: T, bor: T, bxor: T, inv: T,
                    shl: T, shr: T, lt: B, le: B, gt: B, ge: B, eq: B, ne: B):
            i = enigma.thread_position_in_grid
            a, b, s = A[i], Bv[i], S[i]
            add[i] = a + b
            sub[i] = a - b
            mul[i] = a * b
            div[i] = a / b
            fdiv[i] = a // b
            rem[i] = a % b
            neg[i] = -a
            band[i] = a & b
            bor[i] = a | b
            bxor[i] = a ^ b
            inv[i] = ~a
            shl[i] = a << s
            shr[i] = a >> s
            lt[i] = a < b
            le[i] = a <= b
            gt[i] = a > b
            ge[i] = a >= b
            eq[i] = a == b
            ne[i] = a != b

        int_ops.__name__ = int_ops.__qualname__ = f"int_ops_{t}"
        _int_kernels[t] = enigma.compile(enigma.kernel(int_ops),
                                         emit_only=True)
    return _int_kernels[t]


@pytest.mark.parametrize("t", INT_TYPES)
def test_integer_operators(runtime, rng, t):
    compiled = int_kernel(t)
    width = np.dtype(NP[t]).itemsize * 8
    info = np.iinfo(NP[t])
    for n in SIZES:
        a = random_ints(rng, t, n)
        b = random_ints(rng, t, n)
        if n > 8:
            b[8:12] = a[8:12]  # equal operands for the comparisons
        b[b == 0] = 1
        if info.min < 0:
            b[(a == info.min) & (b == -1)] = 1  # overflow is undefined in C
        s = rng.integers(0, width, size=n).astype(NP[t])
        out = run(runtime, compiled, [a, b, s], n, INT_OUTS,
                  [t] * 13 + ["b1"] * 6)
        want = {
            "add": a + b, "sub": a - b, "mul": a * b,
            "div": c_div(a, b), "fdiv": c_div(a, b), "rem": np.fmod(a, b),
            "neg": np.negative(a), "band": a & b, "bor": a | b, "bxor": a ^ b,
            "inv": ~a, "shl": np.left_shift(a, s), "shr": np.right_shift(a, s),
            "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
            "eq": a == b, "ne": a != b,
        }
        for name in INT_OUTS:
            assert_same(out[name], want[name].astype(out[name].dtype),
                        f"{name} n={n}", t)


def test_integer_division_truncates_and_remainder_takes_dividend_sign(
        runtime):
    compiled = int_kernel("i32")
    a = np.array([7, -7, 7, -7, 1, -1, 0, 2**31 - 1], dtype=np.int32)
    b = np.array([2, 2, -2, -2, 3, 3, 5, -1], dtype=np.int32)
    s = np.zeros_like(a)
    out = run(runtime, compiled, [a, b, s], a.size, INT_OUTS,
              ["i32"] * 13 + ["b1"] * 6)
    assert out["div"].tolist() == [3, -3, -3, 3, 0, 0, 0, -(2**31 - 1)]
    assert out["fdiv"].tolist() == out["div"].tolist()
    assert out["rem"].tolist() == [1, -1, 1, -1, 1, -1, 0, 0]


def test_integer_wraparound(runtime):
    compiled = int_kernel("i32")
    a = np.array([2**31 - 1, -2**31, 2**16, -2**31], dtype=np.int32)
    b = np.array([1, 1, 2**16, 1], dtype=np.int32)
    s = np.array([1, 1, 0, 31], dtype=np.int32)
    out = run(runtime, compiled, [a, b, s], a.size, INT_OUTS,
              ["i32"] * 13 + ["b1"] * 6)
    assert out["add"][0] == -2**31
    assert out["sub"][1] == 2**31 - 1
    assert out["mul"][2] == 0
    assert out["neg"][1] == -2**31
    assert out["shl"][0] == -2
    assert out["shr"][3] == -1  # arithmetic shift of a negative number


# --------------------------------------------------------------------------
# Floats
# --------------------------------------------------------------------------

FLOAT_OUTS = ["add", "sub", "mul", "div", "fdiv", "rem", "neg",
              "lt", "le", "gt", "ge", "eq", "ne"]
_float_kernels = {}


def float_kernel(t):
    if t not in _float_kernels:
        T, B = dt(t), enigma.b1

        def float_ops(A: T, Bv: T, add: T, sub: T, mul: T, div: T, fdiv: T,
                      rem: T, neg: T, lt: B, le: B, gt: B, ge: B, eq: B,
                      ne: B):
            i = enigma.thread_position_in_grid
            a, b = A[i], Bv[i]
            add[i] = a + b
            sub[i] = a - b
            mul[i] = a * b
            div[i] = a / b
            fdiv[i] = a // b
            rem[i] = a % b
            neg[i] = -a
            lt[i] = a < b
            le[i] = a <= b
            gt[i] = a > b
            ge[i] = a >= b
            eq[i] = a == b
            ne[i] = a != b

        float_ops.__name__ = float_ops.__qualname__ = f"float_ops_{t}"
        _float_kernels[t] = enigma.compile(enigma.kernel(float_ops),
                                           emit_only=True)
    return _float_kernels[t]


def random_floats(rng, t, n):
    """Values of type t (as float32) spread over several binades, with a few
    integers, zeros and equal pairs."""
    x = (rng.standard_normal(n) * 2.0 ** rng.integers(-6, 7, size=n))
    x[: min(n, 6)] = [0.0, -0.0, 1.0, -3.0, 0.5, 100.0][: min(n, 6)]
    x = x.astype(np.float32)
    if t == "f16":
        return x.astype(np.float16).astype(np.float32)
    if t == "bf16":
        return bf16_bits_to_f32(f32_to_bf16_bits(x))
    return x


def to_type(x32, t):
    """Rounds float32 values to type t; returns the array a kernel reads or
    writes (bf16 as uint16 bits)."""
    if t == "f32":
        return np.asarray(x32, dtype=np.float32)
    if t == "f16":
        return np.asarray(x32, dtype=np.float32).astype(np.float16)
    return f32_to_bf16_bits(x32)


@pytest.mark.parametrize("t", FLOAT_TYPES)
def test_float_operators(runtime, rng, t):
    compiled = float_kernel(t)
    for n in SIZES:
        a = random_floats(rng, t, n)
        b = random_floats(rng, t, n)
        if n > 8:
            b[8:12] = a[8:12]
        b[b == 0] = 2.0
        out = run(runtime, compiled, [to_type(a, t), to_type(b, t)], n,
                  FLOAT_OUTS, [t] * 7 + ["b1"] * 6)
        # Each operation rounds its exact result once to t: computing in
        # float32 and rounding is exact for + - * / of half and bfloat.
        with np.errstate(all="ignore"):  # overflow to inf is expected
            q = to_type(a / b, t)
            q32 = q.astype(np.float32) if t != "bf16" else bf16_bits_to_f32(q)
            want = {
                "add": to_type(a + b, t), "sub": to_type(a - b, t),
                "mul": to_type(a * b, t), "div": q,
                "fdiv": to_type(np.floor(q32), t),
                "rem": to_type(np.fmod(a, b), t), "neg": to_type(-a, t),
                "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b,
                "eq": a == b, "ne": a != b,
            }
        for name in FLOAT_OUTS:
            assert_same(out[name], want[name].astype(out[name].dtype),
                        f"{name} n={n}", t)


def test_float_floordiv_is_floor_of_quotient_and_rem_is_fmod(runtime):
    compiled = float_kernel("f32")
    a = np.array([7, -7, 7, -7, 5.5, -0.5], dtype=np.float32)
    b = np.array([2, 2, -2, -2, 2, 4], dtype=np.float32)
    out = run(runtime, compiled, [a, b], a.size, FLOAT_OUTS,
              ["f32"] * 7 + ["b1"] * 6)
    assert out["fdiv"].tolist() == [3, -4, -4, 3, 2, -1]
    # fmod keeps the dividend's sign (Python's % would give 1, 1, -1, ...)
    assert out["rem"].tolist() == [1, -1, 1, -1, 1.5, -0.5]


def test_float_comparisons_with_nan(runtime):
    compiled = float_kernel("f32")
    a = np.array([np.nan, 1.0, np.nan], dtype=np.float32)
    b = np.array([1.0, np.nan, np.nan], dtype=np.float32)
    out = run(runtime, compiled, [a, b], a.size, FLOAT_OUTS,
              ["f32"] * 7 + ["b1"] * 6)
    for name in ("lt", "le", "gt", "ge", "eq"):
        assert not out[name].any(), name
    assert out["ne"].all()


# --------------------------------------------------------------------------
# Bool
# --------------------------------------------------------------------------

@enigma.kernel
def bool_ops(A: enigma.b1, B: enigma.b1, band: enigma.b1, bor: enigma.b1,
             bxor: enigma.b1, inv: enigma.b1, eq: enigma.b1, ne: enigma.b1,
             lt: enigma.b1, ge: enigma.b1):
    i = enigma.thread_position_in_grid
    a, b = A[i], B[i]
    band[i] = a & b
    bor[i] = a | b
    bxor[i] = a ^ b
    inv[i] = ~a
    eq[i] = a == b
    ne[i] = a != b
    lt[i] = a < b
    ge[i] = a >= b


def test_bool_operators(runtime, rng):
    compiled = enigma.compile(bool_ops, emit_only=True)
    names = ["band", "bor", "bxor", "inv", "eq", "ne", "lt", "ge"]
    for n in SIZES:
        a = rng.integers(0, 2, size=n).astype(np.bool_)
        b = rng.integers(0, 2, size=n).astype(np.bool_)
        out = run(runtime, compiled, [a, b], n, names, ["b1"] * len(names))
        want = {"band": a & b, "bor": a | b, "bxor": a ^ b, "inv": ~a,
                "eq": a == b, "ne": a != b, "lt": a < b, "ge": a >= b}
        for name in names:
            raw = out[name].view(np.uint8)
            assert set(np.unique(raw)) <= {0, 1}, f"{name}: not 0/1 bytes"
            np.testing.assert_array_equal(out[name], want[name], err_msg=name)


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "//", "%", "neg", "<<"])
def test_bool_arithmetic_is_rejected(op):
    @enigma.kernel
    def bad(A: enigma.b1, B: enigma.b1):
        i = enigma.thread_position_in_grid
        a = A[i]
        B[i] = -a if op == "neg" else eval(f"a {op} a")  # noqa: S307

    with pytest.raises(enigma.EnigmaError, match="bool|b1"):
        enigma.compile(bad, emit_only=True)


@pytest.mark.parametrize("t", FLOAT_TYPES)
@pytest.mark.parametrize("op", ["&", "|", "^", "<<", ">>", "~"])
def test_bitwise_on_floats_is_rejected(t, op):
    T = dt(t)

    @enigma.kernel
    def bad(A: T, B: T):
        i = enigma.thread_position_in_grid
        a = A[i]
        B[i] = ~a if op == "~" else eval(f"a {op} a")  # noqa: S307

    with pytest.raises(enigma.EnigmaError, match="not defined"):
        enigma.compile(bad, emit_only=True)


# --------------------------------------------------------------------------
# Promotion
# --------------------------------------------------------------------------

def traced_dtype(types, expr):
    """The dtype of ``expr(*loaded values)`` in a kernel whose buffers have
    ``types``."""
    seen = []
    params = ", ".join(f"P{k}" for k in range(len(types)))
    namespace = {"enigma": enigma, "seen": seen, "expr": expr,
                 **{f"T{k}": dt(t) for k, t in enumerate(types)}}
    src = (f"def probe({', '.join(f'P{k}: T{k}' for k in range(len(types)))}, "
           "Out: enigma.u8):\n"
           "    i = enigma.thread_position_in_grid\n"
           f"    seen.append(expr(*[P[i] for P in ({params},)]))\n")
    exec(src, namespace)  # noqa: S102
    enigma.compile(enigma.kernel(namespace["probe"]), emit_only=True)
    return seen[0].dtype.name


@pytest.mark.parametrize("t", INT_TYPES + FLOAT_TYPES)
def test_int_literal_adopts_the_other_operands_type(t):
    assert traced_dtype([t], lambda a: a + 1) == t
    assert traced_dtype([t], lambda a: 3 * a) == t
    assert traced_dtype([t], lambda a: a - 1) == t
    assert traced_dtype([t], lambda a: 100 // a) == t
    assert traced_dtype([t], lambda a: a < 2) == "b1"


@pytest.mark.parametrize("t", INT_TYPES)
def test_float_literal_with_an_int_operand_gives_f32(t):
    assert traced_dtype([t], lambda a: a * 0.5) == "f32"
    assert traced_dtype([t], lambda a: 2.0 + a) == "f32"  # integer-valued


@pytest.mark.parametrize("t", FLOAT_TYPES)
def test_float_literal_adopts_a_float_operands_type(t):
    assert traced_dtype([t], lambda a: a * 0.5) == t
    assert traced_dtype([t], lambda a: 1.0 - a) == t


PROMOTIONS = [
    # same type
    ("i32", "i32", "i32"),
    # wider integer wins, whatever its signedness
    ("i8", "i32", "i32"), ("u8", "i16", "i16"), ("u16", "i32", "i32"),
    ("u32", "i64", "i64"), ("i32", "u64", "u64"), ("u8", "u16", "u16"),
    # same width, different signedness: unsigned (as in C)
    ("i8", "u8", "u8"), ("i16", "u16", "u16"), ("i32", "u32", "u32"),
    ("i64", "u64", "u64"),
    # any float wins over any integer; two floats meet in the wider one,
    # f16 and bf16 meet in f32
    ("i64", "f16", "f16"), ("u32", "bf16", "bf16"), ("i8", "f32", "f32"),
    ("f16", "f32", "f32"), ("bf16", "f32", "f32"), ("f16", "bf16", "f32"),
    # bool takes the other type
    ("b1", "u8", "u8"), ("b1", "i64", "i64"), ("b1", "f16", "f16"),
]


@pytest.mark.parametrize("x,y,want", PROMOTIONS)
def test_mixed_type_promotion(x, y, want):
    assert traced_dtype([x, y], lambda a, b: a + b) == want
    assert traced_dtype([y, x], lambda a, b: a * b) == want
    assert traced_dtype([x, y], lambda a, b: a < b) == "b1"


@enigma.kernel
def mixed(A: enigma.i8, B: enigma.u8, C: enigma.i32, D: enigma.u32,
          E: enigma.f16, s1: enigma.u8, s2: enigma.u32, s3: enigma.b1,
          s4: enigma.u32, s5: enigma.f32, s6: enigma.u8):
    i = enigma.thread_position_in_grid
    s1[i] = A[i] + B[i]  # u8: wraps at 256
    s2[i] = C[i] + D[i]  # u32
    s3[i] = C[i] < D[i]  # compared as u32: -1 < 1 is false, as in C
    s4[i] = B[i] + 1  # u8 + literal stays u8 (255 + 1 == 0), then widened
    s5[i] = E[i] + C[i]  # f16 arithmetic, stored as f32
    s6[i] = B[i] - 1  # u8 - literal wraps: 0 - 1 == 255


def test_mixed_type_arithmetic_follows_the_promoted_type(runtime):
    compiled = enigma.compile(mixed, emit_only=True)
    A = np.array([-1, 127, -128], dtype=np.int8)
    B = np.array([1, 255, 0], dtype=np.uint8)
    C = np.array([-1, 5, 2048], dtype=np.int32)
    D = np.array([1, 7, 1], dtype=np.uint32)
    E = np.array([0.5, 1.0, 1.0], dtype=np.float16)
    names = ["s1", "s2", "s3", "s4", "s5", "s6"]
    out = run(runtime, compiled, [A, B, C, D, E], 3, names,
              ["u8", "u32", "b1", "u32", "f32", "u8"])
    assert out["s1"].tolist() == [0, 126, 128]
    assert out["s2"].tolist() == [0, 12, 2049]
    assert out["s3"].tolist() == [False, True, False]
    assert out["s4"].tolist() == [2, 0, 1]
    # 2048 + 1 is not representable in half: rounds to even, 2048
    assert out["s5"].tolist() == [-0.5, 6.0, 2048.0]
    assert out["s6"].tolist() == [0, 254, 255]


@pytest.mark.parametrize("t,bad", [
    ("u8", 256), ("u8", -129), ("i8", 300), ("i16", 70000), ("u16", -40000),
    ("i32", 2**32), ("u32", -2**31 - 1)])
def test_int_literal_that_does_not_fit_is_rejected(t, bad):
    with pytest.raises(enigma.EnigmaError, match="does not fit"):
        traced_dtype([t], lambda a: a + bad)


def test_bool_literal_is_b1():
    assert traced_dtype(["b1"], lambda a: a & True) == "b1"
    assert traced_dtype(["i32"], lambda a: a + True) == "i32"


# --------------------------------------------------------------------------
# Scalar parameters
# --------------------------------------------------------------------------

ALL_TYPES = FLOAT_TYPES + INT_TYPES + ["b1"]


def _scalar_kernel():
    """One kernel with a scalar of every dtype, each copied to its output
    (the scalar plus the thread position, to use it in arithmetic)."""
    params = ", ".join(f"s_{t}: enigma.Scalar(enigma.{t})" for t in ALL_TYPES)
    outs = ", ".join(f"o_{t}: enigma.{t}" for t in ALL_TYPES)
    body = "".join(
        f"    o_{t}[i] = s_{t}\n" if t == "b1" else
        f"    o_{t}[i] = s_{t} + enigma.metal_cast(i, enigma.{t})\n"
        for t in ALL_TYPES)
    src = (f"def scalars({params}, {outs}):\n"
           "    i = enigma.thread_position_in_grid\n" + body)
    namespace = {"enigma": enigma}
    exec(src, namespace)  # noqa: S102
    return enigma.compile(enigma.kernel(namespace["scalars"]), emit_only=True)


_scalar_compiled = []


def scalar_kernel():
    if not _scalar_compiled:
        _scalar_compiled.append(_scalar_kernel())
    return _scalar_compiled[0]


GOOD_SCALARS = {
    "f32": 1.5, "f16": -2.25, "bf16": 3.0, "i8": -128, "u8": 200,
    "i16": -32768, "u16": 65000, "i32": -2**31, "u32": 2**32 - 100,
    "i64": -2**63, "u64": 2**64 - 1000, "b1": True,
}


@pytest.mark.parametrize("n", [1, 257])
def test_scalar_parameters_of_every_dtype(runtime, n):
    compiled = scalar_kernel()
    assert [p.kind for p in compiled.params] == (["scalar"] * 12
                                                 + ["buffer"] * 12)
    values = [GOOD_SCALARS[t] for t in ALL_TYPES]
    out = run(runtime, compiled, [], n, ALL_TYPES, ALL_TYPES, scalars=values)
    idx = np.arange(n)
    for t in ALL_TYPES:
        v = GOOD_SCALARS[t]
        if t == "b1":
            want = np.full(n, v, dtype=np.bool_)
        elif t == "bf16":
            want = f32_to_bf16_bits(np.float32(v) + idx.astype(np.float32))
        elif t in ("f32", "f16"):
            want = (np.array(v, NP[t]) + idx.astype(NP[t])).astype(NP[t])
        else:
            want = (np.array(v, NP[t]) + idx.astype(NP[t])).astype(NP[t])
        assert_same(out[t], want, f"scalar {t}", t)


def test_scalars_by_name(runtime):
    compiled = scalar_kernel()
    values = {f"s_{t}": GOOD_SCALARS[t] for t in ALL_TYPES}
    out = run(runtime, compiled, [], 1, ALL_TYPES, ALL_TYPES, scalars=values)
    assert out["u64"][0] == 2**64 - 1000
    assert out["i64"][0] == -2**63


@pytest.mark.parametrize("t,bad", [
    ("u8", 256), ("u8", -1), ("i8", 128), ("i8", -129), ("u16", 65536),
    ("i16", 32768), ("u32", 2**32), ("u32", -1), ("i32", 2**31),
    ("i64", 2**63), ("u64", -1), ("i32", 1.5),
    ("u8", 2.0), ("b1", 2), ("f16", 1e6), ("bf16", 1e39), ("f32", 1e39),
    ("u64", 2**64), ("f32", "1.0"), ("i32", None),
])
def test_scalar_out_of_range_is_rejected(runtime, t, bad):
    compiled = scalar_kernel()
    values = [GOOD_SCALARS[x] for x in ALL_TYPES]
    values[ALL_TYPES.index(t)] = bad
    with pytest.raises((enigma.DispatchError, TypeError)) as info:
        runtime.execute(compiled, [], output_size=16, grid=1, threads=1,
                        scalars=values)
    assert f"s_{t}" in str(info.value), str(info.value)


@pytest.mark.parametrize("t,bad", [("u64", 2**64), ("f32", "1.0"),
                                   ("i32", None), ("i32", [1])])
def test_scalar_that_is_not_a_64_bit_number_is_a_dispatch_error(
        runtime, t, bad):
    compiled = scalar_kernel()
    values = [GOOD_SCALARS[x] for x in ALL_TYPES]
    values[ALL_TYPES.index(t)] = bad
    with pytest.raises(enigma.DispatchError, match="scalar"):
        runtime.execute(compiled, [], output_size=16, grid=1, threads=1,
                        scalars=values)


# --------------------------------------------------------------------------
# ** and abs()
# --------------------------------------------------------------------------

@enigma.kernel
def powers(A: enigma.f32, I: enigma.i32, C: enigma.f32, D: enigma.i32):
    t = enigma.thread_position_in_grid
    x, k = A[t], I[t]
    C[t * 4] = x ** 1
    C[t * 4 + 1] = x ** 2
    C[t * 4 + 2] = x ** 3
    C[t * 4 + 3] = abs(x ** 7)
    D[t * 2] = k ** 5              # wraps like k * k * k * k * k
    D[t * 2 + 1] = abs(k)


def test_pow_operator_and_abs(runtime, rng):
    """``x ** n`` is n - 1 multiplications left to right (replayed here in
    float32 / wrapping int32), ``abs()`` is enigma.abs; negative bases
    work, unlike Metal's pow."""
    n = 300
    a = rng.uniform(-3, 3, n).astype(np.float32)
    k = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    k[:3] = [-7, 2**31 - 1, -2**31]
    raw = runtime.execute(enigma.compile(powers), [a, k],
                          output_sizes=[16 * n, 8 * n], grid=(n, 1, 1),
                          threads=(64, 1, 1))
    c = np.frombuffer(raw[0], np.float32).reshape(n, 4)
    d = np.frombuffer(raw[1], np.int32).reshape(n, 2)
    with np.errstate(over="ignore"):
        seven = a
        for _ in range(6):
            seven = seven * a
        fifth = k
        for _ in range(4):
            fifth = fifth * k
    np.testing.assert_array_equal(c[:, 0], a)
    np.testing.assert_array_equal(c[:, 1], a * a)
    np.testing.assert_array_equal(c[:, 2], a * a * a)
    np.testing.assert_array_equal(c[:, 3], np.abs(seven))
    np.testing.assert_array_equal(d[:, 0], fifth)
    np.testing.assert_array_equal(d[:, 1], np.abs(k))   # abs(INT_MIN) wraps


@pytest.mark.parametrize("expr,match", [
    (lambda x: x ** 0.5, r"x \*\* 0.5: \*\* takes a Python int exponent"),
    (lambda x: x ** 0, r"x \*\* 0: "),
    (lambda x: x ** 17, r"x \*\* 17: "),
    (lambda x: x ** x, r"takes a Python int exponent"),
    (lambda x: 2.0 ** x, r"enigma.exp2"),
    (lambda x: float(x), r"cannot become a Python float.*metal_cast"),
    # Python's math module converts its argument to a float first.
    (lambda x: __import__("math").exp(x),
     r"cannot become a Python float.*math\.exp.*enigma\.exp"),
    (lambda x: int(x), r"cannot become a Python int"),
    (lambda x: max(x, 0.0), r"enigma.fmax/fmin"),
])
def test_pow_and_conversion_mistakes(expr, match):
    @enigma.kernel
    def k(A: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        C[t] = expr(A[t])

    with pytest.raises(enigma.EnigmaError, match=match):
        enigma.compile(k, emit_only=True)


def test_numpy_scalars_beside_traced_values_act_as_python_numbers(runtime,
                                                                   rng):
    # A scale computed with numpy on the host (np.float32(1 / np.sqrt(d)))
    # and used in the kernel: numpy hands the operator to the traced value.
    scale = np.float32(1 / np.sqrt(8.0))

    @enigma.kernel
    def k(A: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        x = A[t]
        C[t] = scale * x + x * np.float64(1.5) - np.int32(3) + \
            enigma.where(0.0, 1.0, np.float32(0.5) < x)

    n = 257
    a = rng.uniform(-2, 2, n).astype(np.float32)
    out = run_kernel(runtime, enigma.compile(k), [a], np.float32, n,
                     (n, 1, 1), (64, 1, 1))
    x = a.astype(np.float64)
    ref = float(scale) * x + x * 1.5 - 3 + (x > 0.5)
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("expr,match", [
    (lambda x: np.exp(x), r"numpy's exp cannot run on a traced value.*"
                          r"use enigma\.exp"),
    (lambda x: np.maximum(x, 0.0), r"numpy's maximum .*use enigma\.fmax"),
    (lambda x: np.ones(3, np.float32) * x, r"numpy's multiply cannot run"),
    (lambda x: np.float32(x), r"cannot become a numpy array or scalar"),
])
def test_numpy_functions_on_traced_values_name_enigmas(expr, match):
    @enigma.kernel
    def k(A: enigma.f32, C: enigma.f32):
        t = enigma.thread_position_in_grid
        C[t] = expr(A[t])

    with pytest.raises(enigma.EnigmaError, match=match) as info:
        enigma.compile(k, emit_only=True)
    assert "test_operators.py:" in str(info.value)
