"""ptxas's reports of NVRTC's sm_90a builds under the other NVRTC a test
process may load.

A process that imported torch compiles with PyTorch's NVRTC (the first
libnvrtc loaded wins); one that did not, with the CUDA toolkit's. Their
ptxas allocate registers differently, so a kernel can spill under one and
not the other, and a spill check would pass or fail with the order in
which a pytest worker ran its tests. The checks of pipelined kernels
therefore judge both: their own builds, and :func:`other_nvrtc_reports`,
the same sources built in a child process that loads the other NVRTC.
"""

import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

_CHILD = r"""
import json, sys
if sys.argv[3] == "torch":
    import torch  # noqa: F401  (its NVRTC, loaded before enigma's)
import enigma
sources = json.load(open(sys.argv[1]))
reports = {}
for what, source in sources.items():
    _, reports[what] = enigma._core.Runtime.nvrtc_check(
        source, "sm_90a", [], log=True)
json.dump(reports, open(sys.argv[2], "w"))
"""


def other_nvrtc_reports(sources):
    """``{what: ptxas report}`` of each of ``sources`` (``{what: CUDA
    text}``) built for sm_90a with ``--ptxas-options=-v`` in a child
    process that imports torch where this one has not, and does not where
    it has; None where torch is not installed (one NVRTC only)."""
    if importlib.util.find_spec("torch") is None:
        return None
    mode = "plain" if "torch" in sys.modules else "torch"
    with tempfile.TemporaryDirectory() as tmp:
        given = os.path.join(tmp, "sources.json")
        taken = os.path.join(tmp, "reports.json")
        with open(given, "w") as f:
            json.dump(sources, f)
        env = dict(os.environ, ENIGMA_NVRTC_OPTIONS="--ptxas-options=-v")
        done = subprocess.run([sys.executable, "-c", _CHILD, given, taken,
                               mode], env=env, capture_output=True,
                              text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        with open(taken) as f:
            return json.load(f)


_SPILL_STORES = re.compile(r"(?<![0-9])([0-9]+) bytes spill stores")


def spill_stores(log):
    """The bytes of spill stores of each function in ptxas's report."""
    return [int(n) for n in _SPILL_STORES.findall(log)]


def spill_free(log):
    """Whether ptxas's report shows functions and none of them spills
    (each function's line reads "N bytes spill stores"; a plain substring
    test for "0 bytes spill stores" would pass "80 bytes ...")."""
    stores = spill_stores(log)
    return bool(stores) and not any(stores)


def ptxas_problems(log):
    """What a report shows wrong: spills, serialised warpgroup products or
    ignored register counts (C75xx), ptxas warnings; "" when none, or when
    this NVRTC keeps ptxas's report to itself (13.0)."""
    if "Used " not in log:
        return ""
    problems = []
    if not spill_free(log):
        problems.append("spills")
    problems += re.findall(r"\(C75\d\d\)", log)
    if "ptxas warning" in log:
        problems.append("ptxas warning")
    return ", ".join(problems)


def assert_clean_under_other_nvrtc(sources):
    """Every one of ``sources`` builds without :func:`ptxas_problems`
    under the other NVRTC too (nothing to check without torch)."""
    reports = other_nvrtc_reports(sources)
    for what, log in (reports or {}).items():
        problems = ptxas_problems(log)
        assert not problems, (f"{what} under the other NVRTC "
                              f"({'without' if 'torch' in sys.modules else 'with'} "
                              f"torch): {problems}\n{log}")
