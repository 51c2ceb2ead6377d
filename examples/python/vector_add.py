"""The first program of docs/reference/core.md as a runnable script.

    python examples/python/vector_add.py [n]

Compiles the kernel (trace -> enigma MLIR -> Metal Shading Language, and
the CUDA / host C++ flavours), runs it on the best runtime available here
(Metal on macOS, else CUDA on an NVIDIA GPU, else the CPU), checks the result
against numpy and prints "pass".
"""

import sys

import numpy as np

import enigma


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


def main(n: int = 1_000_003) -> int:
    rng = np.random.default_rng()
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)

    compiled = enigma.compile(vector_add)
    print(f"kernel: {compiled.kernel_name}")
    print(compiled.metal_source)

    rt = enigma.best_runtime()
    print(f"runtime: {type(rt).__name__}")
    raw = rt.execute(compiled, inputs=[a, b], output_size=n * 4,
                     grid=(n, 1, 1), threads=(256, 1, 1))
    out = np.frombuffer(raw, dtype=np.float32)

    if out.shape == a.shape and np.array_equal(out, a + b):
        print("pass")
        return 0
    bad = np.flatnonzero(out != a + b)
    print(f"FAIL: {bad.size} of {n} elements differ, first at {bad[:5]}")
    return 1


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_003))
