"""The warp-specialised GEMM configurations on one GPU: checked, then timed
against cuBLAS, each configuration in its own process with a time limit,
so that a pipeline that hangs becomes a reported failure, not a hung run.

    python3 bench/check_gemm_ws.py                 # checks, then timings
    python3 bench/check_gemm_ws.py --check-only    # correctness only
    python3 bench/check_gemm_ws.py --only 1,2      # configurations 1 and 2
    python3 bench/check_gemm_ws.py --heuristic     # the built-in choice
    python3 bench/check_gemm_ws.py --tf32          # TF32 rows only

1. Checks (all configurations in parallel processes, each limited to
   --check-timeout seconds): every configuration of
   enigma.gemm_configs("cuda", dtype, warp_specialized=True) for bf16,
   fp32 and TF32, and enigma.tf32_gemm_configs() (TF32 wgmma, B stored
   n x k: rows "tf32-Bnk", cuBLAS given the same layout), and
   enigma.tf32_gemm_configs(b_transposed=False) (TF32 wgmma, B stored
   k x n as torch.matmul(a, b) passes it, copied transposed into the
   stages by the producer warpgroup: rows "tf32-Bkn"), on shapes with M = 1, odd N, K not a multiple of the
   tile, and 4096^3 for bf16; each run first in bounds-checked mode (a
   ring wait that cannot complete is then reported with its barrier, role,
   stage and phase) and then as compiled for speed. Outputs are poisoned
   with NaN before every launch and compared element by element with
   torch (fp32 accumulation of the same inputs).
2. Timings (one process per configuration, one after another, each
   limited to --time-timeout seconds): bf16 4096^3, 8192^3 and the
   projection shapes of Llama-3-8B (M = 16, 128, 4096; --with-70b adds
   Llama-3-70B's) against
   torch.matmul (cuBLAS) in alternating rounds of batched launches, with
   the classic default configuration beside them; TF32 and fp32 4096^3
   against cuBLAS TF32 / fp32. Every result is checked before it is timed.
3. A table last: per shape the best configuration and its ratio to cuBLAS
   (the range over rounds), and what failed and why.

The whole run should take 3-4 minutes on an H100 (about half of it NVRTC
compiling the kernels once; a second run uses the artifact cache).

With --heuristic: the configuration enigma.gemm_config_for picks (no
tuning; split K where the blocks do not fill the GPU) for each of
4096^3, 8192^3 and the 24 Llama-3-8B and -70B projection shapes, checked
against torch and then timed against cuBLAS, shapes of one configuration
in one process with a time limit per shape (--shape-timeout; a shape
that runs out is reported and the rest go on in a new process). Prints
per shape the configuration and the ratio (median and range over
rounds), then the geometric mean and the worst over the 24 shapes. About
2-3 minutes on an H100 (most of it NVRTC compiling each configuration
once; a second run uses the artifact cache). --check-only checks the
heuristic's configurations on the check shapes too.

With --compare-streamk: per shape of --heuristic, the built-in choice and
each alternative its cost model weighed (enigma.gemm_config_for: whole
blocks, split K where it applies, each split also with its partials
summed by a second kernel, stream-K; besides those, every GPU-filling
split of 64- to 256-wide blocks, 16-row blocks at M <= 16 and 96- or
192-wide tiles), each checked and timed against
cuBLAS in the same process; a table of the ratios side by side (the best
of each way) and the geometric mean of each column; --save writes every
candidate's times, --shape-list other shapes. About 6 minutes on an
H100.

With --autotune: per shape, every candidate (the warp-specialised
configurations of enigma.gemm_configs plus the built-in choice's
alternatives) checked and timed; the best of them beside the built-in
choice (the figure an autotuned run would reach: enigma.autotune times a
list of single-kernel launches the same way, but split K is two kernels,
so the candidates are timed here). About 15 minutes on an H100;
--shape-timeout applies per shape (default 600 s in this mode).

--check-only also checks stream-K configurations (128 x 128 and 64 x 128,
one threadgroup per multiprocessor) on the check shapes, each result
compared bit for bit with a second run (the fixed summing order).

To profile one configuration with Nsight Compute (the 10th launch of the
128 x 256 persistent kernel at 4096^3; `--list` prints the numbers):

    ncu --set full -k regex:enigma_kernel_gemm_bf16 --launch-skip 10 \\
        --launch-count 1 -o ws_gemm python3 bench/check_gemm_ws.py \\
        --profile 1 --shape 4096,4096,4096

The workers' code is in gemm_ws_worker.py, the processes and the tables of
the modes in gemm_ws_driver.py, the shapes and configurations they share
in gemm_ws_common.py.
"""

import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:   # the sibling modules, however this one was loaded
    sys.path.insert(0, HERE)

from gemm_ws_common import (CHECK_SHAPES, HEURISTIC_CHECK_SHAPES,  # noqa: E402
                            LLAMA, LLAMA_NK, REPO, SQUARE, configs, label)
from gemm_ws_driver import (OUT_OF_MEMORY, last_error,  # noqa: E402
                            run_checks, run_heuristic, run_variants, spawn,
                            spawn_per_shape)
from gemm_ws_worker import (worker_check, worker_heuristic,  # noqa: E402
                            worker_profile, worker_stream_k_check,
                            worker_time, worker_variants)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--check-only", action="store_true")
    p.add_argument("--configs-only", action="store_true",
                   help="with --check-only: the chosen configurations "
                   "only (no built-in choices, no stream-K)")
    p.add_argument("--tf32", action="store_true",
                   help="only the TF32 configurations (rows tf32, "
                   "tf32-Bnk, tf32-Bkn): checks and 4096^3 timings")
    p.add_argument("--only", default="", help="configuration numbers, "
                   "comma-separated (see --list)")
    p.add_argument("--list", action="store_true")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--check-timeout", type=int, default=150)
    p.add_argument("--time-timeout", type=int, default=90)
    p.add_argument("--with-70b", action="store_true",
                   help="time the Llama-3-70B shapes too (a minute more)")
    p.add_argument("--worker-check", type=int)
    p.add_argument("--worker-time", type=int)
    p.add_argument("--classic", action="store_true")
    p.add_argument("--heuristic", action="store_true",
                   help="the built-in configuration per shape (see above)")
    p.add_argument("--shape-timeout", type=int, default=60)
    p.add_argument("--worker-heuristic", action="store_true")
    p.add_argument("--compare-streamk", action="store_true",
                   help="the built-in choice beside whole blocks, split K "
                   "and stream-K per shape (see above)")
    p.add_argument("--autotune", action="store_true",
                   help="the best candidate per shape beside the built-in "
                   "choice (see above)")
    p.add_argument("--worker-variants", action="store_true")
    p.add_argument("--worker-stream-k-check", action="store_true")
    p.add_argument("--profile", type=int)
    p.add_argument("--shape", default="4096,4096,4096")
    p.add_argument("--shapes", default="[]")
    p.add_argument("--save", default="",
                   help="with --compare-streamk or --autotune: write every "
                        "candidate's times to this JSON file")
    p.add_argument("--shape-list", default="",
                   help="with --compare-streamk or --autotune: "
                        "M,N,K;M,N,K... instead of the squares and the "
                        "Llama shapes")
    args = p.parse_args()
    os.environ.setdefault("ENIGMA_CACHE_DIR", "/tmp/enigma-cache-ws")
    sys.path.insert(0, os.path.join(REPO, "python"))

    if args.worker_check is not None:
        return worker_check(args.worker_check,
                            [tuple(s) for s in json.loads(args.shapes)])
    if args.worker_time is not None:
        return worker_time(args.worker_time,
                           [tuple(s) for s in json.loads(args.shapes)],
                           args.rounds, args.classic)
    if args.worker_heuristic:
        return worker_heuristic([tuple(s) for s in json.loads(args.shapes)],
                                args.rounds, args.check_only)
    if args.worker_variants:
        return worker_variants([tuple(s) for s in json.loads(args.shapes)],
                               args.rounds, args.autotune)
    if args.worker_stream_k_check:
        return worker_stream_k_check(
            [tuple(s) for s in json.loads(args.shapes)])
    if args.heuristic:
        return run_heuristic(args)
    if args.compare_streamk or args.autotune:
        return run_variants(args, args.autotune)
    if args.profile is not None:
        return worker_profile(args.profile,
                              tuple(int(v) for v in args.shape.split(",")))

    all_configs = configs()
    if args.list:
        for i, (dtype, tf32, c) in enumerate(all_configs):
            print(f"{i:2d}  {label(dtype, tf32, c)}")
        return 0
    chosen = [int(v) for v in args.only.split(",") if v] or \
        list(range(len(all_configs)))
    if args.tf32:
        chosen = [i for i in chosen if all_configs[i][1]]
    started = time.time()
    print(f"== checks of {len(chosen)} configurations (each in its own "
          f"process, {args.check_timeout} s at most)", flush=True)
    checks = run_checks(chosen, args.check_timeout,
                        CHECK_SHAPES + [(4096, 4096, 4096)])
    # The workers share the GPU with whatever else runs (the test suite's
    # other workers): a configuration that could not get memory has not
    # been checked, so it runs again, alone.
    starved = [i for i in chosen if checks[i] is not None
               and OUT_OF_MEMORY.search(checks[i])]
    for i in starved:
        print(f"{i:2d} ran out of GPU memory beside other processes; "
              "checking it again alone", flush=True)
        checks.update(run_checks([i], args.check_timeout,
                                 CHECK_SHAPES + [(4096, 4096, 4096)]))
    for i in chosen:
        print(f"{i:2d} {label(*all_configs[i]):44s} "
              f"{'ok' if checks[i] is None else 'FAILED: ' + checks[i]}",
              flush=True)
    failed = [i for i in chosen if checks[i] is not None]
    if args.check_only and args.configs_only:
        print(f"{len(chosen) - len(failed)} passed, {len(failed)} failed")
        return 1 if failed else 0
    if args.check_only:
        # The built-in choices too (split K among them), one shape at a
        # time with a limit each.
        _, bad_shapes = spawn_per_shape(
            ["--worker-heuristic", "--check-only"],
            CHECK_SHAPES + HEURISTIC_CHECK_SHAPES, args.shape_timeout)
        print(f"built-in configurations on {len(CHECK_SHAPES) + len(HEURISTIC_CHECK_SHAPES)} "
              f"shapes: {len(bad_shapes)} failed", flush=True)
        for shape, why in bad_shapes.items():
            print(f"FAILED built-in configuration at {shape}: {why}")
        streamk_shapes = CHECK_SHAPES + [(128, 4096, 4096), (16, 4096, 4096)]
        _, bad_streamk = spawn_per_shape(["--worker-stream-k-check"],
                                         streamk_shapes, args.shape_timeout)
        print(f"stream-K on {len(streamk_shapes)} shapes: "
              f"{len(bad_streamk)} failed", flush=True)
        for shape, why in bad_streamk.items():
            print(f"FAILED stream-K at {shape}: {why}")
        print(f"{len(chosen) - len(failed)} passed, {len(failed)} failed")
        return 1 if failed or bad_shapes or bad_streamk else 0

    print("== timings (one process per configuration)", flush=True)
    bf16_shapes = SQUARE + [s for s in LLAMA
                            if args.with_70b or s[1:] in LLAMA_NK[:4]]
    times = {}   # (label, shape) -> (enigma us list, cublas us list)
    errors = {}
    jobs = [(i, False) for i in chosen if checks[i] is None]
    if not args.tf32:
        jobs.append((-1, True))   # the classic default, for comparison
    for i, classic in jobs:
        name = "classic default" if classic else label(*all_configs[i])
        shapes = bf16_shapes if classic or all_configs[i][0] == "bf16" \
            else [(4096, 4096, 4096)]
        rc, out, err = spawn(["--worker-time", str(max(i, 0)), "--shapes",
                              json.dumps(shapes), "--rounds",
                              str(args.rounds)] +
                             (["--classic"] if classic else []),
                             args.time_timeout)
        for line in out.splitlines():
            if line.startswith("{"):
                r = json.loads(line)
                times[(name, tuple(r["shape"]))] = (r["enigma"], r["cublas"])
        if rc != 0:
            errors[name] = ("ran out of time (hung?) after its shapes above"
                            if rc is None else last_error(err))
        print(f"   {name}: {'done' if rc == 0 else errors[name]}",
              flush=True)

    # The table: per shape, the best warp-specialised configuration.
    print()
    print(f"Finished in {time.time() - started:.0f} s. Ratios: cuBLAS time / "
          "Enigma time (throughput), median over rounds (range).")
    print()
    print("| shape | cuBLAS TFLOP/s | classic default | best warp-specialised "
          "| its configuration |")
    print("|---|---|---|---|---|")
    import statistics

    def ratio(entry):
        ours, theirs = entry
        r = sorted(t / o for o, t in zip(ours, theirs))
        return statistics.median(r), r[0], r[-1]

    def kind(name):   # the classic default multiplies bf16
        return "bf16" if name == "classic default" else name.split()[0]

    rows_seen = []
    for (name, shape) in times:
        if (kind(name), shape) not in rows_seen:
            rows_seen.append((kind(name), shape))
    geo, worst = [], None
    for what, shape in rows_seen:
        m, n, k = shape
        flops = 2.0 * m * n * k
        entries = {name: e for (name, s), e in times.items()
                   if s == shape and kind(name) == what}
        classic = entries.pop("classic default", None)
        best = max(entries.items(), key=lambda kv: ratio(kv[1])[0],
                   default=None)
        any_entry = best[1] if best else classic
        cublas_us = statistics.median(any_entry[1])
        cell = lambda e: (f"{ratio(e)[0]:.3f} ({ratio(e)[1]:.3f}-"
                          f"{ratio(e)[2]:.3f})") if e else "-"
        print(f"| {what} {m}x{n}x{k} | {flops / cublas_us / 1e6:.0f} | "
              f"{cell(classic)} | {cell(best[1]) if best else '-'} | "
              f"{best[0] if best else '-'} |")
        if best and what == "bf16":
            geo.append(ratio(best[1])[0])
            worst = min(worst or 9, ratio(best[1])[0])
    if geo:
        import math
        print()
        print(f"bf16: geometric mean {math.exp(sum(map(math.log, geo)) / len(geo)):.3f}x "
              f"cuBLAS over {len(geo)} shapes (the best configuration per "
              f"shape), worst {worst:.3f}x")
    bad = {label(*all_configs[i]): checks[i] for i in failed}
    bad.update(errors)
    for name, why in bad.items():
        print(f"FAILED {name}: {why}")
    print(f"{len(chosen) - len(failed)} passed, {len(failed)} failed")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main() or 0)
