#!/usr/bin/env python3
"""Differential fuzzing of Enigma: random kernels (kernelgen.py) compiled with
enigma.compile, run on a backend, compared with a numpy interpretation
(interpret.py).

    python3 tools/fuzz/run_fuzz.py --backend cpu --count 1000 --seed 1 --out /tmp/fuzz

Backends: cpu (host C++), cuda (CUDA C++ through NVRTC), metal-host (the
kernel's Metal Shading Language compiled with clang++ against the host
metal_stdlib and run with Metal's execution model).

Program k uses seed S + k, so any failure is replayed with
``--seed S+k --count 1``. Each mismatch, compile error, run error or
interpreter error is written to OUT as a reproducer JSON (program with its
input data, kernel source, observed vs expected); tools/fuzz/corpus/ keeps
reduced ones as regression tests. A kernel that kills the process (a
segfault) is left in OUT/inflight-<pid>.json and recorded as "crash" (at
once with --jobs > 1, else by the next run with the same OUT).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
import kernelgen  # noqa: E402

STATUSES = ("ok", "mismatch", "backend_mismatch", "compile_error",
            "run_error", "interpreter_error", "crash")
BACKENDS = ("cpu", "cuda", "metal-host")
# Backends that round every float operation (compiled with
# -ffp-contract=off); GPUs may contract a*b+c into an fma and approximate
# division, which the interpreter then allows for.
EXACT_ARITH_BACKENDS = ("cpu", "metal-host")


def make_runtime(backend):
    import enigma
    if backend == "cpu":
        return enigma.CpuRuntime()
    if backend == "cuda":
        return enigma.CudaRuntime()
    if backend == "metal-host":
        return enigma.MetalHostRuntime()
    raise SystemExit(f"unknown backend {backend!r} (one of {', '.join(BACKENDS)})")


def save(out_dir, name, record):
    path = os.path.join(out_dir, name)
    with open(path, "w") as f:
        json.dump(record, f, indent=1)
    return path


def recover_crashes(out_dir, backend, counts):
    """A process that died inside a kernel left it in inflight-<pid>.json;
    records each as a crash and returns their seeds."""
    seeds = set()
    for name in sorted(os.listdir(out_dir)):
        if not (name.startswith("inflight") and name.endswith(".json")):
            continue
        path = os.path.join(out_dir, name)
        with open(path) as f:
            program = json.load(f)
        outcome = harness.Outcome("crash", {"error": "the process died running this kernel"})
        save(out_dir, f"crash_{program['seed']}.json",
             harness.reproducer(program, outcome, backend))
        counts[program["category"]]["crash"] += 1
        os.unlink(path)
        seeds.add(program["seed"])
        print(f"seed {program['seed']} ({program['category']}): crash "
              f"(the process died running it)", flush=True)
    return seeds


_worker_runtimes = {}


def _runtime(backend):
    if backend is None:
        return None
    if backend not in _worker_runtimes:
        _worker_runtimes[backend] = make_runtime(backend)
    return _worker_runtimes[backend]


def check_seed(job):
    """Generates, checks and (on failure) records one program; runs in the
    main process or in a worker. Returns (seed, category, status)."""
    seed, category, backend, reference, exact_arith, out_dir = job
    program = kernelgen.generate(seed, category)
    inflight = save(out_dir, f"inflight-{os.getpid()}.json", program)
    outcome = harness.check(program, _runtime(backend), exact_arith,
                            reference=_runtime(reference))
    os.unlink(inflight)
    if outcome.status != "ok":
        path = save(out_dir, f"{outcome.status}_{seed}.json",
                    harness.reproducer(program, outcome, backend))
        print(f"seed {seed} ({program['category']}): {outcome.status} -> {path}",
              flush=True)
    return seed, program["category"], outcome.status


def run_jobs(jobs, workers, on_result, on_crash):
    """Runs check_seed over jobs, in `workers` processes when > 1 (spawned,
    not forked: a CUDA context does not survive a fork). A worker killed by
    a crashing kernel breaks the pool: ``on_crash`` records the kernels left
    in inflight files and returns their seeds, and the rest is resubmitted
    to a fresh pool."""
    if workers <= 1:
        for job in jobs:
            on_result(check_seed(job))
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    pending = list(jobs)
    while pending:
        finished = set()
        try:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(
                    "spawn")) as pool:
                for result in pool.map(check_seed, pending, chunksize=1):
                    finished.add(result[0])
                    on_result(result)
            pending = []
        except BrokenProcessPool:
            finished |= on_crash()
            pending = [j for j in pending if j[0] not in finished]


def print_table(counts, elapsed, total):
    cols = STATUSES
    print(f"\n{total} kernels in {elapsed:.0f} s ({total / max(elapsed, 1e-9):.2f}/s)")
    print(f"{'category':<12}" + "".join(f"{c:>18}" for c in ("total",) + cols))
    grand = collections.Counter()
    for cat in sorted(counts):
        row = counts[cat]
        grand.update(row)
        print(f"{cat:<12}" + f"{sum(row.values()):>18}" +
              "".join(f"{row[c]:>18}" for c in cols))
    print(f"{'all':<12}" + f"{sum(grand.values()):>18}" +
          "".join(f"{grand[c]:>18}" for c in cols))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="cpu", choices=BACKENDS)
    ap.add_argument("--count", type=int, default=100, help="kernels to generate")
    ap.add_argument("--seed", type=int, default=0, help="seed of the first kernel")
    ap.add_argument("--out", default="fuzz-out", help="folder for reproducers")
    ap.add_argument("--category", action="append", choices=kernelgen.CATEGORIES,
                    help="only these categories (repeatable; default all)")
    ap.add_argument("--jobs", type=int, default=1,
                    help="worker processes (each compiles and runs kernels)")
    ap.add_argument("--reference", choices=BACKENDS,
                    help="also run each kernel on this backend and require "
                         "bit-identical outputs (for two backends that round "
                         "alike: --backend metal-host --reference cpu)")
    ap.add_argument("--lenient", action="store_true",
                    help="allow GPU-style rounding (FMA contraction) also on cpu and metal-host")
    args = ap.parse_args(argv)

    os.makedirs(args.out, exist_ok=True)
    if args.jobs <= 1:  # fail early when a backend is missing
        _runtime(args.backend)
        _runtime(args.reference)
    exact_arith = args.backend in EXACT_ARITH_BACKENDS and not args.lenient
    counts = collections.defaultdict(collections.Counter)
    recover_crashes(args.out, args.backend, counts)
    jobs = [(args.seed + k,
             args.category[k % len(args.category)] if args.category else None,
             args.backend, args.reference, exact_arith, args.out)
            for k in range(args.count)]
    start = time.time()
    done = 0

    def on_result(result):
        nonlocal done
        _, category, status = result
        counts[category][status] += 1
        done += 1
        if done % 25 == 0 or done == args.count:
            bad = sum(c[s] for c in counts.values() for s in STATUSES if s != "ok")
            rate = done / max(time.time() - start, 1e-9)
            print(f"[{done}/{args.count}] {bad} failing, {rate:.2f} kernels/s",
                  flush=True)

    # SIGTERM (a time limit) ends the run like Ctrl-C: with the table so far.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        run_jobs(jobs, args.jobs, on_result,
                 lambda: recover_crashes(args.out, args.backend, counts))
    except KeyboardInterrupt:
        # the kernels in flight were stopped, not crashed
        for name in os.listdir(args.out):
            if name.startswith("inflight") and name.endswith(".json"):
                os.unlink(os.path.join(args.out, name))
        print("interrupted", flush=True)
    recover_crashes(args.out, args.backend, counts)
    print_table(counts, time.time() - start, done)
    failing = sum(c[s] for c in counts.values() for s in STATUSES if s != "ok")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
