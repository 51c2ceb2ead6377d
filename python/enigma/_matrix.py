"""Matrix types (docs/reference/cooperation.md).

Small float matrices with Metal's semantics: ``floatCxR`` (``halfCxR``) is
column-major and has C columns, each an R-component vector, with C and R
in 2..4. A :class:`Matrix` exists only while tracing: it is held as its
column vectors (vector IRValues), and every operation on it is expanded
into the existing vector and scalar operations (lane extracts, products,
sums, ``dot``, ``make_vec``), so the emitted code is that arithmetic, not
a Metal matrix type.
"""

from __future__ import annotations

from ._cooperation import ThreadgroupTensor
from ._ir import BufferProxy, IRValue, fail, plain_index
from ._vectors import dot, make_vec, vec_extract

__all__ = ["Matrix", "make_matrix", "matrix_from_buffer", "matmul",
           "transpose", "determinant"]

_MATRIX_DTYPES = ("f32", "f16")   # Metal has floatCxR and halfCxR


def _check_size(n, what: str) -> int:
    n = plain_index(n)
    if isinstance(n, bool) or not isinstance(n, int):
        fail(f"{what} must be a Python int, got {type(n).__name__}")
    if not 2 <= n <= 4:
        fail(f"{what} must be 2, 3 or 4, got {n}")
    return n


def _check_vector(v, what: str) -> IRValue:
    if not isinstance(v, IRValue):
        fail(f"{what} must be a traced float vector, got {type(v).__name__}")
    if v.lanes == 1:
        fail(f"{what} must be a float vector of 2 to 4 lanes, got a "
             f"{v.dtype.name} scalar")
    if v.dtype.name not in _MATRIX_DTYPES:
        fail(f"{what} must be a float or half vector, got a "
             f"{v.lanes}-lane {v.dtype.name} vector")
    return v


class Matrix:
    """A ``floatCxR`` (or ``halfCxR``) matrix being traced: C columns of
    R-lane vectors, column-major as in Metal. ``m[c]`` is column ``c`` (a
    vector IRValue), ``m.columns`` the list of columns, ``m.cols`` /
    ``m.rows`` / ``m.dtype`` its shape and element type. ``a @ b`` is
    :func:`matmul`. Build one with :func:`make_matrix` or
    :func:`matrix_from_buffer`."""

    __slots__ = ("_columns",)

    def __init__(self, columns):
        # Callers have validated the columns (make_matrix does).
        self._columns = list(columns)

    @property
    def columns(self) -> list:
        """The column vectors (a new list), column 0 first."""
        return list(self._columns)

    @property
    def cols(self) -> int:
        """Number of columns (C of ``floatCxR``)."""
        return len(self._columns)

    @property
    def rows(self) -> int:
        """Number of rows: the lanes of each column (R of ``floatCxR``)."""
        return self._columns[0].lanes

    @property
    def dtype(self):
        """The element type (``enigma.f32`` or ``enigma.f16``)."""
        return self._columns[0].dtype

    @property
    def type_name(self) -> str:
        """Metal's name of the type, e.g. ``float3x2``."""
        return f"{self.dtype.msl}{self.cols}x{self.rows}"

    def __len__(self) -> int:
        return self.cols

    def __iter__(self):
        return iter(self.columns)

    def __getitem__(self, c) -> IRValue:
        c = plain_index(c)
        if isinstance(c, bool) or not isinstance(c, int):
            fail(f"a {self.type_name} column index must be a Python int, "
                 f"got {type(c).__name__}")
        if not 0 <= c < self.cols:
            fail(f"column {c} is out of range for a {self.type_name} "
                 f"({self.cols} columns)")
        return self._columns[c]

    def element(self, c: int, r: int) -> IRValue:
        """The scalar ``m[c][r]`` (column ``c``, row ``r``)."""
        column = self[c]
        r = plain_index(r)
        if isinstance(r, bool) or not isinstance(r, int) or \
                not 0 <= r < self.rows:
            fail(f"row {r!r} is out of range for a {self.type_name} "
                 f"({self.rows} rows)")
        return vec_extract(column, r)

    def store(self, buf, index) -> None:
        """Writes the ``cols * rows`` elements to ``buf[index]`` onwards,
        column-major (column 0 first); the inverse of
        :func:`matrix_from_buffer`."""
        _check_memory(buf, "Matrix.store")
        for c, column in enumerate(self._columns):
            for r in range(self.rows):
                buf[index + (c * self.rows + r)] = vec_extract(column, r)

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __bool__(self):
        fail("a traced matrix has no Python truth value")

    def __repr__(self) -> str:
        return f"<Matrix {self.type_name}>"


def make_matrix(*columns) -> Matrix:
    """Metal ``floatCxR(c0, c1, ...)``: a matrix of 2 to 4 columns, each a
    float (or half) vector of 2 to 4 lanes, all of one lane count and
    element type.

    ``m = enigma.make_matrix(c0, c1, c2)  # float3x2 when the cs are float2``
    """
    if len(columns) == 1 and isinstance(columns[0], (list, tuple)):
        columns = tuple(columns[0])
    if not 2 <= len(columns) <= 4:
        fail(f"make_matrix takes 2, 3 or 4 column vectors, got "
             f"{len(columns)}")
    first = _check_vector(columns[0], "make_matrix column 0")
    for k, column in enumerate(columns[1:], 1):
        column = _check_vector(column, f"make_matrix column {k}")
        if column.lanes != first.lanes:
            fail(f"make_matrix columns must have equal lanes: column 0 has "
                 f"{first.lanes}, column {k} has {column.lanes}")
        if column.dtype != first.dtype:
            fail(f"make_matrix columns must have one element type: column 0 "
                 f"is {first.dtype.name}, column {k} is {column.dtype.name}; "
                 "convert with metal_cast")
    return Matrix(columns)


def _check_memory(buf, what: str):
    if not isinstance(buf, (BufferProxy, ThreadgroupTensor)):
        fail(f"{what} works on a buffer parameter or a threadgroup_alloc "
             f"tensor, got {type(buf).__name__}")
    if getattr(buf, "lanes", 1) > 1:
        fail(f"{what}: buffer {buf.name} holds vectors (vec_width); matrices "
             "are read and written as scalar elements")
    if buf.dtype.name not in _MATRIX_DTYPES:
        fail(f"{what}: buffer {buf.name} holds {buf.dtype.name}; matrices "
             "need float or half elements")


def matrix_from_buffer(buf, index, cols, rows) -> Matrix:
    """Loads a ``cols x rows`` matrix from ``cols * rows`` consecutive
    elements ``buf[index] ..`` in column-major order: element ``(c, r)`` is
    ``buf[index + c * rows + r]``. ``buf`` is a float or half buffer (or
    threadgroup tensor); ``cols`` and ``rows`` are Python ints in 2..4."""
    _check_memory(buf, "matrix_from_buffer")
    cols = _check_size(cols, "matrix_from_buffer: cols")
    rows = _check_size(rows, "matrix_from_buffer: rows")
    columns = []
    for c in range(cols):
        columns.append(make_vec(*[buf[index + (c * rows + r)]
                                  for r in range(rows)]))
    return Matrix(columns)


def _same_dtype(a, b, what: str):
    if a.dtype != b.dtype:
        fail(f"{what}: operands have different element types "
             f"({a.dtype.name} and {b.dtype.name}); convert with metal_cast")


def _matrix_times_vector(m: Matrix, v: IRValue) -> IRValue:
    """sum over c of m[c] * v[c]: an m.rows-lane vector."""
    result = m._columns[0] * vec_extract(v, 0)
    for c in range(1, m.cols):
        result = result + m._columns[c] * vec_extract(v, c)
    return result


def _describe(x) -> str:
    if isinstance(x, Matrix):
        return x.type_name
    if isinstance(x, IRValue):
        if x.lanes == 1:
            return f"a {x.dtype.name} scalar"
        return f"{x.dtype.msl}{x.lanes}"
    return type(x).__name__


def matmul(a, b):
    """Metal's ``a * b`` with a matrix operand (also ``a @ b``):

    - ``floatKxR * floatCxK`` -> ``floatCxR`` (columns: ``a * b[j]``);
    - ``floatCxR * floatC`` -> ``floatR`` (``sum_c a[c] * b[c]``);
    - ``floatR * floatCxR`` -> ``floatC`` (lane c: ``dot(a, b[c])``).

    Mismatched inner dimensions and element types are an EnigmaError."""
    if isinstance(a, Matrix) and isinstance(b, Matrix):
        _same_dtype(a, b, "matmul")
        if a.cols != b.rows:
            fail(f"matmul: {a.type_name} * {b.type_name} needs the left "
                 f"operand's columns ({a.cols}) to equal the right "
                 f"operand's rows ({b.rows})")
        return Matrix([_matrix_times_vector(a, column)
                       for column in b._columns])
    if isinstance(a, Matrix):
        v = _check_vector(b, f"matmul: the vector in {a.type_name} * vector")
        _same_dtype(a, v, "matmul")
        if v.lanes != a.cols:
            fail(f"matmul: {a.type_name} * {_describe(v)} needs a "
                 f"{a.cols}-lane vector (one lane per column)")
        return _matrix_times_vector(a, v)
    if isinstance(b, Matrix):
        v = _check_vector(a, f"matmul: the vector in vector * {b.type_name}")
        _same_dtype(v, b, "matmul")
        if v.lanes != b.rows:
            fail(f"matmul: {_describe(v)} * {b.type_name} needs a "
                 f"{b.rows}-lane vector (one lane per row)")
        return make_vec(*[dot(v, column) for column in b._columns])
    fail(f"matmul needs at least one Matrix operand, got {_describe(a)} and "
         f"{_describe(b)}")


def _matrix(m, what: str) -> Matrix:
    if not isinstance(m, Matrix):
        fail(f"{what} takes a Matrix, got {_describe(m)}")
    return m


def transpose(m) -> Matrix:
    """Metal ``transpose(m)``: ``floatCxR`` -> ``floatRxC``; column ``r`` of
    the result holds row ``r`` of ``m``."""
    m = _matrix(m, "transpose")
    lanes = [[vec_extract(column, r) for r in range(m.rows)]
             for column in m._columns]
    return Matrix([make_vec(*[lanes[c][r] for c in range(m.cols)])
                   for r in range(m.rows)])


def _det2(a00, a01, a10, a11):
    """Determinant of [[a00, a01], [a10, a11]] (first index: column)."""
    return a00 * a11 - a10 * a01


def determinant(m) -> IRValue:
    """Metal ``determinant(m)`` of a square ``float2x2``, ``float3x3`` or
    ``float4x4``, a scalar. Expanded by cofactors: 2x2 ``a*d - c*b``; 3x3
    along column 0; 4x4 by the 2x2 minors of columns 0-1 times the
    complementary minors of columns 2-3 (Laplace). Non-square matrices are
    an EnigmaError."""
    m = _matrix(m, "determinant")
    if m.cols != m.rows:
        fail(f"determinant needs a square matrix (2x2, 3x3 or 4x4), got "
             f"{m.type_name}")
    n = m.cols
    e = [[vec_extract(column, r) for r in range(n)] for column in m._columns]
    if n == 2:
        return _det2(e[0][0], e[0][1], e[1][0], e[1][1])
    if n == 3:
        # e[c][r]: sum over rows r of e[0][r] * cofactor(0, r).
        m0 = _det2(e[1][1], e[1][2], e[2][1], e[2][2])
        m1 = _det2(e[1][0], e[1][2], e[2][0], e[2][2])
        m2 = _det2(e[1][0], e[1][1], e[2][0], e[2][1])
        return e[0][0] * m0 - e[0][1] * m1 + e[0][2] * m2
    # 4x4: rows {r1, r2} of columns 0-1 against the other two rows of
    # columns 2-3, sign (-1)^(r1 + r2 + 0 + 1).
    total = None
    for r1, r2, sign in ((0, 1, 1), (0, 2, -1), (0, 3, 1),
                         (1, 2, 1), (1, 3, -1), (2, 3, 1)):
        s1, s2 = [r for r in range(4) if r not in (r1, r2)]
        low = _det2(e[0][r1], e[0][r2], e[1][r1], e[1][r2])
        high = _det2(e[2][s1], e[2][s2], e[3][s1], e[3][s2])
        term = low * high
        if total is None:
            total = term
        elif sign > 0:
            total = total + term
        else:
            total = total - term
    return total
