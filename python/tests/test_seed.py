"""The first program of docs/reference/core.md, run as written (CpuRuntime
stands in for MetalRuntime on Linux), and the CompiledKernel surface."""

import os
import shutil
import sys

import numpy as np
import pytest

import enigma

no_xcrun = pytest.mark.skipif(shutil.which("xcrun") is not None,
                              reason="checks the behaviour without xcrun")


@pytest.fixture(autouse=True)
def in_tmp_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ENIGMA_EMIT_ONLY", raising=False)
    return tmp_path


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


# --------------------------------------------------------------------------
# The page itself
# --------------------------------------------------------------------------

@pytest.mark.parametrize("n", [1, 255, 257, 2**20])
def test_seed_page_verbatim(runtime, rng, capsys, n, in_tmp_dir):
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)

    compiled = enigma.compile(vector_add)
    assert compiled.kernel_name == "enigma_kernel_vector_add"
    assert "enigma_kernel_vector_add" in compiled.metal_source
    compiled = enigma.compile(vector_add, dump_ir=True, dump_mlir=True,
                              keep_metal_source=True,
                              work_dir="./build/enigma")
    if sys.platform != "darwin":
        with pytest.raises(RuntimeError):
            enigma.MetalRuntime()
    rt = runtime  # enigma.MetalRuntime() on macOS
    raw = rt.execute(compiled, inputs=[a, b], output_size=n * 4,
                     grid=(n, 1, 1), threads=(256, 1, 1))   # -> bytes
    assert isinstance(raw, bytes)
    out = np.frombuffer(raw, dtype=np.float32)

    np.testing.assert_array_equal(out, a + b)
    printed = capsys.readouterr().out
    assert "enigma.kernel @vector_add" in printed
    assert (in_tmp_dir / "build/enigma/enigma_kernel_vector_add.metal").exists()


def test_seed_with_the_cpu_runtime_named(rng):
    n = 1000
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(vector_add)
    rt = enigma.CpuRuntime()
    raw = rt.execute(compiled, inputs=[a, b], output_size=(n + 24) * 4,
                     grid=(n, 1, 1), threads=(256, 1, 1))
    out = np.frombuffer(raw, dtype=np.float32)
    np.testing.assert_array_equal(out[:n], a + b)
    assert not out[n:].any()  # past the grid: untouched, so still zero


@pytest.mark.skipif(sys.platform == "darwin", reason="Metal exists on macOS")
def test_metal_runtime_raises_naming_the_working_runtimes():
    with pytest.raises(RuntimeError) as info:
        enigma.MetalRuntime()
    assert isinstance(info.value, enigma.BackendUnavailableError)
    msg = str(info.value)
    assert "CpuRuntime" in msg and "CudaRuntime" in msg
    assert "Metal" in msg and sys.platform in msg


@pytest.mark.skipif(sys.platform == "darwin", reason="Metal exists on macOS")
def test_best_runtime_is_not_metal_here():
    rt = enigma.best_runtime()
    assert isinstance(rt, (enigma.CpuRuntime, enigma.CudaRuntime))


# --------------------------------------------------------------------------
# CompiledKernel
# --------------------------------------------------------------------------

def test_kernel_name_follows_the_python_name():
    @enigma.kernel
    def my_Kernel_2(X: enigma.u8):
        X[0] = 1

    compiled = enigma.compile(my_Kernel_2)
    assert compiled.kernel_name == "enigma_kernel_my_Kernel_2"
    assert "kernel void enigma_kernel_my_Kernel_2(" in compiled.metal_source


def test_metal_source_content():
    msl = enigma.compile(vector_add).metal_source
    assert msl.startswith("#include <metal_stdlib>")
    assert "using namespace metal;" in msl
    assert "kernel void enigma_kernel_vector_add(" in msl
    for i, name in enumerate("ABC"):
        assert f"device float* {name} [[buffer({i})]]" in msl
    assert "[[thread_position_in_grid]]" in msl
    assert msl.count("[[buffer(") == 3


def test_buffer_slots_follow_declaration_order_with_scalars():
    @enigma.kernel
    def k(X: enigma.i16, n: enigma.Scalar(enigma.u32), Y: enigma.bf16,
          h: enigma.Scalar(enigma.f16), Z: enigma.b1):
        Z[0] = X[0] < 0

    compiled = enigma.compile(k)
    msl = compiled.metal_source
    assert "device short* X [[buffer(0)]]" in msl
    assert "[[buffer(1)]]" in msl and " n " in msl
    assert "device bfloat* Y [[buffer(2)]]" in msl
    assert "[[buffer(3)]]" in msl
    assert "device bool* Z [[buffer(4)]]" in msl
    assert [(p.name, p.kind, p.dtype.name) for p in compiled.params] == [
        ("X", "buffer", "i16"), ("n", "scalar", "u32"),
        ("Y", "buffer", "bf16"), ("h", "scalar", "f16"),
        ("Z", "buffer", "b1")]


def test_kernel_source_is_an_alias():
    compiled = enigma.compile(vector_add)
    assert compiled.kernel_source == compiled.metal_source


def test_mlir_source():
    mlir = enigma.compile(vector_add).mlir_source
    assert "enigma.kernel @vector_add" in mlir
    assert "enigma.thread_position_in_grid" in mlir
    assert "arith.addf" in mlir
    assert "#enigma.address_space<device>" in mlir


def test_dump_ir_and_dump_mlir_print(capsys):
    enigma.compile(vector_add)
    assert capsys.readouterr().out == ""
    enigma.compile(vector_add, dump_ir=True)
    printed = capsys.readouterr().out
    assert "traced IR of enigma_kernel_vector_add" in printed
    assert "MLIR of" not in printed
    compiled = enigma.compile(vector_add, dump_mlir=True)
    printed = capsys.readouterr().out
    assert "MLIR of enigma_kernel_vector_add" in printed
    assert compiled.mlir_source.strip() in printed
    assert "traced IR" not in printed


@no_xcrun
def test_work_dir_receives_metal_and_mlir(in_tmp_dir):
    work = in_tmp_dir / "deep" / "work"
    compiled = enigma.compile(vector_add, work_dir=str(work))
    assert sorted(os.listdir(work)) == ["enigma_kernel_vector_add.metal",
                                        "enigma_kernel_vector_add.mlir"]
    assert (work / "enigma_kernel_vector_add.metal").read_text() == \
        compiled.metal_source
    assert (work / "enigma_kernel_vector_add.mlir").read_text() == \
        compiled.mlir_source


@no_xcrun
def test_no_files_without_work_dir(in_tmp_dir):
    enigma.compile(vector_add, keep_metal_source=True)
    assert os.listdir(in_tmp_dir) == []


def test_export_metal(in_tmp_dir):
    compiled = enigma.compile(vector_add)
    path = compiled.export_metal()
    assert path == str(in_tmp_dir / "enigma_kernel_vector_add.metal")
    assert open(path).read() == compiled.metal_source
    target = in_tmp_dir / "out.metal"
    assert compiled.export_metal(str(target)) == str(target)
    assert target.read_text() == compiled.metal_source


@no_xcrun
def test_no_metallib_without_xcrun():
    compiled = enigma.compile(vector_add)
    assert compiled.has_metallib is False
    assert compiled.metallib_bytes is None
    assert compiled.metallib_path is None


@no_xcrun
@pytest.mark.parametrize("emit_only", [None, True, False])
def test_emit_only_compiles_the_same_sources(emit_only):
    compiled = enigma.compile(vector_add, emit_only=emit_only)
    assert compiled.metal_source == enigma.compile(vector_add).metal_source
    assert not compiled.has_metallib


@no_xcrun
@pytest.mark.parametrize("value", ["1", "0", ""])
def test_emit_only_environment(monkeypatch, value):
    monkeypatch.setenv("ENIGMA_EMIT_ONLY", value)
    compiled = enigma.compile(vector_add)
    assert compiled.kernel_name == "enigma_kernel_vector_add"
    assert not compiled.has_metallib


def test_repr_shows_the_parameters():
    text = repr(enigma.compile(vector_add))
    assert "enigma_kernel_vector_add" in text and "A" in text and "f32" in text
    assert "vector_add" in repr(vector_add)


def test_compiled_kernel_runs_on_every_backend_identically(runtime, rng):
    n = 4097
    a = rng.standard_normal(n).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    compiled = enigma.compile(vector_add)
    for threads in [(1, 1, 1), (32, 1, 1), (1024, 1, 1), (100, 1, 1)]:
        out = np.frombuffer(runtime.execute(compiled, [a, b],
                                            output_size=n * 4, grid=n,
                                            threads=threads), np.float32)
        np.testing.assert_array_equal(out, a + b)
