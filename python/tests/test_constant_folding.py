"""A function of constants is folded at compile time (MLIR folders); the
same function of values loaded at run time is computed by the backend. The
two must agree, special values included (docs/reference/math.md): a folder
with its own idea of atan2(0, 0) would make the result depend on whether
the compiler could see the operands."""

import math

import numpy as np

import enigma

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e-30, math.inf,
           -math.inf, math.nan]
PAIRS = [(y, x) for y in (0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan)
         for x in (0.0, -0.0, 2.0, -2.0, math.inf, -math.inf, math.nan)]
UNARY = ["sqrt", "rsqrt", "abs", "ceil", "floor", "round", "trunc", "sign",
         "saturate", "fract", "exp", "exp2", "log", "log2", "log10", "sin",
         "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh"]
BINARY = ["fmin", "fmax", "pow", "fmod", "atan2", "step", "copysign"]


def _folding_kernel():
    """Writes f(constant) to C and f(A[...]) to D for every function and
    special value, in the same order."""
    names = [(n, (v,)) for n in UNARY for v in SPECIAL]
    names += [(n, p) for n in BINARY for p in PAIRS]

    @enigma.kernel
    def fold_vs_runtime(A: enigma.f32, C: enigma.f32, D: enigma.f32):
        t = enigma.thread_position_in_grid
        k = 0
        for name, args in names:
            fn = getattr(enigma, name)
            C[t * len(names) + k] = fn(*(enigma.metal_cast(a, "f32") for a in args))
            loaded = [A[enigma.metal_cast(SPECIAL_INDEX[a], "u32")] for a in args]
            D[t * len(names) + k] = fn(*loaded)
            k += 1

    return fold_vs_runtime, names


def _key(a):
    return "nan" if math.isnan(a) else (a, math.copysign(1.0, a))


SPECIAL_VALUES = sorted({_key(a): a for a in SPECIAL + [v for p in PAIRS for v in p]}
                        .items(), key=lambda kv: str(kv[0]))
SPECIAL_INDEX_KEYS = {k: i for i, (k, _) in enumerate(SPECIAL_VALUES)}


class _Index(dict):
    def __getitem__(self, a):
        return SPECIAL_INDEX_KEYS[_key(a)]


SPECIAL_INDEX = _Index()


def test_folded_constants_agree_with_runtime_values(runtime):
    kernel, names = _folding_kernel()
    compiled = enigma.compile(kernel)
    a = np.array([v for _, v in SPECIAL_VALUES], np.float32)
    n = len(names)
    raw = runtime.execute(compiled, [a], output_sizes=[n * 4, n * 4],
                          grid=(1, 1, 1), threads=(1, 1, 1))
    folded, computed = (np.frombuffer(r, np.float32) for r in raw)
    bad = []
    for (name, args), f, c in zip(names, folded, computed):
        # fmin/fmax of -0 and +0 may give either zero (C and Metal leave it
        # open; compilers and libm differ), and so may saturate(-0), a
        # clamp built from them: only there a zero's sign is free.
        free_sign = name in ("fmin", "fmax", "saturate")
        same = (np.isnan(f) and np.isnan(c)) or (
            f == c and (free_sign or np.signbit(f) == np.signbit(c))) or (
            np.isfinite(f) and np.isfinite(c) and f != 0 and
            abs(f - c) <= 4 * np.spacing(np.float32(abs(f))))
        if not same:
            bad.append(f"{name}{tuple(args)}: folded {f!r}, at run time {c!r}")
    assert not bad, "\n".join(bad)
