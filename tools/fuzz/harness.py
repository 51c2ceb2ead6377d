"""One differential check: compile a kernelgen program with enigma.compile,
run it on a runtime, compare with tools/fuzz/interpret.py.

Used by run_fuzz.py (the CLI) and python/tests/test_fuzz_corpus.py.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
import traceback

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import interpret  # noqa: E402
import kernelgen  # noqa: E402

MAX_REPORTED = 8  # mismatching elements listed per output


class Outcome:
    """status: "ok", "mismatch" (an output differs from the interpreter),
    "backend_mismatch" (an output differs from the reference backend's),
    "compile_error" (enigma.compile raised), "run_error" (the runtime
    raised) or "interpreter_error" (kernelgen/interpret bug). ``details``
    is JSON-able."""

    def __init__(self, status, details=None):
        self.status = status
        self.details = details or {}

    def __repr__(self):
        return f"Outcome({self.status}, {self.details})"


def load_kernel(program, work_dir):
    """Writes the program's source as a module file (so the kernel's source
    is readable, as enigma.range needs) and returns the kernel."""
    name = kernelgen.kernel_name(program)
    path = os.path.join(work_dir, f"{name}.py")
    with open(path, "w") as f:
        f.write(kernelgen.to_source(program))
    spec = importlib.util.spec_from_file_location(f"enigma_fuzz_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def _jsonable(x):
    if isinstance(x, (float, np.floating)):
        return float(x)
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    return int(x)


def _differing_elements(expected, raw, ref_raw):
    """Indices of the elements the interpreter determines where two
    backends' outputs differ in their bits. Any NaN matches any NaN, and
    +0 matches -0: the sign of a zero from fmin/fmax is left open by Metal
    (g++ and clang pick different operands), so the elements it can reach
    (those the interpreter leaves undetermined) are not compared either."""
    t = expected.t
    a = np.frombuffer(raw, dtype=kernelgen.numpy_dtype(t))
    b = np.frombuffer(ref_raw, dtype=kernelgen.numpy_dtype(t))
    if t == "b1":
        a, b = a.view(np.uint8), b.view(np.uint8)
    differ = (a != b) & np.isfinite(expected.e.astype(np.float64))
    if kernelgen.is_floatlike(t):
        x, y = interpret.observed_values(t, raw), interpret.observed_values(t, ref_raw)
        differ &= ~(np.isnan(x) & np.isnan(y)) & (x != y)
    return [int(k) for k in np.flatnonzero(differ)]


def check(program, runtime, exact_arith=True, work_dir=None,
          reference=None) -> Outcome:
    """Compiles and runs ``program`` on ``runtime``; compares every output
    element with the interpreter (within its tolerance). With a
    ``reference`` runtime (two backends that round every operation alike,
    e.g. metal-host against cpu), the same compiled kernel also runs there
    and every element the interpreter determines must match it bit for bit,
    also where the interpreter allows a tolerance (math functions)."""
    import enigma

    try:
        expected = interpret.expected_outputs(program, exact_arith)
    except Exception:  # a generator or interpreter bug: report, not crash
        return Outcome("interpreter_error", {"traceback": traceback.format_exc()})
    own_dir = work_dir is None
    work_dir = work_dir or tempfile.mkdtemp(prefix="enigma-fuzz-")
    try:
        try:
            compiled = enigma.compile(load_kernel(program, work_dir))
        except Exception as exc:
            return Outcome("compile_error", {"error": f"{type(exc).__name__}: {exc}"})
        sizes = [b["size"] * kernelgen.numpy_dtype(b["dtype"]).itemsize
                 for b in program["outputs"]]
        def run(on):
            return on.execute(compiled, interpret.input_arrays(program),
                              grid=(program["grid"], 1, 1),
                              threads=(program["threads"], 1, 1),
                              output_sizes=sizes)
        try:
            raws = run(runtime)
        except Exception as exc:
            return Outcome("run_error", {"error": f"{type(exc).__name__}: {exc}"})
        mismatches = {}
        for b, raw in zip(program["outputs"], raws):
            exp = expected[b["name"]]
            obs = interpret.observed_values(b["dtype"], raw)
            bad = interpret.compare(exp, obs)
            if bad:
                mismatches[b["name"]] = {
                    "count": len(bad),
                    "elements": [{"index": k, "expected": _jsonable(exp.v[k]),
                                  "tolerance": float(exp.e[k]),
                                  "observed": _jsonable(obs[k])}
                                 for k in bad[:MAX_REPORTED]]}
        if mismatches:
            return Outcome("mismatch", {"outputs": mismatches})
        if reference is not None:
            try:
                ref_raws = run(reference)
            except Exception as exc:
                return Outcome("run_error", {"error": f"reference {reference.name}: "
                                             f"{type(exc).__name__}: {exc}"})
            for b, raw, ref_raw in zip(program["outputs"], raws, ref_raws):
                exp = expected[b["name"]]
                bad = _differing_elements(exp, raw, ref_raw)
                if not bad:
                    continue
                obs = interpret.observed_values(b["dtype"], raw)
                ref = interpret.observed_values(b["dtype"], ref_raw)
                mismatches[b["name"]] = {
                    "count": len(bad),
                    "elements": [{"index": k, "observed": _jsonable(obs[k]),
                                  reference.name: _jsonable(ref[k]),
                                  "expected": _jsonable(exp.v[k]),
                                  "tolerance": float(exp.e[k])}
                                 for k in bad[:MAX_REPORTED]]}
            if mismatches:
                return Outcome("backend_mismatch", {"reference": reference.name,
                                                    "outputs": mismatches})
        return Outcome("ok")
    finally:
        if own_dir:
            for f in os.listdir(work_dir):
                os.unlink(os.path.join(work_dir, f))
            os.rmdir(work_dir)


def reproducer(program, outcome, backend) -> dict:
    """A self-contained record of a failure: the program (with its input
    data), its readable kernel source, and what went wrong."""
    return {"backend": backend, "status": outcome.status,
            "details": outcome.details, "source": kernelgen.to_source(program),
            "program": program}
