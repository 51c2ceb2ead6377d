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
"""

import argparse
import json
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

CHECK_SHAPES = [(1, 77, 129), (1, 4096, 4096), (127, 255, 200),
                (200, 513, 1000), (256, 256, 64)]
SQUARE = [(4096, 4096, 4096), (8192, 8192, 8192)]
LLAMA_NK = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),
            (10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]
LLAMA = [(m, n, k) for (n, k) in LLAMA_NK for m in (16, 128, 4096)]
# Shapes where enigma.gemm_config_for splits K (2 and 4 ways) or picks
# 64-row persistent blocks.
HEURISTIC_CHECK_SHAPES = [(16, 4096, 14336), (128, 4096, 4096),
                          (16, 6144, 4096), (7, 28672, 300),
                          (16, 10240, 8192), (128, 28672, 4096)]


def configs():
    """[(label, dtype, allow_tf32, config)] of every warp-specialised
    configuration, numbered by their position."""
    import enigma
    out = []
    for c in enigma.gemm_configs("cuda", "bf16", warp_specialized=True):
        out.append(("bf16", False, c))
    for tf32 in (True, False):
        for c in enigma.gemm_configs("cuda", "f32", tf32,
                                     warp_specialized=True):
            out.append(("f32", tf32, c))
    # TF32 warpgroup products (wgmma): B stored n x k, both tiles K-major.
    for c in enigma.tf32_gemm_configs():
        out.append(("f32t", True, c))
    # The same with B stored k x n, copied transposed into the stages.
    for c in enigma.tf32_gemm_configs(b_transposed=False):
        out.append(("f32tk", True, c))
    return out


def label(dtype, tf32, config):
    kind = {"f32t": "tf32-Bnk", "f32tk": "tf32-Bkn"}.get(
        dtype, "tf32" if tf32 and dtype == "f32" else dtype)
    c = config
    extra = "".join([" persistent" if c.persistent else "",
                     f" cluster={c.cluster}" if c.cluster > 1 else "",
                     f" split_k={c.split_k}" if c.split_k > 1 else "",
                     f" stream_k={c.stream_k}" if c.stream_k else ""])
    return f"{kind} {c.bm}x{c.bn}x{c.bk} {c.wm}x{c.wn} s{c.stages}{extra}"


# --------------------------------------------------------------------------
# Inside a worker process
# --------------------------------------------------------------------------

def _example(name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(REPO, "examples", "python", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Gemm:
    """One configuration's compiled kernels and launches on torch tensors
    (with split_k: the partials' kernel and their reduction)."""

    def __init__(self, rt, dtype, tf32, config, bounds_check=False,
                 sum_in_kernel=None):
        import enigma
        self.rt, self.dtype, self.tf32, self.config = rt, dtype, tf32, config
        ex = _example("gemm_bf16" if dtype == "bf16" else "gemm_f32")
        if sum_in_kernel is None:   # the example's default form
            sum_in_kernel = getattr(ex, "SUM_IN_KERNEL", False)
        self.b_transposed = dtype == "f32t"   # B stored n x k
        # Split K summed by the last threadgroup of each block (one
        # kernel), or by a second kernel.
        self.sum_in_kernel = sum_in_kernel and config.split_k > 1
        kernel = ex.make_kernel(config, sum_in_kernel) if dtype == "bf16" \
            else ex.make_kernel(config, tf32, b_transposed=self.b_transposed)
        self.compiled = enigma.compile(kernel, bounds_check=bounds_check)
        self.reduce = ex.compiled_reduce(config.split_k) \
            if config.split_k > 1 and not self.sum_in_kernel else None

    def prepare(self, a, b, c):
        import numpy as np
        m, k = a.shape
        n = b.shape[1]
        grid, threads = self.config.launch(m, n, self.rt.multiprocessors)
        if self.b_transposed:   # b is the k x n view of the stored n x k
            b = b.T
        if self.config.stream_k:
            # Workspace (poisoned) and zero flags, uploaded once: every
            # launch leaves the flags zero for the next.
            import enigma
            floats, flags = enigma.stream_k_workspace(self.config)
            prepared = self.rt.prepare(
                self.compiled, [a, b, np.full(floats, np.nan, np.float32),
                                np.zeros(flags, np.uint32)],
                outputs=[c], scalars=[m, n, k])
            return prepared, grid, threads
        if self.sum_in_kernel:
            # Workspace (poisoned) and zero counters, uploaded once: every
            # launch leaves the counters zero for the next.
            import enigma
            floats, counters = enigma.split_k_workspace(self.config, m, n)
            prepared = self.rt.prepare(
                self.compiled, [a, b, np.full(floats, np.nan, np.float32),
                                np.zeros(counters, np.uint32)],
                outputs=[c], scalars=[m, n, k])
            return prepared, grid, threads
        if self.reduce is None:
            prepared = self.rt.prepare(self.compiled, [a, b], outputs=[c],
                                       scalars=[m, n, k])
            return prepared, grid, threads
        return _SplitK(self, a, b, c, grid, threads), grid, threads


class _SplitK:
    """The two launches of a split-K product as one prepared launch (both
    queue on the runtime's stream, in order)."""

    def __init__(self, gemm, a, b, c, grid, threads):
        import enigma
        import torch
        m, k = a.shape
        n = b.shape[1]
        self.w = torch.full((gemm.config.split_k * m * n,), float("nan"),
                            device="cuda", dtype=torch.float32)
        self.partials = gemm.rt.prepare(gemm.compiled, [a, b],
                                        outputs=[self.w], scalars=[m, n, k])
        self.sum = gemm.rt.prepare(gemm.reduce, [self.w], outputs=[c],
                                   scalars=[m, n])
        self.launches = ((grid, threads), enigma.split_k_reduce_launch(m, n))

    def dispatch(self, grid=None, threads=None):
        self.partials.dispatch(*self.launches[0])
        self.sum.dispatch(*self.launches[1])

    def dispatch_async(self, grid=None, threads=None):
        self.partials.dispatch_async(*self.launches[0])
        self.sum.dispatch_async(*self.launches[1])

    def synchronize(self):
        self.sum.synchronize()

    def release(self):
        self.partials.release()
        self.sum.release()


def _tensors(m, n, k, dtype, gen):
    import torch
    t = torch.bfloat16 if dtype == "bf16" else torch.float32
    a = torch.randn(m, k, device="cuda", dtype=t, generator=gen)
    if dtype == "f32t":   # B stored n x k; cuBLAS gets the same (a view)
        return a, torch.randn(n, k, device="cuda", dtype=t,
                              generator=gen).T
    b = torch.randn(k, n, device="cuda", dtype=t, generator=gen)
    return a, b


def _check(c, a, b, tf32, what):
    """Element by element against an fp32 product of the same inputs:
    |c - ab| <= 2^-8 |ab| (bf16 result rounding) + (2 K 2^-24 + 2^-9 with
    TF32 operands, each truncated to 11 significant bits) (|a| @ |b|); NaN (a poisoned element left) fails."""
    import torch
    ref = a.float() @ b.float()
    mag = a.float().abs() @ b.float().abs()
    k = a.shape[1]
    rel = 2.0**-8 if c.dtype == torch.bfloat16 else 0.0
    bound = rel * ref.abs() + (2 * k * 2.0**-24 + (2.0**-9 if tf32 else 0)) \
        * mag + 1e-30
    err = (c.float() - ref).abs()
    bad = int((~(err <= bound)).sum().item())   # NaN counts as bad
    if bad:
        raise AssertionError(f"{what}: {bad} of {ref.numel()} elements "
                             f"differ, worst {float(err.nan_to_num(1e30).max()):.4g}")


def worker_check(index, shapes):
    import torch
    import enigma
    dtype, tf32, config = configs()[index]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    rt = enigma.CudaRuntime()
    gen = torch.Generator(device="cuda").manual_seed(1000 + index)
    for checked in (True, False):
        g = Gemm(rt, dtype, tf32, config, bounds_check=checked)
        for m, n, k in shapes:
            if dtype != "bf16" and m * n * k > 2**33:
                continue
            a, b = _tensors(m, n, k, dtype, gen)
            c = torch.full((m, n), float("nan"), device="cuda",
                           dtype=a.dtype)
            prepared, grid, threads = g.prepare(a, b, c)
            for _ in range(2):   # twice: a prepared launch runs again
                c.fill_(float("nan"))
                prepared.dispatch(grid, threads)
                torch.cuda.synchronize()
                _check(c, a, b, tf32, f"{m}x{n}x{k}"
                       f"{' bounds-checked' if checked else ''}")
            prepared.release()
    print(json.dumps({"ok": True}))


def _batched_us(launch, sync, batch, samples):
    launch()
    sync()
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(batch):
            launch()
        sync()
        times.append((time.perf_counter() - start) * 1e6 / batch)
    times.sort()
    return times[len(times) // 2]


def worker_time(index, shapes, rounds, classic=False):
    """JSON lines {shape, enigma [us], cublas [us]} for each shape."""
    import torch
    import enigma
    if classic:
        dtype, tf32 = "bf16", False
        config = enigma.default_gemm_config("cuda", "bf16")
    else:
        dtype, tf32, config = configs()[index]
    torch.backends.cuda.matmul.allow_tf32 = tf32
    rt = enigma.CudaRuntime()
    gen = torch.Generator(device="cuda").manual_seed(2000 + index)
    g = Gemm(rt, dtype, tf32, config)
    for m, n, k in shapes:
        print(json.dumps(_time_shape(g, m, n, k, rounds, gen)), flush=True)


def _time_shape(g, m, n, k, rounds, gen):
    """{shape, enigma [us], cublas [us]} of one shape, checked first."""
    import torch
    sync = torch.cuda.synchronize
    a, b = _tensors(m, n, k, g.dtype, gen)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
    ct = torch.empty_like(c)
    prepared, grid, threads = g.prepare(a, b, c)
    prepared.dispatch(grid, threads)
    sync()
    _check(c, a, b, g.tf32, f"{m}x{n}x{k}")
    flops = 2.0 * m * n * k
    batch = max(2, min(20, int(2e12 / flops)))
    ours, theirs = [], []
    for _ in range(rounds):
        ours.append(_batched_us(
            lambda: prepared.dispatch_async(grid, threads),
            prepared.synchronize, batch, 3))
        theirs.append(_batched_us(lambda: torch.matmul(a, b, out=ct),
                                  sync, batch, 3))
    prepared.release()
    a = b = c = ct = prepared = None   # free the operands for the next
    torch.cuda.empty_cache()
    return {"shape": [m, n, k], "enigma": ours, "cublas": theirs}


def worker_heuristic(shapes, rounds, check_only=False):
    """Per shape the built-in configuration: checked (bounds-checked,
    then as compiled for speed) and, unless check_only, timed; JSON lines
    {shape, config, enigma, cublas}."""
    import torch
    import enigma
    rt = enigma.CudaRuntime()
    gen = torch.Generator(device="cuda").manual_seed(4000)
    for m, n, k in shapes:
        config = enigma.gemm_config_for(m, n, k, "bf16", rt.multiprocessors)
        print(json.dumps({"shape": [m, n, k], "config": repr(config)}),
              flush=True)
        if check_only:
            for checked in (True, False):
                g = Gemm(rt, "bf16", False, config, bounds_check=checked)
                a, b = _tensors(m, n, k, "bf16", gen)
                c = torch.full((m, n), float("nan"), device="cuda",
                               dtype=a.dtype)
                prepared, grid, threads = g.prepare(a, b, c)
                for _ in range(2):
                    c.fill_(float("nan"))
                    prepared.dispatch(grid, threads)
                    torch.cuda.synchronize()
                    _check(c, a, b, False, f"{m}x{n}x{k} {config}"
                           f"{' bounds-checked' if checked else ''}")
                prepared.release()
            print(json.dumps({"shape": [m, n, k], "ok": True}), flush=True)
            continue
        result = _time_shape(Gemm(rt, "bf16", False, config), m, n, k,
                             rounds, gen)
        result["config"] = repr(config)
        print(json.dumps(result), flush=True)


def _stream_k_configs(processors):
    """The stream-K configurations --check-only checks: the built-in
    choice's two blocks, one threadgroup per multiprocessor."""
    import enigma
    return [enigma.MmaConfig(*shape, warp_specialized=True, persistent=True,
                             stream_k=processors)
            for shape in ((128, 128, 64, 8, 1, 6), (64, 128, 64, 4, 1, 8))]


def worker_stream_k_check(shapes):
    """Per shape, each stream-K configuration checked (bounds-checked,
    then as compiled for speed), its second run equal bit for bit to the
    first; JSON lines as worker_heuristic's."""
    import torch
    import enigma
    rt = enigma.CudaRuntime()
    gen = torch.Generator(device="cuda").manual_seed(5000)
    gemms = {}
    for m, n, k in shapes:
        print(json.dumps({"shape": [m, n, k], "config": "stream-K"}),
              flush=True)
        for config in _stream_k_configs(rt.multiprocessors):
            for checked in (True, False):
                key = (config, checked)
                if key not in gemms:
                    gemms[key] = Gemm(rt, "bf16", False, config,
                                      bounds_check=checked)
                a, b = _tensors(m, n, k, "bf16", gen)
                c = torch.full((m, n), float("nan"), device="cuda",
                               dtype=a.dtype)
                prepared, grid, threads = gemms[key].prepare(a, b, c)
                first = None
                for _ in range(2):
                    c.fill_(float("nan"))
                    prepared.dispatch(grid, threads)
                    torch.cuda.synchronize()
                    what = (f"{m}x{n}x{k} {config}"
                            f"{' bounds-checked' if checked else ''}")
                    _check(c, a, b, False, what)
                    if first is None:
                        first = c.clone()
                    elif not torch.equal(first.view(torch.int16),
                                         c.view(torch.int16)):
                        raise AssertionError(f"{what}: a second run differs "
                                             "bit for bit")
                prepared.release()
        print(json.dumps({"shape": [m, n, k], "ok": True}), flush=True)


def _candidates(m, n, k, processors, autotune):
    """(the built-in choice, [(name, configuration)]): its cost model's
    alternatives, with autotune every warp-specialised configuration of
    enigma.gemm_configs too."""
    import enigma
    from enigma._gemm_configs import _gemm_choices
    chosen = enigma.gemm_config_for(m, n, k, "bf16", processors)
    out = [(name, c, True) for name, c, _ in _gemm_choices(m, n, k,
                                                          processors)]
    # Every power-of-two split of each block shape that fits one wave
    # (the model leaves some out: 64 x 64 blocks), summed in the kernel...
    seen = {c for _, c, _ in out}
    for _, c, _ in list(out):
        if c.stream_k or c.cluster > 1:
            continue
        split = 2
        while c.tiles(m, n) * split <= processors and split <= 16:
            cand = enigma.MmaConfig(c.bm, c.bn, c.bk, c.wm, c.wn, c.stages,
                                    c.group_m, warp_specialized=True,
                                    split_k=split)
            if cand not in seen and -(-k // c.bk) >= 2 * split:
                seen.add(cand)
                out.append(("split-K", cand, True))
            split *= 2
    # ... wider blocks split so that they fill the GPU best (any count of
    # splits, not only powers of two) ...
    bm, wm = (64, 4) if m <= 64 else (128, 8)
    for bn in (64, 128, 192, 256):
        stages = min(8, (227 * 1024) // ((bm + bn) * 64 * 2))
        tiles = -(-m // bm) * -(-n // bn)
        split = min(16, processors // tiles, -(-k // 64) // 4)
        if split < 2:
            continue
        cand = enigma.MmaConfig(bm, bn, 64, wm, 1, stages,
                                warp_specialized=True, split_k=split)
        if all((c.bm, c.bn, c.split_k) != (bm, bn, split) for c in seen):
            seen.add(cand)
            out.append(("split-K", cand, True))
            out.append((SPLIT_TWO_KERNELS, cand, False))
    # ... blocks of 16 rows for decode (simdgroup products: wgmma blocks
    # have 64 rows, three quarters of them zeros at M = 16; the stages are
    # a third as large, so more of them are in flight), whole and split
    # to fill the GPU ...
    if m <= 16:
        for bn, stages in ((64, 16), (128, 12)):
            whole = enigma.MmaConfig(16, bn, 64, 1, 4, stages,
                                     warp_specialized=True)
            out.append(("data-parallel", whole, True))
            split = min(16, processors // whole.tiles(m, n),
                        -(-k // 64) // 4)
            if split >= 2:
                out.append((SPLIT_TWO_KERNELS, enigma.MmaConfig(
                    16, bn, 64, 1, 4, stages, warp_specialized=True,
                    split_k=split), False))
    # ... tiles 96 wide, which make 128 blocks where 64 and 128 do not
    # (cuBLAS ran 96 x 64 tiles at 128 x 6144 x 4096; widths that are not
    # multiples of 64 run as simdgroup products, B unswizzled; 16 x 192
    # blocks of four simdgroups gave wrong products on an H200 and are
    # refused) ...
    for bm, wm, wn, bn in ((64, 4, 1, 96),):
        if (bm == 16) != (m <= 16):
            continue
        cand = enigma.MmaConfig(bm, bn, 64, wm, wn, 8,
                                warp_specialized=True)
        split = min(16, processors // cand.tiles(m, n), -(-k // 64) // 4)
        out.append(("data-parallel", cand, True))
        if split >= 2:
            out.append((SPLIT_TWO_KERNELS, enigma.MmaConfig(
                bm, bn, 64, wm, wn, 8, warp_specialized=True,
                split_k=split), False))
    # ... small-batch blocks as cuBLAS ran them at 128 x 4096 x 4096 (64 x
    # 64 tiles, 13 stages, pairs of threadgroups sharing a tile): 64 x 64
    # blocks with deep rings, whole, and clusters of two sharing A or B ...
    if 16 < m <= 256:
        for c in (enigma.MmaConfig(64, 64, 64, 4, 1, 12,
                                   warp_specialized=True),
                  enigma.MmaConfig(64, 64, 64, 4, 1, 12, warp_specialized=True,
                                   persistent=True, cluster=2),
                  enigma.MmaConfig(128, 64, 64, 8, 1, 8, warp_specialized=True,
                                   persistent=True, cluster=2),
                  enigma.MmaConfig(64, 128, 64, 4, 1, 8, warp_specialized=True,
                                   persistent=True, cluster=2),
                  enigma.MmaConfig(64, 64, 64, 4, 1, 12, warp_specialized=True,
                                   persistent=True, cluster=2,
                                   cluster_shares="b"),
                  enigma.MmaConfig(64, 128, 64, 4, 1, 8, warp_specialized=True,
                                   persistent=True, cluster=2,
                                   cluster_shares="b")):
            if c not in {x for _, x, _ in out}:
                out.append(("data-parallel", c, True))
    # ... and the model's splits also with their partials summed by a
    # second kernel.
    out += [(SPLIT_TWO_KERNELS, c, False) for name, c, _ in
            _gemm_choices(m, n, k, processors) if c.split_k > 1]
    if autotune:
        seen = {c for _, c, _ in out}
        out += [(label("bf16", False, c), c, True)
                for c in enigma.gemm_configs("cuda", "bf16",
                                             warp_specialized=True)
                if c not in seen]
    return chosen, out


SPLIT_TWO_KERNELS = "split-K, 2 kernels"
SPLIT_IN_KERNEL = "split-K"   # the name _gemm_choices gives its splits


def worker_variants(shapes, rounds, autotune):
    """Per shape one JSON line {shape, chosen, results: [{name, config,
    enigma, cublas} or {name, config, error}]} (the begin line first)."""
    import torch
    import enigma
    rt = enigma.CudaRuntime()
    gen = torch.Generator(device="cuda").manual_seed(6000)
    gemms = {}
    for m, n, k in shapes:
        print(json.dumps({"shape": [m, n, k], "config": "candidates"}),
              flush=True)
        chosen, candidates = _candidates(m, n, k, rt.multiprocessors,
                                         autotune)
        results = []
        for name, config, in_kernel in candidates:
            entry = {"name": name, "config": repr(config),
                     "sum_in_kernel": in_kernel}
            try:
                key = (config, in_kernel)
                if key not in gemms:
                    gemms[key] = Gemm(rt, "bf16", False, config,
                                      sum_in_kernel=in_kernel)
                r = _time_shape(gemms[key], m, n, k, rounds, gen)
                entry.update(enigma=r["enigma"], cublas=r["cublas"])
            except Exception as e:   # a failed candidate, reported
                entry["error"] = f"{type(e).__name__}: {e}"[:300]
            results.append(entry)
        print(json.dumps({"shape": [m, n, k], "chosen": repr(chosen),
                          "results": results}), flush=True)


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
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"x".join(map(str, shape)): got
                       for shape, got in lines.items()}, f, indent=1)
    print(f"Finished in {time.time() - started:.0f} s; {len(errors)} "
          "shapes failed")
    for shape, why in errors.items():
        print(f"FAILED {shape}: {why}")
    return 1 if errors else 0


def worker_profile(index, shape):
    """Launches one configuration 20 times on one shape (for ncu)."""
    import torch
    import enigma
    dtype, tf32, config = configs()[index]
    rt = enigma.CudaRuntime()
    gen = torch.Generator(device="cuda").manual_seed(3)
    a, b = _tensors(*shape, dtype, gen)
    c = torch.empty(shape[0], shape[1], device="cuda", dtype=a.dtype)
    prepared, grid, threads = Gemm(rt, dtype, tf32, config).prepare(a, b, c)
    for _ in range(20):
        prepared.dispatch(grid, threads)
    torch.cuda.synchronize()
    _check(c, a, b, tf32, "profiled run")


# --------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------

def spawn(args, timeout):
    """Runs this script with `args` in a new process: (returncode, stdout,
    stderr), returncode None when it ran out of time (killed)."""
    cmd = [sys.executable, os.path.abspath(__file__)] + args
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
        cmd = [sys.executable, os.path.abspath(__file__)] + args + \
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
    if args.save:
        with open(args.save, "w") as f:
            json.dump({"x".join(map(str, shape)): got
                       for shape, got in lines.items()}, f, indent=1)
    print(f"Finished in {time.time() - started:.0f} s; {len(errors)} "
          "shapes failed")
    for shape, why in errors.items():
        print(f"FAILED {shape}: {why}")
    return 1 if errors else 0


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
        cmd = [sys.executable, os.path.abspath(__file__), "--worker-check",
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
