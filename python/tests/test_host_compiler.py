"""The CPU backend's host compiler (docs/design/cpu-backend.md): a crash of
the compiler itself ("internal compiler error") is retried once without
the vectoriser, where such crashes mostly live (g++ 12 once died
vectorising an AVX-512 signbit; fuzz seed 932756). Each case runs in a
fresh process with `ENIGMA_CXX` pointing at a stand-in compiler."""

import os
import stat
import subprocess
import sys

_RUN = r'''
import numpy as np, enigma

@enigma.kernel
def twice(A: enigma.f32, B: enigma.f32):
    t = enigma.thread_position_in_grid
    B[t] = A[t] * 2.0

a = np.arange(100, dtype=np.float32)
raw = enigma.CpuRuntime().execute(enigma.compile(twice), [a], output_size=400,
                                  grid=(100, 1, 1), threads=(32, 1, 1))
assert np.array_equal(np.frombuffer(raw, np.float32), a * 2)
print("ran")
'''


def _stand_in(tmp_path, crash_always):
    """A compiler that crashes like g++ does on an internal error unless
    -fno-tree-vectorize is given (or always), and else runs c++."""
    script = tmp_path / "cxx"
    condition = "true" if crash_always else \
        '[[ " $* " != *" -fno-tree-vectorize "* ]]'
    script.write_text(f'''#!/usr/bin/env bash
if [[ " $* " == *" --version "* ]]; then exec c++ "$@"; fi
if {condition}; then
  echo "kernel.cpp:1:1: internal compiler error: in extract_insn" >&2
  exit 1
fi
exec c++ "$@"
''')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def _run(tmp_path, compiler):
    env = dict(os.environ)
    env["ENIGMA_CXX"] = str(compiler)
    env["ENIGMA_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("ENIGMA_DISABLE_CACHE", None)
    env.pop("ENIGMA_SOURCE_DUMP_DIR", None)
    return subprocess.run([sys.executable, "-c", _RUN], env=env,
                          capture_output=True, text=True, timeout=300)


def test_internal_compiler_error_is_retried_without_vectorisation(tmp_path):
    done = _run(tmp_path, _stand_in(tmp_path, crash_always=False))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ran" in done.stdout


def test_a_compiler_that_keeps_crashing_is_reported_with_both_attempts(tmp_path):
    done = _run(tmp_path, _stand_in(tmp_path, crash_always=True))
    assert done.returncode != 0
    assert "EnigmaRuntimeError" in done.stderr
    assert "internal compiler error" in done.stderr
    assert "again without vectorisation" in done.stderr


def test_a_missing_compiler_says_what_to_install(tmp_path):
    done = _run(tmp_path, tmp_path / "no-such-c++")
    assert done.returncode != 0
    assert "BackendUnavailableError: cannot run the host C++ compiler" \
        in done.stderr, done.stderr[-3000:]
    assert "CpuRuntime compiles every kernel with a host C++ compiler" \
        in done.stderr
    assert "apt-get install g++" in done.stderr and "ENIGMA_CXX" in done.stderr
