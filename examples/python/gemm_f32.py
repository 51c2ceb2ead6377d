"""float32 GEMM ``C = A @ B`` on the matrix multiply-accumulate family
(docs/reference/mma.md), in full fp32 by default.

    python examples/python/gemm_f32.py [M] [N] [K] [--tf32]

Any M, N, K (edges are masked). The same threadgroup GEMM as
gemm_bf16.py (``enigma.gemm_block``) with float tiles: on CUDA each
simdgroup accumulates its fragment with FMA in registers (every element's
sum stays fp32, like ``torch.matmul`` with TF32 off); with ``--tf32``
(``allow_tf32=True``, as ``torch.backends.cuda.matmul.allow_tf32``) the
product runs on TF32 tensor cores (mma.sync m16n8k8; wgmma on Hopper
with ``enigma.tf32_gemm_configs()`` for B stored n x k, or
``tf32_gemm_configs(b_transposed=False)`` for B stored k x n, whose
producer warpgroup copies B transposed), which truncates the
operands to 10 bits of mantissa, with tiles of its own (``tuned_tf32``
times ``enigma.gemm_configs("cuda", "f32", allow_tf32=True)``). The CPU
and Metal truncate the operands the same way.
"""

import argparse
import functools
import sys

import numpy as np

import enigma


def make_kernel(config, allow_tf32=False, b_transposed=False):
    """The kernel for one tile configuration (``b_transposed``: B stored
    n x k, which TF32 warpgroup products read directly; a k x n B takes
    the warp-specialised configurations' transposing copy)."""
    @enigma.kernel
    def gemm_f32(A: enigma.f32, B: enigma.f32, M: enigma.Scalar(enigma.u32),
                 N: enigma.Scalar(enigma.u32), K: enigma.Scalar(enigma.u32),
                 C: enigma.f32):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                          allow_tf32=allow_tf32, b_transposed=b_transposed)
    return gemm_f32


@functools.lru_cache(maxsize=None)
def compiled(config, allow_tf32=False, b_transposed=False):
    return enigma.compile(make_kernel(config, allow_tf32, b_transposed))


def config_for(rt, allow_tf32=False):
    target = {"cuda": "cuda", "metal": "metal"}.get(rt.name, "cpu")
    return enigma.default_gemm_config(target, "f32", allow_tf32)


@enigma.autotune(configs=enigma.gemm_configs("cuda", "f32"),
                 key=["m", "n", "k", "allow_tf32"])
def tuned(config, m, n, k, allow_tf32=False):
    """The Launch of one configuration for an m x n x k product."""
    return enigma.Launch(compiled(config, allow_tf32), *config.launch(m, n),
                         scalars=[m, n, k],
                         output_bytes=m * n * 4)


@enigma.autotune(configs=enigma.gemm_configs("cuda", "f32", allow_tf32=True),
                 key=["m", "n", "k"])
def tuned_tf32(config, m, n, k):
    """``tuned`` with TF32 tensor cores, over their own tiles."""
    return tuned.fn(config, m, n, k, allow_tf32=True)


def _shapes(a, b):
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    if 0 in (m, n, k):
        raise ValueError(f"empty product {a.shape} @ {b.shape}")
    return a, b, m, n, k


def run(rt, a, b, config=None, allow_tf32=False, processors=None):
    """C = A @ B for 2-D float32 arrays; returns (M, N) float32."""
    a, b, m, n, k = _shapes(a, b)
    config = config or config_for(rt, allow_tf32)
    processors = processors or getattr(rt, "multiprocessors", None) or None
    grid, threads = config.launch(m, n, processors)
    raw = rt.execute(compiled(config, allow_tf32), [a, b],
                     output_size=m * n * 4, grid=grid, threads=threads,
                     scalars=[m, n, k])
    return np.frombuffer(raw, np.float32).reshape(m, n).copy()


def check_output(c, a, b, tf32=False):
    """Element by element: fp32 accumulation error |c - ab| <= 2 K 2^-24
    (|a| @ |b|); with TF32 operands truncated to 11 significant bits (each
    within 2^-10 of its value, a product of two within 2^-9), 2^-9
    (|a| @ |b|) more."""
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    want = a @ b
    c = np.asarray(c, np.float64).reshape(want.shape)
    scale = np.abs(a) @ np.abs(b)
    bound = 2 * a.shape[1] * 2.0**-24 * scale + (2.0**-9 * scale if tf32
                                                 else 0) + 1e-30
    err = np.abs(c - want)
    bad = ~(err <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements out of "
                           f"tolerance, worst error {float(np.nanmax(err))}")


def run_prepared(rt, x, config=None, allow_tf32=False):
    """(prepared, grid, threads, check) for ``x = (A, B)``."""
    a, b, m, n, k = _shapes(*x)
    config = config or config_for(rt, allow_tf32)
    grid, threads = config.launch(m, n)
    prepared = rt.prepare(compiled(config, allow_tf32), [a, b], m * n * 4,
                          scalars=[m, n, k])

    def check(out):
        check_output(np.frombuffer(out, np.float32), a, b, allow_tf32)

    return prepared, grid, threads, check


def main(m: int = 200, n: int = 136, k: int = 96, tf32: bool = False) -> int:
    rng = np.random.default_rng()
    a = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal((k, n)).astype(np.float32)
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}, {config_for(rt, tf32)}, tf32={tf32}")
    check_output(run(rt, a, b, allow_tf32=tf32), a, b, tf32)
    print("pass")
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="float32 GEMM C = A @ B on the best available runtime, "
                    "checked against numpy (float64).")
    for name, default in (("M", 200), ("N", 136), ("K", 96)):
        parser.add_argument(name.lower(), metavar=name, type=int,
                            nargs="?", default=default,
                            help=f"{name} (default {default})")
    parser.add_argument("--tf32", action="store_true",
                        help="allow TF32 tensor cores (allow_tf32=True)")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    sys.exit(main(args.m, args.n, args.k, args.tf32))
