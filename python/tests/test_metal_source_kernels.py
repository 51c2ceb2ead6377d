"""Kernels made from hand-written Metal with the original Enigma's
CompiledKernel constructor (kernel_name, metallib_path, metallib_bytes,
metal_source, ...): CpuRuntime and MetalHostRuntime run their MSL on the
CPU, CudaRuntime refuses them with a DispatchError that says what runs
them. Results against numpy in float64."""

import numpy as np
import pytest

import enigma
from enigma.compiler.compiler import CompiledKernel

SOURCE = """
#include <metal_stdlib>
using namespace metal;

kernel void scaled_sum(device const float* x [[buffer(0)]],
                       device const float* y [[buffer(1)]],
                       constant float& alpha [[buffer(2)]],
                       device float* out [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {
    out[i] = alpha * x[i] + y[i];
}

kernel void row_sums(device const float* m [[buffer(0)]],
                     device float* sums [[buffer(1)]],
                     uint row [[threadgroup_position_in_grid]],
                     uint lane [[thread_index_in_simdgroup]]) {
    float part = 0.0f;
    for (uint c = lane; c < 96; c += 32)
        part += m[row * 96 + c];
    float total = simd_sum(part);
    if (lane == 0)
        sums[row] = total;
}
"""


def test_fields_of_the_original(runtime):
    k = CompiledKernel("scaled_sum", None, None, SOURCE)
    assert k.kernel_name == "scaled_sum"
    assert k.metal_source == SOURCE and k.kernel_source == SOURCE
    assert k.num_params == 4
    assert k.param_names == ["x", "y", "alpha", "out"]
    assert k.scalar_params == [("alpha", 2, "float")]
    assert not k.has_metallib and k.metallib_bytes is None
    assert k.mlir_source is None and k.grid is None
    lib = CompiledKernel(kernel_name="scaled_sum", metallib_path="/x.metallib",
                         metallib_bytes=b"MTLB", metal_source=SOURCE)
    assert lib.has_metallib and lib.metallib_bytes == b"MTLB"


@pytest.mark.parametrize("n", [1, 100, 1000])
def test_runs_its_metal(runtime, rng, n):
    k = CompiledKernel(kernel_name="scaled_sum", metallib_path=None,
                       metallib_bytes=None, metal_source=SOURCE)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    if runtime.name == "cuda":
        with pytest.raises(enigma.DispatchError, match="MetalHostRuntime"):
            runtime.execute(k, [x, y], n * 4, grid=(n, 1, 1),
                            threads=(64, 1, 1), scalars=[1.5])
        return
    raw = runtime.execute(k, [x, y], n * 4, grid=(n, 1, 1),
                          threads=(64, 1, 1), scalars=[1.5])
    expected = 1.5 * x.astype(np.float64) + y
    np.testing.assert_allclose(np.frombuffer(raw, np.float32), expected,
                               rtol=1e-6, atol=1e-6)


def test_prepared_simdgroup_kernel(runtime, rng):
    if runtime.name == "cuda":
        pytest.skip("Metal source runs on the CPU runtimes")
    rows = 7
    m = rng.standard_normal((rows, 96)).astype(np.float32)
    k = CompiledKernel("row_sums", None, None, SOURCE)
    prepared = runtime.prepare(k, [m.ravel()], rows * 4)
    prepared.dispatch(grid=(rows * 32, 1, 1), threads=(32, 1, 1))
    np.testing.assert_allclose(np.frombuffer(prepared.read_output(), np.float32),
                               m.astype(np.float64).sum(axis=1), rtol=1e-5,
                               atol=1e-5)
    prepared.release()


def test_mistakes_are_named():
    with pytest.raises(TypeError, match="metal_source"):
        CompiledKernel("scaled_sum")
    with pytest.raises(enigma.EnigmaError, match="num_params=3"):
        CompiledKernel("scaled_sum", None, None, SOURCE, num_params=3)
    with pytest.raises(RuntimeError, match="no_such_kernel"):
        CompiledKernel("no_such_kernel", None, None, SOURCE)
