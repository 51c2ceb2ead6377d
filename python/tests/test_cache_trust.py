"""The kernel cache as a trust boundary (docs/design/cache.md).

Compiled kernels are native code that later processes load, so the cache
is used only where nobody but the user can write. Each test plays a local
attacker (another uid) or a careless environment (umask 000, links where
folders belong, a header dropped into a prelude set) against real
processes on the CPU backend and the MSL host runtime, and checks that the
victim's kernel still computes the right result, that nothing of the
attacker's runs or receives the victim's files, and that the victim says
so once on stderr.

Files owned by another user can only be made by root: those tests run as
root (as CI does) and are skipped otherwise.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ATTACKER = 65534  # nobody
IS_ROOT = os.geteuid() == 0
needs_root = pytest.mark.skipif(
    not IS_ROOT, reason="files owned by another user can only be made by root")

_BACKENDS = ["cpu", "metal-host"]

# One victim process: runs a kernel and checks it against numpy.
_VICTIM = r'''
import json, sys
import numpy as np
import enigma

backend = sys.argv[1]

@enigma.kernel
def axpy(A: enigma.f32, C: enigma.f32):
    tid = enigma.thread_position_in_grid
    C[tid] = A[tid] * 3.0 + 1.0

rt = {"cpu": enigma.CpuRuntime, "metal-host": enigma.MetalHostRuntime,
      "cuda": enigma.CudaRuntime}[backend]()
a = np.random.default_rng().standard_normal(257).astype(np.float32)
out = np.frombuffer(rt.execute(enigma.compile(axpy), [a], output_size=4 * 257,
                               grid=257, threads=64), np.float32)
want = a * np.float32(3) + np.float32(1)
# CUDA may fuse the multiply-add (NVRTC's default); the host runtimes
# round each operation, as numpy does.
ok = (np.allclose(out, want, rtol=1e-6, atol=1e-6) if backend == "cuda"
      else np.array_equal(out, want))
print(json.dumps({"ok": bool(ok)}))
'''

# A shared object whose constructor leaves a mark: what an attacker plants.
_PLANTED = r'''
#include <stdio.h>
__attribute__((constructor)) static void planted(void) {
  FILE *f = fopen(MARKER, "w");
  if (f) { fputs("attacker code ran", f); fclose(f); }
}
'''


def _script(tmp_path) -> Path:
    path = tmp_path / "victim.py"
    if not path.exists():
        path.write_text(_VICTIM)
    return path


def run_victim(tmp_path, backend, cache=None, env=None, umask=None):
    """Runs the victim on ``backend`` with the cache at ``cache`` (None:
    whatever ``env`` says); returns (CompletedProcess, enigma warnings)."""
    environment = dict(os.environ)
    for name in ("ENIGMA_CACHE_DIR", "ENIGMA_DISABLE_CACHE",
                 "ENIGMA_SOURCE_DUMP_DIR", "ENIGMA_CACHE_GROUP"):
        environment.pop(name, None)
    if cache is not None:
        environment["ENIGMA_CACHE_DIR"] = str(cache)
    for name, value in (env or {}).items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    proc = subprocess.run(
        [sys.executable, str(_script(tmp_path)), backend], env=environment,
        capture_output=True, text=True, timeout=300,
        preexec_fn=(lambda: os.umask(umask)) if umask is not None else None)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1])["ok"], proc.stdout
    warnings = [line for line in proc.stderr.splitlines()
                if "enigma: warning:" in line]
    return proc, warnings


def _kernel_entries(cache: Path, suffixes=(".so",)):
    """(key record, object) of every entry of the cache with one of
    ``suffixes``."""
    root = cache / "v1"
    entries = []
    for key in sorted((root / "keys").iterdir()):
        _, digest, _, suffix = key.read_text().split("\n")[:4]
        if suffix in suffixes:
            entries.append((key, root / "objects" / (digest + suffix)))
    return entries


def _plant(cache: Path, key: Path, library: bytes, owner=None, suffix=".so"):
    """Makes ``key`` name ``library`` (a correct record: hash and size
    match), optionally owned by ``owner``."""
    digest = hashlib.sha256(library).hexdigest()
    obj = cache / "v1" / "objects" / (digest + suffix)
    obj.write_bytes(library)
    key.write_text(f"enigma-cache-entry 1\n{digest}\n{len(library)}\n{suffix}\n")
    if owner is not None:
        os.chown(obj, owner, owner)
        os.chown(key, owner, owner)
    return obj


def _shared_object(tmp_path, marker: Path) -> bytes:
    source = tmp_path / "planted.c"
    source.write_text(_PLANTED)
    out = tmp_path / "planted.so"
    subprocess.run(["cc", "-shared", "-fPIC", f'-DMARKER="{marker}"',
                    str(source), "-o", str(out)], check=True)
    return out.read_bytes()


def _attacker_folder(path: Path, mode=0o777) -> Path:
    path.mkdir()
    os.chown(path, ATTACKER, ATTACKER)
    path.chmod(mode)
    return path


# --------------------------------------------------------------------------
# 1. A cache someone else can write is not used
# --------------------------------------------------------------------------

@needs_root
@pytest.mark.parametrize("backend", _BACKENDS)
def test_temp_fallback_precreated_by_another_user_is_refused(tmp_path,
                                                             backend):
    # No HOME: the cache falls back to <tmp>/enigma-cache-<uid>, a name
    # anyone can create first in a shared temp folder.
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    shared_tmp.chmod(0o1777)
    planted = _attacker_folder(shared_tmp / f"enigma-cache-{os.getuid()}")
    proc, warnings = run_victim(
        tmp_path, backend,
        env={"HOME": None, "XDG_CACHE_HOME": None, "TMPDIR": str(shared_tmp)})
    assert list(planted.iterdir()) == []  # nothing of the victim's there
    assert len(warnings) == 1, proc.stderr
    assert str(planted) in warnings[0] and "owned by" in warnings[0]


@pytest.mark.parametrize("backend", _BACKENDS)
def test_temp_fallback_is_private_and_reused(tmp_path, backend):
    shared_tmp = tmp_path / "tmp"
    shared_tmp.mkdir()
    shared_tmp.chmod(0o1777)
    env = {"HOME": None, "XDG_CACHE_HOME": None, "TMPDIR": str(shared_tmp)}
    _, warnings = run_victim(tmp_path, backend, env=env)
    assert warnings == []
    root = shared_tmp / f"enigma-cache-{os.getuid()}"
    assert stat.S_IMODE(root.stat().st_mode) == 0o700
    assert _kernel_entries(root)
    run_victim(tmp_path, backend, env=env)


@needs_root
@pytest.mark.parametrize("backend", _BACKENDS)
def test_entry_owned_by_another_user_is_never_loaded(tmp_path, backend):
    # Object and key record replaced together (so the content hash
    # matches), both owned by the attacker: the victim must not load it
    # (its constructor would run at dlopen), must drop it and rebuild.
    cache = tmp_path / "cache"
    run_victim(tmp_path, backend, cache)
    marker = tmp_path / "marker"
    library = _shared_object(tmp_path, marker)
    [(key, _)] = _kernel_entries(cache)
    planted = _plant(cache, key, library, owner=ATTACKER)

    _, warnings = run_victim(tmp_path, backend, cache)
    assert not marker.exists(), "the planted object's code ran"
    assert not planted.exists()  # evicted
    [(key, obj)] = _kernel_entries(cache)
    assert key.stat().st_uid == obj.stat().st_uid == os.getuid()
    assert len(warnings) <= 1


@pytest.mark.parametrize("backend", _BACKENDS)
def test_cache_folder_made_writable_by_others_is_made_private(tmp_path,
                                                              backend):
    cache = tmp_path / "cache"
    run_victim(tmp_path, backend, cache)
    objects = cache / "v1" / "objects"
    objects.chmod(0o777)  # e.g. by a tool run under umask 000
    run_victim(tmp_path, backend, cache)
    assert stat.S_IMODE(objects.stat().st_mode) == 0o700


@pytest.mark.parametrize("backend", _BACKENDS)
def test_entry_the_runtime_rejects_is_evicted_and_rebuilt(tmp_path, backend):
    # A whole, hash-consistent object of the user's own that is not a
    # kernel of this runtime (e.g. from a broken toolchain): the load
    # fails, the entry is dropped and the kernel compiled again, in the
    # same run and for every later one.
    cache = tmp_path / "cache"
    run_victim(tmp_path, backend, cache)
    marker = tmp_path / "marker"
    [(key, _)] = _kernel_entries(cache)
    planted = _plant(cache, key, _shared_object(tmp_path, marker))
    run_victim(tmp_path, backend, cache)
    assert not planted.exists()
    [(key, obj)] = _kernel_entries(cache)
    assert obj != planted
    run_victim(tmp_path, backend, cache)


# --------------------------------------------------------------------------
# 2. Links are not followed
# --------------------------------------------------------------------------

@needs_root
@pytest.mark.parametrize("backend", _BACKENDS)
def test_cache_root_linked_by_another_user_is_refused(tmp_path, backend):
    target = _attacker_folder(tmp_path / "attacker")
    link = tmp_path / "cache"
    link.symlink_to(target)
    os.lchown(link, ATTACKER, ATTACKER)
    proc, warnings = run_victim(tmp_path, backend, link)
    assert list(target.iterdir()) == []
    assert len(warnings) == 1, proc.stderr
    assert str(link) in warnings[0]


@needs_root
@pytest.mark.parametrize("backend", _BACKENDS)
def test_cache_inside_a_folder_of_another_user_is_refused(tmp_path, backend):
    # The parent is the attacker's: they could swap the cache folder.
    parent = _attacker_folder(tmp_path / "attacker", mode=0o755)
    cache = parent / "cache"
    cache.mkdir()
    proc, warnings = run_victim(tmp_path, backend, cache)
    assert list(cache.iterdir()) == []
    assert len(warnings) == 1, proc.stderr


@pytest.mark.parametrize("backend", _BACKENDS)
def test_own_link_to_own_folder_is_used(tmp_path, backend):
    target = tmp_path / "real-cache"
    target.mkdir(mode=0o700)
    link = tmp_path / "cache"
    link.symlink_to(target)
    _, warnings = run_victim(tmp_path, backend, link)
    assert warnings == []
    assert _kernel_entries(target)


def _precious_files(tmp_path):
    """The user's own files, two days old: what the clean-up of day-old
    leftovers would delete if it followed links."""
    victim = tmp_path / "precious"
    (victim / "sub").mkdir(parents=True)
    files = [victim / "a.txt", victim / "sub" / "b.txt"]
    old = time.time() - 2 * 86400
    for f in files:
        f.write_text("keep me")
    for p in [*files, victim / "sub", victim]:
        os.utime(p, (old, old))
    return victim, files


@pytest.mark.parametrize("backend", _BACKENDS)
def test_cleanup_removes_a_link_in_tmp_not_what_it_points_to(tmp_path,
                                                             backend):
    cache = tmp_path / "cache"
    run_victim(tmp_path, backend, cache)
    victim, files = _precious_files(tmp_path)
    link = cache / "v1" / "tmp" / "work-old"
    link.symlink_to(victim)
    old = time.time() - 2 * 86400
    os.utime(link, (old, old), follow_symlinks=False)
    run_victim(tmp_path, backend, cache)
    assert not link.is_symlink()
    for f in files:
        assert f.read_text() == "keep me"


@pytest.mark.parametrize("backend", _BACKENDS)
def test_cleanup_never_follows_a_linked_tmp_folder(tmp_path, backend):
    cache = tmp_path / "cache"
    run_victim(tmp_path, backend, cache)
    victim, files = _precious_files(tmp_path)
    tmp = cache / "v1" / "tmp"
    tmp.rename(cache / "v1" / "tmp-was")
    tmp.symlink_to(victim)
    run_victim(tmp_path, backend, cache)
    run_victim(tmp_path, backend, cache)
    for f in files:
        assert f.read_text() == "keep me"
    assert tmp.is_dir() and not tmp.is_symlink()


# --------------------------------------------------------------------------
# 3. Modes do not depend on the umask
# --------------------------------------------------------------------------

@pytest.mark.parametrize("umask", [0o000, 0o002])
@pytest.mark.parametrize("backend", _BACKENDS)
def test_cache_is_private_whatever_the_umask(tmp_path, backend, umask):
    cache = tmp_path / "cache"
    run_victim(tmp_path, backend, cache, umask=umask)
    wrong = []
    for path in [cache, *cache.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        want = 0o700 if path.is_dir() else 0o600
        if stat.S_ISLNK(path.lstat().st_mode) or mode != want:
            wrong.append(f"{path.relative_to(tmp_path)}: {oct(mode)}")
    assert wrong == []


# --------------------------------------------------------------------------
# 4. File sets hold exactly their files
# --------------------------------------------------------------------------

@pytest.mark.parametrize("backend", _BACKENDS)
def test_header_dropped_into_a_prelude_set_is_not_compiled(tmp_path,
                                                           backend):
    cache = tmp_path / "cache"
    run_victim(tmp_path, backend, cache)
    sets = [p for p in (cache / "v1" / "files").iterdir() if p.is_dir()]
    assert sets
    for folder in sets:
        (folder / "stdint.h").write_text('#error "a planted header"\n')
        (folder / "stdint.h").chmod(0o600)
    for key in (cache / "v1" / "keys").iterdir():
        key.unlink()  # every kernel (and precompiled header) compiled again

    run_victim(tmp_path, backend, cache)
    assert not list((cache / "v1" / "files").glob("*/stdint.h"))


# --------------------------------------------------------------------------
# Opt-in: a cache shared by a group
# --------------------------------------------------------------------------

@needs_root
def test_group_shared_cache(tmp_path):
    import grp
    group = grp.getgrgid(ATTACKER)  # nogroup: only a name to share
    cache = tmp_path / "cache"
    env = {"ENIGMA_CACHE_GROUP": group.gr_name}
    _, warnings = run_victim(tmp_path, "cpu", cache, env=env, umask=0o077)
    assert warnings == []
    for path in [cache, *cache.rglob("*")]:
        st = path.lstat()
        assert st.st_gid == group.gr_gid, path
        mode = stat.S_IMODE(st.st_mode)
        assert mode == (0o2770 if path.is_dir() else 0o640), (path, oct(mode))
    # A folder the group may write is refused without the opt-in.
    _, warnings = run_victim(tmp_path, "cpu", cache)
    assert len(warnings) == 1 and "ENIGMA_CACHE_GROUP" in warnings[0]


# --------------------------------------------------------------------------
# The CUDA cubin cache (the same cache; run by scripts/gpu_run.sh)
# --------------------------------------------------------------------------

needs_cuda = pytest.mark.skipif(
    "cuda" not in os.environ.get("ENIGMA_TEST_BACKENDS", ""),
    reason="the cubin cache needs a GPU (ENIGMA_TEST_BACKENDS naming cuda, "
    "as scripts/gpu_run.sh sets)")
_CUBINS = (".cubin", ".ptx")


@needs_cuda
def test_cubin_the_driver_rejects_is_evicted_and_rebuilt(tmp_path):
    cache = tmp_path / "cache"
    run_victim(tmp_path, "cuda", cache)
    [(key, _)] = _kernel_entries(cache, _CUBINS)
    suffix = key.read_text().split("\n")[3]
    planted = _plant(cache, key, b"not a cubin" * 100, suffix=suffix)
    run_victim(tmp_path, "cuda", cache)
    assert not planted.exists()
    [(key, obj)] = _kernel_entries(cache, _CUBINS)
    assert obj != planted and obj.exists()


@needs_root
@needs_cuda
def test_cubin_of_another_user_is_never_used(tmp_path):
    cache = tmp_path / "cache"
    run_victim(tmp_path, "cuda", cache)
    [(key, good)] = _kernel_entries(cache, _CUBINS)
    suffix = key.read_text().split("\n")[3]
    # Their bytes would be accepted by the driver: a copy of the real one.
    planted = _plant(cache, key, good.read_bytes() + b"\0", owner=ATTACKER,
                     suffix=suffix)
    _, warnings = run_victim(tmp_path, "cuda", cache)
    assert not planted.exists()
    [(key, obj)] = _kernel_entries(cache, _CUBINS)
    assert obj.stat().st_uid == os.getuid()
    assert len(warnings) == 1 and "owned by uid 65534" in warnings[0]


@needs_cuda
def test_cubin_cache_is_private_whatever_the_umask(tmp_path):
    cache = tmp_path / "cache"
    run_victim(tmp_path, "cuda", cache, umask=0)
    for path in [cache, *cache.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
