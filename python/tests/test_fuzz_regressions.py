"""Focused regressions for Enigma bugs found by the differential fuzzer
(tools/fuzz). Each test names its corpus entry in tools/fuzz/corpus/.

A test marked ``xfail(strict=True)`` documents a bug that is not fixed yet:
it fails today (so the suite stays green) and turns into an error the moment
the fix lands, as a reminder to drop the mark and the entry in
kernelgen.AVOID_KNOWN_BUGS.
"""

import numpy as np
import pytest

import enigma

U64_MAX = (1 << 64) - 1


@enigma.kernel
def _sub_u64_max(A: enigma.u64, B: enigma.u64):
    t = enigma.thread_position_in_grid
    B[t] = A[t] - 18446744073709551615  # u64 arithmetic: A - (2^64 - 1) == A + 1


@enigma.kernel
def _and_high_bit(A: enigma.u64, B: enigma.u64):
    t = enigma.thread_position_in_grid
    B[t] = A[t] & 0x8000000000000000


def test_u64_literal_at_or_above_2_pow_63(runtime, rng):
    """docs/language.md: an int literal adopts the other operand's type and
    may be any value of it read as signed or unsigned; for u64 that is up to
    2**64 - 1."""
    n = 257
    a = rng.integers(0, U64_MAX, n, dtype=np.uint64, endpoint=True)
    a[:3] = [0, U64_MAX, 1 << 63]
    for kernel, reference in ((_sub_u64_max, a + np.uint64(1)),
                              (_and_high_bit, a & np.uint64(1 << 63))):
        compiled = enigma.compile(kernel)
        raw = runtime.execute(compiled, [a], output_size=(n + 3) * 8,
                              grid=(n, 1, 1), threads=(64, 1, 1))
        out = np.frombuffer(raw, np.uint64)
        assert np.array_equal(out[:n], reference)
        assert not out[n:].any()


def test_literal_too_large_for_any_type_is_an_enigma_error():
    """A literal that fits no reading of the type is an EnigmaError naming the
    user's line (docs/language.md), also beyond 64 bits."""

    @enigma.kernel
    def too_big(A: enigma.u8, B: enigma.u8):
        t = enigma.thread_position_in_grid
        B[t] = A[t] + 2**70

    with pytest.raises(enigma.EnigmaError, match=r"test_fuzz_regressions\.py:\d+"):
        enigma.compile(too_big)


# --------------------------------------------------------------------------
# if_carry_liveness (corpus: if_carry_liveness.json; fuzz seed 700, control)
# --------------------------------------------------------------------------

@enigma.kernel
def _if_then_if(A: enigma.i32, B: enigma.i32):
    t = enigma.thread_position_in_grid
    x = A[t]
    acc = x
    with enigma.if_(x > 3):
        acc = acc + 1
    with enigma.if_(x > 100):
        acc = x * 2          # assigned, not read first
    B[t] = acc


@enigma.kernel
def _if_then_empty_loop(A: enigma.i32, B: enigma.i32):
    t = enigma.thread_position_in_grid
    x = A[t]
    acc = x
    with enigma.if_(x > 3):
        acc = acc + 1
    for i in enigma.range(0, 0):   # never runs: acc keeps the if_'s value
        acc = 5
    B[t] = acc


@enigma.kernel
def _if_then_while(A: enigma.i32, B: enigma.i32):
    t = enigma.thread_position_in_grid
    x = A[t]
    acc = x
    n = enigma.metal_cast(x, "u32") & 3
    with enigma.if_(x > 3):
        acc = acc + 1
    with enigma.while_(lambda: n > 0):
        acc = 7
        n = n - 1
    B[t] = acc


@pytest.mark.parametrize("which", ["if_then_if", "if_then_empty_loop",
                                   "if_then_while"])
def test_if_carries_variable_reassigned_in_a_later_block(runtime, rng, which):
    """docs/reference/control-flow.md: a variable assigned in an if_ arm and
    read after the statement is a result of the branch. A store inside a
    later if_ or loop may not run, so the read after it still sees the
    first if_'s value."""
    n = 300
    a = rng.integers(-200, 200, n, dtype=np.int32)
    after_first = a + (a > 3)
    kernel, reference = {
        "if_then_if": (_if_then_if, np.where(a > 100, a * 2, after_first)),
        "if_then_empty_loop": (_if_then_empty_loop, after_first),
        "if_then_while": (_if_then_while,
                          np.where((a.view(np.uint32) & 3) > 0, 7, after_first)),
    }[which]
    raw = runtime.execute(enigma.compile(kernel), [a], output_size=(n + 3) * 4,
                          grid=(n, 1, 1), threads=(64, 1, 1))
    out = np.frombuffer(raw, np.int32)
    assert np.array_equal(out[:n], reference)
    assert not out[n:].any()


# --------------------------------------------------------------------------
# carried_type_mid_block (corpus: carried_type_mid_block.json; fuzz seed
# 400322, control)
# --------------------------------------------------------------------------

@enigma.kernel
def _carried_half_read_in_arm(A: enigma.f16, B: enigma.f32, C: enigma.f32):
    t = enigma.thread_position_in_grid
    h = A[t]                     # a carried f16
    y = B[t] * 0.0
    with enigma.if_(t >= 0):
        h = h + B[t]             # f16 + f32 is f32; h stays an f16
        y = y + h                # must read the f16 value
    C[t] = y + h * 0.0           # h is read after the arm: it is carried


def test_carried_value_converts_at_assignment(runtime, rng):
    """docs/reference/control-flow.md: a carried value keeps the type of its
    initial value and float widths convert as in C, i.e. at the assignment,
    so the next read in the same arm sees the f16 value."""
    n = 512
    a = rng.uniform(-4, 4, n).astype(np.float16)
    b = rng.uniform(-4, 4, n).astype(np.float32)
    raw = runtime.execute(enigma.compile(_carried_half_read_in_arm), [a, b],
                          output_size=(n + 3) * 4, grid=(n, 1, 1),
                          threads=(64, 1, 1))
    out = np.frombuffer(raw, np.float32)
    reference = (a.astype(np.float32) + b).astype(np.float16).astype(np.float32)
    assert np.array_equal(out[:n], reference)
    assert not out[n:].any()


# --------------------------------------------------------------------------
# cuda_ptxas_register_allocation (corpus: cuda_ptxas_register_allocation.json;
# fuzz seed 902404, simd, found on an H200)
# --------------------------------------------------------------------------

def test_chain_of_u64_simd_reductions_compiles_for_cuda(tmp_path):
    """The CUDA text of a kernel with several 64-bit simd reductions and
    scans (some in loops) must get through NVRTC and ptxas for sm_90; it
    failed with ptxas C7600 ("Register allocation failed") while the
    partial-warp fold of every reduction was unrolled 32 times. Needs only
    NVRTC, no GPU."""
    import json
    import os
    import sys
    fuzz_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                            "tools", "fuzz")
    sys.path.insert(0, fuzz_dir)
    import harness
    with open(os.path.join(fuzz_dir, "corpus",
                           "cuda_ptxas_register_allocation.json")) as f:
        program = json.load(f)["program"]
    source = enigma.compile(harness.load_kernel(program, str(tmp_path))).cuda_source
    try:
        enigma._core.Runtime.nvrtc_check('extern "C" __global__ void k() {}',
                                         "sm_90", [])
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed")
    enigma._core.Runtime.nvrtc_check(source, "sm_90", [])


# --------------------------------------------------------------------------
# cuda_narrow_negation (corpus: cuda_narrow_negation.json; fuzz seeds 900287,
# 901098, 901512, 901943, found on an H200)
# --------------------------------------------------------------------------

@enigma.kernel
def _negate_i16_and_widen(A: enigma.i16, L: enigma.i64, F: enigma.f32, I: enigma.i32):
    t = enigma.thread_position_in_grid
    n = -A[t]                    # i16 arithmetic: -(-32768) == -32768
    L[t] = enigma.metal_cast(n, "i64")
    F[t] = enigma.metal_cast(n, "f32")
    I[t] = enigma.metal_cast(0 - A[t], "i32")


@enigma.kernel
def _negate_i8_and_widen(A: enigma.i8, L: enigma.i64, F: enigma.f32, I: enigma.i32):
    t = enigma.thread_position_in_grid
    n = -A[t]
    L[t] = enigma.metal_cast(n, "i64")
    F[t] = enigma.metal_cast(n, "f32")
    I[t] = enigma.metal_cast(0 - A[t], "i32")


@enigma.kernel
def _negate_short4_and_widen(A: enigma.i16, L: enigma.i64, F: enigma.f32, I: enigma.i32):
    i = enigma.thread_position_in_grid * 4
    v = -enigma.make_vec(A[i], A[i + 1], A[i + 2], A[i + 3])   # short4
    w = enigma.make_vec(A[i], A[i + 1], A[i + 2], A[i + 3]) * -1
    for k in range(4):
        L[i + k] = enigma.metal_cast(enigma.vec_extract(v, k), "i64")
        F[i + k] = enigma.metal_cast(enigma.vec_extract(v, k), "f32")
        I[i + k] = enigma.metal_cast(enigma.vec_extract(w, k), "i32")


@pytest.mark.parametrize("kernel,dtype,per_thread", [
    (_negate_i16_and_widen, np.int16, 1), (_negate_i8_and_widen, np.int8, 1),
    (_negate_short4_and_widen, np.int16, 4)])
def test_narrow_negation_wraps_before_widening(runtime, kernel, dtype, per_thread):
    """Every i16 (i8) value negated in its own width, then widened: the most
    negative value negates to itself. On CUDA the negation of -32768 came
    out as +32768 once widened (NVRTC/ptxas sign-extended the 32-bit
    register that held the 16-bit result)."""
    info = np.iinfo(dtype)
    a = np.arange(info.min, info.max + 1).astype(dtype)
    n = a.size
    wrapped = (-a.astype(np.int64) + (1 << (8 * a.itemsize - 1))) % (1 << 8 * a.itemsize) \
        - (1 << (8 * a.itemsize - 1))
    raw = runtime.execute(enigma.compile(kernel), [a],
                          output_sizes=[(n + 3) * 8, (n + 3) * 4, (n + 3) * 4],
                          grid=(n // per_thread, 1, 1), threads=(256, 1, 1))
    longs, floats, ints = (np.frombuffer(r, t)[:n] for r, t in
                           zip(raw, (np.int64, np.float32, np.int32)))
    assert np.array_equal(longs, wrapped)
    assert np.array_equal(floats, wrapped.astype(np.float32))
    assert np.array_equal(ints, wrapped)


# --------------------------------------------------------------------------
# arm_assignment_type (corpus: arm_assignment_type.json; fuzz seed 911432,
# control)
# --------------------------------------------------------------------------

@enigma.kernel
def _narrow_in_arm_then_copy(A: enigma.i32, B: enigma.u8, C: enigma.i32):
    t = enigma.thread_position_in_grid
    wide = A[t]
    small = B[t]                 # u8
    with enigma.if_(t >= 0):
        small = small ^ wide     # u8 ^ i32 is i32; small stays a u8
        wide = small             # must read the u8 value
    C[t] = wide                  # small is not read after the branch


@enigma.kernel
def _narrow_in_both_arms(A: enigma.i32, B: enigma.u8, C: enigma.i32):
    t = enigma.thread_position_in_grid
    wide = A[t]
    small = B[t]
    with enigma.if_(t % 2 == 0) as (then_b, else_b):
        with then_b:
            small = small ^ wide          # a u8 again
            C[t] = small
        with else_b:
            small = small ^ (wide >> 8)   # the else arm starts from B[t]
            C[t] = small


def test_variable_keeps_its_type_in_an_arm_whether_or_not_read_after(runtime, rng):
    """docs/reference/control-flow.md: a variable that has a value before an
    if_ or loop and is assigned inside it keeps its type there. It did only
    when the variable was also read after the construct: otherwise the
    assignment rebound the Python name to the wider value."""
    n = 300
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    b = rng.integers(0, 256, n).astype(np.uint8)
    raw = runtime.execute(enigma.compile(_narrow_in_arm_then_copy), [a, b],
                          output_size=(n + 3) * 4, grid=(n, 1, 1),
                          threads=(64, 1, 1))
    out = np.frombuffer(raw, np.int32)
    reference = ((b.astype(np.int64) ^ a.astype(np.int64)) & 0xFF).astype(np.int32)
    assert np.array_equal(out[:n], reference)
    assert not out[n:].any()
    raw = runtime.execute(enigma.compile(_narrow_in_both_arms), [a, b],
                          output_size=(n + 3) * 4, grid=(n, 1, 1),
                          threads=(64, 1, 1))
    out = np.frombuffer(raw, np.int32)[:n]
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    even = np.arange(n) % 2 == 0
    reference = np.where(even, (b64 ^ a64) & 0xFF, (b64 ^ (a64 >> 8)) & 0xFF)
    assert np.array_equal(out, reference.astype(np.int32))


# --------------------------------------------------------------------------
# cuda_abs_int_min (corpus: cuda_abs_int_min.json; fuzz seed 906801,
# threadgroup, found on an H200)
# --------------------------------------------------------------------------

def _abs_kernel(dtype):
    @enigma.kernel
    def abs_then_widen(A: dtype, U: enigma.f32, S: enigma.i64, V: enigma.i64):
        t = enigma.thread_position_in_grid
        a = A[t]
        U[t] = enigma.metal_cast(enigma.abs_diff_unary(a), "f32")  # |a|, unsigned
        S[t] = enigma.metal_cast(enigma.abs(a), "i64")   # abs(MIN) == MIN
        i = t - t % 2
        v = enigma.abs(enigma.make_vec(A[i], A[i + 1]))
        lane = enigma.where(enigma.vec_extract(v, 0), enigma.vec_extract(v, 1),
                            t % 2 == 1)
        V[t] = enigma.metal_cast(lane, "i64")
    return abs_then_widen


@pytest.mark.parametrize("np_dtype,dtype", [(np.int8, enigma.i8), (np.int16, enigma.i16),
                                            (np.int32, enigma.i32), (np.int64, enigma.i64)])
def test_abs_of_the_most_negative_value(runtime, rng, np_dtype, dtype):
    """Metal's abs wraps the most negative value to itself; its unsigned
    reading (abs_diff_unary) is 2^(w-1). CUDA's abs(int) leaves INT_MIN
    undefined, and NVRTC read the result as non-negative: converting
    |INT_MIN| from u32 to float gave -2^31."""
    info = np.iinfo(np_dtype)
    n = 256
    a = rng.integers(info.min, info.max, n, dtype=np_dtype, endpoint=True)
    a[:4] = [info.min, info.min + 1, -1, 0]
    a[100:104] = info.min
    out = runtime.execute(enigma.compile(_abs_kernel(dtype)), [a],
                          output_sizes=[(n + 3) * 4, (n + 3) * 8, (n + 3) * 8],
                          grid=(n, 1, 1), threads=(64, 1, 1))
    unsigned, signed, lanes = (np.frombuffer(r, t)[:n] for r, t in
                               zip(out, (np.float32, np.int64, np.int64)))
    magnitude = np.abs(a.astype(object)).astype(np.float64)
    wrapped = np.where(a == info.min, info.min, np.abs(a.astype(np.int64)))
    assert np.array_equal(unsigned, magnitude.astype(np.float32))
    assert np.array_equal(signed, wrapped)
    assert np.array_equal(lanes, wrapped)


# --------------------------------------------------------------------------
# int_to_half_rounds_once (corpus: int_to_half_rounds_once.json; fuzz seed
# 920371, arith)
# --------------------------------------------------------------------------

def _round_to_bits(value, bits):
    """An exact integer rounded to `bits` significant bits, ties to even."""
    mag = abs(value)
    drop = mag.bit_length() - bits
    if drop <= 0:
        return value
    q, r = divmod(mag, 1 << drop)
    if r > 1 << (drop - 1) or (r == 1 << (drop - 1) and q & 1):
        q += 1
    return (q << drop) * (1 if value >= 0 else -1)


def _rounding_traps(bits, width, signed):
    """Values just beside a tie of `bits` significant bits: rounding them to
    float (24 bits) first lands on the tie and then rounds the wrong way."""
    top = width - 1 if signed else width
    out = []
    for high in range(top - 2, top):
        drop = high + 1 - bits
        for kept in ((1 << bits) - 5, (1 << (bits - 1)) + 3):
            tie = (kept << drop) + (1 << (drop - 1))
            out += [tie - 1, tie + 1, tie]
    return [v for v in out if v < (1 << top)]


@pytest.mark.parametrize("to,bits", [("bf16", 8)])
@pytest.mark.parametrize("src,np_src,width,signed", [
    ("u64", np.uint64, 64, False), ("i64", np.int64, 64, True),
    ("u32", np.uint32, 32, False), ("i32", np.int32, 32, True)])
def test_int_to_half_and_bfloat_rounds_once(runtime, rng, to, bits, src, np_src,
                                            width, signed):
    """metal_cast of a 32- or 64-bit integer to bfloat rounds once to
    nearest even; the CPU backend went through float and rounded twice
    (u64 -> bf16, fuzz seed 920371). (half cannot meet the trap: integers
    beyond float's 24 exact bits are beyond half's range.)"""
    traps = _rounding_traps(bits, width, signed)
    if signed:
        traps += [-v for v in traps]
    info = np.iinfo(np_src)
    values = traps + [int(v) for v in rng.integers(info.min, info.max, 64,
                                                   dtype=np_src, endpoint=True)]
    a = np.array(values, dtype=np_src)
    n = a.size

    @enigma.kernel
    def convert(A: getattr(enigma, src), B: getattr(enigma, to)):
        t = enigma.thread_position_in_grid
        B[t] = enigma.metal_cast(A[t], to)

    raw = runtime.execute(enigma.compile(convert), [a], output_size=(n + 3) * 2,
                          grid=(n, 1, 1), threads=(32, 1, 1))
    bits16 = np.frombuffer(raw, np.uint16)[:n]
    if to == "f16":
        got = bits16.view(np.float16).astype(np.float64)
        limit = 65504.0
    else:
        got = (bits16.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        limit = float(np.finfo(np.float32).max)
    for v, g in zip(values, got):
        want = float(_round_to_bits(v, bits))
        if abs(want) > limit:
            want = np.inf if v > 0 else -np.inf
        assert g == want, f"{src} {v} -> {to}: {g!r}, expected {want!r}"


# --------------------------------------------------------------------------
# cpu_fp_contract (corpus: cpu_fp_contract.json; fuzz seed 930750, arith)
# --------------------------------------------------------------------------

@enigma.kernel
def _product_minus(A: enigma.f32, B: enigma.f32, C: enigma.f32, D: enigma.f32):
    t = enigma.thread_position_in_grid
    D[t] = A[t] * B[t] - C[t]


def test_cpu_backend_rounds_every_float_operation(runtime, rng):
    """docs/runtimes.md: the CPU backend rounds each + - * / to float, so
    its results are the same on every host. g++ contracts a * b - c into an
    fma by default in C++ (-ffp-contract=fast, also with -std=c++17) where
    -march=native offers one; the kernel then differed from numpy by up to
    23 ulps after cancellation. GPUs may contract (docs/language.md), so
    this holds for the CPU backend only."""
    if not isinstance(runtime, enigma.CpuRuntime):
        pytest.skip("GPU backends may contract a * b + c")
    n = 4096
    a = rng.uniform(0.9, 1.1, n).astype(np.float32)
    c = rng.integers(-2**31, 2**31, n).astype(np.float32)
    b = c.copy()                      # a * b - b: the product's rounding shows
    raw = runtime.execute(enigma.compile(_product_minus), [a, b, c],
                          output_size=(n + 3) * 4, grid=(n, 1, 1),
                          threads=(64, 1, 1))
    out = np.frombuffer(raw, np.float32)[:n]
    reference = (a * b) - c          # numpy: each operation rounded to float32
    assert np.array_equal(out, reference)
