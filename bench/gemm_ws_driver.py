"""The driver side of bench/check_gemm_ws.py: the worker processes it
starts (each with a time limit, a shape that runs out reported and the
rest going on in a new process), the errors they died of, and the
--heuristic, --compare-streamk and --autotune modes with their tables."""

import json
import os
import re
import subprocess
import sys
import time

from gemm_ws_common import HERE, LLAMA, SQUARE, _example
from gemm_ws_worker import SPLIT_IN_KERNEL, SPLIT_TWO_KERNELS

# The workers are this script run again with their flags.
SCRIPT = os.path.join(HERE, "check_gemm_ws.py")


def spawn(args, timeout):
    """Runs this script with `args` in a new process: (returncode, stdout,
    stderr), returncode None when it ran out of time (killed)."""
    cmd = [sys.executable, SCRIPT] + args
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return proc.returncode, out, err
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        return None, out, err


def spawn_per_shape(args, shapes, timeout):
    """Runs the worker `args + --shapes` over `shapes` with `timeout`
    seconds per shape: a shape that runs out is killed and reported, and
    the remaining shapes go on in a new process. Returns ({shape: [JSON
    lines]}, {shape: error})."""
    import queue
    import threading
    lines, errors = {}, {}
    todo = list(shapes)
    while todo:
        cmd = [sys.executable, SCRIPT] + args + \
            ["--shapes", json.dumps(todo)]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        out = queue.Queue()
        threading.Thread(target=lambda: [out.put(ln) for ln in proc.stdout]
                         + [out.put(None)], daemon=True).start()
        err = []
        threading.Thread(target=lambda: err.extend(proc.stderr),
                         daemon=True).start()
        current, finished, began = tuple(todo[0]), set(), False
        deadline = time.time() + timeout
        while True:
            try:
                line = out.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                proc.kill()
                proc.wait()
                errors[current] = f"ran out of {timeout} s (hung?)"
                finished.add(current)
                break
            if line is None:
                proc.wait()
                if proc.returncode != 0 and not began:
                    # It died before its first shape (no GPU, no torch):
                    # the same for every shape, so no new process.
                    time.sleep(0.2)
                    for s in todo:
                        errors[tuple(s)] = last_error("".join(err))
                    return lines, errors
                if proc.returncode != 0:
                    if current in finished:   # died between two shapes
                        current = next(tuple(s) for s in todo
                                       if tuple(s) not in finished)
                    time.sleep(0.2)   # let the stderr reader finish
                    errors[current] = last_error("".join(err))
                    finished.add(current)
                break
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            shape = tuple(r["shape"])
            lines.setdefault(shape, []).append(r)
            if "config" in r and len(r) == 2:      # a shape begins
                current, began = shape, True
                deadline = time.time() + timeout
            else:                                   # a shape is done
                finished.add(shape)
                # as it comes, so that a run stopped early still shows it
                print("   " + line.strip(), flush=True)
        todo = [s for s in todo if tuple(s) not in finished]
        if proc.returncode == 0:
            for s in todo:
                errors[tuple(s)] = "no result"
            break
    return lines, errors


def run_heuristic(args):
    """The --heuristic mode (module docstring)."""
    import math
    import statistics
    shapes = SQUARE + LLAMA
    started = time.time()
    mode = "checks" if args.check_only else "checks and timings"
    print(f"== the built-in configuration per shape: {mode}, {len(shapes)} "
          f"shapes, {args.shape_timeout} s per shape at most", flush=True)
    lines, errors = spawn_per_shape(
        ["--worker-heuristic", "--rounds", str(args.rounds)] +
        (["--check-only"] if args.check_only else []), shapes,
        args.shape_timeout)
    print()
    print("| shape | configuration | cuBLAS TFLOP/s | cuBLAS / Enigma "
          "time, median (range) |")
    print("|---|---|---|---|")
    geo = {"square": [], "llama": []}
    worst = None
    for m, n, k in shapes:
        got = lines.get((m, n, k), [])
        config = next((r["config"] for r in got if "config" in r), "-")
        config = config.replace("MmaConfig(", "(").replace(
            "warp_specialized=True", "ws")
        timed = next((r for r in got if "enigma" in r), None)
        if (m, n, k) in errors:
            cell, tflops = "FAILED: " + errors[(m, n, k)], "-"
        elif args.check_only:
            cell, tflops = "checked", "-"
        elif timed:
            r = sorted(t / o for o, t in zip(timed["enigma"],
                                             timed["cublas"]))
            med = statistics.median(r)
            cell = f"{med:.3f} ({r[0]:.3f}-{r[-1]:.3f})"
            tflops = (f"{2.0 * m * n * k / statistics.median(timed['cublas']) / 1e6:.0f}")
            group = "square" if (m, n, k) in SQUARE else "llama"
            geo[group].append(med)
            if group == "llama":
                worst = min(worst, (med, (m, n, k))) if worst else \
                    (med, (m, n, k))
        else:
            cell, tflops = "no result", "-"
        print(f"| bf16 {m}x{n}x{k} | {config} | {tflops} | {cell} |")
    print()
    for group, values in geo.items():
        if values:
            mean = math.exp(sum(map(math.log, values)) / len(values))
            print(f"{group}: geometric mean {mean:.3f}x cuBLAS over "
                  f"{len(values)} shapes")
    if worst:
        print(f"llama: worst {worst[0]:.3f}x at {worst[1]}")
    return _finish(args, lines, errors, started)


def last_error(err):
    """The exception a worker died of (its first line), else its last
    line of output."""
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    for i in range(len(lines) - 1, -1, -1):
        if re.match(r"^[\w.]+(Error|Exception|Violation)\b", lines[i]):
            return " ".join(lines[i:i + 3])[:400]
    return lines[-1][:300] if lines else "(no message)"


OUT_OF_MEMORY = re.compile(r"OutOfMemoryError|out of memory|ALLOC_FAILED")


def run_checks(indices, timeout, shapes):
    """All check workers at once (correctness only, so they may share the
    GPU); returns {index: None or the failure}."""
    procs = {}
    for i in indices:
        cmd = [sys.executable, SCRIPT, "--worker-check",
               str(i), "--shapes", json.dumps(shapes)]
        procs[i] = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
    deadline = time.time() + timeout
    results = {}
    for i, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=max(1, deadline - time.time()))
            results[i] = None if proc.returncode == 0 else last_error(err)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            results[i] = f"did not finish in {timeout} s (hung?)"
    return results


def run_variants(args, autotune):
    """The --compare-streamk and --autotune modes (module docstring)."""
    import math
    import statistics
    shapes = SQUARE + LLAMA
    if args.shape_list:
        shapes = [tuple(int(v) for v in item.split(","))
                  for item in args.shape_list.split(";")]
    timeout = args.shape_timeout if args.shape_timeout != 60 else \
        (600 if autotune else 180)
    started = time.time()
    print(f"== {'every candidate' if autotune else 'the alternatives'} per "
          f"shape, {len(shapes)} shapes, {timeout} s per shape at most",
          flush=True)
    lines, errors = spawn_per_shape(
        ["--worker-variants", "--rounds", str(args.rounds)] +
        (["--autotune"] if autotune else []), shapes, timeout)

    def ratio(r):
        return statistics.median(t / o for o, t in zip(r["enigma"],
                                                      r["cublas"]))

    def short(config):
        return config.replace("MmaConfig(", "(").replace(
            ", warp_specialized=True", "").replace("persistent=True",
                                                  "persistent")
    columns = ["data-parallel", SPLIT_IN_KERNEL, SPLIT_TWO_KERNELS,
               "stream-K"]
    geo = {}
    print()
    if autotune:
        print("| shape | built-in | built-in ratio | best candidate | best "
              "ratio |")
        print("|---|---|---|---|---|")
    else:
        print("| shape | built-in | " + " | ".join(columns) + " |")
        print("|---" * (2 + len(columns)) + "|")
    for shape in shapes:
        got = [r for r in lines.get(tuple(shape), []) if "results" in r]
        name = "bf16 {}x{}x{}".format(*shape)
        if tuple(shape) in errors or not got:
            print(f"| {name} | FAILED: {errors.get(tuple(shape), 'no result')} |")
            continue
        r = got[0]
        # The built-in choice runs in the example's default form.
        default = _example("gemm_bf16").SUM_IN_KERNEL
        timed = {e["config"]: e for e in r["results"]
                 if "split_k=" not in e["config"] or
                 e.get("sum_in_kernel", True) == default}
        chosen = timed.get(r["chosen"])
        cell = (lambda e: "-" if e is None else e.get("error", "")[:60]
                or f"{ratio(e):.3f}")
        llama = tuple(shape) not in SQUARE
        if chosen and "error" not in chosen and llama:
            geo.setdefault("built-in", []).append(ratio(chosen))
        if autotune:
            ok = [e for e in r["results"] if "error" not in e]
            best = max(ok, key=ratio, default=None)
            if best and llama:
                geo.setdefault("best", []).append(ratio(best))
            print(f"| {name} | {short(r['chosen'])} | {cell(chosen)} | "
                  f"{short(best['config']) if best else '-'} | "
                  f"{cell(best)} |")
            continue
        by_name = {}   # the best of each way
        for e in r["results"]:
            kept = by_name.get(e["name"])
            if kept is None or "error" in kept or (
                    "error" not in e and ratio(e) > ratio(kept)):
                by_name[e["name"]] = e
        for col in columns:
            e = by_name.get(col)
            if e and "error" not in e and llama:
                geo.setdefault(col, []).append(ratio(e))
        print(f"| {name} | {short(r['chosen'])} ({cell(chosen)}) | " +
              " | ".join(cell(by_name.get(col)) for col in columns) + " |")
    print()
    print("Ratios: cuBLAS time / Enigma time, median over rounds.")
    for col, values in geo.items():
        mean = math.exp(sum(map(math.log, values)) / len(values))
        print(f"llama {col}: geometric mean {mean:.3f}x cuBLAS over "
              f"{len(values)} shapes")
    return _finish(args, lines, errors, started)


def _finish(args, lines, errors, started):
    """Saves the per-shape results (``--save``), reports the failed shapes;
    the exit status."""
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"x".join(map(str, shape)): got
                       for shape, got in lines.items()}, f, indent=1)
    print(f"Finished in {time.time() - started:.0f} s; {len(errors)} "
          "shapes failed")
    for shape, why in errors.items():
        print(f"FAILED {shape}: {why}")
    return 1 if errors else 0
