"""The steps of bench/bench_cuda.py that run the other benchmark scripts
(bench_attention.py, bench_fp8.py, bench_quantized.py, check_gemm_ws.py),
in this process or in one of their own with a time limit, their rows
joining this run's."""

import importlib.util
import json
import os
import subprocess
import sys
import tempfile

from bench_cuda_common import HERE, not_run, rows


def bench_attention_library(timeout=900):
    """enigma.attention against SDPA (bench/bench_attention.py: forward,
    grouped heads, backward, paged decode), its rows added to this run's;
    a watchdog ends the process if the step passes ``timeout`` seconds."""
    import faulthandler
    spec = importlib.util.spec_from_file_location(
        "bench_attention", os.path.join(HERE, "bench_attention.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    faulthandler.dump_traceback_later(timeout, exit=True)
    try:
        module.run_all(rows)
    finally:
        faulthandler.cancel_dump_traceback_later()


def bench_fp8(quick=True):
    """enigma.gemm_fp8_block (e4m3, bf16 out) against torch._scaled_mm with
    per-tensor and row-wise scales (bench/bench_fp8.py; ``quick``: 4096^3
    and the Llama-3-8B gate+up shape), its rows added to this run's."""
    spec = importlib.util.spec_from_file_location(
        "bench_fp8", os.path.join(HERE, "bench_fp8.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.run_all(rows, quick=quick)


def bench_quantized(timeout_s=300):
    """bench/bench_quantized.py (4-bit GEMV and GEMM against a device copy,
    cuBLAS bf16 and torch's int4 kernel) in a subprocess with a time
    limit, so that a kernel that never finishes cannot hang this run; its
    rows join this table."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows.json")
        try:
            proc = subprocess.run(
                [sys.executable, os.path.join(HERE, "bench_quantized.py"),
                 "--json", out], timeout=timeout_s)
            note = f"exit status {proc.returncode}" if proc.returncode else ""
        except subprocess.TimeoutExpired:
            note = f"killed after {timeout_s} s"
        if os.path.exists(out):
            with open(out) as f:
                rows.extend(tuple(r) for r in json.load(f))
        if note:
            rows.append(("4-bit quantized", "bench/bench_quantized.py",
                         "not finished", note))


def bench_gemm_shapes(timeout=600):
    """bench/check_gemm_ws.py --heuristic in its own process (a time limit
    per shape, each result checked against torch before it is timed): the
    built-in configuration (enigma.gemm_config_for) against cuBLAS on
    4096^3, 8192^3 and the 24 Llama-3-8B / 70B projection shapes."""
    import subprocess
    import sys
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "check_gemm_ws.py")
    try:
        done = subprocess.run([sys.executable, script, "--heuristic"],
                              capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        not_run("gemm shapes bf16", "enigma (built-in configuration)",
                f"bench/check_gemm_ws.py --heuristic ran past {timeout} s")
        return
    print(done.stdout, flush=True)
    for line in done.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| bf16 ") and len(cells) == 4:
            shape, config, _, ratio = cells
            rows.append((f"gemm {shape.split()[1]} bf16",
                         "enigma built-in config / cuBLAS (throughput)",
                         ratio, config))
        elif "geometric mean" in line or line.startswith("llama: worst"):
            rows.append(("gemm shapes bf16", "enigma built-in config",
                         line.strip(), ""))
    if done.returncode != 0:
        rows.append(("gemm shapes bf16", "", "",
                     (done.stdout.strip().splitlines() or ["?"])[-1][:120]))


def bench_gemm_variants(mode, timeout):
    """bench/check_gemm_ws.py --compare-streamk (the built-in choice beside
    whole blocks, split K and stream-K per shape) or --autotune (the best
    candidate per shape beside the built-in choice) in its own process;
    its table's geometric means become rows."""
    import subprocess
    import sys
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                          "check_gemm_ws.py")
    what = {"--compare-streamk": "gemm stream-K / split-K bf16",
            "--autotune": "gemm autotuned bf16"}[mode]
    try:
        done = subprocess.run([sys.executable, script, mode],
                              capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        not_run(what, "enigma", f"bench/check_gemm_ws.py {mode} ran past "
                f"{timeout} s")
        return
    print(done.stdout, flush=True)
    for line in done.stdout.splitlines():
        if "geometric mean" in line:
            rows.append((what, "enigma / cuBLAS (throughput)", line.strip(),
                         ""))
    if done.returncode != 0:
        rows.append((what, "", "",
                     (done.stdout.strip().splitlines() or ["?"])[-1][:120]))
