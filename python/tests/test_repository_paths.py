"""The repository stands on its own: no tracked file points at a document
that is not in it (the contract is docs/reference/README.md and the pages it
links) or at a path of one machine (an absolute path of a home or work
folder, or a folder beside the checkout)."""

import os
import re
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

# What must not appear, and why. Pieces are joined so that this file does
# not match itself.
FORBIDDEN = [
    (re.compile(r"\bAPI" + r"\.md\b"),
     "a document outside the repository; cite the docs/reference page "
     "that states it"),
    (re.compile(r"(?<![\w.~])/" + r"(work|root)/"),
     "an absolute path of one machine"),
    (re.compile(r"\.\./" + r"shared\b"),
     "a folder outside the checkout"),
]


def _tracked_files() -> list:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT,
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [f for f in out.decode().split("\0") if f]


def offences(text: str) -> list:
    """(line number, what, why) of every forbidden reference in ``text``."""
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, why in FORBIDDEN:
            match = pattern.search(line)
            if match:
                found.append((number, match.group(0), why))
    return found


def test_the_checker_finds_each_kind_of_reference():
    text = ("see API" ".md section 3\n"
            "BUILD = '/wo" "rk/main/build'\n"
            "cache at /ro" "ot/.cache/enigma\n"
            "cp ../sha" "red/spec .\n"
            "fine: ~/.cache/enigma, docs/reference/core.md, "
            "/usr/lib/llvm-19, build/work/x, x.work/y\n")
    assert [n for n, _, _ in offences(text)] == [1, 2, 3, 4]


def test_no_tracked_file_points_outside_the_repository():
    found = []
    for name in _tracked_files():
        path = os.path.join(ROOT, name)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data[:8192]:
            continue  # binary (images)
        text = data.decode("utf-8", errors="replace")
        for number, what, why in offences(text):
            found.append(f"{name}:{number}: {what!r}: {why}")
    assert not found, "\n".join(found)
