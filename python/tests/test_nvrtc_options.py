"""ENIGMA_NVRTC_OPTIONS: extra NVRTC options for every CUDA compile. Needs
only NVRTC (no GPU): the device-free compile check runs the same program
setup as CudaRuntime's loads."""

import pytest

import enigma

_GUARDED = '''
#ifdef ENIGMA_TEST_REFUSE
#error "the option reached NVRTC"
#endif
extern "C" __global__ void k(int *x) { x[threadIdx.x] = ENIGMA_TEST_VALUE; }
'''


def _check(source):
    return enigma._core.Runtime.nvrtc_check(source, "sm_90", [])


@pytest.fixture
def nvrtc(monkeypatch):
    monkeypatch.delenv("ENIGMA_NVRTC_OPTIONS", raising=False)
    try:
        _check('extern "C" __global__ void k() {}')
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed")
    return monkeypatch


def test_options_reach_the_compiler(nvrtc):
    nvrtc.setenv("ENIGMA_NVRTC_OPTIONS", "  -DENIGMA_TEST_VALUE=7\t-lineinfo ")
    assert _check(_GUARDED) > 0
    nvrtc.setenv("ENIGMA_NVRTC_OPTIONS",
                 "-DENIGMA_TEST_VALUE=7 -DENIGMA_TEST_REFUSE")
    with pytest.raises(RuntimeError, match="the option reached NVRTC"):
        _check(_GUARDED)


def test_without_options_nothing_is_added(nvrtc):
    with pytest.raises(RuntimeError, match="ENIGMA_TEST_VALUE"):
        _check(_GUARDED)


def test_a_refused_option_is_named(nvrtc):
    nvrtc.setenv("ENIGMA_NVRTC_OPTIONS", "--no-such-option-here")
    with pytest.raises(RuntimeError, match="--no-such-option-here"):
        _check('extern "C" __global__ void k() {}')
