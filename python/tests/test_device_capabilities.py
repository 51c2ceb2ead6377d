"""runtime.device_capabilities(): the original Enigma's DeviceCapabilities
fields on every runtime, with the values each backend really has."""

import pytest

import enigma


def test_fields(runtime):
    caps = runtime.device_capabilities()
    assert isinstance(caps, enigma.DeviceCapabilities)
    assert caps.gpu_family == runtime.name
    assert caps.simdgroup_size == 32
    # Metal's 32 KiB; the CPU allows what any target does (227 KiB), CUDA
    # its device's opt-in limit per block.
    if runtime.name == "cpu":
        assert caps.max_threadgroup_memory == 227 * 1024
    elif runtime.name == "cuda":
        assert caps.max_threadgroup_memory >= 48 * 1024
    else:
        assert caps.max_threadgroup_memory == 32768
    assert caps.max_threads_per_threadgroup == 1024
    assert caps.supports_async_copy and caps.supports_simdgroup_matrix
    assert caps.is_m3_or_newer  # a property, as in the original
    caps.require_m3("async_copy_2d_d2t")  # does not raise
    assert isinstance(caps.device_name, str) and caps.device_name
    if runtime.name == "cuda":
        assert "NVIDIA" in caps.device_name
    assert caps.device_name in repr(caps)


def test_cuda_architecture_is_the_number_kernels_are_compiled_for(runtime):
    """CudaRuntime.architecture: the digits of the core's target string
    (what plans and the 8-bit GEMM decide on), 0 when it names none."""
    def read(arch):
        rt = object.__new__(enigma.CudaRuntime)
        rt._core = type("Core", (), {"architecture": arch})()
        return rt.architecture
    assert read("sm_90a") == 90 and read("sm_80") == 80
    assert read("compute_120") == 120
    assert read("") == 0 and read(None) == 0
    if runtime.name == "cuda":
        assert runtime.architecture >= 50


def test_require_m3_names_the_feature():
    caps = enigma.DeviceCapabilities("apple8", 1008, False, True, 32, 32768,
                                     1024, "Apple M2")
    assert not caps.is_m3_or_newer
    with pytest.raises(RuntimeError, match="async_copy_1d_d2t requires Apple "
                                           "GPU family 9.*Apple M2"):
        caps.require_m3("async_copy_1d_d2t")


def test_the_docs_give_each_runtime_its_threadgroup_memory_limit():
    """docs/reference/runtimes.md and docs/reference/cooperation.md state
    the limit each runtime reports, the CPU's 227 KiB included."""
    import os
    root = os.path.join(os.path.dirname(__file__), "..", "..", "docs")
    cpu = enigma.CpuRuntime().device_capabilities().max_threadgroup_memory
    assert cpu == 232448
    with open(os.path.join(root, "reference", "runtimes.md")) as f:
        row = next(line for line in f
                   if line.startswith("| `max_threadgroup_memory` |"))
    assert "232448 bytes (227 KiB) on `CpuRuntime`" in row, row
    assert "32768 bytes (32 KiB, Metal's limit) on `MetalRuntime` and " \
           "`MetalHostRuntime`" in row, row
    with open(os.path.join(root, "reference", "cooperation.md")) as f:
        text = " ".join(f.read().split())
    assert "227 KiB on the CPU" in text
    assert "32 KiB on Metal and the MSL host runtime" in text
