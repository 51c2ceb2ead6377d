#!/usr/bin/env python3
"""Writes lib/Target/CFamily/ReservedNames.def: the identifiers a kernel
parameter must not be printed as, in any of the three languages Enigma
prints (MSL, CUDA C++, host C++), because the name means something there
before the kernel's own code is read:

- keywords (C++20, GNU, Metal, CUDA) and the names of types the languages
  predefine (Metal's vector and matrix types, CUDA's built-in variables);
- macros: every macro (not starting with `_`, which is reserved anyway)
  that the CPU prelude and the MSL host runtime's metal_stdlib define, as
  the host compilers of this machine report them (`-dM -E`); the macros of
  Enigma's CUDA prelude and of cuda_fp16.h / cuda_bf16.h; the constants of
  Apple's metal_stdlib (Metal Shading Language specification, "Math
  constants" and "Numeric limits").

Functions, types and constants the kernel's own text uses are avoided at
emission time (CFamilyEmitter), so they need no entry here.

    python3 tools/reserved_names/gen_reserved_names.py > lib/Target/CFamily/ReservedNames.def
    python3 tools/reserved_names/gen_reserved_names.py --check   # exit 1 if stale
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PRELUDE = os.path.join(REPO, "include", "enigma", "Target", "Prelude")
METAL_STDLIB = os.path.join(REPO, "include", "enigma", "Target", "MetalStdlib")
TABLE = os.path.join(REPO, "lib", "Target", "CFamily", "ReservedNames.def")

CPP_KEYWORDS = """
alignas alignof and and_eq asm auto bitand bitor bool break case catch char
char8_t char16_t char32_t class compl concept const consteval constexpr
constinit const_cast continue co_await co_return co_yield decltype default
delete do double dynamic_cast else enum explicit export extern false final
float for friend goto if import inline int long module mutable namespace new
noexcept not not_eq nullptr operator or or_eq override private protected
public register reinterpret_cast requires return short signed sizeof static
static_assert static_cast struct switch template this thread_local throw
true try typedef typeid typename typeof union unsigned using virtual void
volatile wchar_t while xor xor_eq restrict main
""".split()

METAL_KEYWORDS = """
kernel vertex fragment visible stitchable intersection object mesh device
constant thread threadgroup threadgroup_imageblock ray_data object_data
metal half bfloat uint uchar ushort ulong sampler
atomic atomic_int atomic_uint atomic_bool atomic_float atomic_ulong
mem_flags memory_order memory_order_relaxed memory_order_acquire
memory_order_release memory_order_acq_rel memory_order_seq_cst as_type
function_constant is_function_constant_defined imageblock patch
texture1d texture1d_array texture2d
texture2d_array texture3d texturecube texturecube_array texture2d_ms
texture2d_ms_array texture_buffer depth2d depth2d_array depthcube
depthcube_array depth2d_ms depth2d_ms_array simdgroup_matrix
simdgroup_float8x8 simdgroup_half8x8 simdgroup_bfloat8x8
visible_function_table intersection_function_table acceleration_structure
thread_position_in_grid thread_position_in_threadgroup
threadgroup_position_in_grid threads_per_threadgroup threads_per_grid
threadgroups_per_grid thread_index_in_threadgroup thread_index_in_simdgroup
simdgroup_index_in_threadgroup threads_per_simdgroup
simdgroups_per_threadgroup min max abs
""".split()

# Metal's scalar types, their vectors (and packed vectors) and matrices.
_SCALARS = "bool char uchar short ushort int uint long ulong half bfloat float".split()
METAL_TYPES = [f"{t}{n}" for t in _SCALARS for n in (2, 3, 4)] + \
    [f"packed_{t}{n}" for t in _SCALARS for n in (2, 3, 4)] + \
    [f"{t}{c}x{r}" for t in ("float", "half", "bfloat")
     for c in (2, 3, 4) for r in (2, 3, 4)]

CUDA_NAMES = """
threadIdx blockIdx blockDim gridDim warpSize dim3 nv_bfloat16 nv_bfloat162
half2 char1 uchar1 short1 ushort1 int1 uint1 long1 ulong1 longlong1
longlong2 longlong3 longlong4 ulonglong1 ulonglong2 ulonglong3 ulonglong4
float1 double1 double2 double3 double4
""".split()

# Constants of Apple's metal_stdlib (MSL specification: math constants and
# numeric limits); the host stand-in defines a part of them.
APPLE_METAL_MACROS = """
MAXFLOAT HUGE_VALF INFINITY NAN MAXHALF HUGE_VALH HALF_MAX HALF_MIN
HALF_EPSILON HALF_DIG HALF_MANT_DIG HALF_MAX_10_EXP HALF_MAX_EXP
HALF_MIN_10_EXP HALF_MIN_EXP HALF_RADIX FLT_DIG FLT_MANT_DIG FLT_MAX_10_EXP
FLT_MAX_EXP FLT_MIN_10_EXP FLT_MIN_EXP FLT_RADIX FLT_MAX FLT_MIN FLT_EPSILON
BFLOAT_MAX BFLOAT_MIN BFLOAT_EPSILON
M_E_F M_LOG2E_F M_LOG10E_F M_LN2_F M_LN10_F M_PI_F M_PI_2_F M_PI_4_F
M_1_PI_F M_2_PI_F M_2_SQRTPI_F M_SQRT2_F M_SQRT1_2_F M_E_H M_LOG2E_H
M_LOG10E_H M_LN2_H M_LN10_H M_PI_H M_PI_2_H M_PI_4_H M_1_PI_H M_2_PI_H
M_2_SQRTPI_H M_SQRT2_H M_SQRT1_2_H CHAR_BIT SCHAR_MAX SCHAR_MIN UCHAR_MAX
CHAR_MAX CHAR_MIN USHRT_MAX SHRT_MAX SHRT_MIN UINT_MAX INT_MAX INT_MIN
ULONG_MAX LONG_MAX LONG_MIN FP_ILOGB0 FP_ILOGBNAN METAL_VERSION
""".split()

_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z][A-Za-z0-9_]*)", re.M)


def _compiler_macros(argv, source):
    """Macro names (not starting with '_') a compiler defines for `source`,
    or None where the compiler is missing."""
    if shutil.which(argv[0]) is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "probe.cpp")
        with open(path, "w") as f:
            f.write(source)
        out = subprocess.run(argv + ["-dM", "-E", path], capture_output=True,
                             text=True, check=True).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "#define":
            name = parts[1].split("(")[0]
            if not name.startswith("_"):
                names.add(name)
    return names


def _version(argv0):
    if shutil.which(argv0) is None:
        return "missing"
    text = subprocess.run([argv0, "--version"], capture_output=True,
                          text=True).stdout
    return text.splitlines()[0].strip() if text else "unknown"


def _header_macros(paths):
    names = set()
    for path in paths:
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                names.update(_DEFINE.findall(f.read()))
    return names


def compilers():
    """(name, argv, source) of the host compilers the runtimes use."""
    return [
        ("g++", ["g++", "-std=c++17", "-DENIGMA_CPU_LIBMVEC", "-I", PRELUDE],
         '#include "enigma_cpu_prelude.h"\n'),
        ("clang++", ["clang++", "-x", "c++", "-std=c++17", "-Xclang",
                     "-fsycl-is-device", "-I", METAL_STDLIB, "-I", PRELUDE],
         "#include <metal_stdlib>\n"),
    ]


def table():
    sources = {}
    for name, argv, source in compilers():
        macros = _compiler_macros(argv, source)
        if macros is None:
            raise SystemExit(f"{name} is needed to generate the table")
        sources[_version(argv[0])] = macros
    cuda_headers = [os.path.join(PRELUDE, f) for f in os.listdir(PRELUDE)
                    if f.endswith(".cuh")]
    cuda_include = "/usr/local/cuda/include"
    cuda_headers += [os.path.join(cuda_include, f) for f in
                     ("cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h",
                      "cuda_bf16.hpp")]
    macros = set().union(*sources.values()) | _header_macros(cuda_headers) \
        | set(APPLE_METAL_MACROS)
    # Enigma's own prefixes are reserved by rule (ReservedNames.cpp).
    macros = {m for m in macros if not m.startswith(("ENIGMA_", "METAL_"))}
    words = sorted(set(CPP_KEYWORDS) | set(METAL_KEYWORDS) | set(METAL_TYPES)
                   | set(CUDA_NAMES) | macros)
    lines = ["// Generated by tools/reserved_names/gen_reserved_names.py; do not edit.",
             "// Identifiers a kernel parameter is never printed as (keywords,",
             "// predefined types, macros of every target's headers). Macros from:"]
    lines += [f"//   {source}" for source in sorted(sources)]
    lines += ["//   Enigma's CUDA prelude, cuda_fp16.h and cuda_bf16.h, Apple's metal_stdlib",
              "#ifndef ENIGMA_RESERVED", "#error define ENIGMA_RESERVED(name) first",
              "#endif"]
    lines += [f"ENIGMA_RESERVED({w})" for w in words]
    lines += ["#undef ENIGMA_RESERVED"]
    return "\n".join(lines) + "\n"


def missing_from_table(only_recorded=False):
    """Macros this machine's compilers define that the table lacks; with
    `only_recorded`, only for the compilers (versions) the table was
    generated with, since another version may define a few more."""
    with open(TABLE) as f:
        text = f.read()
    listed = set(re.findall(r"ENIGMA_RESERVED\((\w+)\)", text))
    missing = {}
    for name, argv, source in compilers():
        if only_recorded and f"//   {_version(argv[0])}" not in text:
            continue
        macros = _compiler_macros(argv, source)
        if macros is None:
            continue
        lost = sorted(m for m in macros if m not in listed
                      and not m.startswith(("ENIGMA_", "METAL_")))
        if lost:
            missing[name] = lost
    return missing


if __name__ == "__main__":
    if "--check" in sys.argv:
        lost = missing_from_table()
        for name, names in lost.items():
            print(f"{name} defines macros the table lacks: {' '.join(names)}")
        sys.exit(1 if lost else 0)
    sys.stdout.write(table())
