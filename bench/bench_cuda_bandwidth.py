"""The bandwidth-bound steps of bench/bench_cuda.py: vector add (torch,
CuPy, Triton, zero-copy and vec_width=4), row RMSNorm and softmax, the
TV-layout add and enigma.copy through threadgroup memory."""

import numpy as np

import enigma

from bench_cuda_common import (cupy_add_kernel, enigma_time, load_example,
                               not_run, record, rows, torch_time, vector_add)


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
        kernel = cupy_add_kernel(cp)
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
