"""The C++ example (examples/cpp/vector_add.cpp): the seed kernel written
with enigma::KernelBuilder and run on the CPU backend. The binary comes from
the CMake build (target enigma-vector-add); this test runs it."""

import os
import subprocess

import pytest

BUILD_DIR = os.environ.get("ENIGMA_BUILD_DIR", os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
        __file__)))), "build"))
BINARY = os.path.join(BUILD_DIR, "examples", "cpp", "enigma-vector-add")


@pytest.mark.skipif(not os.access(BINARY, os.X_OK),
                    reason=f"{BINARY} is not built (build the target "
                    "enigma-vector-add, or set ENIGMA_BUILD_DIR to the build "
                    "folder that has it)")
def test_cpp_vector_add_example_passes():
    proc = subprocess.run([BINARY], capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    assert lines and lines[-1] == "pass", proc.stdout + proc.stderr
    # It prints the kernel's Metal source before running it.
    assert "kernel void enigma_kernel_vector_add(" in proc.stdout
    assert "device float* A [[buffer(0)]]" in proc.stdout
    for n in ("1", "255", "257", "1048576"):
        assert f"n = {n}: 0 mismatches" in proc.stdout
