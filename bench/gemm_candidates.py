"""Times a few bf16 GEMM configurations per shape against cuBLAS, each
checked first, in one process (a quick look at what the built-in choice
could take instead on small-M shapes; check_gemm_ws.py --autotune is the
full sweep):

    python3 bench/gemm_candidates.py 128,4096,4096 16,6144,4096
    python3 bench/gemm_candidates.py --deep 16,6144,4096   # ring depths

`--deep` times the narrow blocks at ring depths 8 and up (as deep as
227 KiB of stages allows: 13 of 64 x 64, 9 of 64 x 128 or 128 x 64),
whole and split in two, instead of the stream-K comparison.
"""

import importlib.util
import os
import sys

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "python"))


def _gemm_ws_worker():
    """bench/gemm_ws_worker.py (check_gemm_ws.py's Gemm and timing)."""
    spec = importlib.util.spec_from_file_location(
        "gemm_ws_worker", os.path.join(REPO, "bench", "gemm_ws_worker.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def deep_candidates(enigma, m, n, k, sms):
    ws = dict(warp_specialized=True)
    yield "heuristic", enigma.gemm_config_for(m, n, k, "bf16", sms)
    for block, depths in (((64, 64, 64, 4, 1), (8, 12, 13)),
                          ((64, 128, 64, 4, 1), (8, 9)),
                          ((128, 64, 64, 8, 1), (8, 9))):
        for stages in depths:
            shape = block + (stages,)
            yield f"whole {shape}", enigma.MmaConfig(*shape, **ws)
            yield f"split 2 {shape}", enigma.MmaConfig(*shape, split_k=2,
                                                       **ws)


def candidates(enigma, m, n, k, sms):
    ws = dict(warp_specialized=True)
    yield "heuristic", enigma.gemm_config_for(m, n, k, "bf16", sms)
    for shape in ((64, 64, 64, 4, 1, 8), (64, 128, 64, 4, 1, 8),
                  (128, 64, 64, 8, 1, 8), (128, 128, 64, 8, 1, 6)):
        yield f"whole {shape}", enigma.MmaConfig(*shape, **ws)
        for split in (2, 4):
            yield f"split {split} {shape}", enigma.MmaConfig(
                *shape, split_k=split, **ws)
        yield f"stream-K {shape}", enigma.MmaConfig(
            *shape, persistent=True, stream_k=sms, **ws)


def main():
    import torch
    import enigma
    cg = _gemm_ws_worker()
    rt = enigma.CudaRuntime()
    gen = torch.Generator(device="cuda").manual_seed(5)
    args = sys.argv[1:]
    listed = deep_candidates if "--deep" in args else candidates
    for text in (a for a in args if a != "--deep"):
        m, n, k = (int(v) for v in text.split(","))
        for name, config in listed(enigma, m, n, k, rt.multiprocessors):
            try:
                r = cg._time_shape(cg.Gemm(rt, "bf16", False, config),
                                   m, n, k, 3, gen)
            except Exception as e:  # noqa: BLE001 - report and go on
                print(f"{m}x{n}x{k} {name}: failed {str(e)[:150]}",
                      flush=True)
                continue
            ratio = np.array(r["cublas"]) / np.array(r["enigma"])
            print(f"{m}x{n}x{k} {name:34s} {np.median(r['enigma']):8.1f} us "
                  f"cuBLAS {np.median(r['cublas']):8.1f} us ratio "
                  f"{np.median(ratio):.3f} ({ratio.min():.3f}-"
                  f"{ratio.max():.3f})", flush=True)


if __name__ == "__main__":
    main()
