#!/usr/bin/env python3
"""Shrinks a failing fuzz program (a reproducer JSON from run_fuzz.py) to a
small one that fails the same way, for the corpus.

    python3 tools/fuzz/reduce.py --backend cpu IN.json OUT.json [--why TEXT]
    python3 tools/fuzz/reduce.py --backend metal-host --reference cpu IN.json OUT.json

Greedy: drop statements one at a time (innermost first), then unused
outputs and inputs, then shrink the grid, keeping each change that leaves
the program valid (the interpreter runs it) and the failure's status
unchanged (and, for compile or run errors, the same error type).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import interpret  # noqa: E402
import kernelgen  # noqa: E402
from run_fuzz import BACKENDS, EXACT_ARITH_BACKENDS, make_runtime  # noqa: E402


def _signature(outcome):
    error = outcome.details.get("error", "")
    return outcome.status, error.split(":", 1)[0]


def _statement_lists(body):
    """Every statement list in the body (nested ones first)."""
    for s in body:
        if s[0] == "if":
            yield from _statement_lists(s[2])
            if s[3]:
                yield from _statement_lists(s[3])
        elif s[0] == "for":
            yield from _statement_lists(s[5])
        elif s[0] == "while":
            yield from _statement_lists(s[2])
    yield body


def _used_names(program):
    text = json.dumps(program["body"])
    return {b["name"] for b in program["inputs"] + program["outputs"]
            if f'"{b["name"]}"' in text}


def reduce(program, runtime, exact_arith, reference=None):
    target = _signature(harness.check(program, runtime, exact_arith,
                                      reference=reference))
    if target[0] == "ok":
        raise SystemExit("the program does not fail")

    def still_fails(candidate):
        try:
            interpret.expected_outputs(candidate, exact_arith)
        except Exception:
            return False  # no longer a valid program
        return _signature(harness.check(candidate, runtime, exact_arith,
                                        reference=reference)) == target

    changed = True
    while changed:
        changed = False
        lst_index = 0
        # deleting a loop or if_ removes its statement lists: count afresh
        while lst_index < len(list(_statement_lists(program["body"]))):
            k = 0
            while True:
                candidate = copy.deepcopy(program)
                lists = list(_statement_lists(candidate["body"]))
                if lst_index >= len(lists) or k >= len(lists[lst_index]):
                    break
                lst = lists[lst_index]
                del lst[k]
                if still_fails(candidate):
                    program, changed = candidate, True
                else:
                    k += 1
            lst_index += 1
        used = _used_names(program)
        for key in ("outputs", "inputs"):
            kept = [b for b in program[key] if b["name"] in used]
            if len(kept) != len(program[key]):
                candidate = copy.deepcopy(program)
                candidate[key] = kept
                if still_fails(candidate):
                    program, changed = candidate, True
    for n in (1, 4, 32, 33, 64):
        if n < program["grid"]:
            candidate = copy.deepcopy(program)
            candidate["grid"] = n
            candidate["threads"] = min(candidate["threads"], n)
            for b in candidate["inputs"]:
                b["data"] = b["data"][:n]
            for b in candidate["outputs"]:
                if b["size"] == program["grid"] + 3:
                    b["size"] = n + 3
            if still_fails(candidate):
                program = candidate
                break
    return program


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--backend", default="cpu", choices=BACKENDS)
    ap.add_argument("--reference", choices=BACKENDS,
                    help="reduce a backend_mismatch against this backend")
    ap.add_argument("--why", default="", help="a line on the bug, kept in the entry")
    args = ap.parse_args(argv)
    with open(args.input) as f:
        record = json.load(f)
    runtime = make_runtime(args.backend)
    exact = args.backend in EXACT_ARITH_BACKENDS
    reference = make_runtime(args.reference) if args.reference else None
    small = reduce(record["program"], runtime, exact, reference)
    outcome = harness.check(small, runtime, exact, reference=reference)
    entry = harness.reproducer(small, outcome, args.backend)
    entry["why"] = args.why
    with open(args.output, "w") as f:
        json.dump(entry, f, indent=1)
    print(kernelgen.to_source(small))
    print(f"{outcome.status}: {outcome.details}")


if __name__ == "__main__":
    main()
