"""The original Enigma DSL's public module paths (enigma.tensor, enigma.core,
enigma.tuple, enigma.typing, enigma.ops, enigma.compiler...): each is a thin
re-export of the top-level names, so ``from enigma.tensor import Tensor``
gives the very object ``enigma.Tensor`` is. The tuple helpers and the dtype
attributes are checked against hand-derived values with the original's
semantics."""

import importlib
import sys

import numpy as np
import pytest

import enigma


# --------------------------------------------------------------------------
# Every module path imports and re-exports the top-level objects
# --------------------------------------------------------------------------

MODULE_NAMES = {
    # The tuple helpers: the original's enigma.tensor imported them, so
    # ``from enigma.tensor import idx2crd`` worked there.
    "enigma.tensor": ["Tensor", "tensor_composition", "tensor_zipped_divide",
                      "make_identity_tensor", "Layout", "flatten", "idx2crd",
                      "is_int", "is_tuple", "product"],
    "enigma.core": ["Layout", "Swizzle", "SwizzledLayout", "swizzle",
                    "make_layout", "make_ordered_layout",
                    "make_identity_layout", "size", "cosize", "coalesce",
                    "complement", "composition", "right_inverse",
                    "left_inverse", "logical_divide", "zipped_divide",
                    "blocked_product", "recast_layout", "make_layout_tv",
                    "product", "flatten", "crd2idx",
                    "compact_col_major", "compact_order", "ceil_div", "gcd",
                    "depth", "is_int", "is_tuple"],
    "enigma.tuple": ["is_int", "is_tuple", "rank", "depth", "flatten",
                     "product", "inner_product", "crd2idx", "idx2crd",
                     "compact_col_major", "compact_order", "prefix_product",
                     "ceil_div", "gcd", "shape_div", "elem_scale", "select",
                     "repeat_like", "is_congruent", "is_compatible"],
    "enigma.typing": ["Numeric", "Scalar", "Float32", "Float16", "BFloat16",
                      "Int8", "UInt8", "Int16", "UInt16", "Int32", "UInt32",
                      "Int64", "UInt64", "Bool", "f32", "f16", "bf16", "i8",
                      "u8", "i16", "u16", "i32", "u32", "i64", "u64", "b1"],
    "enigma.ops": ["gemm", "pack_uint8x4", "unpack_uint8x4", "pack_int4x2",
                   "unpack_int4x2", "dequantize_int8"],
    "enigma.ops.gemm": ["gemm"],
    "enigma.ops.quant": ["pack_uint8x4", "unpack_uint8x4", "pack_int4x2",
                         "unpack_int4x2", "dequantize_int8"],
    "enigma.compiler": ["compile", "kernel"],
    "enigma.compiler.compiler": ["CompiledKernel", "compile"],
    "enigma.compiler.kernel": ["kernel", "jit"],
    "enigma.runtime_dispatch": ["MetalRuntime"],
    "enigma.runtime_dispatch.runtime": ["MetalRuntime", "PreparedKernel",
                                        "DeviceCapabilities"],
}


@pytest.mark.parametrize("module_name", sorted(MODULE_NAMES))
def test_module_reexports_the_top_level_objects(module_name):
    module = importlib.import_module(module_name)
    for name in MODULE_NAMES[module_name]:
        assert hasattr(module, name), f"{module_name}.{name} is missing"
        if hasattr(enigma, name):
            assert getattr(module, name) is getattr(enigma, name), \
                f"{module_name}.{name} is not enigma.{name}"


def test_identity_of_the_main_names():
    import enigma.compiler.compiler
    import enigma.compiler.kernel
    import enigma.core
    import enigma.ops
    import enigma.tensor
    import enigma.tuple
    import enigma.typing
    assert enigma.tensor.Tensor is enigma.Tensor
    assert enigma.tensor.tensor_composition is enigma.tensor_composition
    assert enigma.core.Layout is enigma.Layout
    assert enigma.core.make_layout_tv is enigma.make_layout_tv
    assert enigma.tuple.product is enigma.product
    assert enigma.tensor.idx2crd is enigma.tuple.idx2crd
    assert enigma.tuple.select is enigma.select
    assert enigma.tuple.repeat_like is enigma.repeat_like
    assert enigma.typing.Scalar is enigma.Scalar
    assert enigma.typing.f32 is enigma.f32
    assert enigma.typing.Float32 is enigma.Float32
    assert enigma.ops.gemm is enigma.gemm
    assert enigma.compiler.compile is enigma.compile
    assert enigma.compiler.kernel is enigma.kernel
    assert enigma.compiler.compiler.CompiledKernel is enigma.CompiledKernel
    # enigma.compiler.kernel is the decorator (as in the original); the
    # module of that name is in sys.modules.
    assert sys.modules["enigma.compiler.kernel"].jit is enigma.jit


def test_modules_are_reachable_as_attributes():
    # The original's `import enigma` makes the submodules attributes.
    for name in ("tensor", "core", "tuple", "typing", "ops", "compiler"):
        assert getattr(enigma, name).__name__ == f"enigma.{name}"


def test_original_kernel_module_class_names():
    from enigma.compiler import kernel as kmod  # the function, as originally
    assert kmod is enigma.kernel
    km = importlib.import_module("enigma.compiler.kernel")
    assert km.KernelDef is enigma.KernelDefinition
    assert km.JitDef is enigma.JitFunction
    assert km.KernelHandle is enigma.KernelLaunch


def test_private_modules_stay_private():
    # The new modules only import: no new underscore-free module shadows a
    # private one's contents with its own definitions.
    import enigma.tensor
    import enigma.tuple
    for module in (enigma.tensor, enigma.tuple):
        own = [n for n, v in vars(module).items()
               if callable(v) and getattr(v, "__module__", "") == module.__name__]
        assert own == [], f"{module.__name__} defines {own}"


def test_original_style_program_through_the_module_paths(runtime, rng):
    from enigma.compiler.compiler import compile as compile_kernel
    from enigma.compiler.kernel import kernel
    from enigma.typing import Scalar, f32, u32

    @kernel
    def axpy(X: f32, Y: f32, n: Scalar(u32), a: Scalar(f32), Out: f32):
        tid = enigma.thread_position_in_grid
        with enigma.if_(tid < n):
            Out[tid] = X[tid] * a + Y[tid]

    n = int(rng.integers(1, 300))
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    compiled = compile_kernel(axpy)
    raw = runtime.execute(compiled, [x, y], output_size=4 * n,
                          grid=(n, 1, 1), threads=(64, 1, 1),
                          scalars=[n, 1.5])
    expected = (x.astype(np.float64) * 1.5 + y).astype(np.float32)
    np.testing.assert_allclose(np.frombuffer(raw, np.float32), expected,
                               rtol=1e-6, atol=1e-6)


# --------------------------------------------------------------------------
# enigma.typing: dtype classes and Scalar carry metal_name and width
# --------------------------------------------------------------------------

DTYPES = [
    ("f32", "Float32", "float", 32), ("f16", "Float16", "half", 16),
    ("bf16", "BFloat16", "bfloat", 16), ("i8", "Int8", "char", 8),
    ("u8", "UInt8", "uchar", 8), ("i16", "Int16", "short", 16),
    ("u16", "UInt16", "ushort", 16), ("i32", "Int32", "int", 32),
    ("u32", "UInt32", "uint", 32), ("i64", "Int64", "long", 64),
    ("u64", "UInt64", "ulong", 64), ("b1", "Bool", "bool", 1),
]


@pytest.mark.parametrize("short,cls,metal,width", DTYPES)
def test_dtype_metal_name_and_width(short, cls, metal, width):
    import enigma.typing as t
    instance, klass = getattr(t, short), getattr(t, cls)
    assert instance.metal_name == metal and instance.width == width
    # Class attributes, as in the original (enigma.Float32.metal_name).
    assert klass.metal_name == metal and klass.width == width
    assert isinstance(instance, klass) and isinstance(instance, t.Numeric)
    s = t.Scalar(instance)
    assert s.dtype == instance
    assert s.metal_name == metal and s.width == width


def test_scalar_rejects_a_non_type():
    with pytest.raises(enigma.EnigmaError):
        enigma.typing.Scalar(3)


# --------------------------------------------------------------------------
# enigma.tuple: the original's helpers and semantics
# --------------------------------------------------------------------------

def test_tuple_predicates_rank_depth_flatten():
    import enigma.tuple as T
    assert T.is_int(3) and not T.is_int((3,)) and not T.is_int(3.0)
    assert T.is_tuple((1,)) and not T.is_tuple(1) and not T.is_tuple([1])
    assert T.rank(8) == 1 and T.rank((4, 8)) == 2 and T.rank((4, (2, 3))) == 2
    assert T.rank(()) == 0
    assert T.depth(5) == 0 and T.depth((3, 4)) == 1
    assert T.depth((3, (4, 5))) == 2 and T.depth(()) == 1
    assert T.flatten(5) == (5,)
    assert T.flatten((4, (2, (3, 7)), 1)) == (4, 2, 3, 7, 1)
    assert T.flatten(()) == ()


def test_tuple_products():
    import enigma.tuple as T
    assert T.product(8) == 8 and T.product((4, (2, 3))) == 24
    assert T.product(()) == 1
    assert T.inner_product((2, (3, 4)), (5, (6, 7))) == 10 + 18 + 28
    assert T.prefix_product((2, (3, 4))) == (1, 2, 6)
    assert T.prefix_product((2, 3), init=5) == (5, 10)
    assert T.prefix_product(7) == (1,)
    with pytest.raises(enigma.EnigmaError):
        T.inner_product((1, 2), (1, 2, 3))


def test_tuple_crd2idx_idx2crd(rng):
    import enigma.tuple as T
    shape, stride = (4, (2, 3)), (1, (40, 7))
    # Hand-derived: (3, (1, 2)) -> 3 + 40 + 14.
    assert T.crd2idx((3, (1, 2)), shape, stride) == 57
    # An int into a tuple shape is split colexicographically.
    # 13 -> (1, (1, 1)) -> 1 + 40 + 7.
    assert T.crd2idx(13, shape, stride) == 48
    assert T.idx2crd(13, shape) == (1, (1, 1))
    assert T.idx2crd(5, 4) == 1  # the original wraps a plain extent
    for _ in range(20):
        s = tuple(int(x) for x in rng.integers(1, 5, size=3))
        d = T.compact_col_major(s)
        i = int(rng.integers(0, T.product(s)))
        assert T.crd2idx(T.idx2crd(i, s), s, d) == i


def test_tuple_compact_strides():
    import enigma.tuple as T
    assert T.compact_col_major((4, (2, 3))) == (1, (4, 8))
    assert T.compact_col_major(5) == 1
    assert T.compact_col_major((3, 5), current=2) == (2, 6)
    assert T.compact_order((4, 64), (1, 0)) == (64, 1)
    assert T.compact_order((4, 64), (0, 1)) == (1, 4)
    assert T.compact_order((2, 3, 4), (2, 0, 1)) == (12, 1, 3)


def test_tuple_integer_helpers():
    import enigma.tuple as T
    assert T.ceil_div(7, 2) == 4 and T.ceil_div(8, 2) == 4
    assert T.gcd(12, 18) == 6 and T.gcd(7, 0) == 7
    assert T.shape_div(8, 2) == 4 and T.shape_div(8, 1) == 8
    assert T.shape_div(2, 8) == 1
    assert T.elem_scale((2, 3), (10, 100)) == (20, 300)
    assert T.elem_scale(2, (3, (4, 5))) == (6, (8, 10))
    assert T.elem_scale((2, 3), 4) == (8, 12)


def test_tuple_select_and_repeat_like():
    import enigma.tuple as T
    assert T.select((10, 20, 30), mode=1) == 20
    assert T.select((10, 20, 30), mode=[2, 0]) == (30, 10)
    assert T.select((10, (20, 21), 30), 1) == (20, 21)
    # The original's argument order: the value first, the reference second.
    assert T.repeat_like(0, (4, (2, 3))) == (0, (0, 0))
    assert T.repeat_like(7, 5) == 7
    assert T.repeat_like((1, 0), (4, 8)) == ((1, 0), (1, 0))
    assert T.repeat_like(val=1, ref=(2, 2)) == (1, 1)


def test_tuple_congruence_and_compatibility():
    import enigma.tuple as T
    assert T.is_congruent((4, 8), (4, 8))
    assert not T.is_congruent((4, 8), (8, 4))  # the original compares values
    assert not T.is_congruent((4, 8), (4, (2, 4)))
    assert T.is_compatible((4, 8), (32,)) and not T.is_compatible(4, 5)


# --------------------------------------------------------------------------
# enigma.compiler.compiler.CompiledKernel: the original's fields
# --------------------------------------------------------------------------

def test_compiled_kernel_has_the_original_fields():
    from enigma.compiler.compiler import compile as compile_kernel
    from enigma.typing import Scalar, f32, u32

    @enigma.kernel
    def k(X: f32, n: Scalar(u32), a: Scalar(f32), Out: f32):
        tid = enigma.thread_position_in_grid
        Out[tid] = X[tid] * a + enigma.metal_cast(n, "float")

    compiled = compile_kernel(k, emit_only=True)
    assert compiled.param_names == ["X", "n", "a", "Out"]
    assert compiled.num_params == 4
    # (name, parameter index, Metal type) of every scalar parameter.
    assert compiled.scalar_params == [("n", 1, "uint"), ("a", 2, "float")]
    assert compiled.kernel_source == compiled.metal_source
    assert compiled.grid is None and compiled.block is None
    assert compiled.has_metallib in (True, False)


def test_preprocess_kernel_rewrites_enigma_range(runtime, rng):
    # The original's enigma.compiler.preprocessor.preprocess_kernel: the
    # function @enigma.kernel traces, with enigma.range loops rewritten.
    from enigma.compiler.preprocessor import preprocess_kernel

    def prefix(A: enigma.f32, Out: enigma.f32):
        tid = enigma.thread_position_in_grid
        acc = 0.0
        for i in enigma.range(tid + 1):
            acc = acc + A[i]
        Out[tid] = acc

    assert preprocess_kernel(prefix) is not prefix
    compiled = enigma.compile(enigma.kernel(prefix))
    n = int(rng.integers(1, 100))
    a = rng.integers(-4, 4, n).astype(np.float32)
    raw = runtime.execute(compiled, [a], output_size=4 * n, grid=(n, 1, 1),
                          threads=(32, 1, 1))
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), np.cumsum(a))
