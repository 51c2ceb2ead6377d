"""4-bit weight-only quantized matmul ``y = x @ w_hat.T`` in MLX's format
(docs/reference/quantized.md).

    python examples/python/quantized_matmul.py [M] [N] [K]
        [--group-size 64] [--dtype bf16] [--runtime cpu|metal-host|cuda]

Quantizes a random ``(N, K)`` weight matrix with ``enigma.quantize`` (eight
4-bit codes per uint32 along K, a scale and a bias per group of
``group_size`` values), multiplies ``M`` random rows of x by it with
``enigma.quantized_matmul`` (a matrix-vector kernel for up to 4 rows, the
matrix hardware with the weights dequantised into threadgroup memory for
more) and checks the result against float64 numpy computed from the
dequantised values. On CUDA the arrays are PyTorch tensors on the GPU;
elsewhere numpy arrays (bfloat16 as uint16 bits).
"""

import argparse
import sys

import numpy as np

import enigma

TOLERANCE_NOTE = (
    "|y - x w_hat^T| <= u |x w_hat^T| + u/2 (|x| @ |w_hat|^T) "
    "+ 2 (K + 2) 2^-24 (|x| @ (15 |scale| + |bias|)^T), u the unit "
    "roundoff of the dtype (0 for f32)")


def to_bf16(x):
    """float array -> bfloat16 bits (uint16), rounding to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits):
    """bfloat16 bits (uint16) -> float32."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(
        np.float32)


def encode(x, dtype):
    return to_bf16(x) if dtype == "bf16" else \
        np.asarray(x, {"f16": np.float16, "f32": np.float32}[dtype])


def decode(a, dtype):
    a = np.asarray(a)
    return (from_bf16(a) if dtype == "bf16" else a).astype(np.float64)


def codes(w_q):
    """(N, K/8) uint32 words -> (N, K) codes, the lowest nibble first."""
    w_q = np.asarray(w_q).view(np.uint32)
    nibbles = [(w_q >> np.uint32(4 * p)) & np.uint32(15) for p in range(8)]
    return np.stack(nibbles, -1).reshape(w_q.shape[0], -1)


def dequantize_reference(w_q, scales, biases, group_size, dtype):
    """float64 ``scale * q + bias``."""
    s = decode(scales, dtype).repeat(group_size, 1)
    b = decode(biases, dtype).repeat(group_size, 1)
    return s * codes(w_q) + b


def check_output(y, x, w_q, scales, biases, group_size, dtype):
    """Every element within the bound of TOLERANCE_NOTE."""
    w_hat = dequantize_reference(w_q, scales, biases, group_size, dtype)
    xs = decode(x, dtype).reshape(-1, w_hat.shape[1])
    want = xs @ w_hat.T
    got = decode(y, dtype).reshape(want.shape)
    u = {"bf16": 2.0**-8, "f16": 2.0**-11, "f32": 0.0}[dtype]
    mag = (15 * np.abs(decode(scales, dtype)) +
           np.abs(decode(biases, dtype))).repeat(group_size, 1)
    k = w_hat.shape[1]
    bound = u * np.abs(want) + u / 2 * (np.abs(xs) @ np.abs(w_hat).T) + \
        2 * (k + 2) * 2.0**-24 * (np.abs(xs) @ mag.T) + 1e-30
    err = np.abs(got - want)
    bad = ~(err <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements out of "
                           f"tolerance, worst error {float(np.nanmax(err))}")
    return float(err.max())


class Device:
    """Arrays of a runtime: numpy on the host runtimes, PyTorch CUDA
    tensors on CUDA."""

    def __init__(self, runtime):
        self.runtime = runtime
        self.torch = None
        if runtime.name == "cuda":
            import torch
            self.torch = torch

    def put(self, a, dtype=None):
        if self.torch is None:
            return a
        t = self.torch
        if dtype == "bf16":
            return t.from_numpy(a.view(np.int16).copy()).view(
                t.bfloat16).cuda(self.runtime.device)
        return t.from_numpy(np.ascontiguousarray(a)).cuda(self.runtime.device)

    def get(self, a):
        if self.torch is None:
            return np.asarray(a)
        t = self.torch
        t.cuda.synchronize()
        if a.dtype == t.bfloat16:
            return a.view(t.int16).cpu().numpy().view(np.uint16)
        return a.cpu().numpy()


def run(runtime, x, w, group_size=64, dtype="bf16"):
    """(y, w_q, scales, biases) as host arrays: ``w`` quantized and ``x @
    w_hat.T`` on ``runtime``."""
    dev = Device(runtime)
    with enigma.use_runtime(runtime):
        w_q, scales, biases = enigma.quantize(dev.put(w, dtype), group_size)
        y = enigma.quantized_matmul(dev.put(x, dtype), w_q, scales, biases,
                                    group_size=group_size)
    return dev.get(y), dev.get(w_q), dev.get(scales), dev.get(biases)


def runtime_named(name):
    if name == "cpu":
        return enigma.CpuRuntime()
    if name == "metal-host":
        return enigma.MetalHostRuntime()
    if name == "cuda":
        return enigma.CudaRuntime()
    raise ValueError(f"unknown runtime {name!r}")


def main(m=3, n=100, k=256, group_size=64, dtype="bf16", runtime=None):
    rng = np.random.default_rng()
    rt = runtime_named(runtime) if isinstance(runtime, str) else \
        (runtime or enigma.CpuRuntime())
    w = encode(rng.standard_normal((n, k)), dtype)
    x = encode(rng.standard_normal((m, k)), dtype)
    y, w_q, scales, biases = run(rt, x, w, group_size, dtype)
    config = enigma.quantized.default_config(
        m, {"cuda": "cuda"}.get(rt.name, "cpu"), dtype=dtype)
    print(f"runtime: {type(rt).__name__}, {m} x {n} x {k}, {dtype}, groups "
          f"of {group_size}, {config}")
    err = check_output(y, x, w_q, scales, biases, group_size, dtype)
    print(f"max |error| {err:.3g} ({TOLERANCE_NOTE})")
    print("pass")
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="4-bit quantized matmul y = x @ w_hat.T (MLX's format), "
                    "checked against numpy (float64).")
    for name, default in (("M", 3), ("N", 100), ("K", 256)):
        parser.add_argument(name.lower(), metavar=name, type=int, nargs="?",
                            default=default, help=f"{name} (default "
                            f"{default})")
    parser.add_argument("--group-size", type=int, default=64,
                        choices=(32, 64, 128))
    parser.add_argument("--dtype", default="bf16",
                        choices=("bf16", "f16", "f32"))
    parser.add_argument("--runtime", default="cpu",
                        choices=("cpu", "metal-host", "cuda"))
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    sys.exit(main(args.m, args.n, args.k, args.group_size, args.dtype,
                  args.runtime))
