"""Thread/value layouts for the TV-layout add (examples/python/tv_add.py)
against the vec_width=4 vector add on one CUDA GPU.

    python3 bench/tv_add_variants.py [--log2n 28] [--rounds 7]

Every variant and the vec_width=4 kernel run on the same torch tensors
(zero-copy); the timings are interleaved round by round so that clock and
thermal drift hit all of them alike, and each variant is reported as the
median over rounds of (vec_width=4 time / variant time): 1.0 means the
same bandwidth.
"""

import argparse
import os
import sys

import numpy as np

import enigma

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_cuda_common import (enigma_time, load_example,  # noqa: E402
                               vector_add)

# (threads per tile, values per thread), both (rows, columns) row-major.
VARIANTS = [
    ((4, 32), (4, 4)),
    ((8, 32), (1, 4)),
    ((4, 64), (1, 4)),
    ((2, 128), (1, 4)),
    ((1, 256), (1, 4)),
    ((1, 128), (1, 4)),
    ((8, 32), (2, 4)),
    ((4, 32), (2, 4)),
    ((2, 64), (2, 4)),
    ((1, 256), (2, 4)),
    ((2, 128), (2, 4)),
]


def compile_variant(threads, values, side):
    module = load_example("tv_add")  # a fresh module per variant
    module.THREADS, module.VALUES = threads, values
    return module.compile_for(side, side)


def main():
    import torch
    parser = argparse.ArgumentParser()
    parser.add_argument("--log2n", type=int, default=28)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    rt = enigma.CudaRuntime()
    side = 1 << (args.log2n // 2)
    n = side * side
    gen = torch.Generator(device="cuda").manual_seed(3)
    ta = torch.randn(n, device="cuda", generator=gen)
    tb = torch.randn(n, device="cuda", generator=gen)
    tc = torch.empty_like(ta)
    ref = ta + tb

    runs = {"vec_width=4": (rt.prepare(enigma.compile(vector_add, vec_width=4),
                                       [ta, tb], outputs=[tc]),
                            ((n // 4, 1, 1), (256, 1, 1)))}
    for threads, values in VARIANTS:
        compiled = compile_variant(threads, values, side)
        runs[f"thr {threads} val {values}"] = (
            rt.prepare(compiled, [ta, tb], outputs=[tc]),
            enigma.dispatch_shape(compiled))
    for name, (prepared, (grid, block)) in runs.items():
        tc.fill_(float("nan"))
        prepared.dispatch(grid, block)
        torch.cuda.synchronize()
        assert torch.equal(tc, ref), f"{name}: wrong result"

    times = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, (prepared, (grid, block)) in runs.items():
            times[name].append(enigma_time(prepared, grid, block, args.repeat))
    base = np.array(times["vec_width=4"])
    nbytes = 3 * 4 * n
    print(f"\n{torch.cuda.get_device_name()}, {side}x{side} f32, "
          f"{args.rounds} rounds x {args.repeat} launches\n")
    print("| layout | median time | GB/s | vec_width=4 time / this (median, min-max) |")
    print("|---|---|---|---|")
    for name, samples in times.items():
        t = np.array(samples)
        ratio = base / t
        print(f"| {name} | {np.median(t):.1f} us | {nbytes / np.median(t) / 1e3:.0f} "
              f"| {np.median(ratio):.3f} ({ratio.min():.3f}-{ratio.max():.3f}) |")
    for prepared, _ in runs.values():
        prepared.release()


if __name__ == "__main__":
    main()
