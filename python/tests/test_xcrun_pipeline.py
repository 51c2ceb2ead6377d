"""The xcrun half of enigma.compile, checked with a fake ``xcrun`` on PATH
that records its arguments and writes the files it is asked for.

Real Apple tools never run here; this pins down the commands compile()
issues and how it reports their failures.
"""

import json
import os
import stat
import sys
import tempfile

import pytest

import enigma

FAKE_XCRUN = """#!{python}
import json, os, sys
args = sys.argv[1:]
log = os.environ["FAKE_XCRUN_LOG"]
entry = {{"args": args, "cwd": os.getcwd()}}
if "-c" in args:
    with open(args[args.index("-c") + 1]) as f:
        entry["source"] = f.read()
with open(log, "a") as f:
    f.write(json.dumps(entry) + "\\n")
tool = args[2] if len(args) > 2 else ""
if os.environ.get("FAKE_XCRUN_FAIL") == tool:
    sys.stderr.write("fake.metal:3:5: error: use of undeclared identifier 'x'\\n")
    sys.exit(1)
out = args[args.index("-o") + 1]
with open(out, "wb") as f:
    f.write(("fake " + tool + " output").encode())
"""


@enigma.kernel
def vector_add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]


@pytest.fixture
def fake_xcrun(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "xcrun"
    script.write_text(FAKE_XCRUN.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "xcrun.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_XCRUN_LOG", str(log))
    monkeypatch.delenv("FAKE_XCRUN_FAIL", raising=False)
    monkeypatch.delenv("ENIGMA_EMIT_ONLY", raising=False)
    monkeypatch.chdir(tmp_path)
    # compile() builds in tempfile.mkdtemp() without a work_dir; keep those
    # folders inside the test's own directory.
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))

    def calls():
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]
    return calls


def test_compile_runs_metal_then_metallib(fake_xcrun):
    compiled = enigma.compile(vector_add)
    calls = fake_xcrun()
    assert len(calls) == 2
    metal, metallib = calls[0]["args"], calls[1]["args"]
    # No fast math, so NaN/inf behave as on the CPU and CUDA backends.
    assert metal[:5] == ["-sdk", "macosx", "metal", "-fno-fast-math", "-c"]
    src, air = metal[5], metal[7]
    assert metal[6] == "-o" and len(metal) == 8
    assert os.path.basename(src) == "enigma_kernel_vector_add.metal"
    assert os.path.basename(air) == "enigma_kernel_vector_add.air"
    assert metallib == ["-sdk", "macosx", "metallib", air, "-o",
                        compiled.metallib_path]
    assert os.path.basename(compiled.metallib_path) == \
        "enigma_kernel_vector_add.metallib"
    # the .metal handed to xcrun is the kernel's MSL
    assert calls[0]["source"] == compiled.metal_source


def test_metallib_is_reported(fake_xcrun):
    compiled = enigma.compile(vector_add)
    assert compiled.has_metallib is True
    assert os.path.isabs(compiled.metallib_path)
    assert os.path.exists(compiled.metallib_path)
    assert compiled.metallib_bytes == b"fake metallib output"


def test_intermediate_air_is_removed(fake_xcrun):
    compiled = enigma.compile(vector_add)
    folder = os.path.dirname(compiled.metallib_path)
    assert not any(f.endswith(".air") for f in os.listdir(folder))


def test_without_keep_metal_source_the_metal_file_is_removed(fake_xcrun):
    compiled = enigma.compile(vector_add)
    folder = os.path.dirname(compiled.metallib_path)
    assert os.listdir(folder) == ["enigma_kernel_vector_add.metallib"]


def test_keep_metal_source_keeps_it_beside_the_metallib(fake_xcrun):
    compiled = enigma.compile(vector_add, keep_metal_source=True)
    folder = os.path.dirname(compiled.metallib_path)
    assert sorted(os.listdir(folder)) == ["enigma_kernel_vector_add.metal",
                                          "enigma_kernel_vector_add.metallib"]
    with open(os.path.join(folder, "enigma_kernel_vector_add.metal")) as f:
        assert f.read() == compiled.metal_source


@pytest.mark.parametrize("keep", [False, True])
def test_work_dir_holds_every_artifact(fake_xcrun, tmp_path, keep):
    work = tmp_path / "work"
    compiled = enigma.compile(vector_add, work_dir=str(work),
                              keep_metal_source=keep)
    # with a work_dir the .metal stays whatever keep_metal_source says
    assert sorted(os.listdir(work)) == ["enigma_kernel_vector_add.metal",
                                        "enigma_kernel_vector_add.metallib",
                                        "enigma_kernel_vector_add.mlir"]
    assert compiled.metallib_path == str(work /
                                         "enigma_kernel_vector_add.metallib")
    assert fake_xcrun()[0]["args"][5] == str(work /
                                             "enigma_kernel_vector_add.metal")


def test_emit_only_skips_xcrun(fake_xcrun):
    compiled = enigma.compile(vector_add, emit_only=True)
    assert fake_xcrun() == []
    assert not compiled.has_metallib
    assert compiled.metallib_bytes is None
    assert "kernel void enigma_kernel_vector_add" in compiled.metal_source


def test_emit_only_environment_skips_xcrun(fake_xcrun, monkeypatch):
    monkeypatch.setenv("ENIGMA_EMIT_ONLY", "1")
    compiled = enigma.compile(vector_add)
    assert fake_xcrun() == []
    assert not compiled.has_metallib


def test_emit_only_false_overrides_the_environment(fake_xcrun, monkeypatch):
    monkeypatch.setenv("ENIGMA_EMIT_ONLY", "1")
    compiled = enigma.compile(vector_add, emit_only=False)
    assert len(fake_xcrun()) == 2
    assert compiled.has_metallib


def test_emit_only_zero_in_the_environment_runs_xcrun(fake_xcrun, monkeypatch):
    monkeypatch.setenv("ENIGMA_EMIT_ONLY", "0")
    assert enigma.compile(vector_add).has_metallib


@pytest.mark.parametrize("tool", ["metal", "metallib"])
def test_failing_xcrun_reports_its_stderr(fake_xcrun, monkeypatch, tool):
    monkeypatch.setenv("FAKE_XCRUN_FAIL", tool)
    with pytest.raises(RuntimeError) as info:
        enigma.compile(vector_add)
    msg = str(info.value)
    assert f"xcrun {tool} failed" in msg
    assert "use of undeclared identifier 'x'" in msg
    assert "exit 1" in msg
    assert len(fake_xcrun()) == (1 if tool == "metal" else 2)


def test_the_compiled_kernel_still_runs_elsewhere(fake_xcrun):
    import numpy as np
    compiled = enigma.compile(vector_add)
    a = np.arange(10, dtype=np.float32)
    out = enigma.CpuRuntime().execute(compiled, [a, a], output_size=40,
                                      grid=10, threads=4)
    np.testing.assert_array_equal(np.frombuffer(out, np.float32), 2 * a)
