#!/usr/bin/env python3
"""Compile Metal Shading Language files against the MSL host runtime's
metal_stdlib (real address spaces; see docs/design/msl-host-runtime.md).

    python3 test/msl-host/check_msl.py [--expect-errors] DIR_OR_FILES...

Every *.metal file given, or found under a given directory, goes through
enigma.MetalHostRuntime.check_source: each kernel's signature must be one
the runtime can run, and the source must compile with clang++ (function
constants undefined). Two files are checked at a time. Prints one line per
failure with the first errors, then "N passed, M failed". Exits 1 if any
file failed or none was found.

With --expect-errors every file must be rejected, with a message that
contains the text of each of its `// expect-error: TEXT` lines; a file that
compiles, or fails for another reason, is a failure.

The enigma package is taken from the repository's python/ folder with the
compiled core of $ENIGMA_CORE_DIR, else of <repo>/build/python/enigma.
"""
import os
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
WORKERS = 2
ERRORS_SHOWN = 3


def import_enigma():
    if not os.environ.get("ENIGMA_CORE_DIR"):
        built = REPO / "build" / "python" / "enigma"
        if built.is_dir():
            os.environ["ENIGMA_CORE_DIR"] = str(built)
    sys.path.insert(0, str(REPO / "python"))
    import enigma
    return enigma


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


def first_errors(message):
    lines = [line for line in message.splitlines() if "error" in line]
    return " | ".join(lines[:ERRORS_SHOWN]) or message.strip()[:500]


def check(enigma, path, expect_errors):
    text = path.read_text()
    try:
        enigma.MetalHostRuntime.check_source(text, path.name)
        error = None
    except enigma.EnigmaRuntimeError as e:
        error = str(e)
    if not expect_errors:
        return path, error is None, error or ""
    if error is None:
        return path, False, "compiled, but must be rejected"
    wanted = [line.split("expect-error:", 1)[1].strip()
              for line in text.splitlines() if "expect-error:" in line]
    if not wanted:
        return path, False, "has no '// expect-error: TEXT' line"
    missing = [w for w in wanted if w not in error]
    if missing:
        return path, False, (f"rejected, but the message lacks {missing}: "
                             + error)
    return path, True, ""


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 1
    expect_errors = "--expect-errors" in argv[1:]
    files = find_metal_files([a for a in argv[1:] if a != "--expect-errors"])
    if not files:
        print("check_msl: no .metal files found", file=sys.stderr)
        print("0 passed, 0 failed")
        return 1
    enigma = import_enigma()
    failed = 0
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        for path, ok, output in pool.map(lambda p: check(enigma, p, expect_errors),
                                         files):
            if not ok:
                failed += 1
                shown = output if expect_errors else first_errors(output)
                print(f"FAIL {path}: {shown}")
    print(f"{len(files) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
