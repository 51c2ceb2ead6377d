"""enigma.attention on one CUDA GPU against PyTorch's SDPA, side by side in
one run: the rows of the attention targets (docs/benchmarks.md).

* forward, bf16, B x H = 8 x 16, S = 4096, D 64 and 128, causal and not:
  against SDPA's cuDNN and flash backends (the forward tile shapes of
  enigma.attention.forward_configs swept first, each checked: the classic
  kernel's, the pipelined kernel's or both, ``--kernel``; with both, the
  fastest of each kernel is compared with the other's in the same rounds);
* forward with grouped heads as Llama 3 8B (Hq 32, Hkv 8, D 128, batch 4,
  S 4096 and 8192, causal): against every SDPA backend that runs it
  (enable_gqa), the best one the reference;
* backward (atomic and deterministic dQ) on the same shapes: against SDPA
  flash's and cuDNN's backward;
* decode, batch 64, Hq 32, Hkv 8, D 128, one query, 4096 and 32768 keys in
  a paged cache (pages of 64 in shuffled order): the KV bytes read per
  second as a fraction of a device-to-device copy's bandwidth, and SDPA on
  the same problem unpaged.

Every result is checked against SDPA before it is timed. Times are wall
time per launch over batches queued back to back (batched_us of
bench_cuda_common.py), in rounds that alternate the implementations;
ratios are the median of the per-round ratios with their range. The
launches are the plan's kernels through the function-call form, the
checks of the arguments done once (a row per problem gives the whole op's
time too).

    python bench/bench_attention.py [--only forward,gqa,backward,decode]
        [--kernel classic|ws|both] [--rounds 3] [--timeout 900]

bench/bench_cuda.py runs it as its step ``attention_lib``. A watchdog ends
the process after ``--timeout`` seconds whatever it is waiting for.
"""

import argparse
import faulthandler
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def _bench_cuda():
    """bench/bench_cuda_common.py, bench_cuda.py's timing helpers and rows,
    as a module (the one bench_cuda.py uses when it runs this)."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import bench_cuda_common
    return bench_cuda_common


class Bench:
    """The rows of one run and the helpers that time and record."""

    def __init__(self, rows, rounds, device="cuda"):
        import torch
        self.torch = torch
        self.rows = rows
        self.rounds = rounds
        self.device = device
        self.bc = _bench_cuda()

    def sync(self):
        if self.device == "cuda":
            self.torch.cuda.synchronize()

    def empty_cache(self):
        if self.device == "cuda":
            self.torch.cuda.empty_cache()

    def time(self, fn, batch=10, samples=4):
        return self.bc.batched_us(fn, self.sync, batch=batch,
                                  samples=samples)

    def row(self, bench, impl, value, note=""):
        self.rows.append((bench, impl, value, note))
        print(f"{bench:34s} {impl:48s} {value} {note}", flush=True)

    def not_run(self, bench, impl, why):
        self.row(bench, impl, "not run", str(why).splitlines()[0][:120])

    def compare(self, bench, impls, work, unit, targets=None):
        """Times ``impls`` ({name: fn}) in alternating rounds: a row of
        each one's median (``work`` per microsecond / 1e6 in ``unit``),
        then each Enigma entry's throughput against every other entry
        (the median of the per-round ratios and their range), with the
        note ``targets.get(other)``."""
        times = {name: [] for name in impls}
        for _ in range(self.rounds):
            for name, fn in impls.items():
                times[name].append(self.time(fn))
        for name, t in times.items():
            us = float(np.median(t))
            self.row(bench, name, f"{us:.1f} us",
                     f"{work / us / 1e6:.1f} {unit}")
        for ours in (n for n in times if n.startswith("enigma")):
            for other in (n for n in times if not n.startswith("enigma")):
                r = np.array(times[other]) / np.array(times[ours])
                self.row(bench, f"{ours} / {other} (throughput)",
                         f"{np.median(r):.3f} (rounds {r.min():.3f}-"
                         f"{r.max():.3f})", (targets or {}).get(other, ""))
        return times


def _sdpa(torch, backend, q, k, v, causal, gqa=False):
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dtype = q.dtype

    if backend == SDPBackend.MATH:   # the smoke test: float32 inside
        q, k, v = q.float(), k.float(), v.float()

    def run():
        with sdpa_kernel(backend):
            if gqa:
                out = F.scaled_dot_product_attention(q, k, v,
                                                     is_causal=causal,
                                                     enable_gqa=True)
            else:
                out = F.scaled_dot_product_attention(q, k, v,
                                                     is_causal=causal)
        return out.to(dtype)
    return run


def _close_attention(o, ref, v, what):
    """|o - ref| <= 2^-8 (max |V| + |ref|) element by element: P rounded to
    16 bits before P V (2^-9 max |V| in a row's weighted sum) and O rounded
    to 16 bits, in either result (the check of the flash attention
    example)."""
    err = (o.float() - ref.float()).abs()
    bound = 2.0**-8 * (v.float().abs().max() + ref.float().abs())
    bad = int((err > bound).sum().item())
    assert bad == 0, (f"{what}: {bad} of {ref.numel()} elements differ, "
                      f"worst {err.max().item():.4g}")


def _backends(b):
    """SDPA's backends by name: cuDNN, flash and memory-efficient on CUDA;
    the math backend on the CPU (the smoke test)."""
    from torch.nn.attention import SDPBackend
    if b.device != "cuda":
        return {"SDPA math": SDPBackend.MATH}
    return {"SDPA cuDNN": SDPBackend.CUDNN_ATTENTION,
            "SDPA flash": SDPBackend.FLASH_ATTENTION,
            "SDPA efficient": SDPBackend.EFFICIENT_ATTENTION}


def _forward_plan(p_args, config=None, num_splits=0):
    """(launch, o, lse) of enigma's forward on (B, H, S, D) tensors with the
    plan built once."""
    import torch
    from enigma._attention import launch, plans
    from enigma._attention.checks import Checker
    from enigma._attention.inputs import bhsd_problem
    q, k, v, causal = p_args
    c = Checker("bench")
    p = bhsd_problem(c, q, k, v, causal, None)
    target = launch.Target(q.device.type)
    steps, temps = plans.forward_plan(c, target, p, config=config,
                                      num_splits=num_splits,
                                      cores=launch.cores(target, q.device))
    dev = q.device
    arrays = dict(q=q, k=k, v=v,
                  cu_q=torch.arange(0, (p.batch + 1) * p.max_sq, p.max_sq,
                                    dtype=torch.int32, device=dev),
                  cu_k=torch.arange(0, (p.batch + 1) * p.max_skv, p.max_skv,
                                    dtype=torch.int32, device=dev),
                  table=torch.zeros(1, dtype=torch.int32, device=dev),
                  lengths=torch.zeros(1, dtype=torch.int32, device=dev),
                  o=torch.full_like(q, float("nan")),
                  lse=torch.empty(p.batch, p.hq, p.max_sq,
                                  dtype=torch.float32, device=dev))
    for name, count in temps.items():
        arrays[name] = torch.empty(count, dtype=torch.float32, device=dev)
    return (lambda: launch.run(steps, arrays)), arrays["o"], arrays["lse"]


# --turns: the pipelined shapes of two or more consumer warpgroups also
# with ForwardConfig(turns=True) (ping-pong), side by side.
_WITH_TURNS = False


def _forward_configs(ea, d, kernel):
    import dataclasses
    for config in ea.forward_configs(d, kernel):
        yield config
        if _WITH_TURNS and config.pipelined and config.rows >= 128:
            yield dataclasses.replace(config, turns=True)


def _config_label(config):
    """A forward tile shape in a row: its kernel and shape."""
    if config.pipelined:
        return (f"enigma ws{' turns' if config.turns else ''}"
                f"{' overlap' if config.overlap else ''} bc={config.bc} "
                f"rows={config.rows} stages={config.stages}")
    return (f"enigma classic bc={config.bc} rows={config.rows} "
            f"q_shared={config.q_shared}")


def _forward_problem(b, name, batch, hq, hkv, s, d, causal, gqa,
                     kernel="both"):
    """Rows of one forward problem; returns (q, k, v, o, lse) of the best
    configuration for the backward. ``kernel``: the tile shapes of the
    classic forward, the pipelined one ("ws") or both."""
    torch = b.torch
    import enigma.attention as ea
    import enigma.torch as et
    from enigma._attention import launch
    gen = torch.Generator(device=b.device).manual_seed(11)
    q = torch.randn(batch, hq, s, d, device=b.device, dtype=torch.bfloat16,
                    generator=gen)
    k = torch.randn(batch, hkv, s, d, device=b.device, dtype=torch.bfloat16,
                    generator=gen)
    v = torch.randn(batch, hkv, s, d, device=b.device, dtype=torch.bfloat16,
                    generator=gen)
    flops = 4.0 * batch * hq * s * s * d * (0.5 if causal else 1.0)
    impls, ref = {}, None
    for label, backend in _backends(b).items():
        fn = _sdpa(torch, backend, q, k, v, causal, gqa=hq != hkv)
        try:
            out = fn()
            b.sync()
        except Exception as e:  # noqa: BLE001 - a backend may refuse
            b.not_run(name, label, repr(e))
            continue
        impls[label] = fn
        ref = out if ref is None else ref
    if ref is None:
        b.not_run(name, "enigma", "no SDPA backend ran, nothing to check")
        return None
    # The tile shapes, each checked, then the fastest (of each kernel).
    best, best_of = None, {}
    for config in _forward_configs(ea, d, kernel):
        try:
            run, o, lse = _forward_plan((q, k, v, causal), config)
            run()
            b.sync()
            _close_attention(o, ref, v, f"{name} {config}")
            us = b.time(run)
        except Exception as e:  # noqa: BLE001 - report and go on
            b.not_run(name, _config_label(config), repr(e))
            continue
        b.row(name, _config_label(config), f"{us:.1f} us",
              f"{flops / us / 1e6:.1f} TFLOP/s")
        if best is None or us < best[0]:
            best = (us, run, o, lse, config)
        which = ("ws turns" if config.turns else "ws overlap"
                 if config.overlap else "ws") if config.pipelined \
            else "classic"
        if which not in best_of or us < best_of[which][0]:
            best_of[which] = (us, run, config)
    if best is None:
        return None
    _, run, o, lse, config = best
    b.row(name, "enigma default tile shape",
          str(ea.forward_config(launch.Target(b.device), d)),
          f"fastest here: {config}")
    impls = {"enigma attention": run, **impls}
    if len(best_of) >= 2:   # each kernel's best in the same rounds
        for which in best_of:
            impls[f"enigma {which} best"] = best_of[which][1]
    targets = {"SDPA cuDNN": "target >= 1.0"} if hq == hkv else {}
    times = b.compare(name, impls, flops, "TFLOP/s", targets)
    sdpa_times = {k_: float(np.median(t)) for k_, t in times.items()
                  if not k_.startswith("enigma")}
    best_sdpa = min(sdpa_times, key=sdpa_times.get)
    r = np.array(times[best_sdpa]) / np.array(times["enigma attention"])
    b.row(name, f"enigma attention / best SDPA ({best_sdpa}) (throughput)",
          f"{np.median(r):.3f} (rounds {r.min():.3f}-{r.max():.3f})",
          "target >= 1.0")
    for faster, slower in (("ws", "classic"), ("ws turns", "ws"),
                           ("ws overlap", "ws")):
        if faster not in best_of or slower not in best_of:
            continue
        r = np.array(times[f"enigma {slower} best"]) / \
            np.array(times[f"enigma {faster} best"])
        b.row(name, f"enigma {faster} / {slower} (throughput, each its "
                    "fastest shape)",
              f"{np.median(r):.3f} (rounds {r.min():.3f}-{r.max():.3f})",
              f"{faster} {best_of[faster][2]}, {slower} "
              f"{best_of[slower][2]}")
    op_us = b.time(lambda: et.attention(q, k, v, causal=causal))
    b.row(name, "enigma.torch.attention (whole op)", f"{op_us:.1f} us",
          f"{flops / op_us / 1e6:.1f} TFLOP/s")
    return q, k, v, o.clone(), lse.clone()


def bench_forward(b, shapes, kernel="both"):
    kept = {}
    for key, (batch, hq, hkv, s, d, causal) in shapes.items():
        name = (f"attn fwd {batch}x{hq}"
                f"{'/' + str(hkv) if hkv != hq else ''}x{s}x{d}"
                f"{' causal' if causal else ''}")
        try:
            kept[key] = (name, _forward_problem(b, name, batch, hq, hkv, s, d,
                                                causal, hq != hkv, kernel))
        except Exception as e:  # noqa: BLE001
            b.not_run(name, "enigma", repr(e))
        b.empty_cache()
    return kept


def _float32_grads(torch, q, k, v, do, causal, gqa):
    """dQ, dK, dV of SDPA's math backend in float32 from the same 16-bit
    inputs: the reference both 16-bit backward passes are measured against."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q32, k32, v32 = (x.detach().float().requires_grad_() for x in (q, k, v))
    with sdpa_kernel(SDPBackend.MATH):
        out = torch.nn.functional.scaled_dot_product_attention(
            q32, k32, v32, is_causal=causal, enable_gqa=gqa)
    return torch.autograd.grad(out, (q32, k32, v32), do.float())


def _close_as_sdpa(got, sdpa, exact, what):
    """Enigma's 16-bit gradient is within twice the largest error of SDPA's
    own 16-bit backward (both against float32), plus 2^-10 of the largest
    gradient: both round P, dS and the sums to 16 bits in their own order,
    while a wrong mask, block or head is off by the size of the values."""
    err = (got.float() - exact).abs().max().item()
    theirs = (sdpa.float() - exact).abs().max().item()
    bound = 2.0 * theirs + 2.0**-10 * exact.abs().max().item()
    assert err <= bound, (f"{what}: largest error {err:.4g} against float32, "
                          f"SDPA's {theirs:.4g} (bound {bound:.4g})")


def bench_backward(b, kept, causal_of):
    torch = b.torch
    import enigma.torch  # noqa: F401  (registers torch.ops.enigma)
    for key, (name, problem) in kept.items():
        if problem is None:
            continue
        q, k, v, o, lse = problem
        causal = causal_of[key]
        name = name.replace("attn fwd", "attn bwd")
        batch, hq, s, d = q.shape
        flops = 2.5 * 4.0 * batch * hq * s * s * d * (0.5 if causal else 1.0)
        do = torch.randn_like(q)
        impls, ref = {}, None
        qg, kg, vg = (x.detach().clone().requires_grad_() for x in (q, k, v))
        for label, backend in _backends(b).items():
            if label == "SDPA efficient":
                continue
            try:
                out = _sdpa(torch, backend, qg, kg, vg, causal,
                            gqa=hq != k.shape[1])()
                grads = torch.autograd.grad(out, (qg, kg, vg), do,
                                            retain_graph=True)
                b.sync()
            except Exception as e:  # noqa: BLE001
                b.not_run(name, label + " backward", repr(e))
                continue
            impls[label + " backward"] = (
                lambda out=out: torch.autograd.grad(out, (qg, kg, vg), do,
                                                    retain_graph=True))
            ref = grads if ref is None else ref
        if ref is None:
            b.not_run(name, "enigma", "no SDPA backward ran")
            continue
        exact = _float32_grads(torch, q, k, v, do, causal, hq != k.shape[1])
        for det in (False, True):
            label = f"enigma backward{' deterministic' if det else ''}"
            fn = (lambda det=det: torch.ops.enigma.attention_backward(
                do, q, k, v, o, lse, causal, d ** -0.5, det))
            try:
                got = fn()
                b.sync()
                for g, r, e, what in zip(got, ref, exact, ("dq", "dk", "dv")):
                    _close_as_sdpa(g, r, e, f"{name} {what}")
            except Exception as e:  # noqa: BLE001
                b.not_run(name, label, repr(e))
                continue
            impls = {label: fn, **impls}
        if not any(n.startswith("enigma") for n in impls):
            continue
        b.compare(name, impls, flops, "TFLOP/s",
                  {"SDPA flash backward": "target >= 1.0"})
        b.empty_cache()


def _copy_bandwidth(b, n=1 << 29):
    """GB/s of a device-to-device copy of 1 GiB (bytes read + written):
    the ceiling of a kernel that streams memory."""
    src = b.torch.empty(n, dtype=b.torch.bfloat16, device=b.device)
    dst = b.torch.empty_like(src)
    copy_us = b.time(lambda: dst.copy_(src))
    gbps = 2 * 2 * n / copy_us / 1e3
    b.row("decode bandwidth ceiling", "torch device copy (read + write)",
          f"{copy_us:.1f} us", f"{gbps:.0f} GB/s")
    return gbps


def bench_decode(b, keys_list=(4096, 32768), batch=64, hq=32, hkv=8, d=128,
                 page=64):
    torch = b.torch
    import enigma.torch as et
    from enigma._attention import launch, plans
    from enigma._attention.checks import Checker
    from enigma._attention.inputs import paged_problem
    copy_gbps = _copy_bandwidth(b)
    for keys in keys_list:
        name = f"attn decode b{batch} {hq}/{hkv}x{keys}x{d} page {page}"
        gen = torch.Generator(device=b.device).manual_seed(13)
        pages = batch * keys // page
        k_cache = torch.randn(pages, page, hkv, d, device=b.device,
                              dtype=torch.bfloat16, generator=gen)
        v_cache = torch.randn_like(k_cache)
        order = torch.randperm(pages, device=b.device, generator=gen)
        table = order.view(batch, keys // page).to(torch.int32).contiguous()
        lengths = torch.full((batch,), keys, dtype=torch.int32,
                             device=b.device)
        cu = torch.arange(batch + 1, dtype=torch.int32, device=b.device)
        q = torch.randn(batch, hq, d, device=b.device, dtype=torch.bfloat16,
                        generator=gen)
        kv_bytes = 2 * batch * keys * hkv * d * 2
        c = Checker("bench")
        p, arrays = paged_problem(c, q, k_cache, v_cache, table, lengths, cu,
                                  1, False, None, check_values=False)
        target = launch.Target(b.device)
        steps, temps = plans.forward_plan(c, target, p,
                                          cores=launch.cores(target,
                                                             q.device))
        arrays.update(o=torch.full_like(q, float("nan")),
                      lse=torch.empty(hq, batch, dtype=torch.float32,
                                      device=b.device))
        for t, count in temps.items():
            arrays[t] = torch.empty(count, dtype=torch.float32,
                                    device=b.device)
        splits = steps[0].grid[1]
        run = lambda: launch.run(steps, arrays)  # noqa: E731
        # The same problem unpaged, for SDPA and the check.
        k_flat = k_cache[table.long()].reshape(batch, keys, hkv, d) \
            .transpose(1, 2).contiguous()
        v_flat = v_cache[table.long()].reshape(batch, keys, hkv, d) \
            .transpose(1, 2).contiguous()
        impls, ref = {}, None
        for label, backend in _backends(b).items():
            fn = _sdpa(torch, backend, q[:, :, None], k_flat, v_flat, False,
                       gqa=True)
            try:
                out = fn()
                b.sync()
            except Exception as e:  # noqa: BLE001
                b.not_run(name, label, repr(e))
                continue
            impls[label + " (unpaged)"] = fn
            ref = out[:, :, 0] if ref is None else ref
        try:
            run()
            b.sync()
            if ref is not None:
                _close_attention(arrays["o"], ref, v_cache, name)
        except Exception as e:  # noqa: BLE001
            b.not_run(name, "enigma decode", repr(e))
            continue
        times = b.compare(name, {"enigma paged decode": run, **impls},
                          kv_bytes * 1e3, "GB/s of KV")
        t = np.array(times["enigma paged decode"])
        frac = kv_bytes / (t * 1e3) / copy_gbps
        b.row(name, f"enigma paged decode KV bandwidth / device copy "
                    f"({splits} splits)",
              f"{np.median(frac):.3f} (rounds {frac.min():.3f}-"
              f"{frac.max():.3f})", "target >= 0.85")
        op_us = b.time(lambda: et.attention_paged(
            q, k_cache, v_cache, table, lengths, cu, max_seqlen_q=1,
            check_values=False))
        b.row(name, "enigma.torch.attention_paged (whole op)",
              f"{op_us:.1f} us", f"{kv_bytes / op_us / 1e3:.0f} GB/s of KV")
        k_cache = v_cache = k_flat = v_flat = arrays = None
        b.empty_cache()


def run_all(rows, only=(), rounds=3, device="cuda", small=False,
            kernel="both"):
    """Appends the rows of the steps in ``only`` (all when empty) to
    ``rows``: (benchmark, implementation, time or ratio, note).
    ``small``: every problem cut down (a smoke test of this script, e.g.
    on the CPU, where only SDPA's math backend runs). ``kernel``: the
    forward kernels swept ("classic", "ws", "both")."""
    b = Bench(rows, rounds, device)
    wanted = set(only) or {"forward", "gqa", "backward", "decode"}
    shapes = {}
    batch, heads, seq = (1, 2, 96) if small else (8, 16, 4096)
    if "forward" in wanted or "backward" in wanted:
        for d in (64, 128):
            for causal in (False, True):
                shapes[("mha", d, causal)] = (batch, heads, heads, seq, d,
                                              causal)
    if "gqa" in wanted or "backward" in wanted:
        for s in ((80, 160) if small else (4096, 8192)):
            shapes[("gqa", s)] = ((1, 4, 1, s, 128, True) if small else
                                  (4, 32, 8, s, 128, True))
    causal_of = {k: v[5] for k, v in shapes.items()}
    kept = bench_forward(b, shapes, kernel) if shapes else {}
    if "backward" in wanted:
        longest = max((k for k in kept if k[0] == "gqa"), default=None)
        bench_backward(b, {k: v for k, v in kept.items() if k != longest},
                       causal_of)
    kept.clear()
    b.empty_cache()
    if "decode" in wanted:
        if small:
            bench_decode(b, keys_list=(256, 960), batch=3, hq=8, hkv=2)
        else:
            bench_decode(b)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="",
                        help="comma-separated: forward, gqa, backward, "
                             "decode (default: all)")
    parser.add_argument("--kernel", default="both",
                        choices=("classic", "ws", "both"),
                        help="forward kernels to time: the classic one, the "
                             "pipelined one (sm_90) or both side by side")
    parser.add_argument("--turns", action="store_true",
                        help="time the pipelined shapes also with their "
                             "consumer warpgroups taking turns (ping-pong)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900,
                        help="seconds before the watchdog ends the run")
    parser.add_argument("--device", default="cuda",
                        help="cuda, or cpu with --small for a smoke test")
    parser.add_argument("--small", action="store_true",
                        help="small problems: checks the script, not speed")
    args = parser.parse_args()
    global _WITH_TURNS
    _WITH_TURNS = args.turns
    faulthandler.dump_traceback_later(args.timeout, exit=True)
    start = time.time()
    rows = []
    run_all(rows, [x for x in args.only.split(",") if x], args.rounds,
            args.device, args.small, args.kernel)
    import torch
    where = torch.cuda.get_device_name() if args.device == "cuda" else \
        args.device
    print(f"\n{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, one "
          f"{where}, {time.time() - start:.0f} s\n")
    print("| benchmark | implementation | time / ratio | note |\n"
          "|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(str(c) for c in r) + " |")


if __name__ == "__main__":
    main()
