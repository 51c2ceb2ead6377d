"""CUDA benchmarks on one GPU, side by side in one run.

Bandwidth-bound kernels are timed with CUDA events around single launches
(median of `--repeat`), Enigma through PreparedKernel.dispatch_timed, the
others through torch.cuda.Event. The compute-bound rows (GEMM, attention)
are timed per launch over batches of launches queued back to back
(batched_us), so that no library's host-side launch cost is counted.
Bandwidth counts bytes read plus bytes written. Prints a Markdown table
last and writes bandwidth.png and compute.png (matplotlib) into --out.

The steps live in the sibling modules bench_cuda_bandwidth.py,
bench_cuda_compute.py, bench_cuda_launch.py and bench_cuda_scripts.py,
what they share (rows, timers) in bench_cuda_common.py.
"""

import argparse
import json
import os
import sys
import time

import enigma

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:   # the sibling modules, however this one was loaded
    sys.path.insert(0, HERE)

from bench_cuda_bandwidth import (bench_rows, bench_tile_copy,  # noqa: E402
                                  bench_tv_add, bench_vector_add)
from bench_cuda_common import bars, device_name, rows  # noqa: E402
from bench_cuda_compute import (bench_attention, bench_mma_gemm,  # noqa: E402
                                bench_tiled_gemm)
from bench_cuda_launch import (bench_call_form_overhead,  # noqa: E402
                               bench_compile, bench_launch_overhead)
from bench_cuda_scripts import (bench_attention_library,  # noqa: E402
                                bench_fp8, bench_gemm_shapes,
                                bench_gemm_variants, bench_quantized)


def chart(out):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    labels = list(bars)
    fig, ax = plt.subplots(figsize=(max(8, len(labels) * 0.9), 4.5))
    ax.bar(range(len(labels)), [bars[k] for k in labels],
           color=["#c44" if "enigma" in k else "#888" for k in labels])
    ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("GB/s (read + written)")
    ax.set_title(f"Enigma CUDA backend vs. alternatives, one {device_name()}")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "bandwidth.png"), dpi=120)


def compute_target(label):
    """The target ratio of a compute-bound row ("<bench> vs <reference>"),
    or None: >= Triton, 0.8x cuBLAS for fp32 without TF32 and for the
    4-bit GEMM, 0.9x for the other GEMM and attention-example rows; TF32
    has none. enigma.attention (rows "attn ..."): 1.0x SDPA cuDNN
    (forward), the best SDPA backend (grouped heads) and SDPA flash's
    backward; the other references are reported only."""
    if label.startswith("attn"):
        wanted = ("vs SDPA cuDNN", "vs best SDPA (", "vs SDPA flash backward")
        return 1.0 if any(label.endswith(w) or (w.endswith("(") and w in label)
                          for w in wanted) else None
    if "TF32" in label:
        return None
    if label.endswith("vs triton"):
        return 1.0
    if label.startswith("4-bit"):
        return 0.8
    if " f32 " in label:
        return 0.8
    return 0.9


def compute_chart(out):
    """compute.png: Enigma's throughput as a fraction of the reference
    (cuBLAS, SDPA flash) for each compute-bound row of this run, with the
    spread of the rounds; nothing when no such row ran."""
    found = []
    for bench, impl, value, _note in rows:
        if not impl.startswith("enigma") or "(throughput)" not in impl:
            continue
        try:
            median = float(value.split()[0])
            low, high = (float(x) for x in
                         value.split("rounds ")[1].rstrip(")").split("-"))
        except (IndexError, ValueError):
            continue
        ref = impl.split(" / ")[1].replace(" (throughput)", "")
        found.append((f"{bench} vs {ref}", median, low, high))
    if not found:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(found) + 1.5))
    ys = range(len(found))
    ax.barh(ys, [f[1] for f in found], color="#c44",
            xerr=[[f[1] - f[2] for f in found], [f[3] - f[1] for f in found]])
    ax.set_yticks(ys, [f[0] for f in found], fontsize=7)
    for y, f in zip(ys, found):
        target = compute_target(f[0])
        if target is not None:
            ax.plot([target, target], [y - 0.45, y + 0.45], color="#222",
                    linestyle="--", linewidth=1.2)
    ax.axvline(1.0, color="#888", linewidth=1)
    ax.set_xlabel("Enigma throughput / reference (median of rounds, range)")
    ax.set_title(f"Compute-bound kernels, one {device_name()} "
                 "(dashed: each row's target)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "compute.png"), dpi=120)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--log2n", type=int, default=28)
    parser.add_argument("--only", default="",
                        help="comma-separated steps to run (default: all)")
    parser.add_argument("--fp8-all-shapes", action="store_true",
                        help="the fp8 step over every shape of "
                             "bench/bench_fp8.py, not only two")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rt = None
    steps = {
        "vector_add": lambda: bench_vector_add(rt, args.repeat, args.log2n),
        "rmsnorm": lambda: bench_rows(rt, args.repeat, "rmsnorm"),
        "softmax": lambda: bench_rows(rt, args.repeat, "softmax"),
        "tv_add": lambda: bench_tv_add(rt, args.repeat, args.log2n),
        "tile_copy": lambda: bench_tile_copy(rt, args.repeat, args.log2n),
        "gemm": lambda: bench_tiled_gemm(rt, args.repeat),
        "gemm_bf16": lambda: bench_mma_gemm(rt, args.repeat, "bf16", (4096, 8192)),
        "gemm_f32": lambda: bench_mma_gemm(rt, args.repeat, "f32", (4096,),
                                           tf32_too=True),
        "gemm_shapes": bench_gemm_shapes,
        "gemm_streamk": lambda: bench_gemm_variants("--compare-streamk",
                                                    900),
        "attention": lambda: bench_attention(rt, args.repeat),
        "attention_lib": bench_attention_library,
        "fp8": lambda: bench_fp8(quick=not args.fp8_all_shapes),
        "launch": lambda: bench_launch_overhead(rt),
        "call_form": lambda: bench_call_form_overhead(rt),
        "compile": bench_compile,
        "quantized": bench_quantized,
    }
    # Timed only when named (--only gemm_autotune): every candidate on
    # every shape, about 15 minutes.
    on_request = {"gemm_autotune": lambda: bench_gemm_variants("--autotune",
                                                               2400)}
    only = [x for x in args.only.split(",") if x]
    steps.update({k: v for k, v in on_request.items() if k in only})
    unknown = set(only) - set(steps) - set(on_request)
    if unknown:
        parser.error(f"unknown steps {sorted(unknown)}; known: {list(steps)}")
    rt = enigma.CudaRuntime()
    for name, step in steps.items():
        if only and name not in only:
            continue
        try:
            step()
        except Exception as e:  # noqa: BLE001 - keep going, report it
            import traceback
            traceback.print_exc()
            rows.append(("error", "", "", repr(e)[:120]))
    chart(args.out)
    compute_chart(args.out)
    with open(os.path.join(args.out, "bench.json"), "w") as f:
        json.dump(rows, f, indent=1)
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, one "
          f"{device_name()}\n")
    print("| benchmark | implementation | time | bandwidth / note |\n|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")


if __name__ == "__main__":
    main()
