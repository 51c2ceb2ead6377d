"""CUDA benchmarks on one GPU, side by side in one run.

Bandwidth-bound kernels are timed with CUDA events around single launches
(median of `--repeat`), Enigma through PreparedKernel.dispatch_timed, the
others through torch.cuda.Event. The compute-bound rows (GEMM, attention)
are timed per launch over batches of launches queued back to back
(batched_us), so that no library's host-side launch cost is counted.
Bandwidth counts bytes read plus bytes written. Prints a Markdown table
last and writes bandwidth.png and compute.png (matplotlib) into --out.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import enigma

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
rows = []      # (benchmark, implementation, time, GB/s or note, ratio)
bars = {}      # label -> GB/s for the chart


def record(bench, impl, us, nbytes=None, note=""):
    gbps = nbytes / (us * 1e-6) / 1e9 if nbytes else None
    shown = (f"{gbps:.0f} GB/s" + (f" ({note})" if note else "")) if gbps else note
    rows.append((bench, impl, f"{us:.1f} us", shown))
    if gbps:
        bars[f"{bench}\n{impl}"] = gbps
    print(f"{bench:28s} {impl:28s} {us:10.1f} us  {gbps or 0:8.0f} GB/s {note}", flush=True)
    return gbps


def not_run(bench, impl, why):
    rows.append((bench, impl, "not run", why))
    print(f"{bench:28s} {impl:28s} not run: {why}", flush=True)


def torch_time(fn, repeat):
    import torch
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(repeat):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return float(np.median(samples))


def batched_us(launch, sync, batch=10, samples=6):
    """Median over `samples` batches of the wall time per launch of `batch`
    launches queued back to back and waited for once: the GPU stays busy,
    so each library's host-side launch cost (Triton's Python launcher,
    PyTorch's dispatcher, Enigma's argument checks) hides behind the
    previous kernel, as in a real program, instead of being timed with the
    kernel as single-launch events do."""
    launch()
    sync()
    times = []
    for _ in range(samples):
        start = time.perf_counter()
        for _ in range(batch):
            launch()
        sync()
        times.append((time.perf_counter() - start) * 1e6 / batch)
    return float(np.median(times))


def enigma_time(prepared, grid, threads, repeat):
    for _ in range(3):
        prepared.dispatch(grid, threads)
    return float(np.median([prepared.dispatch_timed(grid, threads) for _ in range(repeat)]))


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


def bench_vector_add(rt, repeat, log2n):
    import torch
    n = 1 << log2n
    nbytes = 3 * 4 * n
    name = f"vector_add 2^{log2n} f32"
    a = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    b = np.random.default_rng(1).standard_normal(n, dtype=np.float32)
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    tc = torch.empty_like(ta)
    ref = ta + tb

    src, dst = torch.empty(2 * n, device="cuda"), torch.empty(2 * n, device="cuda")
    copy_gbps = record(name, "device copy (torch, ceiling)",
                       torch_time(lambda: dst.copy_(src), repeat), 2 * 4 * 2 * n)
    torch_gbps = record(name, "torch.add", torch_time(lambda: torch.add(ta, tb, out=tc), repeat), nbytes)

    prepared = rt.prepare(enigma.compile(vector_add), [a, b], n * 4)
    us = enigma_time(prepared, (n, 1, 1), (256, 1, 1), repeat)
    out = np.frombuffer(prepared.read_output(), np.float32)
    assert np.array_equal(out, a + b), "enigma vector_add result is wrong"
    prepared.release()
    enigma_gbps = record(name, "enigma scalar", us, nbytes)

    # Zero-copy: the same kernel on torch's tensors, timed exactly as the
    # hand-written kernel below (torch events around an async launch).
    zc = rt.prepare(enigma.compile(vector_add), [ta, tb], outputs=[tc])
    tc.fill_(float("nan"))
    zc_launch = lambda: zc.dispatch_async((n, 1, 1), (256, 1, 1))
    zc_first = torch_time(zc_launch, repeat)
    zc.synchronize()
    assert torch.equal(tc, ref), "enigma zero-copy vector_add result is wrong"
    try:
        compiled4 = enigma.compile(vector_add, vec_width=4)
        prepared = rt.prepare(compiled4, [a, b], n * 4)
        us = enigma_time(prepared, (n // 4, 1, 1), (256, 1, 1), repeat)
        out = np.frombuffer(prepared.read_output(), np.float32)
        assert np.array_equal(out, a + b), "enigma vec_width=4 result is wrong"
        prepared.release()
        vec_gbps = record(name, "enigma vec_width=4", us, nbytes)
        rows.append((name, "enigma vec4 / torch.add", f"{vec_gbps / torch_gbps:.3f}", "target >= 0.97"))
    except enigma.EnigmaError as e:
        not_run(name, "enigma vec_width=4", str(e).splitlines()[0])

    try:
        import cupy as cp
        kernel = cp.RawKernel(r'''
        extern "C" __global__ void add(const float* a, const float* b, float* c, unsigned n) {
          unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) c[i] = a[i] + b[i];
        }''', "add")
        ca, cb = cp.asarray(a), cp.asarray(b)
        cc = cp.empty_like(ca)
        launch = lambda: kernel(((n + 255) // 256,), (256,), (ca, cb, cc, np.uint32(n)))
        # Alternate the two, each timed twice the same way; the spread
        # between a kernel's own two runs says what difference is noise.
        cupy_runs = [torch_time(launch, repeat)]
        zc_runs = [zc_first, torch_time(zc_launch, repeat)]
        cupy_runs.append(torch_time(launch, repeat))
        assert cp.array_equal(cc, ca + cb), "hand-written kernel result is wrong"
        cupy_us, zc_us = float(np.median(cupy_runs)), float(np.median(zc_runs))
        cupy_gbps = record(name, "hand-written CUDA (CuPy)", cupy_us, nbytes,
                           f"runs {cupy_runs[0]:.1f}/{cupy_runs[1]:.1f} us")
        zc_gbps = record(name, "enigma scalar, torch tensors", zc_us, nbytes,
                         f"runs {zc_runs[0]:.1f}/{zc_runs[1]:.1f} us")
        rows.append((name, "enigma scalar / hand-written (same timing)", f"{zc_gbps / cupy_gbps:.3f}", "target >= 1.0"))
        rows.append((name, "enigma scalar (dispatch_timed) / hand-written", f"{enigma_gbps / cupy_gbps:.3f}", ""))
    except Exception as e:  # noqa: BLE001 - report any missing piece
        not_run(name, "hand-written CUDA (CuPy)", repr(e)[:80])
    zc.release()

    try:
        import triton
        import triton.language as tl

        @triton.jit
        def add_kernel(x, y, z, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            tl.store(z + offs, tl.load(x + offs, mask=mask) + tl.load(y + offs, mask=mask), mask=mask)

        grid = ((n + 1023) // 1024,)
        record(name, "triton", torch_time(lambda: add_kernel[grid](ta, tb, tc, n, BLOCK=1024), repeat), nbytes)
        assert torch.equal(tc, ref)
    except Exception as e:  # noqa: BLE001
        not_run(name, "triton", repr(e)[:80])
    return copy_gbps


def load_example(name):
    path = os.path.join(REPO, "examples", "python", name + ".py")
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def bench_rows(rt, repeat, which):
    """Row RMSNorm / softmax (4096 x 4096 f32) against Triton and torch."""
    import torch
    rows_, cols = 4096, 4096
    nbytes = 2 * 4 * rows_ * cols
    name = f"{which} 4096x4096 f32"
    module = load_example(which)
    x = np.random.default_rng(2).standard_normal((rows_, cols), dtype=np.float32)
    tx = torch.from_numpy(x).cuda()
    if which == "rmsnorm":
        ref_fn = lambda: tx * torch.rsqrt((tx * tx).mean(dim=1, keepdim=True) + 1e-6)
    else:
        ref_fn = lambda: torch.softmax(tx, dim=1)
    record(name, "torch", torch_time(ref_fn, repeat), nbytes)
    if module is None or not hasattr(module, "run_prepared"):
        not_run(name, "enigma", f"examples/python/{which}.py has no run_prepared()")
    else:
        prepared, grid, threads, check = module.run_prepared(rt, x)
        us = enigma_time(prepared, grid, threads, repeat)
        check(np.frombuffer(prepared.read_output(), np.float32).reshape(rows_, cols))
        prepared.release()
        record(name, "enigma", us, nbytes)
    try:
        import triton  # noqa: F401
        tmod = load_triton_reference(which)
        out = torch.empty_like(tx)
        record(name, "triton", torch_time(lambda: tmod(tx, out), repeat), nbytes)
    except Exception as e:  # noqa: BLE001
        not_run(name, "triton", repr(e)[:80])


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


def bench_mma_gemm(rt, repeat, dtype, sides, rounds=5, tf32_too=False):
    """examples/python/gemm_bf16.py / gemm_f32.py (enigma.gemm_block on
    tensor cores or FMA, autotuned over enigma.gemm_configs) against
    torch.matmul (cuBLAS) and bench/triton_matmul.py on the same tensors.
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
            prepared.release()
            _flop_rows(name + tag, flops, results, torch_label)
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


def bench_tv_add(rt, repeat, log2n, rounds=5):
    """The TV-layout element-wise add (examples/python/tv_add.py, @enigma.jit
    + Tensor.load/store) against the vec_width=4 vector add, both on the
    same torch tensors (zero-copy), 2^log2n floats as a square matrix. The
    two are timed in alternation, `rounds` times, and the ratio is the
    median of the per-round ratios: a 1% question needs both under the same
    clocks."""
    import torch
    module = load_example("tv_add")
    side = 1 << (log2n // 2)
    n = side * side
    nbytes = 3 * 4 * n
    name = f"add {side}x{side} f32"
    gen = torch.Generator(device="cuda").manual_seed(3)
    ta = torch.randn(n, device="cuda", generator=gen)
    tb = torch.randn(n, device="cuda", generator=gen)
    ref = ta + tb

    tc = torch.full_like(ta, float("nan"))
    vec = rt.prepare(enigma.compile(vector_add, vec_width=4), [ta, tb], outputs=[tc])
    vec_shape = ((n // 4, 1, 1), (256, 1, 1))
    vec.dispatch(*vec_shape)
    torch.cuda.synchronize()
    assert torch.equal(tc, ref), "vec_width=4 add result is wrong"

    tc.fill_(float("nan"))
    compiled = module.compile_for(side, side)
    tv_shape = enigma.dispatch_shape(compiled)
    tv = rt.prepare(compiled, [ta, tb], outputs=[tc])
    tv.dispatch(*tv_shape)
    torch.cuda.synchronize()
    assert torch.equal(tc, ref), "TV-layout add result is wrong"

    vec_us, tv_us = [], []
    for _ in range(rounds):
        vec_us.append(enigma_time(vec, *vec_shape, repeat))
        tv_us.append(enigma_time(tv, *tv_shape, repeat))
    vec.release()
    tv.release()
    ratios = np.array(vec_us) / np.array(tv_us)
    record(name, "enigma vec_width=4", float(np.median(vec_us)), nbytes)
    record(name, "enigma TV layout (jit, Tensor)", float(np.median(tv_us)), nbytes)
    rows.append((name, "TV layout / vec_width=4 (bandwidth)",
                 f"{np.median(ratios):.3f} (rounds {ratios.min():.3f}-{ratios.max():.3f})",
                 "target >= 1.0 (same bandwidth)"))


def load_triton_reference(which):
    import triton
    import triton.language as tl

    @triton.jit
    def rms_kernel(x, y, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        v = tl.load(x + row * cols + offs, mask=offs < cols, other=0.0)
        r = tl.rsqrt(tl.sum(v * v, axis=0) / cols + 1e-6)
        tl.store(y + row * cols + offs, v * r, mask=offs < cols)

    @triton.jit
    def softmax_kernel(x, y, cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offs = tl.arange(0, BLOCK)
        v = tl.load(x + row * cols + offs, mask=offs < cols, other=-float("inf"))
        e = tl.exp(v - tl.max(v, axis=0))
        tl.store(y + row * cols + offs, e / tl.sum(e, axis=0), mask=offs < cols)

    kernel = rms_kernel if which == "rmsnorm" else softmax_kernel
    return lambda tx, out: kernel[(tx.shape[0],)](tx, out, tx.shape[1], BLOCK=triton.next_power_of_2(tx.shape[1]))


@enigma.kernel
def tiny(A: enigma.f32):
    A[enigma.thread_position_in_grid] = 1.0


def bench_launch_overhead(rt, launches=20000):
    prepared = rt.prepare(enigma.compile(tiny), [], 4 * 32)
    for _ in range(100):
        prepared.dispatch_async((32, 1, 1), (32, 1, 1))
    prepared.synchronize()
    t0 = time.perf_counter()
    for _ in range(launches):
        prepared.dispatch_async((32, 1, 1), (32, 1, 1))
    host_us = (time.perf_counter() - t0) / launches * 1e6
    prepared.synchronize()
    prepared.release()
    rows.append(("async launch, tiny kernel", "enigma (host time per launch)", f"{host_us:.2f} us", ""))
    try:
        import cupy as cp
        k = cp.RawKernel(r'extern "C" __global__ void t(float* a) { a[threadIdx.x] = 1.0f; }', "t")
        buf = cp.zeros(32, dtype=cp.float32)
        for _ in range(100):
            k((1,), (32,), (buf,))
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        for _ in range(launches):
            k((1,), (32,), (buf,))
        cupy_us = (time.perf_counter() - t0) / launches * 1e6
        cp.cuda.Device().synchronize()
        rows.append(("async launch, tiny kernel", "CuPy RawKernel (host time)", f"{cupy_us:.2f} us", ""))
        rows.append(("async launch, tiny kernel", "enigma / CuPy", f"{host_us / cupy_us:.2f}", "target <= 1.0"))
    except Exception as e:  # noqa: BLE001
        not_run("async launch, tiny kernel", "CuPy RawKernel", repr(e)[:80])


@enigma.kernel
def call_add(A: enigma.f32, B: enigma.f32, C: enigma.f32,
             n: enigma.Scalar(enigma.u32)):
    i = enigma.thread_position_in_grid
    with enigma.if_(i < n):
        C[i] = A[i] + B[i]


def _host_us(launch, count):
    t0 = time.perf_counter()
    for _ in range(count):
        launch()
    return (time.perf_counter() - t0) / count * 1e6


def bench_call_form_overhead(rt, launches=20000, busy_launches=500):
    """Host time per launch of the function-call form (kernel[grid,
    threads](a, b, c, n)) against a CuPy RawKernel of the same add on the
    same CuPy arrays, and against torch.add(out=) on torch tensors: with
    the GPU idle (small kernels that it keeps up with) and kept busy (a
    long sleep kernel queued first, so every launch only queues; fewer
    launches, to stay within the driver's queue)."""
    import torch
    n = 1 << 12
    name = "call-form launch, add 4096"
    results = {}

    def measure(label, launch, sync, sleep):
        for _ in range(100):
            launch()
        sync()
        idle = min(_host_us(launch, launches) for _ in range(3))
        sync()
        busy = []
        for _ in range(3):
            sleep()
            busy.append(_host_us(launch, busy_launches))
            sync()
        results[label] = (idle, min(busy))
        rows.append((name, f"{label}, GPU idle", f"{idle:.2f} us", "host time per launch"))
        rows.append((name, f"{label}, GPU busy", f"{min(busy):.2f} us", "host time per launch"))

    ta, tb = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    tc = torch.empty_like(ta)
    torch_sleep = lambda: torch.cuda._sleep(200_000_000)
    measure("enigma call form (torch tensors)",
            lambda: call_add[n](ta, tb, tc, n), torch.cuda.synchronize,
            torch_sleep)
    assert torch.equal(tc, ta + tb), "call form on torch tensors is wrong"
    measure("torch.add(out=)", lambda: torch.add(ta, tb, out=tc),
            torch.cuda.synchronize, torch_sleep)
    prepared = rt.prepare(enigma.compile(call_add), [ta, tb], outputs=[tc],
                          scalars=[n])
    measure("enigma prepared dispatch_async",
            lambda: prepared.dispatch_async((n, 1, 1), (256, 1, 1)),
            prepared.synchronize, torch_sleep)
    prepared.release()
    try:
        import cupy as cp
        kernel = cp.RawKernel(r'''
        extern "C" __global__ void add(const float* a, const float* b, float* c, unsigned n) {
          unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) c[i] = a[i] + b[i];
        }''', "add")
        ca, cb = cp.asarray(ta), cp.asarray(tb)
        cc = cp.empty_like(ca)
        sync = cp.cuda.Device().synchronize
        measure("enigma call form (CuPy arrays)",
                lambda: call_add[n](ca, cb, cc, n), sync, torch_sleep)
        assert cp.array_equal(cc, ca + cb), "call form on CuPy arrays is wrong"
        blocks, size = ((n + 255) // 256,), (256,)
        un = np.uint32(n)
        measure("CuPy RawKernel", lambda: kernel(blocks, size, (ca, cb, cc, un)),
                sync, torch_sleep)
        for i, state in enumerate(("idle", "busy")):
            ratio = (results["enigma call form (CuPy arrays)"][i]
                     / results["CuPy RawKernel"][i])
            rows.append((name, f"call form / CuPy RawKernel, GPU {state}",
                         f"{ratio:.2f}", "target <= 1.0"))
        # The two in alternation, round after round: the machine's drift
        # (clocks, other tenants) falls on both alike.
        rounds = 15
        ours = lambda: call_add[n](ca, cb, cc, n)  # noqa: E731
        theirs = lambda: kernel(blocks, size, (ca, cb, cc, un))  # noqa: E731
        for state, count in (("idle", launches // 4), ("busy", busy_launches)):
            ratios = []
            for _ in range(rounds):
                pair = []
                for launch in (ours, theirs):
                    if state == "busy":
                        torch_sleep()
                    pair.append(_host_us(launch, count))
                    sync()
                ratios.append(pair[0] / pair[1])
            r = np.array(ratios)
            rows.append((name, f"call form / CuPy RawKernel, GPU {state}, "
                               f"{rounds} alternating rounds",
                         f"{np.median(r):.2f} (rounds {r.min():.2f}-"
                         f"{r.max():.2f})", "target <= 1.0"))
    except Exception as e:  # noqa: BLE001
        not_run(name, "CuPy RawKernel", repr(e)[:80])
    for i, state in enumerate(("idle", "busy")):
        ratio = (results["enigma call form (torch tensors)"][i]
                 / results["torch.add(out=)"][i])
        rows.append((name, f"call form / torch.add, GPU {state}",
                     f"{ratio:.2f}", ""))


COMPILE_SNIPPET = r'''
import time, numpy as np
t0 = time.perf_counter()
import enigma
@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]
rt = enigma.CudaRuntime()
t1 = time.perf_counter()
c = enigma.compile(vector_add)
p = rt.prepare(c, [np.ones(4, np.float32), np.ones(4, np.float32)], 16)
p.dispatch((4, 1, 1), (4, 1, 1))
t2 = time.perf_counter()
print((t2 - t1) * 1000)
'''


def bench_compile():
    cache = tempfile.mkdtemp(prefix="enigma-bench-cache-")
    env = dict(os.environ, ENIGMA_CACHE_DIR=cache)
    times = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", COMPILE_SNIPPET], env=env,
                              capture_output=True, text=True)
        if proc.returncode != 0:
            not_run("compile vector_add", "enigma", proc.stderr.strip()[-200:])
            return
        times.append(float(proc.stdout.strip().splitlines()[-1]))
    rows.append(("compile vector_add", "cold (trace -> loaded module + 1 launch)", f"{times[0]:.0f} ms", "target <= 250 ms"))
    rows.append(("compile vector_add", "warm cache, new process", f"{times[1]:.1f} ms", "target <= 20 ms"))


def device_name():
    """The GPU the benchmarks ran on, as the driver names it (the charts and
    the table say which card gave the numbers)."""
    try:
        import torch
        return torch.cuda.get_device_name()
    except Exception:  # noqa: BLE001 - no torch or no GPU: a generic name
        return "NVIDIA GPU"


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


COPY_TILE = 4096   # floats per threadgroup: 16 KiB of threadgroup memory


def staged_copy_kernel(width):
    """Each threadgroup copies its 4096 floats into threadgroup memory and
    back out with enigma.copy(..., cooperative=True) at `width` (the starts
    are multiples of 4096, so width 4 moves float4s, width 1 single
    floats)."""
    @enigma.kernel
    def staged_copy(src: enigma.f32, dst: enigma.f32):
        tile = enigma.threadgroup_alloc(enigma.f32, COPY_TILE)
        base = enigma.threadgroup_position_in_grid("x") * COPY_TILE
        enigma.copy(src, tile, COPY_TILE, src_offset=base,
                    coalesced_width=width, cooperative=True)
        enigma.barrier()
        enigma.copy(tile, dst, COPY_TILE, dst_offset=base,
                    coalesced_width=width, cooperative=True)
    return enigma.compile(staged_copy)


def bench_tile_copy(rt, repeat, log2n, rounds=5):
    """enigma.copy through threadgroup memory at coalesced_width 1 and 4,
    timed in alternation (median of per-round ratios), with torch's
    device-to-device copy of the same tensors as the ceiling."""
    import torch
    n = 1 << log2n
    nbytes = 2 * 4 * n
    name = f"tile copy 2^{log2n} f32"
    src = torch.randn(n, device="cuda")
    dst = torch.full_like(src, float("nan"))
    shape = ((n // COPY_TILE * 256, 1, 1), (256, 1, 1))
    prepared = {}
    for width in (1, 4):
        dst.fill_(float("nan"))
        p = rt.prepare(staged_copy_kernel(width), [src], outputs=[dst])
        p.dispatch(*shape)
        torch.cuda.synchronize()
        assert torch.equal(dst, src), f"copy width {width} result is wrong"
        prepared[width] = p
    times = {1: [], 4: []}
    for _ in range(rounds):
        for width, p in prepared.items():
            times[width].append(enigma_time(p, *shape, repeat))
    for p in prepared.values():
        p.release()
    for width in (1, 4):
        record(name, f"enigma.copy coalesced_width={width}",
               float(np.median(times[width])), nbytes)
    record(name, "torch dst.copy_(src)",
           torch_time(lambda: dst.copy_(src), repeat), nbytes)
    ratios = np.array(times[1]) / np.array(times[4])
    rows.append((name, "width 4 / width 1 (bandwidth)",
                 f"{np.median(ratios):.3f} (rounds {ratios.min():.3f}-{ratios.max():.3f})",
                 "vector accesses"))


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
