"""A process that survives what real programs do to it: fork while another
thread compiles, exit with launches in flight, Ctrl-C in an endless
kernel or a long compile, launches while another thread compiles, scratch
folders after os._exit and failed builds, a parent killed mid-compile,
and kernels that are no longer referenced (docs/design/process-life.md).

Each scenario runs in a child Python process (a hang or a crash must not
take the test run with it) on the CPU backend and the MSL host runtime.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import enigma

_BACKENDS = ["cpu", "metal-host"]

# What every child script starts with: runtimes, a quick kernel checked
# against numpy, and a kernel that never ends (an atomic in the loop keeps
# the host compilers from assuming it ends). On the MSL host runtime the
# endless kernel also crosses a barrier on every iteration, so the
# threadgroup's fibers keep switching.
_PRELUDE = r'''
import contextlib, json, os, signal, sys, threading, time
import numpy as np
import enigma

# Ctrl-C as a terminal delivers it: a test run started in the background
# (nohup, `cmd &` in a script) hands its children SIGINT ignored, and
# Python then never raises KeyboardInterrupt.
signal.signal(signal.SIGINT, signal.default_int_handler)

def make_runtime(backend):
    return enigma.CpuRuntime() if backend == "cpu" else enigma.MetalHostRuntime()

@enigma.kernel
def add(A: enigma.f32, B: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] + B[tid]

@enigma.kernel
def scale(A: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] * 5.0

@enigma.kernel
def endless(A: enigma.u32, C: enigma.u32):
    i = A[0]
    with enigma.while_(lambda: i < 1):
        enigma.atomic_fetch_add(C, 0, 1)

@enigma.kernel
def endless_barrier(A: enigma.u32, C: enigma.u32):
    tid = enigma.thread_position_in_threadgroup
    n = A[0]
    for k in enigma.range(0, n):
        enigma.barrier()
        enigma.atomic_fetch_add(C, 0, 1)

def call_on(rt):
    """The function-call form on `rt`: the shared CpuRuntime it uses for
    host arrays, or the MSL host runtime given with use_runtime."""
    if isinstance(rt, enigma.MetalHostRuntime):
        return enigma.use_runtime(rt)
    return contextlib.nullcontext()

def check_add(rt, n=1000):
    a = np.random.default_rng().standard_normal(n).astype(np.float32)
    b = np.random.default_rng().standard_normal(n).astype(np.float32)
    out = np.frombuffer(rt.execute(enigma.compile(add), [a, b],
                                   output_size=4 * n, grid=n, threads=64),
                        np.float32)
    return bool(np.array_equal(out, a + b))

def check_scale(rt, n=333):
    a = np.random.default_rng().standard_normal(n).astype(np.float32)
    out = np.frombuffer(rt.execute(enigma.compile(scale), [a],
                                   output_size=4 * n, grid=n, threads=32),
                        np.float32)
    return bool(np.array_equal(out, a * np.float32(5)))

def run_endless(rt, how):
    """Launches a kernel that never ends, in the way `how` names."""
    zero = np.zeros(1, np.uint32)
    if how == "execute":
        rt.execute(enigma.compile(endless), [zero], output_size=4, grid=1,
                   threads=1)
    elif how == "dispatch":
        rt.prepare(enigma.compile(endless), [zero],
                   output_size=4).dispatch(1, 1)
    elif how == "call":
        with call_on(rt):
            endless.launch(grid=1, threads=1)(zero, np.zeros(1, np.uint32))
    elif how == "barrier":
        rt.execute(enigma.compile(endless_barrier),
                   [np.array([2**30], np.uint32)], output_size=4,
                   grid=64, threads=64)
    elif how == "wide":  # every worker thread inside the kernel
        rt.execute(enigma.compile(endless), [zero], output_size=4,
                   grid=4096, threads=64)
    raise SystemExit("the endless kernel ended")

def run_loop(rt, how):
    """Launches short kernels for ever, in the way `how` names."""
    a = np.ones(1 << 18, np.float32)
    out = np.empty_like(a)
    compiled = enigma.compile(add)
    while True:
        if how == "call":
            with call_on(rt):
                add.launch(grid=len(a), threads=64)(a, a, out)
        else:
            rt.execute(compiled, [a, a], output_size=a.nbytes, grid=len(a),
                       threads=64)
'''


def _write_compiler_wrapper(directory: Path, name: str, real: str,
                            delay: float, kernel: str,
                            pid_file: Path | None = None):
    """A compiler command that waits ``delay`` seconds before building the
    kernel named ``kernel`` (writing its pid first); everything else (the
    identity probes, other kernels) runs at once."""
    path = directory / name
    note = f'echo $$ > "{pid_file}"; ' if pid_file else ""
    path.write_text("#!/bin/sh\n"
                    'case " $* " in\n'
                    f'  *"enigma_kernel_{kernel}."*) {note}sleep {delay};;\n'
                    "esac\n"
                    f'exec {real} "$@"\n')
    path.chmod(0o755)
    return path


def _msl_compiler() -> str:
    for version in range(19, 13, -1):
        for directory in os.environ.get("PATH", "").split(os.pathsep):
            if os.access(os.path.join(directory, f"clang++-{version}"),
                         os.X_OK):
                return f"clang++-{version}"
    return "clang++"


def _slow_environment(tmp_path, delay, kernel, pid_file=None):
    """ENIGMA_CXX / ENIGMA_MSL_CXX wrappers that make building the kernel
    named ``kernel`` take ``delay`` seconds."""
    cxx = _write_compiler_wrapper(tmp_path, "slow-cxx",
                                  os.environ.get("ENIGMA_CXX", "c++"), delay,
                                  kernel, pid_file)
    msl = _write_compiler_wrapper(tmp_path, "slow-msl", _msl_compiler(),
                                  delay, kernel, pid_file)
    return {"ENIGMA_CXX": str(cxx), "ENIGMA_MSL_CXX": str(msl)}


def run_script(tmp_path, body, *args, env=None, timeout=120):
    """Runs the prelude + ``body`` in a child in its own session (a hang is
    killed with every process it started); returns the CompletedProcess."""
    script = tmp_path / "script.py"
    script.write_text(_PRELUDE + textwrap.dedent(body))
    environment = dict(os.environ)
    environment["ENIGMA_CACHE_DIR"] = str(tmp_path / "cache")
    environment.pop("ENIGMA_DISABLE_CACHE", None)
    environment.pop("ENIGMA_SOURCE_DUMP_DIR", None)
    environment.update(env or {})
    child = subprocess.Popen([sys.executable, str(script), *map(str, args)],
                             env=environment, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        out, err = child.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"the child hung for {timeout} s:\n{out}\n{err}")
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def last_json(proc):
    assert proc.returncode == 0, (proc.returncode, proc.stdout, proc.stderr)
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------
# 5. fork() while another thread compiles
# --------------------------------------------------------------------------

@pytest.mark.parametrize("backend", _BACKENDS)
def test_fork_while_another_thread_compiles(tmp_path, backend):
    proc = run_script(tmp_path, """
        rt = make_runtime(sys.argv[1])
        assert check_add(rt)                       # loaded before the fork
        compiling = threading.Thread(target=lambda: check_scale(rt))
        compiling.start()
        time.sleep(1.0)                            # inside the slow compile
        pid = os.fork()
        if pid == 0:
            # The child: the loaded kernel, and a kernel it must compile.
            ok = check_add(rt) and check_scale(rt)
            os._exit(0 if ok else 3)
        _, status = os.waitpid(pid, 0)
        compiling.join()
        print(json.dumps({"child": os.waitstatus_to_exitcode(status),
                          "parent": check_scale(rt) and check_add(rt)}))
        """, backend, env=_slow_environment(tmp_path, 3, "scale"), timeout=90)
    assert last_json(proc) == {"child": 0, "parent": True}


# --------------------------------------------------------------------------
# 6. Interpreter exit with a daemon thread inside a launch
# --------------------------------------------------------------------------

@pytest.mark.parametrize("backend,how", [
    ("cpu", "loop-execute"), ("cpu", "loop-call"), ("cpu", "wide"),
    ("metal-host", "loop-execute"), ("metal-host", "loop-call"),
    ("metal-host", "barrier"), ("metal-host", "wide")])
def test_exit_with_a_launch_in_flight(tmp_path, backend, how):
    body = """
        rt = make_runtime(sys.argv[1])
        how = sys.argv[2]
        assert check_add(rt)  # compiled and loaded before the race
        if how == "loop-call":
            with call_on(rt):
                add.launch(grid=4, threads=4)(*[np.ones(4, np.float32)] * 3)
        threading.Thread(
            target=run_loop if how.startswith("loop") else run_endless,
            args=(rt, how.removeprefix("loop-")), daemon=True).start()
        time.sleep(0.5)
        print(json.dumps({"exiting": True}), flush=True)
        """
    for attempt in range(2):  # the first also compiles, the second does not
        began = time.monotonic()
        proc = run_script(tmp_path, body, backend, how, timeout=60)
        assert proc.returncode == 0, (attempt, proc.returncode, proc.stderr)
        assert "terminate called" not in proc.stderr
        assert time.monotonic() - began < 20


# --------------------------------------------------------------------------
# 7. Ctrl-C stops a kernel that never ends, and the runtime stays usable
# --------------------------------------------------------------------------

_INTERRUPTED = """
    rt = make_runtime(sys.argv[1])
    assert check_add(rt)
    # Loaded (compiled) before the clock starts: the interrupt must stop
    # the kernel, not a compile.
    one, zero = np.ones(1, np.uint32), np.zeros(1, np.uint32)
    rt.execute(enigma.compile(endless), [one], output_size=4)
    rt.execute(enigma.compile(endless_barrier), [zero], output_size=4,
               grid=64, threads=64)
    if sys.argv[2] == "call":
        with call_on(rt):
            endless.launch(grid=1, threads=1)(one, zero)
    print("start", flush=True)
    try:
        run_endless(rt, sys.argv[2])
    except KeyboardInterrupt:
        stopped = time.monotonic()
    print(json.dumps({"stopped": stopped,
                      "usable": check_add(rt) and check_scale(rt)}))
    """


def _interrupt(tmp_path, body, *args, env=None, wait_for="start",
               ready=lambda: True):
    script = tmp_path / "script.py"
    script.write_text(_PRELUDE + textwrap.dedent(body))
    environment = dict(os.environ, ENIGMA_CACHE_DIR=str(tmp_path / "cache"))
    environment.pop("ENIGMA_DISABLE_CACHE", None)
    environment.pop("ENIGMA_SOURCE_DUMP_DIR", None)
    environment.update(env or {})
    child = subprocess.Popen([sys.executable, str(script), *map(str, args)],
                             env=environment, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        assert child.stdout.readline().strip() == wait_for, child.stderr.read()
        deadline = time.monotonic() + 60
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        out, err = child.communicate()
        pytest.fail(f"Ctrl-C did not stop the child:\n{out}\n{err}")
    assert child.returncode == 0, (out, err)
    result = json.loads(out.strip().splitlines()[-1])
    return result, result["stopped"] - sent


@pytest.mark.parametrize("backend,how", [
    ("cpu", "execute"), ("cpu", "dispatch"), ("cpu", "call"),
    ("metal-host", "execute"), ("metal-host", "dispatch"),
    ("metal-host", "call"), ("metal-host", "barrier")])
def test_ctrl_c_stops_an_endless_kernel(tmp_path, backend, how):
    result, seconds = _interrupt(tmp_path, _INTERRUPTED, backend, how)
    assert seconds < 1.0
    assert result["usable"]


@pytest.mark.parametrize("backend", _BACKENDS)
def test_ctrl_c_stops_a_compile_and_its_compiler(tmp_path, backend):
    pid_file = tmp_path / "compiler.pid"
    body = """
        rt = make_runtime(sys.argv[1])
        print("start", flush=True)
        try:
            check_add(rt)
        except KeyboardInterrupt:
            stopped = time.monotonic()
        print(json.dumps({"stopped": stopped}))
        """
    result, seconds = _interrupt(
        tmp_path, body, backend,
        env=_slow_environment(tmp_path, 60, "add", pid_file),
        ready=pid_file.exists)  # inside the kernel's compile
    assert seconds < 1.0
    _assert_gone(int(pid_file.read_text()))


def _assert_gone(pid, within=5.0):
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(")")[-1].split()[0] == "Z":
                    return  # dead, waiting to be reaped
        except FileNotFoundError:
            return
        time.sleep(0.05)
    pytest.fail(f"the compiler (pid {pid}) is still running")


@pytest.mark.parametrize("grid,threads", [
    ((2**27, 2**27, 1), (1, 1, 1)),        # 2^54 threadgroups
    ((2**32 - 1, 1, 1), (1, 1, 1)),        # more than 2^31 - 1 along x
    ((1, 65536 * 4, 1), (1, 4, 1)),        # 65536 along y
    ((1, 1, 65536), (1, 1, 1))])           # 65536 along z
def test_grids_no_gpu_accepts_are_refused(runtime, grid, threads):
    compiled = enigma.compile(_count_groups)
    with pytest.raises(enigma.DispatchError, match="threadgroups"):
        runtime.execute(compiled, [], output_size=4, grid=grid,
                        threads=threads)


@enigma.kernel
def _count_groups(C: enigma.u32):
    enigma.atomic_fetch_add(C, 0, 1)


def test_largest_grid_along_y_runs(runtime):
    # 65535 threadgroups along y and z are the most any backend allows.
    out = runtime.execute(enigma.compile(_count_groups), [], output_size=4,
                          grid=(1, 65535, 2), threads=(1, 1, 1))
    assert np.frombuffer(out, np.uint32)[0] == 65535 * 2


# --------------------------------------------------------------------------
# 8. A loaded kernel does not wait for another thread's compile
# --------------------------------------------------------------------------

@pytest.mark.parametrize("backend", _BACKENDS)
def test_launches_do_not_wait_for_a_compile(tmp_path, backend):
    proc = run_script(tmp_path, """
        rt = make_runtime(sys.argv[1])
        a = np.ones(256, np.float32)
        compiled = enigma.compile(add)
        assert check_add(rt)
        prepared = rt.prepare(compiled, [a, a], output_size=1024)
        compiling = threading.Thread(target=lambda: check_scale(rt))
        compiling.start()
        time.sleep(0.5)                    # inside the slow compile
        slowest = 0.0
        for _ in range(5):
            began = time.monotonic()
            rt.execute(compiled, [a, a], output_size=1024, grid=256,
                       threads=64)
            rt.prepare(compiled, [a, a], output_size=1024)
            prepared.dispatch(256, 64)
            slowest = max(slowest, time.monotonic() - began)
        busy = compiling.is_alive()
        compiling.join()
        print(json.dumps({"slowest": slowest, "busy": busy}))
        """, backend, env=_slow_environment(tmp_path, 3, "scale"))
    result = last_json(proc)
    assert result["busy"]  # the compile was still running throughout
    assert result["slowest"] < 0.5


# --------------------------------------------------------------------------
# 9. Scratch folders, compilers of a killed parent, unloading
# --------------------------------------------------------------------------

@pytest.mark.parametrize("backend", _BACKENDS)
def test_scratch_folders_of_an_os_exit_are_removed(tmp_path, backend):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {"ENIGMA_DISABLE_CACHE": "1", "TMPDIR": str(scratch)}
    last_json(run_script(tmp_path, """
        assert check_add(make_runtime(sys.argv[1]))
        print(json.dumps({}), flush=True)
        os._exit(0)      # what multiprocessing workers do: no clean-up
        """, backend, env=env))
    last_json(run_script(tmp_path, """
        assert check_add(make_runtime(sys.argv[1]))
        print(json.dumps({}))
        """, backend, env=env))
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("disabled", [True, False], ids=["no-cache", "cache"])
def test_a_failed_msl_build_leaves_no_scratch(tmp_path, disabled):
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {"TMPDIR": str(scratch)}
    if disabled:
        env["ENIGMA_DISABLE_CACHE"] = "1"
    proc = run_script(tmp_path, """
        rt = enigma.MetalHostRuntime()
        bad = "kernel void k(device float *a [[buffer(0)]]) { a[0] = nope; }"
        for _ in range(3):
            try:
                rt.execute_source(bad, "k", [], output_size=4)
            except enigma.EnigmaRuntimeError as e:
                assert "nope" in str(e)
        left = [os.path.join(d, f) for top in sys.argv[1:]
                for d, _, files in os.walk(top) for f in files
                if f.endswith(".metal") or f.endswith(".so")]
        print(json.dumps({"left": left}))
        """, str(scratch), str(tmp_path / "cache" / "v1" / "tmp"), env=env)
    assert last_json(proc)["left"] == []
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("backend", _BACKENDS)
def test_a_killed_parent_takes_its_compiler_along(tmp_path, backend):
    pid_file = tmp_path / "compiler.pid"
    script = tmp_path / "script.py"
    script.write_text(_PRELUDE + "print('start', flush=True)\n"
                      "check_add(make_runtime(sys.argv[1]))\n")
    env = dict(os.environ, ENIGMA_CACHE_DIR=str(tmp_path / "cache"),
               **_slow_environment(tmp_path, 60, "add", pid_file))
    env.pop("ENIGMA_SOURCE_DUMP_DIR", None)
    child = subprocess.Popen([sys.executable, str(script), backend], env=env,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "start"
    deadline = time.monotonic() + 60
    while not pid_file.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)
    compiler = int(pid_file.read_text())
    child.kill()
    child.wait()
    try:
        _assert_gone(compiler)
    finally:
        try:
            os.kill(compiler, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _mapped_objects(cache: Path) -> int:
    objects = str(cache / "v1" / "objects")
    with open("/proc/self/maps") as f:
        return len({line.split()[-1] for line in f if objects in line})


def test_unreferenced_kernels_are_unloaded(tmp_path):
    proc = run_script(tmp_path, """
        import gc
        objects = os.path.join(os.environ["ENIGMA_CACHE_DIR"], "v1", "objects")
        def mapped():
            with open("/proc/self/maps") as f:
                return len({l.split()[-1] for l in f if objects in l})
        a = np.ones(64, np.float32)
        def numbered_kernel(k):
            @enigma.kernel
            def numbered(A: enigma.f32, C: enigma.f32):
                tid = enigma.thread_position_in_grid
                C[tid] = A[tid] + float(k)
            return numbered
        def kernels(count):
            return [numbered_kernel(k) for k in range(count)]
        counts = {}
        # The call form: the kernel objects hold their loaded code.
        made = kernels(6)
        for kern in made:
            kern.launch(grid=64, threads=64)(a, np.empty(64, np.float32))
        counts["call_loaded"] = mapped()
        del made, kern
        gc.collect()
        counts["call_dropped"] = mapped()
        # execute: a runtime keeps what it loaded until it goes.
        rt = enigma.CpuRuntime()
        for kern in kernels(6):
            rt.execute(enigma.compile(kern), [a], output_size=256, grid=64,
                       threads=64)
        counts["execute_loaded"] = mapped()
        del rt
        gc.collect()
        counts["execute_dropped"] = mapped()
        print(json.dumps(counts))
        """)
    counts = last_json(proc)
    assert counts["call_loaded"] >= 6 and counts["execute_loaded"] >= 6
    assert counts["call_dropped"] == 0, counts
    assert counts["execute_dropped"] == 0, counts


def test_a_long_lived_runtime_keeps_a_bounded_number_loaded(tmp_path):
    proc = run_script(tmp_path, """
        objects = os.path.join(os.environ["ENIGMA_CACHE_DIR"], "v1", "objects")
        def mapped():
            with open("/proc/self/maps") as f:
                return len({l.split()[-1] for l in f if objects in l})
        a = np.ones(64, np.float32)
        rt = enigma.CpuRuntime()
        for k in range(12):
            @enigma.kernel
            def numbered(A: enigma.f32, C: enigma.f32):
                tid = enigma.thread_position_in_grid
                C[tid] = A[tid] + float(k)
            out = rt.execute(enigma.compile(numbered), [a], output_size=256,
                             grid=64, threads=64)
            assert np.frombuffer(out, np.float32)[0] == 1 + k
        print(json.dumps({"mapped": mapped()}))
        """, env={"ENIGMA_LOADED_KERNELS": "4"})
    assert last_json(proc)["mapped"] <= 4


def test_threads_checking_sources_keep_their_scratch_folders(tmp_path,
                                                             monkeypatch):
    """Threads of one process making scratch areas at the same time: one
    thread's sweep of abandoned areas took another's area for abandoned
    (a process-wide fcntl lock) and removed it under its compile ("no such
    file" from clang++, 2 of 1693 files in the generated-sources check)."""
    import concurrent.futures
    monkeypatch.setenv("ENIGMA_CACHE_DIR", str(tmp_path / "cache"))
    source = ("#include <metal_stdlib>\nusing namespace metal;\n"
              "kernel void k(device float *a [[buffer(0)]],\n"
              "              uint i [[thread_position_in_grid]]) {\n"
              "  a[i] = a[i] * 2.0f;\n}\n")

    def check(n):
        enigma.MetalHostRuntime.check_source(source, f"k{n}.metal")
        return n

    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        assert sorted(pool.map(check, range(48))) == list(range(48))
