"""Differential fuzzing as a regression test (tools/fuzz/README.md).

Every reproducer kept in tools/fuzz/corpus/*.json (failures the fuzzer found,
reduced) must now agree with the numpy interpreter, and a fresh batch of
random programs must too. The batch's seed is printed and named in the
failure message; replay one program with
``python3 tools/fuzz/run_fuzz.py --seed <seed> --count 1 --out /tmp/f``.
"""

import glob
import json
import os
import secrets
import sys
import time

import numpy as np
import pytest

import enigma

_FUZZ_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                         "tools", "fuzz")
sys.path.insert(0, _FUZZ_DIR)

import harness  # noqa: E402
import interpret  # noqa: E402
import kernelgen  # noqa: E402

CORPUS = sorted(glob.glob(os.path.join(_FUZZ_DIR, "corpus", "*.json")))
# Open bugs that show on one backend only: bug -> backend (docs/reliability.md).
# Empty now: cuda_partial_simdgroup is fixed and must pass everywhere.
BACKEND_BUGS = {}
FRESH_PROGRAMS = 40
# Each program is one host C++ compile on the CPU backend (about a second
# on an idle core, several on a loaded machine): stop early past this budget
# (after at least one program of every category) to keep the test short.
FRESH_BUDGET_S = 45.0


def _exact_arith(runtime):
    # The CPU backend and the MSL host runtime round every float operation
    # (no contraction); GPUs may contract a*b+c into an fma, which the
    # interpreter then allows for.
    return isinstance(runtime, (enigma.CpuRuntime, enigma.MetalHostRuntime))


def test_corpus_is_not_empty():
    assert CORPUS, "tools/fuzz/corpus/ holds the fuzzer's regression programs"


@pytest.mark.parametrize("path", CORPUS, ids=[os.path.basename(p) for p in CORPUS])
def test_corpus_program(runtime, path):
    with open(path) as f:
        record = json.load(f)
    outcome = harness.check(record["program"], runtime, _exact_arith(runtime))
    known = record.get("known_bug")
    if known in BACKEND_BUGS:
        # open on one backend only: there it is expected to fail (not
        # strictly: the symptom depends on warp scheduling); elsewhere it
        # must pass like any corpus program
        if runtime.name == BACKEND_BUGS[known] and outcome.status != "ok":
            pytest.xfail(f"known Enigma bug {known}: {record.get('why', '')}")
    elif known in kernelgen.AVOID_KNOWN_BUGS:
        # not fixed yet: expected to fail; passing means the fix landed
        if outcome.status == "ok" and runtime.name != "cpu":
            return  # the bug shows on the CPU backend; other backends may hide it
        if outcome.status == "ok":
            pytest.fail(f"{known} is fixed: drop it from kernelgen.AVOID_KNOWN_BUGS "
                        "and the xfail mark in test_fuzz_regressions.py")
        pytest.xfail(f"known Enigma bug {known}: {record.get('why', '')}")
    assert outcome.status == "ok", (
        f"{os.path.basename(path)} ({record.get('why', record['status'])}): "
        f"{outcome}\n{kernelgen.to_source(record['program'])}")


def test_fresh_random_programs(runtime):
    first = int(os.environ.get("ENIGMA_TEST_SEED", secrets.randbits(31)))
    print(f"fuzz seeds {first}..{first + FRESH_PROGRAMS - 1}")
    failures = []
    start = time.monotonic()
    for k in range(FRESH_PROGRAMS):
        if k >= len(kernelgen.CATEGORIES) and time.monotonic() - start > FRESH_BUDGET_S:
            print(f"time budget reached after {k} programs")
            break
        seed = first + k
        category = kernelgen.CATEGORIES[k % len(kernelgen.CATEGORIES)]
        program = kernelgen.generate(seed, category)
        outcome = harness.check(program, runtime, _exact_arith(runtime))
        if outcome.status != "ok":
            failures.append(f"seed {seed} ({category}): {outcome}")
    assert not failures, (
        f"{len(failures)} of {FRESH_PROGRAMS} random programs failed (first seed "
        f"{first}; replay with tools/fuzz/run_fuzz.py --seed SEED --count 1 "
        f"--category CATEGORY):\n" + "\n".join(failures))


class _Altered:
    """A reference runtime that runs the kernel on ``runtime`` and then
    changes the result: flips the low bit of byte ``byte`` of output
    ``output``, or replaces every NaN of the f32 output ``nan_output`` by a
    NaN of the other sign and another payload."""

    def __init__(self, runtime, output=None, byte=None, nan_output=None):
        self._runtime = runtime
        self._output, self._byte, self._nan = output, byte, nan_output
        self.name = "altered"

    def execute(self, *args, **kwargs):
        raws = [bytearray(r) for r in self._runtime.execute(*args, **kwargs)]
        if self._output is not None:
            raws[self._output][self._byte] ^= 1
        if self._nan is not None:
            words = np.frombuffer(raws[self._nan], dtype=np.uint32).copy()
            nan = np.isnan(words.view(np.float32))
            words[nan] = np.where(words[nan] >> 31, 0x7FC00001, 0xFFC00001)
            raws[self._nan][:] = words.tobytes()
        return [bytes(r) for r in raws]


def _program_with(rng, category, wanted, exact_arith=True):
    """A random program of ``category`` whose first f32 output has an
    element, determined by the interpreter (with the tolerances of
    ``exact_arith``, as the check will use), for which ``wanted(value)``
    holds; returns (program, output number, element)."""
    for _ in range(500):
        program = kernelgen.generate(int(rng.integers(2**31)), category)
        expected = interpret.expected_outputs(program, exact_arith)
        for k, b in enumerate(program["outputs"]):
            if b["dtype"] != "f32":
                continue
            e = expected[b["name"]]
            hits = [i for i in range(b["size"]) if np.isfinite(e.e[i])
                    and wanted(float(e.v[i]))]
            if hits:
                return program, k, int(rng.choice(hits))
    raise AssertionError(f"no {category} program with such an f32 output")


def test_reference_backend_difference_is_reported(runtime, rng):
    """--reference: one flipped bit in the reference's output is a
    backend_mismatch naming that element; the same runtime as its own
    reference agrees."""
    program, k, element = _program_with(rng, "arith",
                                        lambda v: v == v and v != 0,
                                        _exact_arith(runtime))
    assert harness.check(program, runtime, _exact_arith(runtime),
                         reference=runtime).status == "ok"
    outputs = program["outputs"]
    outcome = harness.check(program, runtime, _exact_arith(runtime),
                            reference=_Altered(runtime, k, element * 4))
    assert outcome.status == "backend_mismatch", outcome
    out = outcome.details["outputs"][outputs[k]["name"]]
    assert out["count"] == 1 and out["elements"][0]["index"] == element


def test_reference_backend_nans_match_any_nan(runtime, rng):
    """Two NaNs with different signs or payloads are the same result."""
    program, k, _ = _program_with(rng, "math", lambda v: v != v)
    outcome = harness.check(program, runtime, _exact_arith(runtime),
                            reference=_Altered(runtime, nan_output=k))
    assert outcome.status == "ok", outcome


# --- 8-bit floats -------------------------------------------------------------

FP8_PROGRAMS = 6


def _fp8_programs(first, count):
    """The first ``count`` programs from seed ``first`` on (categories in
    turn) that hold 8-bit floats: buffers, conversions (plain, saturating,
    vector lanes), comparisons and f32 arithmetic of them."""
    seed = first
    while count:
        category = ("arith", "math", "control")[seed % 3]
        program = kernelgen.generate(seed, category)
        if any(kernelgen.is_fp8(b["dtype"]) for b in
               program["inputs"] + program["outputs"]) or \
                "f8e" in kernelgen.to_source(program):
            yield seed, category, program
            count -= 1
        seed += 1


def test_fresh_random_fp8_programs(runtime):
    first = int(os.environ.get("ENIGMA_TEST_SEED", secrets.randbits(31)))
    print(f"fp8 fuzz seeds from {first}")
    failures = []
    for seed, category, program in _fp8_programs(first, FP8_PROGRAMS):
        outcome = harness.check(program, runtime, _exact_arith(runtime))
        if outcome.status != "ok":
            failures.append(f"seed {seed} ({category}): {outcome}")
    assert not failures, "\n".join(failures)


def test_fp8_output_difference_is_reported(runtime, rng):
    """One flipped bit in a determined element of an 8-bit output is a
    backend_mismatch naming that element (the fp8 outputs are compared,
    not skipped)."""
    first = int(rng.integers(2**31))
    for _, _, program in _fp8_programs(first, 200):
        expected = interpret.expected_outputs(program, _exact_arith(runtime))
        for k, b in enumerate(program["outputs"]):
            if not kernelgen.is_fp8(b["dtype"]):
                continue
            e = expected[b["name"]]
            # Exact numbers only: a flip of the lowest bit may stay inside
            # a math function's tolerance, and turns one e5m2 NaN into
            # another.
            hits = [i for i in range(b["size"] - 3)
                    if e.e[i] == 0 and not np.isnan(e.v[i])]
            if hits:
                element = int(rng.choice(hits))
                outcome = harness.check(
                    program, runtime, _exact_arith(runtime),
                    reference=_Altered(runtime, k, element))
                assert outcome.status == "backend_mismatch", outcome
                out = outcome.details["outputs"][b["name"]]
                assert out["elements"][0]["index"] == element
                return
    raise AssertionError("no program with a determined 8-bit output")
