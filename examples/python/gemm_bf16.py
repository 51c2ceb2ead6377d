"""bfloat16 GEMM ``C = A @ B`` (float accumulation, bfloat16 result) on the
matrix multiply-accumulate family (docs/reference/mma.md).

    python examples/python/gemm_bf16.py [M] [N] [K]

Any M, N, K (edges are masked). Each threadgroup computes a ``bm x bn``
block of C with ``enigma.gemm_block``: a ``stages``-deep pipeline of
``copy_tile`` (cp.async on CUDA) brings ``bm x bk`` tiles of A and ``bk x
bn`` tiles of B into swizzled threadgroup memory, every simdgroup multiplies
its part into a fragment with ``enigma.mma`` (tensor cores on CUDA:
ldmatrix + mma.sync m16n8k16), and the fragments are stored as bfloat16.
Tile shapes come from ``enigma.MmaConfig``; ``tuned`` times the
configurations of ``enigma.gemm_configs`` on the runtime
(``enigma.autotune``).
"""

import argparse
import functools
import sys

import numpy as np

import enigma


def to_bf16(x):
    """float array -> bfloat16 bits (uint16), rounding to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16(bits):
    """bfloat16 bits (uint16) -> float32."""
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(
        np.float32)


# How split-K partials are summed by default: by a second kernel, which
# measured 0-4 us faster than the sum in the kernel (the last threadgroup
# of each block reading all of its partials) on an H200 (docs/benchmarks.md).
SUM_IN_KERNEL = False


def make_kernel(config, sum_in_kernel=SUM_IN_KERNEL):
    """The kernel for one tile configuration. With ``split_k``: the kernel
    of the float partial products, summed by ``compiled_reduce``'s kernel
    (``sum_in_kernel=True``: the kernel taking the float workspace and
    uint counters of ``enigma.split_k_workspace`` after A and B, whose
    last threadgroup per block sums the partials).
    With ``stream_k``: the kernel taking the float workspace and uint
    flags of ``enigma.stream_k_workspace`` after A and B."""
    if config.stream_k or (config.split_k > 1 and sum_in_kernel):
        @enigma.kernel
        def gemm_bf16_workspace(A: enigma.bf16, B: enigma.bf16,
                                W: enigma.f32, F: enigma.u32,
                                M: enigma.Scalar(enigma.u32),
                                N: enigma.Scalar(enigma.u32),
                                K: enigma.Scalar(enigma.u32), C: enigma.bf16):
            enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config,
                              workspace=W, flags=F)
        return gemm_bf16_workspace
    if config.split_k > 1:
        @enigma.kernel
        def gemm_bf16_partials(A: enigma.bf16, B: enigma.bf16,
                               M: enigma.Scalar(enigma.u32),
                               N: enigma.Scalar(enigma.u32),
                               K: enigma.Scalar(enigma.u32), W: enigma.f32):
            enigma.gemm_block(A, B, W, m=M, n=N, k=K, config=config)
        return gemm_bf16_partials

    @enigma.kernel
    def gemm_bf16(A: enigma.bf16, B: enigma.bf16, M: enigma.Scalar(enigma.u32),
                  N: enigma.Scalar(enigma.u32), K: enigma.Scalar(enigma.u32),
                  C: enigma.bf16):
        enigma.gemm_block(A, B, C, m=M, n=N, k=K, config=config)
    return gemm_bf16


@functools.lru_cache(maxsize=None)
def compiled(config, sum_in_kernel=SUM_IN_KERNEL):
    return enigma.compile(make_kernel(config, sum_in_kernel))


@functools.lru_cache(maxsize=None)
def compiled_reduce(splits):
    """The kernel summing ``splits`` float partials into bfloat16, in a
    fixed order (deterministic)."""
    @enigma.kernel
    def gemm_bf16_reduce(W: enigma.f32, M: enigma.Scalar(enigma.u32),
                         N: enigma.Scalar(enigma.u32), C: enigma.bf16):
        enigma.gemm_split_k_reduce(W, C, m=M, n=N, splits=splits)
    return enigma.compile(gemm_bf16_reduce)


def processors_of(rt):
    """The multiprocessors of a CUDA runtime (persistent launches), else
    None (one threadgroup per block)."""
    return getattr(rt, "multiprocessors", None) or None


def target_of(rt):
    return {"cuda": "cuda", "metal": "metal"}.get(rt.name, "cpu")


def config_for(rt, m=None, n=None, k=None):
    """The built-in choice for an m x n x k product on ``rt``
    (``enigma.gemm_config_for``), or the default without a shape."""
    if m is None:
        return enigma.default_gemm_config(target_of(rt), "bf16")
    return enigma.gemm_config_for(m, n, k, "bf16", processors_of(rt),
                                  target_of(rt))


@enigma.autotune(configs=enigma.gemm_configs("cuda", "bf16"),
                 key=["m", "n", "k"])
def tuned(config, m, n, k):
    """The Launch of one configuration for an m x n x k product."""
    return enigma.Launch(compiled(config), *config.launch(m, n),
                         scalars=[m, n, k],
                         output_bytes=m * n * 2)


def _shapes(a, b):
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    if 0 in (m, n, k):
        raise ValueError(f"empty product {a.shape} @ {b.shape}")
    return m, n, k


def run(rt, a, b, config=None, processors=None,
        sum_in_kernel=SUM_IN_KERNEL):
    """C = A @ B for bfloat16 bit arrays (uint16, see to_bf16); returns the
    bfloat16 bits of the (M, N) result. ``processors``: the threadgroups of
    a persistent configuration (default: the GPU's multiprocessors).
    ``sum_in_kernel``: a split-K configuration's partials are summed in
    its kernel (``enigma.split_k_workspace``), not by a second kernel."""
    a, b = np.ascontiguousarray(a, np.uint16), np.ascontiguousarray(b, np.uint16)
    m, n, k = _shapes(a, b)
    config = config or config_for(rt, m, n, k)
    grid, threads = config.launch(m, n, processors or processors_of(rt))
    if config.stream_k or (config.split_k > 1 and sum_in_kernel):
        # A float workspace of partials and zeroed uint flags/counters.
        floats, flags = enigma.stream_k_workspace(config) if \
            config.stream_k else enigma.split_k_workspace(config, m, n)
        raw = rt.execute(compiled(config, True),
                         [a, b, np.zeros(floats, np.float32),
                          np.zeros(flags, np.uint32)],
                         output_size=m * n * 2, grid=grid, threads=threads,
                         scalars=[m, n, k])
    elif config.split_k > 1:   # float partials, then their fixed-order sum
        partials = rt.execute(compiled(config, False), [a, b],
                              output_size=config.split_k * m * n * 4,
                              grid=grid, threads=threads, scalars=[m, n, k])
        w = np.frombuffer(partials, np.float32)
        grid, threads = enigma.split_k_reduce_launch(m, n)
        raw = rt.execute(compiled_reduce(config.split_k), [w],
                         output_size=m * n * 2, grid=grid, threads=threads,
                         scalars=[m, n])
    else:
        raw = rt.execute(compiled(config), [a, b], output_size=m * n * 2,
                         grid=grid, threads=threads, scalars=[m, n, k])
    return np.frombuffer(raw, np.uint16).reshape(m, n).copy()


def reference(a, b):
    """A @ B in float64 from the bfloat16 inputs."""
    return from_bf16(a).astype(np.float64) @ from_bf16(b).astype(np.float64)


def check_output(c, a, b):
    """Every element within float accumulation error plus the final
    rounding to bfloat16: |c - ab| <= 2^-8 |ab| + 2 K 2^-24 (|a| @ |b|)."""
    fa = from_bf16(a).astype(np.float64)
    fb = from_bf16(b).astype(np.float64)
    want = fa @ fb
    got = from_bf16(c).astype(np.float64).reshape(want.shape)
    bound = 2.0**-8 * np.abs(want) + 2 * fa.shape[1] * 2.0**-24 * (
        np.abs(fa) @ np.abs(fb)) + 1e-30
    err = np.abs(got - want)
    bad = ~(err <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements out of "
                           f"tolerance, worst error {float(np.nanmax(err))}")


def run_prepared(rt, x, config=None):
    """(prepared, grid, threads, check) for ``x = (A bits, B bits)``."""
    a, b = (np.ascontiguousarray(v, np.uint16) for v in x)
    m, n, k = _shapes(a, b)
    config = config or config_for(rt)
    grid, threads = config.launch(m, n)
    prepared = rt.prepare(compiled(config), [a, b], m * n * 2,
                          scalars=[m, n, k])

    def check(out):
        check_output(np.frombuffer(out, np.uint16).reshape(m, n), a, b)

    return prepared, grid, threads, check


def main(m: int = 200, n: int = 136, k: int = 96) -> int:
    rng = np.random.default_rng()
    a = to_bf16(rng.standard_normal((m, k)))
    b = to_bf16(rng.standard_normal((k, n)))
    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}, {config_for(rt, m, n, k)}")
    check_output(run(rt, a, b), a, b)
    print("pass")
    return 0


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="bfloat16 GEMM C = A @ B on the best available runtime, "
                    "checked against numpy (float64).")
    for name, default in (("M", 200), ("N", 136), ("K", 96)):
        parser.add_argument(name.lower(), metavar=name, type=int,
                            nargs="?", default=default,
                            help=f"{name} (default {default})")
    return parser.parse_args(argv)


if __name__ == "__main__":
    args = parse_args(sys.argv[1:])
    sys.exit(main(args.m, args.n, args.k))
