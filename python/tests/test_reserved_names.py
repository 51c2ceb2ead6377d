"""Kernel and parameter names that mean something in a target language:
C++ / Metal / CUDA keywords, predefined types and built-in variables,
macros of the targets' headers, and the functions and constants the
kernel's own printed text calls. Each kernel compiles and runs on every
runtime, its CUDA compiles with NVRTC, the printed source renames only the
parameters that need it (a trailing `_`), and the user's names stay in
`compiled.params`, in dispatch errors and in `kernel_name`
(`enigma_kernel_<name>`, docs/design/parameter-names.md)."""

import keyword
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import enigma

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tools", "reserved_names"))

import gen_reserved_names  # noqa: E402

KEYWORDS = ["asm", "inline", "export", "public", "private", "protected",
            "operator", "virtual", "template", "typename", "friend",
            "mutable", "explicit", "register", "volatile", "union", "struct",
            "sizeof", "alignof", "auto", "char", "int", "double", "unsigned",
            "char8_t", "concept", "requires", "co_await", "constexpr",
            "consteval", "decltype", "noexcept", "nullptr", "static_assert",
            "thread_local", "typeid", "dynamic_cast", "reinterpret_cast",
            "wchar_t", "bitand", "compl", "and_eq", "xor_eq", "not_eq",
            "typeof", "restrict", "main", "namespace", "this", "delete",
            "new", "goto", "switch", "case", "default", "do", "catch",
            "throw", "using"]
METAL = ["kernel", "device", "constant", "threadgroup", "thread", "vertex",
         "fragment", "half", "bfloat", "uint", "ulong", "float4", "half2",
         "packed_float3", "float4x4", "sampler", "texture2d", "atomic_uint",
         "simdgroup_float8x8", "metal", "as_type",
         "thread_position_in_grid", "threads_per_simdgroup"]
CUDA = ["threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "dim3",
        "char1", "longlong2", "nv_bfloat16"]
MACROS = ["NULL", "INFINITY", "NAN", "FLT_MAX", "FLT_MIN", "INT32_MAX",
          "UINT8_C", "INT64_C", "SIZE_MAX", "HALF_MAX", "M_PI_F", "M_PI_H",
          "MAXFLOAT", "HUGE_VALF", "CHAR_BIT", "INT_MAX", "strdupa",
          "is_function_constant_defined", "CUDART_INF_FP16",
          "ENIGMA_CPU_RESTRICT", "METAL_FUNC", "_Value", "__hidden"]
# Used by the printed body of the kernel below, not reserved as such.
CALLED = ["sqrt", "fmax", "isnan", "select", "memory_order_relaxed",
          "threadgroup_barrier", "mem_flags", "atomic_fetch_add_explicit",
          "simd_sum", "enigma_float_to_int", "fma"]
# Ordinary names stay as they are.
PLAIN = ["x", "alpha", "n", "value", "out", "vec", "access", "A"]

NAMES = [n for n in KEYWORDS + METAL + CUDA + MACROS + CALLED + PLAIN
         if not keyword.iskeyword(n)]
BATCH = 24  # scalar parameters per kernel (Metal binds at most 31 buffers)


def _kernel(names, kernel_name="k"):
    """A kernel with one input, one output and a scalar parameter per name,
    whose body calls the functions of CALLED."""
    scalars = ", ".join(f"{n}: enigma.Scalar(enigma.f32)" for n in names)
    total = " + ".join(names)
    source = textwrap.dedent(f"""
    def {kernel_name}(A_in: enigma.f32, C_out: enigma.f32, {scalars}):
        t = enigma.thread_position_in_grid
        v = A_in[t] + ({total})
        v = enigma.where(v, 0.0, enigma.isnan(v))
        v = enigma.fmax(enigma.sqrt(enigma.abs(v)), enigma.fma(v, 0.0, 0.0))
        enigma.barrier()
        C_out[t] = v + enigma.metal_cast(enigma.metal_cast(v, "int"), "float") * 0.0
        enigma.atomic_fetch_add(C_out, 64, 1.0)
        C_out[65 + t] = enigma.simd_sum(v)
    """)
    namespace = {"enigma": enigma}
    exec(compile(source, f"<kernel {kernel_name}>", "exec"), namespace)
    return enigma.kernel(namespace[kernel_name])


def _expected(a, values):
    v = np.sqrt(np.abs(a.astype(np.float64) + sum(values)))
    return v


def _nvrtc(source):
    try:
        enigma._core.Runtime.nvrtc_check(source, "sm_90a", [])
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed on this machine")


@pytest.mark.parametrize("batch", range((len(NAMES) + BATCH - 1) // BATCH))
def test_parameters_named_like_target_words_compile_and_run(runtime, rng,
                                                            batch):
    names = NAMES[batch * BATCH:(batch + 1) * BATCH]
    compiled = enigma.compile(_kernel(names))
    assert [p.name for p in compiled.params] == ["A_in", "C_out"] + names
    values = [float(v) for v in rng.integers(0, 4, len(names))]
    a = rng.integers(0, 9, 32).astype(np.float32)
    raw = runtime.execute(compiled, [a], output_size=4 * 97, grid=32,
                          threads=32, scalars=values)
    out = np.frombuffer(raw, np.float32)
    want = _expected(a, values)
    np.testing.assert_allclose(out[:32], want, rtol=1e-6)
    assert out[64] == 32.0
    np.testing.assert_allclose(out[65:97], np.full(32, want.sum(dtype=np.float64)),
                               rtol=1e-5)
    _nvrtc(compiled.cuda_source)


def _identifiers(source, kernel_name):
    """The identifiers of the kernel function (not the prelude)."""
    import re
    return set(re.findall(r"[A-Za-z_]\w*", source[source.index(kernel_name + "("):]))


@pytest.mark.parametrize("name", ["asm", "NULL", "INFINITY", "sqrt", "fmax",
                                  "threadIdx", "float4", "memory_order_relaxed",
                                  "x", "alpha", "vec"])
def test_only_names_that_need_it_are_renamed_in_the_printed_source(name):
    compiled = enigma.compile(_kernel([name]), emit_only=True)
    renamed = name not in PLAIN
    for source in (compiled.metal_source, compiled.cuda_source,
                   compiled.cpp_source):
        words = _identifiers(source, "enigma_kernel_k")
        assert (name + "_" in words) == renamed, (name, source)
        if not renamed:
            assert name in words, (name, source)


def test_errors_and_params_keep_the_users_names(runtime):
    compiled = enigma.compile(_kernel(["asm", "NULL"]))
    assert [p.name for p in compiled.params][2:] == ["asm", "NULL"]
    with pytest.raises(enigma.DispatchError,
                       match=r"scalar parameter NULL \(f32\) needs a number"):
        runtime.execute(compiled, [np.zeros(32, np.float32)],
                        output_size=4 * 97, grid=32, scalars=[1.0, "x"])


@pytest.mark.parametrize("name", ["asm", "inline", "NULL", "INFINITY", "main",
                                  "float4", "threadIdx", "sqrt", "kernel"])
def test_kernels_named_like_target_words_keep_their_names(runtime, name):
    compiled = enigma.compile(_kernel(["alpha"], kernel_name=name))
    assert compiled.kernel_name == f"enigma_kernel_{name}"
    assert f"kernel void enigma_kernel_{name}(" in compiled.metal_source
    a = np.arange(32, dtype=np.float32)
    raw = runtime.execute(compiled, [a], output_size=4 * 97, grid=32,
                          threads=32, scalars=[1.0])
    np.testing.assert_allclose(np.frombuffer(raw, np.float32)[:32],
                               _expected(a, [1.0]), rtol=1e-6)
    _nvrtc(compiled.cuda_source)


def test_the_table_lists_every_macro_of_the_host_compilers():
    """Every macro the host compilers define for the CPU prelude and the
    MSL host runtime's metal_stdlib is in ReservedNames.def (checked where
    the compilers are the versions the table was generated with)."""
    missing = gen_reserved_names.missing_from_table(only_recorded=True)
    assert not missing, (
        f"regenerate lib/Target/CFamily/ReservedNames.def with "
        f"tools/reserved_names/gen_reserved_names.py: {missing}")


def test_the_table_is_what_its_generator_writes():
    with open(gen_reserved_names.TABLE) as f:
        text = f.read()
    for _, argv, _ in gen_reserved_names.compilers():
        if f"//   {gen_reserved_names._version(argv[0])}" not in text:
            pytest.skip("the table was generated with other compilers")
    proc = subprocess.run([sys.executable, os.path.join(
        REPO, "tools", "reserved_names", "gen_reserved_names.py")],
        capture_output=True, text=True, check=True)
    assert proc.stdout == text, (
        "regenerate: python3 tools/reserved_names/gen_reserved_names.py > "
        "lib/Target/CFamily/ReservedNames.def")
