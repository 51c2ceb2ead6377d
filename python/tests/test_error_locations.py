"""Deliberate mistakes in kernel bodies: each must raise
the documented exception with a message in plain words that names this file
and the exact line of the mistake, whether the error comes from tracing
(Python), the dialect's verifier or an emitter (C++).

Each mistake is a function registered with ``@mistake``; the line it must
name ends with ``# mistake: <function name>``. tools/reliability_table.py
runs the same list to regenerate the table in docs/reliability.md.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import enigma

_SOURCE_LINES = open(__file__, encoding="utf-8").read().splitlines()


def line_of(tag: str) -> int:
    """The line that ends with ``# mistake: <tag>`` (exactly one)."""
    hits = [number for number, text in enumerate(_SOURCE_LINES, start=1)
            if text.rstrip().endswith(f"# mistake: {tag}")]
    assert len(hits) == 1, f"marker for {tag!r} found {len(hits)} times"
    return hits[0]


class Mistake:
    """A deliberate mistake: what it is, the exception it must raise and a
    regular expression its message must match."""

    def __init__(self, run, description: str, error, pattern: str):
        self.run = run
        self.name = run.__name__
        self.description = description
        self.error = error
        self.pattern = pattern

    def __repr__(self) -> str:
        return self.name


MISTAKES: list[Mistake] = []


def mistake(description: str, pattern: str, error=enigma.EnigmaError):
    def register(run):
        MISTAKES.append(Mistake(run, description, error, pattern))
        return run
    return register


def compile_only(kernel):
    return enigma.compile(kernel, emit_only=True)


# --------------------------------------------------------------------------
# Types and casts
# --------------------------------------------------------------------------

@mistake("as_type between types of different widths",
         r"as_type needs equal widths.*f32 has 32 bits and u16 has 16")
def as_type_to_another_width():
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.u16):
        B[0] = enigma.as_type(A[0], enigma.u16)  # mistake: as_type_to_another_width
    compile_only(k)


@mistake("metal_cast to a type name that does not exist",
         r"'complex' is not an Enigma element type")
def cast_to_an_unknown_type():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = enigma.metal_cast(A[0], "complex")  # mistake: cast_to_an_unknown_type
    compile_only(k)


@mistake("an int literal that does not fit the other operand's type",
         r"the number 300 does not fit in u8")
def literal_too_large_for_u8():
    @enigma.kernel
    def k(A: enigma.u8):
        A[0] = A[0] + 300  # mistake: literal_too_large_for_u8
    compile_only(k)


@mistake("arithmetic on bools", r"arithmetic is not defined for b1")
def arithmetic_on_bools():
    @enigma.kernel
    def k(A: enigma.b1):
        A[0] = A[0] + A[1]  # mistake: arithmetic_on_bools
    compile_only(k)


@mistake("a shift of a float value", r"'<<' is not defined for f32")
def shift_of_a_float():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = A[0] << 1  # mistake: shift_of_a_float
    compile_only(k)


@mistake("a string as an operand",
         r"expected a traced value or a number, got str")
def string_operand():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = A[0] + "1"  # mistake: string_operand
    compile_only(k)


@mistake("numpy's argument order in where (condition first)",
         r"where\(false_value, true_value, condition\) takes Metal's select "
         r"order.*numpy's where\(condition, x, y\)")
def where_in_numpys_order():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = enigma.where(A[0] > 0.0, A[0], 0.0)  # mistake: where_in_numpys_order
    compile_only(k)


# --------------------------------------------------------------------------
# Thread queries
# --------------------------------------------------------------------------

@mistake("thread_position_in_grid called like a function",
         r"enigma\.thread_position_in_grid is a value, not a function: "
         r"write it without parentheses.*or name the dimension")
def thread_position_called():
    @enigma.kernel
    def k(A: enigma.f32):
        i = enigma.thread_position_in_grid()  # mistake: thread_position_called
        A[i] = 1.0
    compile_only(k)


@mistake("a traced value called like a function",
         r"a traced value is not a function \('IRValue' object is not "
         r"callable\)")
def traced_value_called():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = A[1](2)  # mistake: traced_value_called
    compile_only(k)


# --------------------------------------------------------------------------
# Vectors
# --------------------------------------------------------------------------

@mistake("a vector built from components of different types",
         r"make_vec components have different types \(f32 and i32\)")
def vector_of_mixed_types():
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.i32):
        v = enigma.make_vec(A[0], B[0])  # mistake: vector_of_mixed_types
        A[1] = v.x
    compile_only(k)


@mistake("a vector of five components",
         r"make_vec takes 2, 3 or 4 components, got 5")
def vector_of_five():
    @enigma.kernel
    def k(A: enigma.f32):
        v = enigma.make_vec(A[0], A[1], A[2], A[3], A[4])  # mistake: vector_of_five
        A[0] = v.x
    compile_only(k)


@mistake("reading lane .w of a 2-lane vector",
         r"\.w is out of range for a 2-lane vector")
def lane_out_of_range():
    @enigma.kernel
    def k(A: enigma.f32):
        v = enigma.make_float2(A[0], A[1])
        A[0] = v.w  # mistake: lane_out_of_range
    compile_only(k)


@mistake("storing a vector into a buffer of scalars",
         r"cannot store a 2-lane vector into a buffer of scalars")
def vector_into_scalar_buffer():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = enigma.make_float2(A[0], A[1])  # mistake: vector_into_scalar_buffer
    compile_only(k)


@mistake("dot of integer vectors",
         r"dot takes float vectors, got a 2-lane vector of i32")
def dot_of_int_vectors():
    @enigma.kernel
    def k(A: enigma.i32):
        v = enigma.make_vec(A[0], A[1])
        A[0] = enigma.dot(v, v)  # mistake: dot_of_int_vectors
    compile_only(k)


# --------------------------------------------------------------------------
# Indexing
# --------------------------------------------------------------------------

@mistake("a buffer index of float type (traced value)",
         r"a buffer index must be an integer, got f32")
def float_index():
    @enigma.kernel
    def k(A: enigma.f32):
        A[A[0]] = 1.0  # mistake: float_index
    compile_only(k)


@mistake("a buffer index that is a Python float",
         r"index of buffer A must be an integer, got float")
def python_float_index():
    @enigma.kernel
    def k(A: enigma.f32):
        A[1.5] = 1.0  # mistake: python_float_index
    compile_only(k)


@mistake("two indices on a one-dimensional buffer",
         r"buffer A is one-dimensional")
def two_dimensional_index():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0, 1] = 1.0  # mistake: two_dimensional_index
    compile_only(k)


@mistake("a register tensor indexed out of its shape",
         r"index \(9,\) is out of range for a register tensor of shape \(4,\)")
def register_tensor_out_of_range():
    @enigma.kernel
    def k(A: enigma.f32):
        r = enigma.register_tensor((4,), "float")
        A[0] = r[(9,)]  # mistake: register_tensor_out_of_range
    compile_only(k)


# --------------------------------------------------------------------------
# Control flow
# --------------------------------------------------------------------------

@mistake("a Python if on a traced value", r"no Python truth value")
def python_if_on_a_traced_value():
    @enigma.kernel
    def k(A: enigma.f32):
        if A[0] < 1.0:  # mistake: python_if_on_a_traced_value
            A[0] = 1.0
    compile_only(k)


@mistake("Python's range() over a traced value",
         r"cannot be used as a Python integer")
def python_range_of_a_traced_value():
    @enigma.kernel
    def k(A: enigma.u32):
        for i in range(A[0]):  # mistake: python_range_of_a_traced_value
            A[i] = 1
    compile_only(k)


@mistake("for_range with a float step",
         r"loop step must be an integer or a traced integer, got float 0.5")
def for_range_with_a_float_step():
    @enigma.kernel
    def k(A: enigma.f32):
        with enigma.for_range(0, 10, 0.5) as i:  # mistake: for_range_with_a_float_step
            A[i] = 1.0
    compile_only(k)


@mistake("enigma.range with a float step",
         r"loop step must be an integer or a traced integer, got float 0.5")
def range_with_a_float_step():
    @enigma.kernel
    def k(A: enigma.f32):
        for i in enigma.range(0, 10, 0.5):  # mistake: range_with_a_float_step
            A[i] = 1.0
    compile_only(k)


@mistake("for_range with a float upper bound",
         r"loop upper bound must be an integer, got a f32 value")
def for_range_with_a_float_bound():
    @enigma.kernel
    def k(A: enigma.f32):
        with enigma.for_range(0, A[0]) as i:  # mistake: for_range_with_a_float_bound
            A[i] = 1.0
    compile_only(k)


@mistake("where with a non-bool condition",
         r"where: the condition must be a bool, got f32")
def where_with_a_float_condition():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = enigma.where(A[0], 1.0, A[1])  # mistake: where_with_a_float_condition
    compile_only(k)


@mistake("a kernel that returns a value", r"returned a value")
def kernel_returning_a_value():
    @enigma.kernel
    def k(A: enigma.f32):
        return A[0]  # mistake: kernel_returning_a_value
    compile_only(k)


# --------------------------------------------------------------------------
# Cooperation: barriers, simd, threadgroup memory, atomics
# --------------------------------------------------------------------------

@mistake("a barrier inside a branch that depends on the thread id",
         r"error: enigma\.barrier\(\) is under control flow that depends on "
         r"the thread's position")
def barrier_in_divergent_branch():
    @enigma.kernel
    def k(A: enigma.f32):
        tid = enigma.thread_position_in_grid
        with enigma.if_(tid < 4):
            enigma.barrier()  # mistake: barrier_in_divergent_branch
        A[tid] = 1.0
    compile_only(k)


@mistake("a simd reduction in code that depends on the lane",
         r"error: enigma\.simd_sum\(\) is under control flow that depends "
         r"on the thread's lane")
def simd_sum_in_divergent_code():
    @enigma.kernel
    def k(A: enigma.f32):
        tid = enigma.thread_position_in_grid
        with enigma.if_(tid < 4):
            A[tid] = enigma.simd_sum(A[tid])  # mistake: simd_sum_in_divergent_code
    compile_only(k)


@mistake("a barrier inside a while loop whose test depends on the thread",
         r"error: enigma\.barrier\(\) is under control flow that depends "
         r"on the thread's position")
def barrier_in_a_divergent_while_loop():
    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.thread_position_in_grid
        with enigma.while_(lambda: A[t] < 4.0):
            enigma.barrier()  # mistake: barrier_in_a_divergent_while_loop
            A[t] = A[t] + 1.0
    compile_only(k)


@mistake("threadgroup memory over the 227 KiB limit",
         r"needs 240000 bytes.*more than the 232448 bytes \(227 KiB\) any "
         r"target allows")
def threadgroup_memory_over_the_limit():
    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.f32, 60000)  # mistake: threadgroup_memory_over_the_limit
        t[0] = A[0]
        A[1] = t[0]
    compile_only(k)


@mistake("two threadgroup arrays that together pass 227 KiB",
         r"with the 160000 bytes already allocated .*the kernel would use "
         r"240000 bytes")
def threadgroup_memory_over_the_limit_in_total():
    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.f32, 40000)
        u = enigma.threadgroup_alloc(enigma.u32, 20000)  # mistake: threadgroup_memory_over_the_limit_in_total
        t[0] = A[0]
        u[0] = 1
    compile_only(k)


@mistake("threadgroup_alloc of size 0",
         r"threadgroup_alloc: size must be positive, got 0")
def threadgroup_alloc_of_size_zero():
    @enigma.kernel
    def k(A: enigma.f32):
        enigma.threadgroup_alloc(enigma.f32, 0)  # mistake: threadgroup_alloc_of_size_zero
    compile_only(k)


@mistake("an if_ on a comparison of vectors",
         r"an if condition must be one bool, got a 4-lane bool vector.*"
         r"test one lane \(c\.x\)")
def if_on_a_bool_vector():
    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.thread_position_in_grid
        with enigma.if_(A[t] > 0.0):  # mistake: if_on_a_bool_vector
            A[t] = 0.0
    enigma.compile(k, vec_width=4, emit_only=True)


@mistake("a while_ on a comparison of vectors",
         r"a while condition must be one bool, got a 2-lane bool vector")
def while_on_a_bool_vector():
    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.thread_position_in_grid
        v = A[t]
        with enigma.while_(lambda: v < 4.0):  # mistake: while_on_a_bool_vector
            v = v + 1.0
        A[t] = v
    enigma.compile(k, vec_width=2, emit_only=True)


@mistake("a float4 stored into a threadgroup array of floats",
         r"cannot store a 4-lane vector into a threadgroup array, which "
         r"holds scalars")
def vector_into_threadgroup_array():
    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.threadgroup_alloc(enigma.f32, 64)
        t[0] = A[0]  # mistake: vector_into_threadgroup_array
    enigma.compile(k, vec_width=4, emit_only=True)


@mistake("a float4 stored into a register tensor",
         r"cannot store a 4-lane vector into a register array")
def vector_into_register_tensor():
    @enigma.kernel
    def k(A: enigma.f32):
        r = enigma.register_tensor((2,), "float")
        r[0] = A[0]  # mistake: vector_into_register_tensor
        A[1] = r[0]
    enigma.compile(k, vec_width=4, emit_only=True)


@mistake("a bitwise atomic on a float buffer",
         r"atomic_fetch_and needs int, uint, long or ulong memory.*buffer 'A' "
         r"holds f32")
def bitwise_atomic_on_floats():
    @enigma.kernel
    def k(A: enigma.f32):
        enigma.atomic_fetch_and(A, 0, 1.0)  # mistake: bitwise_atomic_on_floats
    compile_only(k)


@mistake("an atomic on a type Metal has no atomics for (u8)",
         r"atomic_fetch_add needs int, uint, long, ulong or float memory.*"
         r"holds u8")
def atomic_on_bytes():
    @enigma.kernel
    def k(A: enigma.u8):
        enigma.atomic_fetch_add(A, 0, 1)  # mistake: atomic_on_bytes
    compile_only(k)


@mistake("an atomic with an unknown memory order",
         r"unknown memory order 'seq_cst'")
def atomic_with_an_unknown_order():
    @enigma.kernel
    def k(A: enigma.u32):
        enigma.atomic_fetch_add(A, 0, 1, order="seq_cst")  # mistake: atomic_with_an_unknown_order
    compile_only(k)


@mistake("barrier flags that do not exist", r"unknown mem_flags 'mem_bogus'")
def barrier_with_unknown_flags():
    @enigma.kernel
    def k(A: enigma.u32):
        enigma.barrier("mem_bogus")  # mistake: barrier_with_unknown_flags
    compile_only(k)


@mistake("a simd_shuffle lane of float type",
         r"simd_shuffle: the lane operand must be an integer scalar, got f32")
def shuffle_with_a_float_lane():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = enigma.simd_shuffle(A[0], A[1])  # mistake: shuffle_with_a_float_lane
    compile_only(k)


@mistake("a simdgroup matrix that is not 8x8",
         r"simdgroup matrices are 8x8, got 4x8")
def simdgroup_matrix_of_a_bad_shape():
    @enigma.kernel
    def k(A: enigma.f32):
        enigma.simdgroup_matrix_load(A, 8, rows=4)  # mistake: simdgroup_matrix_of_a_bad_shape
    compile_only(k)


@mistake("a function constant of an unknown type",
         r"'complex' is not an Enigma element type")
def function_constant_of_an_unknown_type():
    @enigma.kernel
    def k(A: enigma.u32):
        A[0] = enigma.function_constant("complex", 0)  # mistake: function_constant_of_an_unknown_type
    compile_only(k)


@mistake("a function constant index out of range",
         r"index must be in 0\.\.65535, got -1")
def function_constant_index_out_of_range():
    @enigma.kernel
    def k(A: enigma.u32):
        A[0] = enigma.function_constant("uint", -1)  # mistake: function_constant_index_out_of_range
    compile_only(k)


# --------------------------------------------------------------------------
# Queries, arity, values of other kernels
# --------------------------------------------------------------------------

@mistake("a thread query with a dim other than x, y, z",
         r"dim must be 'x', 'y' or 'z', got 'w'")
def bad_dim():
    @enigma.kernel
    def k(A: enigma.u32):
        A[0] = enigma.thread_position_in_threadgroup("w")  # mistake: bad_dim
    compile_only(k)


@mistake("a math function called with too many arguments",
         r"sqrt\(\) takes 1 positional argument but 2 were given")
def math_function_with_two_arguments():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = enigma.sqrt(A[0], A[1])  # mistake: math_function_with_two_arguments
    compile_only(k)


@mistake("a math function called with too few arguments",
         r"clamp\(\) missing 1 required positional argument")
def math_function_missing_an_argument():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = enigma.clamp(A[0], 1.0)  # mistake: math_function_missing_an_argument
    compile_only(k)


@mistake("a popcount of a float", r"popcount needs integer operands, got f32")
def popcount_of_a_float():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = enigma.popcount(A[0])  # mistake: popcount_of_a_float
    compile_only(k)


@mistake("a value traced in one kernel used in another",
         r"belongs to another kernel")
def value_from_another_kernel():
    kept = []

    @enigma.kernel
    def first(A: enigma.f32):
        kept.append(A[0])
    compile_only(first)

    @enigma.kernel
    def second(A: enigma.f32):
        A[0] = kept[0]  # mistake: value_from_another_kernel
    compile_only(second)


@mistake("compiling a kernel inside another kernel's body",
         r"kernel 'inner' is traced inside another kernel's body")
def kernel_compiled_inside_a_kernel():
    @enigma.kernel
    def inner(A: enigma.f32):
        A[0] = 1.0

    @enigma.kernel
    def outer(A: enigma.f32):
        enigma.compile(inner)  # mistake: kernel_compiled_inside_a_kernel
    compile_only(outer)


# --------------------------------------------------------------------------
# The tests
# --------------------------------------------------------------------------

@pytest.mark.parametrize("case", MISTAKES, ids=repr)
def test_mistake_names_the_users_file_and_line(case):
    with pytest.raises(case.error) as info:
        case.run()
    message = str(info.value)
    assert re.search(case.pattern, message, re.S), message
    assert f"{__file__}:{line_of(case.name)}:" in message, message


def test_every_mistake_has_one_marker():
    names = [case.name for case in MISTAKES]
    assert len(names) == len(set(names))
    for name in names:
        line_of(name)


def test_a_thread_query_used_without_its_call_names_the_call():
    """enigma.thread_position_in_grid reads as a value; a newcomer writes
    the other queries the same way. The index error names the call."""
    @enigma.kernel
    def k(A: enigma.f32):
        t = enigma.thread_position_in_threadgroup
        s = enigma.threadgroup_alloc("float", 64)
        s[t] = A[0]
        A[1] = s[0]

    @enigma.kernel
    def j(A: enigma.f32):
        A[enigma.threadgroup_position_in_grid] = 1.0

    for kernel, name in ((k, "thread_position_in_threadgroup"),
                         (j, "threadgroup_position_in_grid")):
        with pytest.raises(enigma.EnigmaError,
                           match=rf"got the function enigma\.{name}: call "
                                 rf"it, enigma\.{name}\(\)"):
            enigma.compile(kernel)


def test_an_element_type_called_as_a_conversion_names_the_spellings():
    """enigma.i32(x) reads like numpy's np.int32(x); it is an EnigmaError
    naming v.cast and metal_cast, not "object is not callable". The class
    from the original's type table, enigma.Int32(x), says the same (it was
    Python's "Int32() takes no arguments")."""
    for convert in (enigma.i32, enigma.Int32):
        @enigma.kernel
        def k(A: enigma.f32, B: enigma.i32):
            i = enigma.thread_position_in_grid
            B[i] = convert(A[i])
        with pytest.raises(enigma.EnigmaError,
                           match=r"enigma.i32 is an element type, not a "
                                 r"conversion: convert a value with "
                                 r"v.cast\(enigma.i32\) or "
                                 r"enigma.metal_cast\(v, 'int'\)"):
            enigma.compile(k)
    # The classes still make their element types (the original spelling).
    assert enigma.Int32() == enigma.i32


def test_divergence_note_names_the_branch():
    # The verifier's note points at the if_ that makes the barrier divergent.
    with pytest.raises(enigma.EnigmaError) as info:
        barrier_in_divergent_branch()
    branch = line_of("barrier_in_divergent_branch") - 1
    assert f"{__file__}:{branch}: note: " in str(info.value)


def test_arity_mistake_of_a_user_helper_stays_a_type_error():
    # Only calls of enigma's own functions become EnigmaError; a mistake in
    # the user's own helper keeps Python's exception.
    def helper(x):
        return x

    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = helper(A[0], A[1])

    with pytest.raises(TypeError) as info:
        compile_only(k)
    assert not isinstance(info.value, enigma.EnigmaError)


def test_dump_mlir_locations_shows_the_users_lines(capsys):
    @enigma.kernel
    def located(A: enigma.f32, n: enigma.Scalar(enigma.u32), C: enigma.f32):
        tid = enigma.thread_position_in_grid                # line +1
        t = enigma.threadgroup_alloc(enigma.f32, 64)        # line +2
        t[tid % 64] = A[tid] * 2.0                          # line +3
        enigma.barrier()                                    # line +4
        acc = 0.0                                           # line +5
        for i in enigma.range(0, n):                        # line +6
            acc = acc + enigma.metal_cast(i, enigma.f32)    # line +7
        v = enigma.make_float2(acc, t[(tid + 1) % 64])      # line +8
        C[tid] = enigma.sqrt(enigma.dot(v, v)) + A[tid]     # line +9

    compiled = enigma.compile(located, emit_only=True,
                              dump_mlir="locations")
    printed = capsys.readouterr().out
    assert f'loc("{__file__}"' in printed
    first = located.__wrapped__.__code__.co_firstlineno
    body = range(first, first + 12)

    def op_lines(mlir: str, strict: bool) -> set:
        lines = set()
        texts = [t.strip() for t in mlir.splitlines() if t.strip()]
        for text in texts[:-1]:  # the last line closes the module
            # A region op's location follows its closing brace.
            if text.startswith(("module", "^")) or text in ("}", "{") or \
                    text.endswith("{"):
                continue
            match = re.search(r'loc\("([^"]+)":(\d+):\d+\)', text)
            if not strict and match is None and "arith.constant" in text:
                continue  # hoisted and shared by the optimiser: no one line
            assert match, f"an operation without a source location: {text}"
            assert match.group(1) == __file__, text
            assert int(match.group(2)) in body, text
            lines.add(int(match.group(2)) - first)
        return lines

    # Every traced op, implicit constants and casts included, carries its
    # line; every body line that creates ops shows up (+0 is the def).
    traced = op_lines(compiled.traced_ir, strict=True)
    assert {0, 2, 3, 4, 5, 7, 8, 9, 10}.issubset(traced), sorted(traced)
    assert op_lines(compiled.mlir_source, strict=False)


def test_plain_dump_mlir_prints_no_locations(capsys):
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = 1.0

    compiled = enigma.compile(k, emit_only=True, dump_mlir=True)
    assert "loc(" not in capsys.readouterr().out
    assert "loc(" not in compiled.mlir_source


def test_dump_mlir_rejects_an_unknown_value():
    @enigma.kernel
    def k(A: enigma.f32):
        A[0] = 1.0

    with pytest.raises(enigma.EnigmaError, match="dump_mlir"):
        enigma.compile(k, emit_only=True, dump_mlir="loc")


def test_a_mistake_in_a_helper_names_the_helper_line():
    def halve(x):
        return enigma.as_type(x, enigma.u16)  # mistake: helper_line

    @enigma.kernel
    def k(A: enigma.f32, B: enigma.u16):
        B[0] = halve(A[0])

    with pytest.raises(enigma.EnigmaError) as info:
        compile_only(k)
    assert f"{__file__}:{line_of('helper_line')}:" in str(info.value)


def test_storing_a_float_into_an_int_buffer_converts_like_c(runtime, rng):
    # Not a mistake: a store converts to the element type (language.md), as
    # assignment does in C and Metal; the fraction is truncated toward zero.
    @enigma.kernel
    def k(A: enigma.f32, B: enigma.i32):
        tid = enigma.thread_position_in_grid
        B[tid] = A[tid]

    a = (rng.standard_normal(37) * 1000).astype(np.float32)
    raw = runtime.execute(compile_only(k), [a], output_size=37 * 4, grid=37,
                          threads=8)
    np.testing.assert_array_equal(np.frombuffer(raw, np.int32),
                                  np.trunc(a.astype(np.float64)).astype(np.int32))
