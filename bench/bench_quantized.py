"""4-bit weight-only quantized matmul (enigma.quantized_matmul, MLX's
format, groups of 64) on one CUDA GPU, side by side in one run:

* GEMV, M = 1 and 16, for the Llama-3-8B shapes (N, K) = (6144, 4096),
  (4096, 4096), (28672, 4096), (4096, 14336): time, GB/s of the packed
  weights plus scales and biases, the fraction of a device-to-device copy's
  bandwidth measured in this run (target >= 0.85), a device copy moving
  as many bytes (what one launch of that size can reach), the speed-up over bf16
  cuBLAS (torch.matmul) on the same shape (target >= 3x), and torch's int4
  kernel (torch._weight_int4pack_mm) where the installed torch has it;
* GEMM, M = 4096 (``--gemm-m``: others), the same shapes, against bf16
  cuBLAS (target >= 0.8x) and torch's int4 kernel where it runs; the
  candidates are the prefill form (``DequantizedGemmConfig``: dequantise,
  then the pipelined GEMM) and tile shapes of the fused kernel.

Every implementation's result is checked against a float64 reference from
the dequantised weights before it is timed. Times are CUDA-graph replays
of back-to-back calls (no host launch cost), each call on the next of
several copies of the weights so that every call reads them from memory,
not from the 50 MB L2 (the copy likewise); the median over replays, the
implementations alternating, ``--rounds`` times (ratios: median and range
over rounds). Enigma's tile shapes are tried from a short list and the
fastest reported (``--all-configs`` prints every one).

    python bench/bench_quantized.py [--only gemv,gemm] [--previous]
        [--all-configs] [--json rows.json]

``--previous`` times the previous CUDA defaults (``PREVIOUS``: the
matrix-vector kernel's first version, the matrix kernel with one tile of
copies in flight) beside the best configuration, in the same alternating
rounds.

bench/bench_cuda.py runs it with ``--only quantized`` in a subprocess with
a time limit, so a hung kernel cannot hang the benchmark.
"""

import argparse
import json
import math
import sys
import time

import numpy as np

import enigma
from enigma.quantized import (DequantizedGemmConfig, QmmConfig, QmvConfig,
                              QmvMmaConfig)

SHAPES = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336)]
GROUP = 64
ROTATE_BYTES = 256 << 20       # > 5x the 50 MB L2 of an H100 / H200
GEMV_CONFIGS = {
    1: [QmvConfig(8, 1, 4), QmvConfig(4, 1, 4), QmvConfig(8, 1, 2),
        QmvConfig(8, 2, 2), QmvConfig(4, 1, 4, 2), QmvConfig(8, 2),
        QmvConfig(4, 1, 8), QmvConfig(2, 1, 8), QmvConfig(4, 2, 4),
        QmvConfig(2, 1, 16), QmvConfig(8, 1, 8), QmvConfig(4, 1, 2, 2),
        QmvMmaConfig(), QmvMmaConfig(parts=4, chunks=4),
        QmvMmaConfig(row_groups=8, parts=1), QmvMmaConfig(parts=1),
        # Two codes per bit operation into the A operand (mma_halves).
        QmvMmaConfig(pairs=True), QmvMmaConfig(parts=4, chunks=4, pairs=True),
        QmvMmaConfig(staged=True, pairs=True)],
    16: [QmmConfig(16, 64, 128, 1, 4, 8), QmmConfig(16, 128, 128, 1, 4, 6),
         QmmConfig(16, 64, 256, 1, 4, 4), QmmConfig(16, 32, 128, 1, 2, 8),
         QmmConfig(16, 32, 128, 1, 2, 8, splits=1),
         QmmConfig(16, 64, 128, 1, 4, 8, splits=1),
         QmmConfig(16, 128, 128, 1, 4, 2), QmmConfig(16, 64, 128, 1, 4, 2),
         QmmConfig(16, 64, 128, 1, 4, 2, splits=1), QmvConfig(8, 1, 4),
         # The weights dequantised into the A fragment (products y^T =
         # W x^T), x staged once per threadgroup; the span (K per
         # threadgroup) chosen per shape unless given.
         QmvMmaConfig(), QmvMmaConfig(parts=4, chunks=4),
         QmvMmaConfig(row_groups=8, parts=1), QmvMmaConfig(parts=1),
         QmvMmaConfig(row_groups=2, parts=4),
         QmvMmaConfig(chunks=16, parts=1), QmvMmaConfig(span=4096),
         QmvMmaConfig(span=512), QmvMmaConfig(staged=True),
         QmvMmaConfig(parts=4, chunks=4, staged=True),
         QmvMmaConfig(span=512, staged=True),
         QmvMmaConfig(pairs=True), QmvMmaConfig(parts=4, chunks=4, pairs=True),
         QmvMmaConfig(staged=True, pairs=True),
         QmvMmaConfig(span=512, staged=True, pairs=True),
         # The split's partial sums added by its last threadgroup.
         QmvMmaConfig(pairs=True, sum_in_kernel=True),
         QmvMmaConfig(staged=True, pairs=True, sum_in_kernel=True),
         QmvMmaConfig(span=512, staged=True, pairs=True, sum_in_kernel=True),
         QmvMmaConfig(span=512, staged=True, sum_in_kernel=True)],
}
GEMM_CONFIGS = [DequantizedGemmConfig(),
                QmmConfig(128, 256, 64, 8, 1, 5),
                QmmConfig(128, 256, 64, 8, 1, 4),
                QmmConfig(256, 128, 64, 16, 1, 4),
                QmmConfig(64, 256, 64, 4, 1, 6),
                QmmConfig(128, 256, 64, 8, 1, 3)]
# --previous: the CUDA defaults before this version, timed in the same
# rounds as the best configuration: the matrix-vector kernel's first
# version (each load where it is used, one simdgroup per row), and the
# matrix kernel with one tile of copies in flight (its rings then had
# one depth; with 2 and 3 stages the kernel is the same as before).
PREVIOUS = {1: QmvConfig(8, 2, hoist_loads=False),
            16: QmmConfig(16, 128, 128, 1, 4, 2),
            "gemm": QmmConfig(128, 256, 64, 8, 1, 3)}

rows = []            # (benchmark, implementation, time, value / note)


def row(bench, impl, time_text, note):
    rows.append((bench, impl, time_text, note))
    print(f"{bench:34s} {impl:44s} {time_text:>12s}  {note}", flush=True)


# --------------------------------------------------------------------------
# Timing: graphs of back-to-back calls over rotating copies
# --------------------------------------------------------------------------

class Timer:
    """One implementation's calls captured in a CUDA graph: ``calls``
    calls, call ``i`` with argument set ``i % sets``; :meth:`sample` replays
    it and returns microseconds per call."""

    def __init__(self, torch, fn, sets, calls):
        self.torch = torch
        fn(0)                                  # compile, load, allocate
        torch.cuda.synchronize()
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):        # warm-up on a side stream
            for i in range(min(calls, sets)):
                fn(i % sets)
        torch.cuda.current_stream().wait_stream(stream)
        torch.cuda.synchronize()
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            for i in range(calls):
                fn(i % sets)
        self.calls = calls
        self.graph.replay()
        torch.cuda.synchronize()

    def sample(self, replays=5):
        t = self.torch
        times = []
        for _ in range(replays):
            start = t.cuda.Event(enable_timing=True)
            end = t.cuda.Event(enable_timing=True)
            start.record()
            self.graph.replay()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) * 1000.0 / self.calls)
        return float(np.median(times))


def calls_for(us_guess, sets):
    """Calls per graph: every set at least once, ~2 ms of work."""
    return max(sets, min(200, int(2000 / max(us_guess, 1.0))))


def rounds_of(timers, rounds):
    """{name: [us per round]}, the timers alternating."""
    out = {name: [] for name in timers}
    for _ in range(rounds):
        for name, timer in timers.items():
            out[name].append(timer.sample())
    return out


# --------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------

def codes(torch, w_q):
    """(N, K/8) int32 words -> (N, K) int codes, lowest nibble first."""
    shifts = torch.arange(0, 32, 4, device=w_q.device, dtype=torch.int32)
    q = (w_q.unsqueeze(-1) >> shifts) & 15
    return q.reshape(w_q.shape[0], -1)


def dequantized(torch, w_q, scales, biases):
    """float32 (exact: scale * q + bias of bfloat16 values) w_hat."""
    q = codes(torch, w_q).float()
    s = scales.float().repeat_interleave(GROUP, dim=1)
    b = biases.float().repeat_interleave(GROUP, dim=1)
    return s * q + b


class Reference:
    """x w_hat^T in float64 and its tolerance, computed once per shape and
    x, on every ``stride``-th row of x and the last (a float64 product of
    M = 4096 rows costs ~20 s at the large shapes, and a stride prime to
    every tile height still reaches each row position of a tile): bfloat16
    rounding of the result and of the dequantised weights plus float
    accumulation, 2^-8 |ref| + 2^-9 (|x| @ |w_hat|^T) + 2^-14 mean(...)."""

    def __init__(self, torch, x, w_hat, stride=1):
        m = x.shape[0]
        rows = list(range(0, m, stride))
        if rows[-1] != m - 1:
            rows.append(m - 1)
        self.rows = torch.tensor(rows, device=x.device)
        xs = x[self.rows].double()
        self.ref = xs @ w_hat.double().T
        mag = xs.abs() @ w_hat.double().abs().T
        self.bound = 2.0**-8 * self.ref.abs() + 2.0**-9 * mag + \
            2.0**-14 * mag.mean()


def check(torch, y, reference, what):
    """Raises unless ``y`` is within the reference's tolerance on its
    rows (NaN fails: outputs are poisoned before the runs checked)."""
    err = (y[reference.rows].double() - reference.ref).abs()
    bad = int((~(err <= reference.bound)).sum().item())
    if bad:
        raise AssertionError(f"{what}: {bad} of {err.numel()} elements out "
                             f"of tolerance, worst {err.max().item():.4g}")


# --------------------------------------------------------------------------
# torch's int4 kernel (tinygemm)
# --------------------------------------------------------------------------

def torch_int4(torch, w_q, scales, biases, x, reference):
    """(callable(x, set) -> y, packed weights per call) for
    torch._weight_int4pack_mm with our codes: its dequantisation is ``(q -
    8) * scale + zero``, so zero = bias + 8 scale. The nibble order of
    _convert_weight_to_int4pack's uint8 input has changed between torch
    versions: both are tried, the one that reproduces the reference
    kept. Raises with the reason when neither works or the op is
    missing."""
    if not hasattr(torch, "_weight_int4pack_mm") or \
            not hasattr(torch, "_convert_weight_to_int4pack"):
        raise RuntimeError("this torch has no _weight_int4pack_mm")
    q = codes(torch, w_q)
    zeros = (biases.float() + 8 * scales.float()).to(torch.bfloat16)
    sz = torch.stack([scales, zeros], dim=-1).transpose(0, 1).contiguous()
    errors = []
    for order in ("even high", "even low"):
        if order == "even high":
            packed8 = (q[:, ::2] << 4 | q[:, 1::2]).to(torch.uint8)
        else:
            packed8 = (q[:, 1::2] << 4 | q[:, ::2]).to(torch.uint8)
        try:
            packed = torch._convert_weight_to_int4pack(packed8, 8)
            y = torch._weight_int4pack_mm(x, packed, GROUP, sz)
            torch.cuda.synchronize()
            check(torch, y, reference, f"torch int4 ({order})")
            return packed, sz
        except Exception as e:  # noqa: BLE001 - try the other order
            errors.append(f"{order}: {str(e).splitlines()[0][:80]}")
    raise RuntimeError("; ".join(errors))


# --------------------------------------------------------------------------
# The benchmarks
# --------------------------------------------------------------------------

def copy_bandwidth(torch, rounds):
    """GB/s (read + written) of a device-to-device copy of 1 GiB."""
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    src.fill_(1)
    timer = Timer(torch, lambda i: dst.copy_(src), 1, 5)
    us = float(np.median([timer.sample() for _ in range(rounds)]))
    gbps = 2 * n / (us * 1e-6) / 1e9
    row("device copy 1 GiB", "torch copy_ (read + write)", f"{us:.1f} us",
        f"{gbps:.0f} GB/s")
    del src, dst
    return gbps


def weights(torch, n, k, gen):
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    w_q, scales, biases = enigma.quantize(w, GROUP)
    w_hat = dequantized(torch, w_q, scales, biases)
    return w_q, scales, biases, w_hat


def copies(torch, arrays, sets):
    """``sets`` copies of each array (the first is the original)."""
    return [arrays] + [tuple(a.clone() for a in arrays)
                       for _ in range(sets - 1)]


def ratio_text(a, b):
    r = np.array(a) / np.array(b)
    return f"{np.median(r):.3f} (rounds {r.min():.3f}-{r.max():.3f})"


def bench_gemv(torch, args, copy_gbps, gen):
    for n, k in SHAPES:
        w_q, scales, biases, w_hat = weights(torch, n, k, gen)
        qbytes = w_q.numel() * 4 + scales.numel() * 2 + biases.numel() * 2
        qsets = copies(torch, (w_q, scales, biases),
                       max(1, math.ceil(ROTATE_BYTES / qbytes)))
        w_bf16 = w_hat.to(torch.bfloat16)
        bsets = [(w_bf16,)] + [(w_bf16.clone(),) for _ in range(
            max(1, math.ceil(ROTATE_BYTES / (n * k * 2))) - 1)]
        int4 = None
        for m in args.gemv_m:
            name = f"4-bit GEMV M={m} N={n} K={k}"
            x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16,
                            generator=gen)
            y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
            reference = Reference(torch, x, w_hat)
            timers, labels = {}, {}
            for config in GEMV_CONFIGS[m]:
                label = f"enigma {config}"
                try:
                    y.fill_(float("nan"))
                    enigma.quantized_matmul(x, w_q, scales, biases,
                                            group_size=GROUP, out=y,
                                            config=config)
                    torch.cuda.synchronize()
                    check(torch, y, reference, label)
                    timers[label] = Timer(
                        torch, lambda i, c=config: enigma.quantized_matmul(
                            x, *qsets[i % len(qsets)], group_size=GROUP,
                            out=y, config=c),
                        len(qsets), calls_for(5, len(qsets)))
                    labels[label] = config
                except Exception as e:  # noqa: BLE001 - report, go on
                    row(name, label, "not run", str(e).splitlines()[0][:120])
            if not timers:
                continue
            # The fastest configuration, then the references beside it.
            first = {lab: t.sample() for lab, t in timers.items()}
            best = min(first, key=first.get)
            if args.all_configs:
                for lab, us in first.items():
                    row(name, lab, f"{us:.1f} us",
                        f"{qbytes / (us * 1e-6) / 1e9:.0f} GB/s")
            compare = {"enigma": timers[best]}
            yb = torch.empty_like(y)
            torch.matmul(x, w_bf16.T, out=yb)
            check(torch, yb, reference, "cuBLAS")
            compare["cublas"] = Timer(
                torch, lambda i: torch.matmul(
                    x, bsets[i % len(bsets)][0].T, out=yb),
                len(bsets), calls_for(20, len(bsets)))
            int4_note = None
            try:
                if int4 is None:
                    int4 = torch_int4(torch, w_q, scales, biases, x,
                                      reference)
                isets = [int4] + [tuple(a.clone() for a in int4) for _ in
                                  range(max(1, math.ceil(
                                      ROTATE_BYTES / qbytes)) - 1)]
                check(torch, torch._weight_int4pack_mm(x, int4[0], GROUP,
                                                       int4[1]),
                      reference, "torch int4")
                compare["int4"] = Timer(
                    torch, lambda i: torch._weight_int4pack_mm(
                        x, isets[i % len(isets)][0], GROUP,
                        isets[i % len(isets)][1]),
                    len(isets), calls_for(5, len(isets)))
            except Exception as e:  # noqa: BLE001 - torch without it
                int4_note = str(e)[:150]
            previous = PREVIOUS.get(m) if args.previous else None
            if previous is not None:
                y.fill_(float("nan"))
                enigma.quantized_matmul(x, w_q, scales, biases,
                                        group_size=GROUP, out=y,
                                        config=previous)
                torch.cuda.synchronize()
                check(torch, y, reference, "previous")
                compare["previous"] = Timer(
                    torch, lambda i: enigma.quantized_matmul(
                        x, *qsets[i % len(qsets)], group_size=GROUP,
                        out=y, config=previous),
                    len(qsets), calls_for(5, len(qsets)))
            # A copy moving as many bytes (half read, half written): what
            # the memory delivers to one launch of this size, ramp and
            # tail included, which the 1 GiB copy's rate does not show.
            csets = [(torch.ones(qbytes // 2, dtype=torch.uint8,
                                 device="cuda"),
                      torch.empty(qbytes // 2, dtype=torch.uint8,
                                  device="cuda"))
                     for _ in range(max(1, math.ceil(ROTATE_BYTES /
                                                     qbytes)))]
            compare["copy"] = Timer(
                torch, lambda i: csets[i % len(csets)][1].copy_(
                    csets[i % len(csets)][0]),
                len(csets), calls_for(5, len(csets)))
            t = rounds_of(compare, args.rounds)
            us = float(np.median(t["enigma"]))
            gbps = qbytes / (us * 1e-6) / 1e9
            row(name, f"enigma ({best[7:]})", f"{us:.1f} us",
                f"{gbps:.0f} GB/s of packed weights + scales "
                f"({qbytes / 2**20:.1f} MiB)")
            row(name, "enigma / device copy (bandwidth)",
                f"{gbps / copy_gbps:.3f}", "target >= 0.85")
            tc = float(np.median(t["copy"]))
            row(name, "device copy of as many bytes", f"{tc:.1f} us",
                f"{qbytes / (tc * 1e-6) / 1e9:.0f} GB/s (read + write)")
            row(name, "copy / enigma (of this size's bandwidth)",
                ratio_text(t["copy"], t["enigma"]), "")
            del csets
            cb = float(np.median(t["cublas"]))
            row(name, "torch.matmul bf16 (cuBLAS)", f"{cb:.1f} us",
                f"{n * k * 2 / (cb * 1e-6) / 1e9:.0f} GB/s of bf16 weights")
            row(name, "cuBLAS / enigma (speed-up)",
                ratio_text(t["cublas"], t["enigma"]), "target >= 3")
            if "int4" in t:
                ti = float(np.median(t["int4"]))
                row(name, "torch._weight_int4pack_mm", f"{ti:.1f} us",
                    f"{qbytes / (ti * 1e-6) / 1e9:.0f} GB/s")
                row(name, "torch int4 / enigma (speed-up)",
                    ratio_text(t["int4"], t["enigma"]), "")
            else:
                row(name, "torch._weight_int4pack_mm", "not run", int4_note)
            if "previous" in t:
                tp = float(np.median(t["previous"]))
                row(name, f"enigma previous ({previous})", f"{tp:.1f} us",
                    f"{qbytes / (tp * 1e-6) / 1e9 / copy_gbps:.3f} of "
                    "device copy")
                row(name, "previous / enigma (speed-up)",
                    ratio_text(t["previous"], t["enigma"]), "")
        del qsets, bsets, int4
        torch.cuda.empty_cache()


def bench_gemm(torch, args, gen):
    for m in args.gemm_m:
        bench_gemm_rows(torch, args, gen, m)


def bench_gemm_rows(torch, args, gen, m):
    for n, k in SHAPES:
        name = f"4-bit GEMM M={m} N={n} K={k}"
        flops = 2.0 * m * n * k
        w_q, scales, biases, w_hat = weights(torch, n, k, gen)
        w_bf16 = w_hat.to(torch.bfloat16)
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16,
                        generator=gen)
        y = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
        reference = Reference(torch, x, w_hat, stride=13)
        timers = {}
        for config in GEMM_CONFIGS:
            label = f"enigma {config}"
            try:
                y.fill_(float("nan"))
                enigma.quantized_matmul(x, w_q, scales, biases,
                                        group_size=GROUP, out=y,
                                        config=config)
                torch.cuda.synchronize()
                check(torch, y, reference, label)
                timers[label] = Timer(
                    torch, lambda i, c=config: enigma.quantized_matmul(
                        x, w_q, scales, biases, group_size=GROUP, out=y,
                        config=c), 1, 3)
            except Exception as e:  # noqa: BLE001 - report, go on
                row(name, label, "not run", str(e).splitlines()[0][:120])
        if not timers:
            continue
        first = {lab: t.sample() for lab, t in timers.items()}
        best = min(first, key=first.get)
        if args.all_configs:
            for lab, us in first.items():
                row(name, lab, f"{us:.1f} us",
                    f"{flops / us / 1e6:.1f} TFLOP/s")
        yb = torch.empty_like(y)
        torch.matmul(x, w_bf16.T, out=yb)
        check(torch, yb, reference, "cuBLAS")
        compare = {"enigma": timers[best],
                   "cublas": Timer(torch, lambda i: torch.matmul(
                       x, w_bf16.T, out=yb), 1, 3)}
        int4_note = None
        try:
            int4 = torch_int4(torch, w_q, scales, biases, x, reference)
            compare["int4"] = Timer(
                torch, lambda i: torch._weight_int4pack_mm(
                    x, int4[0], GROUP, int4[1]), 1, 3)
        except Exception as e:  # noqa: BLE001 - torch without it
            int4_note = str(e)[:150]
        previous = PREVIOUS["gemm"] if args.previous else None
        if previous is not None:
            label = f"enigma {previous}"
            compare["previous"] = timers[label] if label in timers else \
                Timer(torch, lambda i: enigma.quantized_matmul(
                    x, w_q, scales, biases, group_size=GROUP, out=y,
                    config=previous), 1, 3)
        t = rounds_of(compare, args.rounds)
        us, cb = float(np.median(t["enigma"])), float(np.median(t["cublas"]))
        row(name, f"enigma ({best[7:]})", f"{us:.1f} us",
            f"{flops / us / 1e6:.1f} TFLOP/s")
        row(name, "torch.matmul bf16 (cuBLAS)", f"{cb:.1f} us",
            f"{flops / cb / 1e6:.1f} TFLOP/s")
        row(name, "enigma / torch.matmul bf16 (cuBLAS) (throughput)",
            ratio_text(t["cublas"], t["enigma"]), "target >= 0.8")
        if "int4" in t:
            ti = float(np.median(t["int4"]))
            row(name, "torch._weight_int4pack_mm", f"{ti:.1f} us",
                f"{flops / ti / 1e6:.1f} TFLOP/s")
            row(name, "torch int4 / enigma (speed-up)",
                ratio_text(t["int4"], t["enigma"]), "")
        else:
            row(name, "torch._weight_int4pack_mm", "not run", int4_note)
        if "previous" in t:
            tp = float(np.median(t["previous"]))
            row(name, f"enigma previous ({previous})", f"{tp:.1f} us",
                f"{flops / tp / 1e6:.1f} TFLOP/s")
            row(name, "previous / enigma (speed-up)",
                ratio_text(t["previous"], t["enigma"]), "")
        del w_q, scales, biases, w_hat, w_bf16, x, y, yb
        torch.cuda.empty_cache()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="gemv,gemm",
                        help="comma-separated: gemv, gemm")
    parser.add_argument("--gemv-m", default="1,16")
    parser.add_argument("--gemm-m", default="4096",
                        help="comma-separated rows of x for the GEMM")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--all-configs", action="store_true")
    parser.add_argument("--previous", action="store_true",
                        help="also time the previous CUDA defaults in the "
                        "same rounds (PREVIOUS)")
    parser.add_argument("--kinds", default="",
                        help="comma-separated class names (QmvConfig, "
                        "QmvMmaConfig, QmmConfig): time only the GEMV "
                        "configurations of these kinds")
    parser.add_argument("--json", help="write the rows to this file")
    args = parser.parse_args(argv)
    if args.kinds:
        kinds = set(args.kinds.split(","))
        for m in GEMV_CONFIGS:
            GEMV_CONFIGS[m] = [c for c in GEMV_CONFIGS[m]
                               if type(c).__name__ in kinds]
    args.gemv_m = [int(v) for v in args.gemv_m.split(",") if v]
    args.gemm_m = [int(v) for v in args.gemm_m.split(",") if v]
    unknown = [m for m in args.gemv_m if m not in GEMV_CONFIGS]
    if unknown:
        parser.error(f"--gemv-m takes {sorted(GEMV_CONFIGS)}, got {unknown}")
    import torch
    if not torch.cuda.is_available():
        print("no CUDA device", file=sys.stderr)
        return 1
    started = time.time()
    gen = torch.Generator(device="cuda").manual_seed(29)
    only = set(args.only.split(","))
    try:
        if "gemv" in only:
            bench_gemv(torch, args, copy_bandwidth(torch, args.rounds), gen)
        if "gemm" in only:
            bench_gemm(torch, args, gen)
    finally:
        if args.json:
            with open(args.json, "w") as f:
                json.dump(rows, f, indent=1)
    print(f"\n{torch.cuda.get_device_name()}, {time.time() - started:.0f} s"
          "\n\n| benchmark | implementation | time | value / note |\n"
          "|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
