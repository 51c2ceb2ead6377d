"""Launchers for the command-line tools shipped inside the package.

``pip install`` puts ``enigma-opt`` and ``enigma-translate`` on PATH (the
``[project.scripts]`` of pyproject.toml); each runs the binary of the same
name from ``enigma/bin``. ``--help`` on either says what it does. This module
imports nothing of the package, so the launchers start fast.
"""

import os
import sys


def _run(name: str) -> None:
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", name)
    if not os.access(exe, os.X_OK):
        sys.stderr.write(
            f"{name}: this installation of enigma has no {exe}; reinstall the "
            "package (pip install enigma) or use the binary from a source "
            "build (<build>/bin).\n")
        sys.exit(2)
    os.execv(exe, [name] + sys.argv[1:])


def enigma_opt() -> None:
    """``enigma-opt``: parse, verify and transform enigma-dialect MLIR."""
    _run("enigma-opt")


def enigma_translate() -> None:
    """``enigma-translate``: print enigma-dialect MLIR as MSL, CUDA or C++."""
    _run("enigma-translate")
