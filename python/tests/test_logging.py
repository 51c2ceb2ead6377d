"""ENIGMA_LOG (what was compiled, taken from a cache, launched) and the
progress line (one line on stderr rewritten in place, only on a
terminal)."""

import os
import pty
import select
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import enigma
from enigma import _progress

HERE = os.path.dirname(os.path.abspath(__file__))

PROGRAM = textwrap.dedent("""
    import numpy as np, enigma

    @enigma.kernel
    def twice(A: enigma.f32, C: enigma.f32, n: enigma.Scalar(enigma.u32)):
        i = enigma.thread_position_in_grid
        with enigma.if_(i < n):
            C[i] = A[i] * 2.0 + {salt}

    a = np.arange(10, dtype=np.float32)
    c = np.zeros(10, np.float32)
    twice.launch(grid=10, threads=4)(a, c, 10)
    twice.launch(grid=10, threads=4)(a, c, 10)
    assert (c == a * 2 + {salt}).all()
    enigma.CpuRuntime().execute(enigma.compile(twice), [a], 40, grid=10,
                                threads=4, scalars=[10])
    print("done")
""")


def _run(code, env_extra, tmp_path):
    env = dict(os.environ, ENIGMA_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("ENIGMA_LOG", None)
    env.update(env_extra)
    done = subprocess.run([sys.executable, "-c", code], env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_info_log_says_what_was_compiled_cached_and_launched(tmp_path, rng):
    salt = int(rng.integers(1, 1 << 20))  # a kernel no cache has seen
    code = PROGRAM.format(salt=salt)
    first = _run(code, {"ENIGMA_LOG": "info"}, tmp_path).splitlines()
    compiled = [x for x in first if x.startswith(
        "enigma: compiled enigma_kernel_twice (traced, optimised")]
    assert len(compiled) == 2  # the call form's, and enigma.compile's
    loaded = [x for x in first if "enigma_kernel_twice: loaded for cpu" in x]
    assert len(loaded) == 1 and "compiled with the host C++ compiler" in \
        loaded[0], first
    launches = [x for x in first if x.startswith(
        "enigma: launch enigma_kernel_twice grid (10, 1, 1) threads "
        "(4, 1, 1) on cpu")]
    assert len(launches) == 3, first  # two calls and one execute
    assert launches[2].endswith("(execute)")
    # A new process finds the shared object in the disk cache.
    second = _run(code, {"ENIGMA_LOG": "info"}, tmp_path)
    assert "loaded for cpu" in second and "(disk cache)" in second, second


def test_no_log_without_enigma_log(tmp_path):
    code = PROGRAM.format(salt=1)
    assert _run(code, {}, tmp_path) == ""
    assert _run(code, {"ENIGMA_LOG": "off"}, tmp_path) == ""


def test_debug_says_why_a_runtime_was_chosen(tmp_path):
    err = _run(PROGRAM.format(salt=2), {"ENIGMA_LOG": "debug"}, tmp_path)
    assert "enigma_kernel_twice: host arrays, so cpu" in err, err


def test_set_log_level_in_process(capsys):
    @enigma.kernel
    def fill(A: enigma.f32):
        A[enigma.thread_position_in_grid] = 1.0

    a = np.zeros(8, np.float32)
    fill[8](a)  # compiled and loaded before logging is on
    enigma.set_log_level("info")
    try:
        fill[8](a)
        fill.launch(grid=(8,), threads=(2,))(a)
    finally:
        enigma.set_log_level("off")
    fill[8](a)
    err = capsys.readouterr().err.splitlines()
    assert err == [
        "enigma: launch enigma_kernel_fill grid (8, 1, 1) threads "
        "(256, 1, 1) on cpu",
        "enigma: launch enigma_kernel_fill grid (8, 1, 1) threads "
        "(2, 1, 1) on cpu"]
    with pytest.raises(ValueError, match="off, info, debug"):
        enigma.set_log_level("verbose")


def test_progress_is_silent_when_stderr_is_not_a_terminal(capsys):
    with _progress.Progress("autotune gemm", total=3) as bar:
        for i in range(3):
            bar.update(i + 1, f"best {i} us", force=True)
    with _progress.activity("building something"):
        pass
    captured = capsys.readouterr()
    assert captured.err == "" and captured.out == ""


def _read_pty(code, env_extra=None):
    """Runs ``code`` with stderr on a pseudo-terminal; returns what it wrote
    there and its stdout."""
    master, slave = pty.openpty()
    env = dict(os.environ, **(env_extra or {}))
    proc = subprocess.Popen([sys.executable, "-c", code], stderr=slave,
                            stdout=subprocess.PIPE, env=env, cwd=HERE)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 600)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    out = proc.stdout.read()
    assert proc.wait(timeout=60) == 0, b"".join(chunks).decode()
    os.close(master)
    return b"".join(chunks).decode(), out.decode()


def test_progress_line_is_rewritten_in_place_on_a_terminal():
    code = textwrap.dedent("""
        from enigma import _progress
        with _progress.Progress("autotune gemm", total=3) as bar:
            for i in range(3):
                bar.update(i + 1, f"best {10 - i} us", force=True)
        print("after")
    """)
    err, out = _read_pty(code)
    assert out == "after\n"
    updates = err.split("\r\x1b[K")
    assert [u.split(" (")[0] for u in updates if u] == [
        "enigma: autotune gemm 0/3", "enigma: autotune gemm 1/3 best 10 us",
        "enigma: autotune gemm 2/3 best 9 us",
        "enigma: autotune gemm 3/3 best 8 us"]
    assert err.endswith("\r\x1b[K")  # the line is cleared at the end
    assert "\n" not in err


def test_a_slow_build_shows_its_activity_on_a_terminal(tmp_path, rng):
    """A cold build of the CPU shared object takes a while: its line
    appears (after DELAY, set to 0 here) and is cleared when it is done."""
    salt = int(rng.integers(1, 1 << 20))
    code = textwrap.dedent(f"""
        import numpy as np, enigma
        from enigma import _progress
        _progress.DELAY = 0.0

        @enigma.kernel
        def slow(A: enigma.f32):
            A[enigma.thread_position_in_grid] = {salt}.0

        a = np.zeros(4, np.float32)
        slow[4](a)
        assert (a == {salt}).all()
        print("ok")
    """)
    err, out = _read_pty(code, {"ENIGMA_CACHE_DIR": str(tmp_path)})
    assert out == "ok\n"
    assert "enigma: building enigma_kernel_slow for cpu (build 1 of this " \
        "run" in err, err
    assert err.endswith("\r\x1b[K")


def test_autotune_shows_its_progress_on_a_terminal(tmp_path):
    # The autotuner's line is the shared progress line: which configuration
    # it is timing, the best so far, cleared at the end.
    code = textwrap.dedent("""
        import numpy as np
        import enigma

        @enigma.kernel
        def scale(a: enigma.f32, n: enigma.Scalar(enigma.u32),
                  out: enigma.f32):
            i = enigma.thread_position_in_grid
            with enigma.if_(i < n):
                out[i] = a[i] * 2.0

        compiled = enigma.compile(scale)

        @enigma.autotune(configs=[32, 64, 128], key=["n"], repeat=1,
                         batch=1)
        def tuned(threads, n):
            return enigma.Launch(compiled, (n, 1, 1), (threads, 1, 1),
                                 scalars=[n], output_bytes=4 * n)

        a = np.arange(1000, dtype=np.float32)
        launch = tuned.best(enigma.CpuRuntime(), [a], output_size=4000,
                            n=1000)
        print(launch.threads)
    """)
    err, out = _read_pty(code, {"ENIGMA_CACHE_DIR": str(tmp_path)})
    assert out.strip() in ("(32, 1, 1)", "(64, 1, 1)", "(128, 1, 1)")
    lines = [u.split(" (")[0] for u in err.split("\r\x1b[K") if u]
    tuning = [u for u in lines if u.startswith("enigma: autotune tuned")]
    assert "enigma: autotune tuned n=1000 0/3 timing 32" in tuning
    assert any(u.startswith("enigma: autotune tuned n=1000 2/3 timing 128, "
                            "best ") and u.endswith(" us") for u in tuning)
    assert err.endswith("\r\x1b[K") and "\n" not in err
