"""Scaled 8-bit float GEMM ``C = (A * sa) @ (B * sb)^T`` with e4m3 / e5m2
operands and float accumulation (docs/reference/fp8.md).

    python examples/python/gemm_fp8.py --m 200 --n 136 --k 320 --scaling block

A (M x K) and B (N x K) are quantised on the host from random float
matrices (``quantize``: scales from each tensor's, row's or block's largest
magnitude, values rounded with ``enigma.fp8_encode``), multiplied with
``enigma.gemm_fp8`` on the chosen runtime, and checked element by element
against numpy float64 from the dequantised values: the products of 8-bit
values are exact, so the only errors are the float sums and the final
rounding to the output type. On an sm_90 GPU the kernel multiplies with
``wgmma`` (``enigma.gemm_fp8_block`` with a warpgroup configuration); on
other GPUs, the CPU and the MSL host runtime the same kernel converts the
8-bit values exactly and sums in float.
"""

import argparse
import functools
import sys

import numpy as np

import enigma

FP8_MAX = enigma.FP8_MAX
BLOCK = enigma.FP8_BLOCK


def quantize(x, fmt="f8e4m3", scaling="tensor"):
    """(8-bit bits, scales) of a float matrix x (rows x K) such that
    x ~= decode(bits) * scale: one scale for the tensor, per row, or per
    1 x 128 block along K (A's blocks; ``quantize_b_blocks`` makes B's 128 x
    128 ones). Each scale maps its part's largest magnitude to the
    format's largest finite value."""
    x = np.asarray(x, np.float64)
    top = FP8_MAX[fmt]
    if scaling == "tensor":
        amax = np.abs(x).max(keepdims=True).reshape(1)
        scale = np.maximum(amax, 1e-12) / top
        bits = enigma.fp8_encode(x / scale, fmt, saturate=True)
        return bits, scale.astype(np.float32)
    if scaling == "row":
        amax = np.abs(x).max(axis=1)
        scale = np.maximum(amax, 1e-12) / top
        bits = enigma.fp8_encode(x / scale[:, None], fmt, saturate=True)
        return bits, scale.astype(np.float32)
    rows, k = x.shape
    kb = -(-k // BLOCK)
    padded = np.zeros((rows, kb * BLOCK))
    padded[:, :k] = x
    blocks = padded.reshape(rows, kb, BLOCK)
    scale = np.maximum(np.abs(blocks).max(axis=2), 1e-12) / top
    bits = enigma.fp8_encode((blocks / scale[:, :, None]).reshape(rows, -1)
                             [:, :k], fmt, saturate=True)
    return bits, scale.astype(np.float32)


def quantize_b_blocks(x, fmt="f8e4m3"):
    """B's 128 x 128 block quantisation (DeepSeek-V3's weights)."""
    x = np.asarray(x, np.float64)
    n, k = x.shape
    nb, kb = -(-n // BLOCK), -(-k // BLOCK)
    padded = np.zeros((nb * BLOCK, kb * BLOCK))
    padded[:n, :k] = x
    blocks = padded.reshape(nb, BLOCK, kb, BLOCK)
    scale = np.maximum(np.abs(blocks).max(axis=(1, 3)), 1e-12) / FP8_MAX[fmt]
    q = (blocks / scale[:, None, :, None]).reshape(nb * BLOCK, kb * BLOCK)
    return (enigma.fp8_encode(q[:n, :k], fmt, saturate=True),
            scale.astype(np.float32))


def dequantize(bits, scale, fmt, scaling, b_blocks=False):
    """float64 values of quantised bits."""
    v = enigma.fp8_decode(bits, fmt).astype(np.float64)
    s = np.asarray(scale, np.float64)
    if scaling == "tensor":
        return v * s.reshape(-1)[0]
    if scaling == "row":
        return v * s.reshape(-1)[:, None]
    rows, k = v.shape
    if b_blocks:
        full = np.repeat(np.repeat(s, BLOCK, axis=0), BLOCK, axis=1)
        return v * full[:rows, :k]
    return v * np.repeat(s, BLOCK, axis=1)[:, :k]


def inputs(m, n, k, scaling="tensor", a_fmt="f8e4m3", b_fmt="f8e4m3",
           seed=None):
    """(a bits, b bits, scale_a, scale_b, A, B float64 dequantised)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)) * rng.uniform(0.5, 4, (m, 1))
    w = rng.standard_normal((n, k)) * rng.uniform(0.5, 4, (n, 1))
    a, sa = quantize(x, a_fmt, scaling)
    if scaling == "block":
        b, sb = quantize_b_blocks(w, b_fmt)
    else:
        b, sb = quantize(w, b_fmt, scaling)
    A = dequantize(a, sa, a_fmt, scaling)
    B = dequantize(b, sb, b_fmt, scaling, b_blocks=True)
    return a, b, sa, sb, A, B


_OUT_REL = {"f32": 0.0, "f16": 2.0**-11, "bf16": 2.0**-8,
            "f8e4m3": 2.0**-4, "f8e5m2": 2.0**-3}


def decode_output(c, out_dtype):
    """float64 values of gemm_fp8's result (bits for bf16 and 8-bit)."""
    c = np.asarray(c)
    if out_dtype == "bf16":
        return (c.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    if out_dtype in ("f8e4m3", "f8e5m2"):
        return enigma.fp8_decode(c, out_dtype).astype(np.float64)
    return c.astype(np.float64)


def to_numpy(c, out_dtype):
    """A PyTorch result as numpy (bf16 and 8-bit values as their bits)."""
    import torch
    if out_dtype == "bf16":
        return c.view(torch.uint16).cpu().numpy()
    if out_dtype.startswith("f8"):
        return c.view(torch.uint8).cpu().numpy()
    return c.cpu().numpy()


def check(c, A, B, out_dtype="bf16", scale_out=1.0, tensor_cores=False):
    """Every element within the float sums' error and the output's
    rounding: |c - ab| <= rel |ab| + e (|A| @ |B|^T), e = 2 K 2^-24 (the
    f32 sums), or 2^-10 on tensor cores (Hopper's 8-bit products keep
    fewer bits between K steps). An 8-bit output saturates."""
    want = (A @ B.T) * scale_out
    got = decode_output(c, out_dtype).reshape(want.shape)
    if out_dtype in ("f8e4m3", "f8e5m2"):
        want = np.clip(want, -FP8_MAX[out_dtype], FP8_MAX[out_dtype])
    e = 2.0**-10 if tensor_cores else 2 * A.shape[1] * 2.0**-24
    bound = _OUT_REL[out_dtype] * np.abs(want) + \
        e * np.abs(scale_out) * (np.abs(A) @ np.abs(B).T) + 1e-30
    if out_dtype in ("f8e4m3", "f8e5m2"):   # subnormal outputs
        bound += 2.0**-9 if out_dtype == "f8e4m3" else 2.0**-16
    err = np.abs(got - want)
    bad = ~(err <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements out of "
                           f"tolerance, worst error {float(np.nanmax(err))}")


# --- tuning on CUDA (bench/bench_cuda.py) ------------------------------------

@functools.lru_cache(maxsize=None)
def compiled(config, scaling, out_dtype="bf16"):
    return enigma.compile(enigma.gemm_fp8_kernel(
        config, scaling, "f8e4m3", "f8e4m3", out_dtype, False, False))


def _processors():
    """The current CUDA device's multiprocessors (persistent configurations
    launch one threadgroup on each), or None without PyTorch's CUDA."""
    try:
        import torch
        return torch.cuda.get_device_properties(
            torch.cuda.current_device()).multi_processor_count
    except Exception:  # noqa: BLE001 - no torch or no CUDA device
        return None


def _launch(config, m, n, k, scaling):
    return enigma.Launch(compiled(config, scaling),
                         *config.launch(m, n, _processors()),
                         scalars=[m, n, k], output_bytes=m * n * 2)


@enigma.autotune(configs=enigma.gemm_fp8_configs("cuda", "tensor")[:4],
                 key=["m", "n", "k"])
def tuned_tensor(config, m, n, k):
    """Per-tensor scales, bf16 out: the Launch of one configuration."""
    return _launch(config, m, n, k, "tensor")


@enigma.autotune(configs=enigma.gemm_fp8_configs("cuda", "row")[:4],
                 key=["m", "n", "k"])
def tuned_row(config, m, n, k):
    """Row-wise scales, bf16 out: the Launch of one configuration."""
    return _launch(config, m, n, k, "row")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        description="Scaled 8-bit float GEMM C = (A sa) @ (B sb)^T on a "
                    "runtime, checked against numpy float64 from the "
                    "dequantised inputs.")
    parser.add_argument("--m", type=int, default=200)
    parser.add_argument("--n", type=int, default=136)
    parser.add_argument("--k", type=int, default=320)
    parser.add_argument("--scaling", choices=enigma.FP8_SCALINGS,
                        default="tensor")
    parser.add_argument("--out", choices=["bf16", "f16", "f32", "f8e4m3",
                                          "f8e5m2"], default="bf16")
    parser.add_argument("--a-format", choices=["f8e4m3", "f8e5m2"],
                        default="f8e4m3")
    parser.add_argument("--b-format", choices=["f8e4m3", "f8e5m2"],
                        default="f8e4m3")
    parser.add_argument("--amax", action="store_true",
                        help="also return max |C| (before scale_out)")
    parser.add_argument("--scale-out", type=float, default=None,
                        help="multiplier before an 8-bit output")
    parser.add_argument("--runtime", choices=["auto", "cpu", "metal-host",
                                              "cuda"], default="auto")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)

    a, b, sa, sb, A, B = inputs(args.m, args.n, args.k, args.scaling,
                                args.a_format, args.b_format, args.seed)
    rt = {"auto": None, "cpu": enigma.CpuRuntime,
          "metal-host": enigma.MetalHostRuntime,
          "cuda": enigma.CudaRuntime}[args.runtime]
    rt = enigma.best_runtime() if rt is None else rt()
    operands = (a, b, sa, sb)
    if rt.name == "cuda":
        import torch
        operands = tuple(torch.from_numpy(np.ascontiguousarray(x)).cuda()
                         for x in operands)
    scale_out = args.scale_out if args.out.startswith("f8") else None
    result = enigma.gemm_fp8(*operands, out_dtype=args.out,
                             scale_out=scale_out, amax=args.amax,
                             a_dtype=args.a_format, b_dtype=args.b_format,
                             runtime=rt)
    c, amax = result if args.amax else (result, None)
    if rt.name == "cuda":
        c = to_numpy(c, args.out)
    check(c, A, B, args.out, 1.0 if scale_out is None else scale_out,
          tensor_cores=rt.name == "cuda")
    print(f"runtime {rt.name}: {args.m} x {args.n} x {args.k}, "
          f"{args.a_format} x {args.b_format} -> {args.out}, "
          f"{args.scaling} scales: pass")
    if amax is not None:
        want = float(np.abs(A @ B.T).max())
        print(f"amax {amax:.6g} (numpy {want:.6g})")
        # tensor cores accumulate 8-bit products with fewer bits than f32
        rel = 2.0 ** -10 if rt.name == "cuda" else 1e-5
        assert abs(amax - want) <= rel * want + 1e-30
    return 0


if __name__ == "__main__":
    sys.exit(main())
