"""The Tensor / @enigma.jit examples (examples/python/tv_add.py and
tv_rmsnorm.py) on every backend under test, against float64 numpy, with
fresh random inputs; plus a check that they really use vector accesses.

Tolerances are in each example's check_output: tv_add is exact (one f32
addition per element), tv_rmsnorm rtol 2e-5 (a reordered positive sum)."""

import numpy as np
import pytest

from conftest import load_example


@pytest.mark.parametrize("shape", [(4, 256), (256, 512), (44, 768)])
def test_tv_add(runtime, rng, shape):
    ex = load_example("tv_add")
    a = rng.standard_normal(shape).astype(np.float32)
    b = rng.standard_normal(shape).astype(np.float32)
    ex.check_output(ex.run(runtime, a, b), a, b)


def test_tv_add_launch_and_vector_loads():
    ex = load_example("tv_add")
    compiled = ex.compile_for(256, 512)
    # 256 x 512 in 4 x 256 tiles: 128 threadgroups of 256 threads (the
    # grid counts threads).
    assert compiled.grid == (128 * 256, 1, 1)
    assert compiled.block == (256, 1, 1)
    # Each thread: one float4 load from A, one from B, one float4 store to C.
    assert compiled.metal_source.count("*(device float4*)") == 3
    assert compiled.cuda_source.count("*(float4*)") == 3
    assert compiled.cpp_source.count("enigma_vector_load<float4>") == 2
    assert compiled.cpp_source.count("enigma_vector_store(") == 1


def test_tv_add_rejects_partial_tiles():
    ex = load_example("tv_add")
    with pytest.raises(ValueError, match="rows % 4"):
        ex.compile_for(6, 256)


@pytest.mark.parametrize("shape", [(1, 512), (7, 1024), (3, 2048)])
def test_tv_rmsnorm(runtime, rng, shape):
    ex = load_example("tv_rmsnorm")
    x = rng.standard_normal(shape).astype(np.float32)
    ex.check_output(ex.run(runtime, x), x)


def test_tv_rmsnorm_scaled_rows(runtime, rng):
    ex = load_example("tv_rmsnorm")
    x = rng.standard_normal((4, 512)).astype(np.float32)
    x *= np.array([1e-3, 1, 1e2, 1e4], np.float32)[:, None]
    ex.check_output(ex.run(runtime, x), x)


def test_tv_rmsnorm_uses_float4():
    ex = load_example("tv_rmsnorm")
    compiled = ex.compile_for(4, 1024)
    assert compiled.grid == (4 * 128, 1, 1) and compiled.block == (128, 1, 1)
    # One float4 load in pass 1; one load and one store in pass 2.
    assert compiled.metal_source.count("*(device float4*)") == 3


@pytest.mark.parametrize("name,args", [("tv_add", (32, 256)),
                                       ("tv_rmsnorm", (5, 512))])
def test_example_main(name, args, capsys):
    assert load_example(name).main(*args) == 0
    assert capsys.readouterr().out.rstrip().endswith("pass")
