"""The CPU backend's target flags (docs/design/host-compiler-flags.md):
`-march=native`, or the first fallback with which the host toolchain builds
a probe kernel, decided once per compiler and CPU and kept in the cache; a
kernel the assembler still rejects is built again with the next flags.

Each case runs in a fresh process with `ENIGMA_CXX` pointing at a stand-in
compiler (a script in front of the real one) and a fresh cache.
"""

import glob
import os
import platform
import stat
import subprocess
import sys

import pytest

_FUZZ_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                         "..", "tools", "fuzz")

_RUN = r'''
import numpy as np, enigma

@enigma.kernel
def twice(A: enigma.f16, B: enigma.f16):
    t = enigma.thread_position_in_grid
    B[t] = A[t] * 2.0

a = np.arange(100, dtype=np.float16)
raw = enigma.CpuRuntime().execute(enigma.compile(twice), [a], output_size=200,
                                  grid=(100, 1, 1), threads=(32, 1, 1))
assert np.array_equal(np.frombuffer(raw, np.float16), a * 2)
print("ran")
'''

# The fuzz program of seed 3141545 (tools/fuzz/corpus/cpu_masked_vmovsh.json)
# checked against the interpreter.
_RUN_CORPUS = r'''
import json, sys
sys.path.insert(0, FUZZ_DIR)
import enigma, harness
with open(FUZZ_DIR + "/corpus/cpu_masked_vmovsh.json") as f:
    program = json.load(f)["program"]
outcome = harness.check(program, enigma.CpuRuntime(), True)
assert outcome.status == "ok", outcome
print("ran")
'''

_ASSEMBLER_ERROR = ('echo "/tmp/cc1.s: Assembler messages:" >&2; '
                    'echo "/tmp/cc1.s:244: Error: unsupported masking for '
                    '\\`vmovsh\'" >&2; exit 1')


def _stand_in(tmp_path, rejects):
    """A compiler that logs its arguments and fails like the assembler does
    when the bash condition `rejects` holds, else runs c++."""
    script = tmp_path / "cxx"
    log = tmp_path / "calls.log"
    script.write_text(f'''#!/usr/bin/env bash
if [[ " $* " == *" --version "* ]]; then exec c++ "$@"; fi
echo "$*" >> {log}
args=" $* "
if {rejects}; then {_ASSEMBLER_ERROR}; fi
exec c++ "$@"
''')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, log


def _run(tmp_path, compiler, code=_RUN):
    env = dict(os.environ)
    env["ENIGMA_CXX"] = str(compiler)
    env["ENIGMA_CACHE_DIR"] = str(tmp_path / "cache")
    env.pop("ENIGMA_DISABLE_CACHE", None)
    env.pop("ENIGMA_SOURCE_DUMP_DIR", None)
    done = subprocess.run([sys.executable, "-c",
                           code.replace("FUZZ_DIR", repr(_FUZZ_DIR))],
                          env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "ran" in done.stdout
    return done


_VECTOR_MATH = ["-DENIGMA_CPU_LIBMVEC", "-lmvec"]


def _decision(tmp_path):
    """The target flags kept in the cache directory (one per line, then
    "end"), less glibc's vector math library, which x86-64 hosts add where
    it links (asserted by test_vector_math_library_where_it_links)."""
    found = glob.glob(str(tmp_path / "cache" / "cpu-target-flags" / "*.txt"))
    assert len(found) == 1, found
    with open(found[0]) as f:
        lines = f.read().split()
    assert lines[-1] == "end", lines
    return [flag for flag in lines[:-1] if flag not in _VECTOR_MATH]


def _calls(log, what):
    if not log.exists():
        return []
    return [line for line in log.read_text().splitlines() if what in line]


def test_native_flags_the_assembler_rejects_fall_back_once_a_machine(
        tmp_path):
    compiler, log = _stand_in(
        tmp_path, '[[ $args == *" -march=native "* && '
                  '$args != *" -mno-avx512fp16 "* ]]')
    _run(tmp_path, compiler)
    assert _decision(tmp_path) == ["-march=native", "-mno-avx512fp16"]
    probes = _calls(log, "enigma_arch_probe.cpp")
    assert [("-mno-avx512fp16" in p) for p in probes] == [False, True]
    kernels = _calls(log, "enigma_kernel_twice.cpp")
    assert len(kernels) == 1 and "-mno-avx512fp16" in kernels[0]
    # Another process on the same machine builds another kernel with the
    # decision it finds in the cache: no probe.
    log.unlink()
    _run(tmp_path, compiler, _RUN.replace("2.0", "3.0").replace("* 2", "* 3"))
    assert not _calls(log, "enigma_arch_probe.cpp")
    kernels = _calls(log, "enigma_kernel_twice.cpp")
    assert len(kernels) == 1 and "-mno-avx512fp16" in kernels[0]


def test_a_kernel_the_assembler_rejects_is_built_with_the_next_flags(tmp_path):
    """The probe passes with -march=native, one kernel does not."""
    compiler, log = _stand_in(
        tmp_path, '[[ $args == *"enigma_kernel_twice.cpp"* && '
                  '$args == *" -march=native "* ]]')
    _run(tmp_path, compiler)
    # The real probe behind the stand-in decides: on an AVX512-FP16 host
    # whose assembler rejects g++'s f16 code (the GPU machine's Xeon) it is
    # ["-march=native", "-mno-avx512fp16"].
    assert _decision(tmp_path)[0] == "-march=native"
    kernels = _calls(log, "enigma_kernel_twice.cpp")
    assert len(kernels) >= 2
    assert "-march=native" in kernels[0]
    assert "-march=native" not in kernels[-1]  # x86-64-v3, or none


def test_a_compiler_without_march_gets_no_target_flags(tmp_path):
    compiler, log = _stand_in(tmp_path, '[[ $args == *" -march="* ]]')
    script = compiler.read_text().replace(
        _ASSEMBLER_ERROR,
        "echo \"c++: error: unrecognized command-line option '-march'\" >&2; "
        "exit 1")
    compiler.write_text(script)
    _run(tmp_path, compiler)
    assert _decision(tmp_path) == []
    assert all("-march" not in k
               for k in _calls(log, "enigma_kernel_twice.cpp"))


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 flags")
def test_fuzz_seed_3141545_on_an_avx512fp16_host(tmp_path):
    """Emulates the machine the fuzzer found the bug on: every compile
    with -march=native is first tried with -march=sapphirerapids and fails
    the way that one fails when the assembler rejects it there. The fuzz
    program must still build and agree with the interpreter."""
    check = subprocess.run(["c++", "-march=sapphirerapids", "-x", "c++",
                            "-c", "-o", os.devnull, "-"], input="int x;",
                           capture_output=True, text=True)
    if check.returncode != 0:
        pytest.skip("the host compiler does not know -march=sapphirerapids")
    script = tmp_path / "cxx"
    script.write_text(f'''#!/usr/bin/env bash
if [[ " $* " == *" --version "* ]]; then exec c++ "$@"; fi
if [[ " $* " == *" -march=native "* ]]; then
  spr=()
  for a in "$@"; do
    case "$a" in
      -march=native) spr+=(-march=sapphirerapids) ;;
      -shared) spr+=(-c) ;;
      -l*) ;;
      *) spr+=("$a") ;;
    esac
  done
  spr[${{#spr[@]}}-1]={tmp_path}/spr.o
  if ! out=$(c++ "${{spr[@]}}" 2>&1); then
    if [[ "$out" == *"Assembler messages"* ]]; then
      echo "$out" >&2; echo "$*" >> {tmp_path}/rejected.log; exit 1
    fi
  fi
fi
exec c++ "$@"
''')
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    _run(tmp_path, script, _RUN_CORPUS)
    rejected = tmp_path / "rejected.log"
    if rejected.exists():  # this toolchain has the bug: the probe met it
        assert "enigma_arch_probe.cpp" in rejected.read_text()
        assert _decision(tmp_path) == ["-march=native", "-mno-avx512fp16"]
    else:
        assert _decision(tmp_path) == ["-march=native"]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86-64 flags")
def test_vector_math_library_where_it_links(tmp_path):
    """g++ on glibc x86-64 links libmvec: the decision keeps it, after the
    source (so --as-needed linkers keep it too); a toolchain without it
    falls back to the same flags without it."""
    compiler, log = _stand_in(tmp_path, "false")
    _run(tmp_path, compiler)
    found = glob.glob(str(tmp_path / "cache" / "cpu-target-flags" / "*.txt"))
    with open(found[0]) as f:
        flags = f.read().split()[:-1]
    have_mvec = subprocess.run(
        ["c++", "-x", "c++", "-shared", "-fPIC", "-o", os.devnull, "-",
         "-lmvec"], input=b"int x;", capture_output=True).returncode == 0
    assert (flags[-2:] == _VECTOR_MATH) == have_mvec, flags
    for k in _calls(log, "enigma_kernel_twice.cpp"):
        if have_mvec:
            assert k.rstrip().endswith("-lmvec"), k

    # Without the library: "cannot find -lmvec", and the next flags.
    other = tmp_path / "other"
    other.mkdir()
    compiler, log = _stand_in(other, '[[ $args == *" -lmvec"* ]]')
    script = compiler.read_text().replace(
        _ASSEMBLER_ERROR,
        'echo "/usr/bin/ld: cannot find -lmvec: No such file" >&2; exit 1')
    compiler.write_text(script)
    _run(other, compiler)
    found = glob.glob(str(other / "cache" / "cpu-target-flags" / "*.txt"))
    with open(found[0]) as f:
        flags = f.read().split()[:-1]
    assert "-lmvec" not in flags and "-DENIGMA_CPU_LIBMVEC" not in flags
