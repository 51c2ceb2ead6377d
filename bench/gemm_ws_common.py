"""What bench/check_gemm_ws.py's driver and workers share: the shapes
checked and timed, the warp-specialised configurations (numbered by
their position) and their labels, and the examples' loader."""

import os


HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


CHECK_SHAPES = [(1, 77, 129), (1, 4096, 4096), (127, 255, 200),
                (200, 513, 1000), (256, 256, 64)]
SQUARE = [(4096, 4096, 4096), (8192, 8192, 8192)]
LLAMA_NK = [(6144, 4096), (4096, 4096), (28672, 4096), (4096, 14336),
            (10240, 8192), (8192, 8192), (57344, 8192), (8192, 28672)]
LLAMA = [(m, n, k) for (n, k) in LLAMA_NK for m in (16, 128, 4096)]
# Shapes where enigma.gemm_config_for splits K (2 and 4 ways) or picks
# 64-row persistent blocks.
HEURISTIC_CHECK_SHAPES = [(16, 4096, 14336), (128, 4096, 4096),
                          (16, 6144, 4096), (7, 28672, 300),
                          (16, 10240, 8192), (128, 28672, 4096)]


def configs():
    """[(label, dtype, allow_tf32, config)] of every warp-specialised
    configuration, numbered by their position."""
    import enigma
    out = []
    for c in enigma.gemm_configs("cuda", "bf16", warp_specialized=True):
        out.append(("bf16", False, c))
    for tf32 in (True, False):
        for c in enigma.gemm_configs("cuda", "f32", tf32,
                                     warp_specialized=True):
            out.append(("f32", tf32, c))
    # TF32 warpgroup products (wgmma): B stored n x k, both tiles K-major.
    for c in enigma.tf32_gemm_configs():
        out.append(("f32t", True, c))
    # The same with B stored k x n, copied transposed into the stages.
    for c in enigma.tf32_gemm_configs(b_transposed=False):
        out.append(("f32tk", True, c))
    return out


def label(dtype, tf32, config):
    kind = {"f32t": "tf32-Bnk", "f32tk": "tf32-Bkn"}.get(
        dtype, "tf32" if tf32 and dtype == "f32" else dtype)
    c = config
    extra = "".join([" persistent" if c.persistent else "",
                     f" cluster={c.cluster}" if c.cluster > 1 else "",
                     f" split_k={c.split_k}" if c.split_k > 1 else "",
                     f" stream_k={c.stream_k}" if c.stream_k else ""])
    return f"{kind} {c.bm}x{c.bn}x{c.bk} {c.wm}x{c.wn} s{c.stages}{extra}"


def _example(name):
    import importlib.util
    spec = importlib.util.spec_from_file_location(
        name, os.path.join(REPO, "examples", "python", name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
