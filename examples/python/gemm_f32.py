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
producer warpgroup copies B transposed; ``run_swapped``, which computes
C^T = B^T A^T so that B's rows reach the products through registers; or
``run_transposed``, which transposes B with a kernel of its own first),
which truncates the
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


def make_swapped_kernel(config):
    """TF32 ``C = A @ B`` for B stored k x n, computed as ``C^T = B^T
    A^T``: B is the product's first operand stored k x m (``a_transposed``;
    TF32 wgmma reads it from registers, each simdgroup loading its rows
    from the stage), A its second stored n x k (``b_transposed``, what the
    TMA copies as it is), and C is stored transposed (``c_transposed``).
    No second pass over B, unlike :func:`run_transposed`. Launch
    ``config.launch(N, M)``."""
    @enigma.kernel
    def gemm_f32_swapped(A: enigma.f32, B: enigma.f32,
                         M: enigma.Scalar(enigma.u32),
                         N: enigma.Scalar(enigma.u32),
                         K: enigma.Scalar(enigma.u32), C: enigma.f32):
        enigma.gemm_block(B, A, C, m=N, n=M, k=K, config=config,
                          allow_tf32=True, a_transposed=True,
                          b_transposed=True, c_transposed=True)
    return gemm_f32_swapped


@functools.lru_cache(maxsize=None)
def compiled_swapped(config):
    return enigma.compile(make_swapped_kernel(config))


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


@enigma.autotune(configs=enigma.tf32_gemm_configs(), key=["m", "n", "k"])
def tuned_tf32_nk(config, m, n, k, processors=None):
    """TF32 warpgroup products for B stored n x k (``b_transposed``), the
    layout Hopper's TF32 ``wgmma`` reads from threadgroup memory as it is;
    the second half of :func:`run_transposed`. ``processors``: the GPU's
    multiprocessors, for the persistent configurations."""
    return enigma.Launch(compiled(config, True, True),
                         *config.launch(m, n, processors),
                         scalars=[m, n, k], output_bytes=m * n * 4)


@enigma.autotune(configs=enigma.tf32_gemm_configs(), key=["m", "n", "k"])
def tuned_tf32_swapped(config, m, n, k, processors=None):
    """TF32 for B stored k x n through :func:`make_swapped_kernel` (the
    product's M and N are this problem's N and M)."""
    return enigma.Launch(compiled_swapped(config),
                         *config.launch(n, m, processors),
                         scalars=[m, n, k], output_bytes=m * n * 4)


# The transpose moves 32 x 32 tiles through threadgroup memory: each read
# and each write of a warp covers 128 contiguous bytes of one row.
TILE, TILE_ROWS = 32, 8


@enigma.kernel
def transpose_f32(X: enigma.f32, R: enigma.Scalar(enigma.u32),
                  C: enigma.Scalar(enigma.u32), Y: enigma.f32):
    """Y (C x R) = X (R x C) transposed, one 32 x 32 tile per threadgroup
    of 32 x 8 threads. A row of the tile is padded by one element so that
    the column reads of the second half meet 32 different banks."""
    tile = enigma.threadgroup_alloc("float", TILE * (TILE + 1))
    tx = enigma.thread_position_in_threadgroup("x")
    ty = enigma.thread_position_in_threadgroup("y")
    r0 = enigma.threadgroup_position_in_grid("y") * TILE
    c0 = enigma.threadgroup_position_in_grid("x") * TILE
    for j in enigma.range_constexpr(0, TILE, TILE_ROWS):
        r, c = r0 + ty + j, c0 + tx
        with enigma.if_((r < R) & (c < C)):
            tile[(ty + j) * (TILE + 1) + tx] = X[r * C + c]
    enigma.barrier()
    for j in enigma.range_constexpr(0, TILE, TILE_ROWS):
        c, r = c0 + ty + j, r0 + tx
        with enigma.if_((c < C) & (r < R)):
            Y[c * R + r] = tile[tx * (TILE + 1) + ty + j]


def transpose_launch(rows: int, cols: int) -> enigma.Launch:
    """The Launch of :func:`transpose_f32` for a rows x cols matrix."""
    grid = (-(-cols // TILE) * TILE, -(-rows // TILE) * TILE_ROWS, 1)
    return enigma.Launch(enigma.compile(transpose_f32), grid,
                         (TILE, TILE_ROWS, 1), scalars=[rows, cols],
                         output_bytes=rows * cols * 4)


def _shapes(a, b):
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    (m, k), (k2, n) = a.shape, b.shape
    if k != k2:
        raise ValueError(f"inner dimensions differ: {a.shape} @ {b.shape}")
    if 0 in (m, n, k):
        raise ValueError(f"empty product {a.shape} @ {b.shape}")
    return a, b, m, n, k


def _product(rt, a, b, m, n, k, config, allow_tf32, b_transposed,
             processors=None, swapped=False):
    """The (M, N) float32 product of checked operands (``b`` n x k when
    ``b_transposed``) with one configuration; ``swapped``: by
    :func:`make_swapped_kernel` (its launch is the n x m product's)."""
    processors = processors or getattr(rt, "multiprocessors", None) or None
    grid, threads = config.launch(n, m, processors) if swapped else \
        config.launch(m, n, processors)
    kernel = compiled_swapped(config) if swapped else \
        compiled(config, allow_tf32, b_transposed)
    raw = rt.execute(kernel, [a, b], output_size=m * n * 4, grid=grid,
                     threads=threads, scalars=[m, n, k])
    return np.frombuffer(raw, np.float32).reshape(m, n).copy()


def run(rt, a, b, config=None, allow_tf32=False, processors=None):
    """C = A @ B for 2-D float32 arrays; returns (M, N) float32."""
    a, b, m, n, k = _shapes(a, b)
    return _product(rt, a, b, m, n, k, config or config_for(rt, allow_tf32),
                    allow_tf32, False, processors)


def run_transposed(rt, a, b, config=None):
    """C = A @ B with TF32 for B stored k x n (as ``torch.matmul`` takes
    it): B is first transposed into an n x k array (one read and one write
    of B) so that the product reads both operands K-major, which TF32
    ``wgmma`` needs. On Hopper this costs less than copying B transposed
    inside the product (docs/design/tf32.md). ``config`` defaults to the
    first of ``enigma.tf32_gemm_configs()`` on CUDA, the runtime's default
    elsewhere (whose 32 KiB on Metal those tiles exceed); returns (M, N)
    float32."""
    a, b, m, n, k = _shapes(a, b)
    if config is None:
        config = enigma.tf32_gemm_configs()[0] if rt.name == "cuda" else \
            config_for(rt, True)
    t = transpose_launch(k, n)
    bt = np.frombuffer(rt.execute(t.compiled, [b], output_size=k * n * 4,
                                  grid=t.grid, threads=t.threads,
                                  scalars=t.scalars), np.float32)
    return _product(rt, a, bt, m, n, k, config, True, True)


def run_swapped(rt, a, b, config=None, processors=None):
    """C = A @ B with TF32 for B stored k x n, as ``C^T = B^T A^T``
    (:func:`make_swapped_kernel`). ``config`` defaults to the first of
    ``enigma.tf32_gemm_configs()`` on CUDA, a 32 KiB warpgroup shape
    elsewhere; returns (M, N) float32."""
    a, b, m, n, k = _shapes(a, b)
    if config is None:
        config = enigma.tf32_gemm_configs()[0] if rt.name == "cuda" else \
            enigma.MmaConfig(64, 64, 32, 4, 1, 2, group_m=2,
                             warp_specialized=True)
    return _product(rt, a, b, m, n, k, config, True, False, processors,
                    swapped=True)


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
