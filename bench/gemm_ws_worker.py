"""Inside a worker process of bench/check_gemm_ws.py: one configuration's
kernels and launches on torch tensors, their checks against torch, the
timings against cuBLAS, and the candidates of --compare-streamk and
--autotune. Each worker prints JSON lines for the driver."""

import json

from bench_timing import batched_us
from gemm_ws_common import _example, configs, label


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


def _check_twice(g, m, n, k, dtype, tf32, gen, what):
    """One prepared launch of ``g`` on fresh inputs, run twice (a prepared
    launch runs again) into a poisoned C, checked each time."""
    import torch
    a, b = _tensors(m, n, k, dtype, gen)
    c = torch.full((m, n), float("nan"), device="cuda", dtype=a.dtype)
    prepared, grid, threads = g.prepare(a, b, c)
    for _ in range(2):
        c.fill_(float("nan"))
        prepared.dispatch(grid, threads)
        torch.cuda.synchronize()
        _check(c, a, b, tf32, what)
    prepared.release()


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
            _check_twice(g, m, n, k, dtype, tf32, gen, f"{m}x{n}x{k}"
                         f"{' bounds-checked' if checked else ''}")
    print(json.dumps({"ok": True}))


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
        ours.append(batched_us(
            lambda: prepared.dispatch_async(grid, threads),
            prepared.synchronize, batch, 3))
        theirs.append(batched_us(lambda: torch.matmul(a, b, out=ct),
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
                _check_twice(g, m, n, k, "bf16", False, gen,
                             f"{m}x{n}x{k} {config}"
                             f"{' bounds-checked' if checked else ''}")
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
