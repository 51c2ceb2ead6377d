#!/usr/bin/env python3
"""Regenerates the tables of docs/reliability.md from the test suite.

Runs every deliberate mistake registered in python/tests/test_error_locations.py
(kernel-body mistakes) and python/tests/test_dispatch_errors.py (launch
arguments) and prints a markdown table of the error each one gives. With
--cache it also runs the 16-process cache scenario of
python/tests/test_cache_robustness.py and prints its figures.

    ENIGMA_CORE_DIR=<build>/python/enigma PYTHONPATH=python \\
        python3 tools/reliability_table.py [--cache] [--processes 16]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent / "python" / "tests"


def load_test_module(name: str):
    """Imports python/tests/<name>.py without pytest's collection."""
    spec = importlib.util.spec_from_file_location(name, TESTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cell(text: str) -> str:
    """Text fit for one markdown table cell."""
    return text.replace("|", "\\|").replace("\n", " ").strip()


def headline(message: str, test_file: str) -> str:
    """The line of an error message that says what is wrong, with the test
    file's absolute path shortened to its name."""
    lines = [line for line in message.splitlines() if line.strip()]
    chosen = next((line for line in lines if ": error: " in line),
                  lines[0] if lines else "")
    chosen = chosen.replace(test_file, os.path.basename(test_file))
    return chosen if len(chosen) <= 240 else chosen[:237] + "..."


def outcome(run, expected, test_file):
    """(exception name, message headline, matched) of one mistake."""
    try:
        run()
    except Exception as error:  # noqa: BLE001 - the table shows any outcome
        return (type(error).__name__, headline(str(error), test_file),
                isinstance(error, expected))
    return ("(none)", "no error was raised", False)


def kernel_table() -> list[str]:
    module = load_test_module("test_error_locations")
    rows = ["| mistake in a kernel body | exception | message (names the "
            "mistake's file:line) |", "|---|---|---|"]
    for case in module.MISTAKES:
        name, text, ok = outcome(case.run, case.error, module.__file__)
        flag = "" if ok else " **(unexpected)**"
        rows.append(f"| {cell(case.description)} | `{name}`{flag} | "
                    f"{cell(text)} |")
    return rows


def dispatch_table() -> list[str]:
    import enigma
    module = load_test_module("test_dispatch_errors")
    runtime = enigma.CpuRuntime()
    rows = ["| wrong launch argument (CPU runtime) | exception | message |",
            "|---|---|---|"]
    for case in module.DISPATCH_MISTAKES:
        name, text, ok = outcome(lambda: case.call(runtime), case.error,
                                 module.__file__)
        flag = "" if ok else " **(unexpected)**"
        rows.append(f"| {cell(case.description)} | `{name}`{flag} | "
                    f"{cell(text)} |")
    return rows


def cache_figures(processes: int) -> list[str]:
    module = load_test_module("test_cache_robustness")
    with tempfile.TemporaryDirectory(prefix="enigma-reliability-") as work:
        cache = Path(work) / "cache"
        results, seconds = module.run_concurrently(cache, work,
                                                   processes=processes)
        failures = sum(1 for code, _, _ in results if code != 0)
        counts = module.check_cache_consistent(cache)
    return ["| processes | distinct kernels | wall time | failed processes "
            "| cache entries afterwards | temp files left |",
            "|---|---|---|---|---|---|",
            f"| {processes} | 5 | {seconds:.1f} s | {failures} | "
            f"{counts['keys']} keys, {counts['objects']} objects | 0 |"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", action="store_true",
                        help="also run the concurrent cache scenario")
    parser.add_argument("--processes", type=int, default=16)
    args = parser.parse_args()
    print("\n".join(kernel_table()))
    print()
    print("\n".join(dispatch_table()))
    if args.cache:
        print()
        print("\n".join(cache_figures(args.processes)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
