"""The compute-bound steps of bench/bench_cuda.py: the tiled_gemm example,
gemm_block autotuned in bf16 and fp32 (TF32 too) against cuBLAS and
Triton, and the flash attention example against SDPA; each result is
checked against torch before it is timed."""

import importlib.util
import os

import numpy as np

from bench_cuda_common import (HERE, batched_us, enigma_time, load_example,
                               not_run, rows, torch_time)


def bench_tiled_gemm(rt, repeat, side=2048):
    """examples/python/tiled_gemm.py (32 x 32 tiles, simdgroup 8 x 8 path,
    float4 copies) against torch.matmul in float32 (TF32 off) on the same
    matrices; reported as TFLOP/s in the note column."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    module = load_example("tiled_gemm")
    name = f"gemm {side}^3 f32"
    flops = 2.0 * side ** 3
    rng = np.random.default_rng(4)
    a = rng.standard_normal((side, side), dtype=np.float32)
    b = rng.standard_normal((side, side), dtype=np.float32)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    torch_us = torch_time(lambda: ta @ tb, repeat)
    prepared, grid, threads, check = module.run_prepared(rt, (a, b))
    enigma_us = enigma_time(prepared, grid, threads, repeat)
    check(np.frombuffer(prepared.read_output(), np.float32))
    prepared.release()
    for impl, us in (("torch.matmul (cuBLAS, fp32)", torch_us),
                     ("enigma tiled_gemm example", enigma_us)):
        rows.append((name, impl, f"{us:.1f} us",
                     f"{flops / us / 1e6:.1f} TFLOP/s"))
        print(f"{name:28s} {impl:28s} {us:10.1f} us  "
              f"{flops / us / 1e6:6.1f} TFLOP/s", flush=True)
    rows.append((name, "enigma / cuBLAS (throughput)",
                 f"{torch_us / enigma_us:.3f}", "no target yet"))


def load_triton_matmul():
    path = os.path.join(HERE, "triton_matmul.py")
    spec = importlib.util.spec_from_file_location("triton_matmul", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _close(out, ref, what, rel=2.0**-7):
    """Element by element |out - ref| <= rel (|ref| + mean |ref|): within
    a few bf16 roundings, while a wrong layout, edge or mask is off by the
    size of the values."""
    out, ref = out.float(), ref.float()
    bound = rel * (ref.abs() + ref.abs().mean())
    bad = int(((out - ref).abs() > bound).sum().item())
    assert bad == 0, (f"{what}: {bad} of {ref.numel()} elements differ, worst "
                      f"{(out - ref).abs().max().item():.4g}")


def _tflops(flops, us):
    return f"{flops / us / 1e6:.1f} TFLOP/s"


def _flop_rows(name, flops, results, reference):
    """Rows for {implementation: [us per round]}, then the throughput ratio
    of each Enigma entry to `reference` (median of per-round ratios, with
    the range over rounds)."""
    for impl, times in results.items():
        us = float(np.median(times))
        rows.append((name, impl, f"{us:.1f} us", _tflops(flops, us)))
        print(f"{name:28s} {impl:36s} {us:10.1f} us  {flops / us / 1e6:7.1f} TFLOP/s",
              flush=True)
    ref = np.array(results[reference])
    for impl, times in results.items():
        if impl == reference:
            continue
        r = ref / np.array(times)
        rows.append((name, f"{impl} / {reference} (throughput)",
                     f"{np.median(r):.3f} (rounds {r.min():.3f}-{r.max():.3f})",
                     ""))


def _sweep_rows(name, tuner, key, flops):
    """The autotune sweep: every configuration's time (or why it failed)."""
    for config, t in tuner.timings.get(key, []):
        label = "enigma config " + ", ".join(
            f"{k}={v}" for k, v in config.as_dict().items())
        if isinstance(t, str):
            rows.append((name, label, "not run", t[:100]))
        else:
            rows.append((name, label, f"{t:.1f} us", _tflops(flops, t)))


TRANSPOSED_FIRST = "enigma TF32, B transposed first"
SWAPPED = "enigma TF32, B k x n, C^T = B^T A^T (B through registers)"


def _best_tf32(rt, tuner, inputs, c, ref, name, rel, m, n, k):
    """The fastest of a TF32 tuner's configurations for the m x n x k
    product, each checked against ``ref`` before it is timed."""
    import torch
    return tuner.best(rt, inputs, outputs=[c],
                      check=lambda p: (torch.cuda.synchronize(),
                                       _close(c, ref, name, rel)),
                      m=m, n=n, k=k, processors=rt.multiprocessors)


def _tf32_swapped(rt, ex, a, b, c, ref, name, rel):
    """TF32 for B stored k x n by gemm_f32.py's run_swapped route
    (autotuned over tf32_gemm_configs(), each checked from a poisoned
    output); returns (the launch's dispatch, release)."""
    import torch
    m, k = a.shape
    n = b.shape[1]
    launch = _best_tf32(rt, ex.tuned_tf32_swapped, [a, b], c, ref, name,
                        rel, m, n, k)
    _sweep_rows(f"{name} (swapped)", ex.tuned_tf32_swapped, (m, n, k),
                2.0 * m * n * k)
    prepared = launch.prepare(rt, [a, b], outputs=[c])
    c.fill_(float("nan"))
    prepared.dispatch(launch.grid, launch.threads)
    torch.cuda.synchronize()
    _close(c, ref, f"{name} (swapped)", rel)
    return (lambda: prepared.dispatch_async(launch.grid, launch.threads),
            prepared.release)


def _tf32_transposed_first(rt, ex, a, b, c, ref, name, rel):
    """TF32 for B stored k x n by gemm_f32.py's other route: a transpose
    of B into an n x k workspace, then the n x k warpgroup products
    (autotuned over tf32_gemm_configs()). Checked from poisoned outputs;
    returns (the pair's launch, {part: (its launch alone, its note of a
    time)}, release)."""
    import torch
    m, k = a.shape
    n = b.shape[1]
    bt = torch.empty(n, k, device="cuda", dtype=b.dtype)
    t = ex.transpose_launch(k, n)
    pt = t.prepare(rt, [b], outputs=[bt])
    pt.dispatch(t.grid, t.threads)
    torch.cuda.synchronize()
    launch = _best_tf32(rt, ex.tuned_tf32_nk, [a, bt], c, ref, name, rel,
                        m, n, k)
    pg = launch.prepare(rt, [a, bt], outputs=[c])
    bt.fill_(float("nan"))
    c.fill_(float("nan"))
    pt.dispatch_async(t.grid, t.threads)
    pg.dispatch_async(launch.grid, launch.threads)
    torch.cuda.synchronize()
    _close(c, ref, f"{name} (B transposed first)", rel)

    def pair():
        pt.dispatch_async(t.grid, t.threads)
        pg.dispatch_async(launch.grid, launch.threads)

    def release():
        pt.release()
        pg.release()
    # Each half alone: its launch, and how a time of it reads (B read and
    # written once; the product's FLOPs).
    parts = {"transpose of B alone": (
                 lambda: pt.dispatch_async(t.grid, t.threads),
                 lambda us: f"{2 * b.numel() * 4 / us / 1e3:.0f} GB/s"),
             "n x k product alone": (
                 lambda: pg.dispatch_async(launch.grid, launch.threads),
                 lambda us: _tflops(2.0 * m * n * k, us))}
    return pair, parts, release


def bench_mma_gemm(rt, repeat, dtype, sides, rounds=5, tf32_too=False):
    """examples/python/gemm_bf16.py / gemm_f32.py (enigma.gemm_block on
    tensor cores or FMA, autotuned over enigma.gemm_configs) against
    torch.matmul (cuBLAS) and bench/triton_matmul.py on the same tensors;
    with TF32 also the routes for B stored k x n: B transposed first, and
    C^T = B^T A^T with B through registers.
    Every configuration is checked against torch before it is timed; the
    timed launches alternate between implementations, `rounds` times."""
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    tdtype = {"bf16": torch.bfloat16, "f32": torch.float32}[dtype]
    ex = load_example("gemm_bf16" if dtype == "bf16" else "gemm_f32")
    try:
        tm = load_triton_matmul()
    except Exception as e:  # noqa: BLE001
        tm = None
        triton_error = repr(e)[:80]
    gen = torch.Generator(device="cuda").manual_seed(5)
    for side in sides:
        m = n = k = side
        name = f"gemm {side}^3 {dtype}"
        flops = 2.0 * m * n * k
        a = torch.randn(m, k, device="cuda", dtype=tdtype, generator=gen)
        b = torch.randn(k, n, device="cuda", dtype=tdtype, generator=gen)
        ref = a @ b
        torch.cuda.synchronize()
        c = torch.full_like(ref, float("nan"))
        variants = [(False, "torch.matmul (cuBLAS)")]
        if tf32_too:
            variants.append((True, "torch.matmul (cuBLAS, TF32)"))
        for tf32, torch_label in variants:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            tag = " TF32" if tf32 else ""
            problem = dict(m=m, n=n, k=k)
            if dtype == "f32":
                problem["allow_tf32"] = tf32
            rel = 2.0**-7 if (dtype == "bf16" or tf32) else 2.0**-16
            tuner = ex.tuned
            if tf32:   # TF32 tensor cores: their own tiles
                tuner = ex.tuned_tf32
                del problem["allow_tf32"]
            launch = tuner.best(rt, [a, b], outputs=[c],
                                check=lambda p: (
                                    torch.cuda.synchronize(),
                                    _close(c, ref, name + tag, rel)),
                                **problem)
            _sweep_rows(name + tag, tuner, tuple(problem[x] for x in
                                                 tuner.key), flops)
            prepared = launch.prepare(rt, [a, b], outputs=[c])
            c.fill_(float("nan"))
            prepared.dispatch(launch.grid, launch.threads)
            torch.cuda.synchronize()
            _close(c, ref, name + tag, rel)
            results = {f"enigma{tag}": [], torch_label: []}
            pair = swapped = None
            if tf32:
                pair, parts, release_pair = _tf32_transposed_first(
                    rt, ex, a, b, c, ref, name + tag, rel)
                results[TRANSPOSED_FIRST] = []
                part_us = {part: [] for part in parts}
                swapped, release_swapped = _tf32_swapped(
                    rt, ex, a, b, c, ref, name + tag, rel)
                results[SWAPPED] = []
            ct = torch.empty_like(ref)
            if tm is not None and dtype == "bf16":
                tm.matmul(a, b, out=ct)
                torch.cuda.synchronize()
                _close(ct, ref, "triton " + name, rel)
                results["triton (bench/triton_matmul.py)"] = []
            sync = torch.cuda.synchronize
            for _ in range(rounds):
                results[f"enigma{tag}"].append(batched_us(
                    lambda: prepared.dispatch_async(launch.grid,
                                                    launch.threads),
                    prepared.synchronize))
                results[torch_label].append(batched_us(
                    lambda: torch.matmul(a, b, out=ct), sync))
                if "triton (bench/triton_matmul.py)" in results:
                    results["triton (bench/triton_matmul.py)"].append(
                        batched_us(lambda: tm.matmul(a, b, out=ct), sync))
                if swapped is not None:
                    results[SWAPPED].append(batched_us(swapped, sync))
                if pair is not None:
                    results[TRANSPOSED_FIRST].append(batched_us(pair, sync))
                    for part, (fn, _) in parts.items():
                        part_us[part].append(batched_us(fn, sync))
            prepared.release()
            if pair is not None:
                release_pair()
                release_swapped()
            _flop_rows(name + tag, flops, results, torch_label)
            if pair is not None:
                # Where the pair's time goes.
                for part, times in part_us.items():
                    us = float(np.median(times))
                    rows.append((name + tag, f"{TRANSPOSED_FIRST}: {part}",
                                 f"{us:.1f} us", parts[part][1](us)))
            if "triton (bench/triton_matmul.py)" in results:
                r = np.array(results["triton (bench/triton_matmul.py)"]) / \
                    np.array(results[f"enigma{tag}"])
                rows.append((name, "enigma / triton (throughput)",
                             f"{np.median(r):.3f} (rounds {r.min():.3f}-{r.max():.3f})",
                             "target >= 1.0"))
            elif tm is None and dtype == "bf16":
                not_run(name, "triton", triton_error)
        torch.backends.cuda.matmul.allow_tf32 = False
        del a, b, c, ref
        torch.cuda.empty_cache()


def bench_attention(rt, repeat, bh=128, s=4096, rounds=3):
    """examples/python/flash_attention.py against torch's
    scaled_dot_product_attention with the flash backend, bf16, BH x S x D,
    head dims 64 and 128, causal and not; each checked against torch first.
    FLOPs: 4 BH S^2 D (half of that when causal)."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    ex = load_example("flash_attention")
    gen = torch.Generator(device="cuda").manual_seed(6)
    for d in (64, 128):
        for causal in (False, True):
            name = f"attention {bh}x{s}x{d}{' causal' if causal else ''} bf16"
            flops = 4.0 * bh * s * s * d * (0.5 if causal else 1.0)
            q, k, v = (torch.randn(bh, s, d, device="cuda", dtype=torch.bfloat16,
                                   generator=gen) for _ in range(3))

            def sdpa():
                with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                    return F.scaled_dot_product_attention(
                        q[None], k[None], v[None], is_causal=causal)[0]

            ref = sdpa()
            o = torch.full_like(q, float("nan"))

            def check(_prepared=None):
                torch.cuda.synchronize()
                err = (o.float() - ref.float()).abs()
                bound = 2.0**-8 * (v.float().abs().max() + ref.float().abs())
                bad = int((err > bound).sum().item())
                assert bad == 0, (f"{name}: {bad} elements differ, worst "
                                  f"{err.max().item():.4g}")

            # Keys per block swept (enigma.autotune), each checked first.
            key = dict(bh=bh, s=s, d=d, causal=causal)
            launch = ex.tuned.best(rt, [q, k, v], outputs=[o], check=check,
                                   **key)
            for (bc, qrows, q_shared), t in ex.tuned.timings.get(
                    tuple(key.values()), []):
                where = "threadgroup memory" if q_shared else "registers"
                rows.append((name, f"enigma keys per block = {bc}, query "
                                   f"rows per threadgroup = {qrows}, Q in "
                                   f"{where}",
                             "not run" if isinstance(t, str) else f"{t:.1f} us",
                             t[:100] if isinstance(t, str) else _tflops(flops, t)))
            grid, threads = launch.grid, launch.threads
            prepared = launch.prepare(rt, [q, k, v], outputs=[o])
            o.fill_(float("nan"))
            prepared.dispatch(grid, threads)
            check()
            results = {"enigma flash_attention example": [],
                       "torch SDPA (flash backend)": []}
            for _ in range(rounds):
                results["enigma flash_attention example"].append(batched_us(
                    lambda: prepared.dispatch_async(grid, threads),
                    prepared.synchronize))
                results["torch SDPA (flash backend)"].append(
                    batched_us(sdpa, torch.cuda.synchronize))
            prepared.release()
            _flop_rows(name, flops, results, "torch SDPA (flash backend)")
            del q, k, v, o, ref
            torch.cuda.empty_cache()
