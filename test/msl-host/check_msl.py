#!/usr/bin/env python3
"""Compile Metal Shading Language files as C++ against the host stand-in.

    python3 test/msl-host/check_msl.py DIR_OR_FILES...

Every *.metal file given, or found under a given directory, is compiled with
    $CXX -std=c++17 -fsyntax-only -Wno-attributes -x c++
         -I test/msl-host -I include/enigma/Target/Prelude FILE
(CXX defaults to c++), two at a time. Prints one line per failure with the
compiler's first errors, then "N passed, M failed". Exits 1 if any file
failed or none was found.
"""
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PRELUDE = REPO / "include" / "enigma" / "Target" / "Prelude"
WORKERS = 2
ERRORS_SHOWN = 3


def find_metal_files(args):
    files = []
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            files.extend(sorted(path.rglob("*.metal")))
        elif path.is_file():
            files.append(path)
        else:
            print(f"check_msl: no such file or directory: {arg}", file=sys.stderr)
    return files


def compile_command(compiler, path):
    # clang names the unknown-attribute warning differently from g++; g++
    # ignores -Wno-* options it does not know.
    return [compiler, "-std=c++17", "-fsyntax-only", "-Wno-attributes",
            "-Wno-unknown-attributes", "-x", "c++",
            "-I", str(HERE), "-I", str(PRELUDE), str(path)]


def first_errors(output):
    lines = [line for line in output.splitlines() if "error" in line]
    return " | ".join(lines[:ERRORS_SHOWN]) or output.strip()[:500]


def check(compiler, path):
    result = subprocess.run(compile_command(compiler, path),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    return path, result.returncode == 0, result.stdout


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    files = find_metal_files(argv[1:])
    if not files:
        print("check_msl: no .metal files found", file=sys.stderr)
        print("0 passed, 0 failed")
        return 1
    compiler = os.environ.get("CXX") or "c++"
    failed = 0
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for path, ok, output in pool.map(lambda p: check(compiler, p), files):
            if not ok:
                failed += 1
                print(f"FAIL {path}: {first_errors(output)}")
    print(f"{len(files) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
