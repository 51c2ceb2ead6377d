"""The values :meth:`Tensor.load` returns (docs/reference/tensor.md): a
:class:`Fragment` of elements in the tensor's logical order, or for 1 to 4
elements at consecutive offsets a :class:`VectorFragment`, the scalar or
vector value itself. Both compute element by element and are what
:meth:`Tensor.store` writes.
"""

from __future__ import annotations

from ._dtypes import as_dtype
from ._ir import IRValue, fail, plain_index, to_value

__all__ = ["Fragment", "VectorFragment"]


class Fragment:
    """The elements of a tensor read by :meth:`Tensor.load`, in the tensor's
    logical order (colexicographic over its shape). Index it, iterate it, or
    compute with it element by element: ``a + b``, ``a * 2.0``, ``-a``,
    ``a.astype(enigma.f16)``; a Fragment (or a list of values, or one value)
    is what :meth:`Tensor.store` writes."""

    __slots__ = ("values", "shape")

    def __init__(self, values, shape=None):
        self.values = list(values)
        self.shape = shape if shape is not None else len(self.values)

    def __len__(self) -> int:
        return len(self.values)

    def __getitem__(self, i):
        return self.values[i]

    def __iter__(self):
        return iter(self.values)

    def __repr__(self) -> str:
        return f"Fragment({len(self.values)} values, shape={self.shape})"

    def astype(self, dtype) -> "Fragment":
        """Every element converted to ``dtype`` (Metal's conversion rules)."""
        dtype = as_dtype(dtype)
        return Fragment([to_value(v, dtype).cast(dtype) for v in self.values],
                        self.shape)

    def _map(self, other, op):
        if isinstance(other, IRValue) and other.lanes > 1:
            other = Fragment([other._lane(n) for n in "xyzw"[:other.lanes]])
        if isinstance(other, Fragment):
            if len(other) != len(self):
                fail(f"element-wise operation on fragments of {len(self)} "
                     f"and {len(other)} values")
            pairs = zip(self.values, other.values)
        else:
            pairs = ((v, other) for v in self.values)
        return Fragment([op(a, b) for a, b in pairs], self.shape)

    def __add__(self, o): return self._map(o, lambda a, b: a + b)
    def __radd__(self, o): return self._map(o, lambda a, b: b + a)
    def __sub__(self, o): return self._map(o, lambda a, b: a - b)
    def __rsub__(self, o): return self._map(o, lambda a, b: b - a)
    def __mul__(self, o): return self._map(o, lambda a, b: a * b)
    def __rmul__(self, o): return self._map(o, lambda a, b: b * a)
    def __truediv__(self, o): return self._map(o, lambda a, b: a / b)
    def __rtruediv__(self, o): return self._map(o, lambda a, b: b / a)

    def __neg__(self):
        return Fragment([-v for v in self.values], self.shape)


# IRValue._bin's op names, for a VectorFragment meeting a Fragment.
_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b,
           "mul": lambda a, b: a * b, "div": lambda a, b: a / b}


class VectorFragment(IRValue):
    """What :meth:`Tensor.load` returns for 1 to 4 elements at consecutive
    offsets (in logical order): the value itself, a scalar for one element
    and a ``float2``/``float3``/``float4`` (``half4``, ``int2``, ...) for
    more, so ``enigma.dot``, ``length`` and vector arithmetic apply, as in
    the original DSL. Like a :class:`Fragment` it also has ``len``,
    ``v[i]``, iteration, ``values`` and ``astype``; arithmetic keeps it a
    VectorFragment, and with a Fragment of the same length it works element
    by element."""

    __slots__ = ("shape",)

    def __init__(self, value: IRValue, shape):
        IRValue.__init__(self, value._tracer, value._value)
        self.shape = shape

    def __len__(self) -> int:
        return self.lanes

    def __getitem__(self, i):
        n = self.lanes
        if isinstance(i, slice):
            return [self[k] for k in range(n)[i]]
        i = plain_index(i)
        if isinstance(i, bool) or not isinstance(i, int):
            fail(f"a fragment is indexed with a Python int, got "
                 f"{type(i).__name__}")
        if not -n <= i < n:
            fail(f"index {i} is out of range for a fragment of {n} values")
        i %= n
        if n == 1:
            return IRValue(self._tracer, self._value)
        return self._lane("xyzw"[i])

    def __iter__(self):
        return iter([self[k] for k in range(self.lanes)])

    @property
    def values(self) -> list:
        """The elements as scalar values, in logical order."""
        return list(self)

    def astype(self, dtype) -> "VectorFragment":
        """Every element converted to ``dtype`` (Metal's conversion rules)."""
        return VectorFragment(self.cast(dtype), self.shape)

    def _wrap(self, result):
        if isinstance(result, IRValue) and result.lanes == self.lanes:
            return VectorFragment(result, self.shape)
        return result

    def _bin(self, op, other, reflected=False):
        if isinstance(other, Fragment):
            mine = Fragment(self.values, self.shape)
            fn = _BINARY.get(op)
            if fn is None:
                fail(f"'{op}' between a vector fragment and a Fragment; "
                     "combine their elements one by one")
            return fn(other, mine) if reflected else fn(mine, other)
        return self._wrap(IRValue._bin(self, op, other, reflected))

    def __neg__(self):
        return self._wrap(IRValue.__neg__(self))

    def __repr__(self) -> str:
        return f"VectorFragment({self.lanes} x {self.dtype!r})"
