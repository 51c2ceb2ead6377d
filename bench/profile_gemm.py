"""Launches one configuration of examples/python/gemm_bf16.py (or
gemm_f32.py) a few times, for a profiler to look at (its own timing is not
a benchmark):

    ncu --clock-control none --section SpeedOfLight --section Occupancy \\
        --section WarpStateStats -k regex:gemm -c 1 \\
        python3 bench/profile_gemm.py bf16 128 256 64 8 1 3 [side]
"""

import pathlib
import sys

import torch

import enigma

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] /
                       "examples" / "python"))
import gemm_bf16  # noqa: E402
import gemm_f32  # noqa: E402


def main():
    dtype = sys.argv[1] if len(sys.argv) > 1 else "bf16"
    args = [int(x) for x in sys.argv[2:]]
    config = enigma.MmaConfig(*args[:6]) if len(args) >= 6 else \
        enigma.default_gemm_config("cuda", dtype)
    side = args[6] if len(args) > 6 else 4096
    rt = enigma.CudaRuntime()
    tdtype = torch.bfloat16 if dtype == "bf16" else torch.float32
    a = torch.randn(side, side, device="cuda", dtype=tdtype)
    b = torch.randn(side, side, device="cuda", dtype=tdtype)
    c = torch.empty(side, side, device="cuda", dtype=tdtype)
    problem = dict(m=side, n=side, k=side)
    if dtype == "bf16":
        launch = gemm_bf16.tuned(config, **problem)
    else:
        launch = gemm_f32.tuned(config, allow_tf32=False, **problem)
    prepared = launch.prepare(rt, [a, b], outputs=[c])
    for _ in range(3):
        prepared.dispatch(launch.grid, launch.threads)
    torch.cuda.synchronize()
    err = (c.float() - (a.float() @ b.float())).abs().max().item()
    print(f"{config}: max |error| {err:.3g}")
    prepared.release()


if __name__ == "__main__":
    main()
