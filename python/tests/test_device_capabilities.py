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


def test_require_m3_names_the_feature():
    caps = enigma.DeviceCapabilities("apple8", 1008, False, True, 32, 32768,
                                     1024, "Apple M2")
    assert not caps.is_m3_or_newer
    with pytest.raises(RuntimeError, match="async_copy_1d_d2t requires Apple "
                                           "GPU family 9.*Apple M2"):
        caps.require_m3("async_copy_1d_d2t")
