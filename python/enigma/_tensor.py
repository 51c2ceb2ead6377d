"""Tensors: a buffer parameter of a kernel seen through a layout
(docs/reference/tensor.md).

A :class:`Tensor` is a plain description (buffer parameter, element type,
layout, base offset) that host code (an ``@enigma.jit`` function) can
divide and compose with the layout algebra, and that a kernel body indexes,
slices, and reads or writes whole with :meth:`Tensor.load` /
:meth:`Tensor.store`. Offsets are computed with CuTe's rules (``crd2idx``,
in ``_tensor_offsets``): fixed coordinates fold into Python ints at trace
time, traced coordinates (IRValues) become integer ops in the kernel. A
single integer index is the original DSL's raw element index (the layout is
not applied). What ``load()`` returns is in ``_tensor_fragments``; the
layout algebra on tensors (``tensor_zipped_divide``, ``local_tile``, ...)
in ``_tensor_algebra``.

``load()`` / ``store()`` move 2 or 4 elements per access (a ``float4``,
``half4``, ...) wherever the layout makes them contiguous and the offset is
provably a multiple of the width: static offsets are checked directly, a
traced base offset through ``_core.known_power_of_two_divisor``, which reads
how the offset was built (``block * 512 + thread * 4`` is a multiple of 4).
Together with buffer bases aligned to at least 16 bytes (every runtime
allocates so) that makes each vector access aligned to its own size.
"""

from __future__ import annotations

from . import _cooperation
from . import _layout_dynamic as _dynamic
from ._cooperation import ThreadgroupTensor
from ._dtypes import DType, as_dtype
from ._ir import (EnigmaError, IRValue, active_tracer, current_tracer, fail,
                  to_value)
from ._layout import Layout, make_layout
from ._layout_swizzle import SwizzledLayout
from ._layout_tuples import is_integral
from ._tensor_fragments import Fragment, VectorFragment
from ._tensor_offsets import (add, check_coord, crd2idx, has_none, idx2crd,
                              power_of_two_divisor, shape_size, show_coord,
                              slice_offset)

__all__ = ["Tensor", "IdentityTensor"]

# Static-size limit of load()/store(): they unroll one access per element
# (or per vector), so a tensor meant for them is a per-thread fragment.
MAX_FRAGMENT_ELEMENTS = 1024
# Vector accesses move at most 16 bytes (a float4): the alignment every
# backend guarantees for buffer bases.
MAX_VECTOR_BYTES = 16


def _index_value(offset) -> IRValue:
    if isinstance(offset, IRValue):
        return offset
    if offset < 0:
        fail(f"a tensor element lies before the start of its buffer "
             f"(offset {offset})")
    return to_value(offset, as_dtype("u32" if offset < 2**32 else "u64"))


def _make_layout(shape, stride):
    return Layout(shape, stride)


# --------------------------------------------------------------------------
# Tensor
# --------------------------------------------------------------------------

class Tensor:
    """A view of buffer parameter ``buffer_index`` of a kernel through
    ``layout``: element ``c`` lives at ``buffer[base_offset + layout(c)]``.

    ``metal_dtype`` is the element type (``enigma.f32``, ``"float"``, ...);
    ``base_offset`` an int, or inside a kernel a traced integer. In host code
    (an ``@enigma.jit`` function) a Tensor is divided and composed with the
    layout algebra; passed to a kernel it becomes a buffer parameter. Inside
    a kernel body:

    * ``t[i]`` with a single integer (int or traced) reads element
      ``base_offset + i`` of the memory, ``t[i] = v`` writes it: a raw
      element index, the layout is not applied (the original DSL's meaning);
    * ``t[c]`` with a tuple of coordinates, every mode fixed, reads the
      element at coordinate ``c`` through the layout (``t[c] = v`` writes);
    * ``t[None, i]`` keeps the modes given ``None`` and fixes the others: a
      Tensor whose base offset has grown; a tuple with fewer entries than
      modes drops (fixes at 0) the trailing ones;
    * ``t.load()`` / ``t.store(v)`` move every element, vectorised where the
      layout allows (see the module docs).

    ``layout`` may be omitted: the tensor is then the buffer itself, indexed
    with raw element indices (or, with ``shape=``, the compact layout of that
    shape). ``address_space="threadgroup"`` makes the tensor an array of
    threadgroup memory named ``name`` (``shape`` or the layout's cosize
    elements), allocated where it is made in a kernel body (the top level)
    or, passed to a jit kernel, at the top of that kernel; its
    ``buffer_index`` is not used (-1).
    ``buffer_index`` -1 marks a tensor without a buffer (it can be divided
    and sliced, not read).
    """

    # A single integer index is a raw element index (False: a layout index).
    _raw_scalar_index = True

    def __init__(self, name, buffer_index, metal_dtype, layout=None,
                 base_offset=0, address_space="device", shape=None):
        if not isinstance(name, str) or not name:
            raise EnigmaError(f"Tensor: name must be a non-empty string, got "
                              f"{name!r}")
        if not is_integral(buffer_index) or buffer_index < -1:
            raise EnigmaError(f"Tensor {name!r}: buffer_index must be an int "
                              f">= 0 (or -1: no buffer), got {buffer_index!r}")
        dtype = as_dtype(metal_dtype, strict=False)
        if dtype is None:
            raise EnigmaError(f"Tensor {name!r}: {metal_dtype!r} is not an "
                              "element type (use enigma.f32, \"float\", ...)")
        if address_space not in ("device", "threadgroup"):
            raise EnigmaError(f"Tensor {name!r}: address_space must be "
                              f"\"device\" or \"threadgroup\", got "
                              f"{address_space!r}")
        if shape is not None:
            if not (is_integral(shape) or isinstance(shape, tuple)):
                raise EnigmaError(f"Tensor {name!r}: shape must be an int or "
                                  f"a tuple of ints, got {shape!r}")
            if layout is None:
                layout = Layout(shape)
            elif is_integral(shape_size(layout.shape)) and \
                    shape_size(shape) != shape_size(layout.shape):
                raise EnigmaError(f"Tensor {name!r}: shape {shape} does not "
                                  f"match the layout {layout}")
        if layout is not None and not isinstance(
                layout, (Layout, SwizzledLayout)):
            # An identity layout's basis strides would be silently ignored.
            raise EnigmaError(f"Tensor {name!r}: layout must be an "
                              f"enigma.Layout (shape:stride) or an "
                              f"enigma.SwizzledLayout, got "
                              f"{type(layout).__name__}")
        if address_space == "threadgroup" and layout is None:
            raise EnigmaError(f"Tensor {name!r}: a threadgroup tensor needs "
                              "shape= (its element count) or a layout")
        if isinstance(base_offset, IRValue):
            if base_offset.dtype.is_float or base_offset.lanes != 1:
                raise EnigmaError(f"Tensor {name!r}: base_offset must be an "
                                  f"integer, got {base_offset!r}")
        elif not is_integral(base_offset) or base_offset < 0:
            raise EnigmaError(f"Tensor {name!r}: base_offset must be an int "
                              f">= 0 or a traced integer, got {base_offset!r}")
        self.name = name
        self.buffer_index = int(buffer_index)
        self.dtype: DType = dtype
        self.layout = layout
        self.base_offset = base_offset
        self.address_space = address_space
        # Elements of the memory behind the view (threadgroup allocations).
        self._storage_size = None
        if address_space == "threadgroup":
            if getattr(layout, "dynamic", False):
                raise EnigmaError(f"Tensor {name!r}: a threadgroup tensor "
                                  "needs a layout with static extents, got "
                                  f"{layout} (run-time extents)")
            self._storage_size = layout.cosize() + (
                base_offset if is_integral(base_offset) else 0)
        tracer = active_tracer()
        if address_space == "threadgroup" and tracer is not None:
            # Made in a kernel body: allocate here, where it is written.
            self._threadgroup_array(tracer)
        elif tracer is not None and self.buffer_index >= 0:
            # Made in a kernel body: a name that is not the parameter's is
            # reported here, where it is written.
            self._parameter(tracer)

    # --- description -----------------------------------------------------
    @property
    def metal_dtype(self) -> str:
        """The Metal spelling of the element type (``"float"``)."""
        return self.dtype.msl

    element_type = metal_dtype

    @property
    def shape(self):
        """The layout's shape (a nested tuple of ints, or an int); None
        without a layout."""
        return None if self.layout is None else self.layout.shape

    @property
    def stride(self):
        """The layout's stride, nested like :attr:`shape` (of the layout
        under the swizzle, for a swizzled layout)."""
        return None if self.layout is None else self.layout.stride

    @property
    def swizzled(self) -> bool:
        """Whether the layout is a :class:`SwizzledLayout`: element ``c``
        lives at ``base_offset + swizzle(offset + layout(c))``."""
        return isinstance(self.layout, SwizzledLayout)

    def _coordinate_offset(self, inner):
        """The memory offset (from base_offset) of an element whose offset
        in the layout (under any swizzle) is ``inner``."""
        if not self.swizzled:
            return inner
        layout = self.layout
        return layout.swizzle(add(layout.offset, inner))

    def size(self, mode=None) -> int:
        """The number of elements, or of the mode ``mode`` names (an int,
        or a list as a path into the shape, as :func:`enigma.size`); 0
        without a layout."""
        if self.layout is None:
            return 0
        return self.layout.size(mode)

    def __repr__(self) -> str:
        base = ("<traced>" if isinstance(self.base_offset, IRValue)
                else self.base_offset)
        where = "" if self.address_space == "device" else ", threadgroup"
        view = "no layout" if self.layout is None else \
            str(self.layout) if self.swizzled else \
            f"{self.shape}:{self.stride}"
        return (f"Tensor({self.name!r}, buffer {self.buffer_index}, "
                f"{self.dtype.name}, {view}, base_offset={base}{where})")

    def _with(self, layout, base_offset) -> "Tensor":
        """The same buffer through another layout and offset."""
        t = object.__new__(type(self))
        t.__dict__.update(self.__dict__)
        t.layout, t.base_offset = layout, base_offset
        return t

    def _need_layout(self, what: str):
        if self.layout is None:
            fail(f"tensor {self.name} has no layout: {what} needs one "
                 "(index it with a single integer, or give Tensor a layout "
                 "or shape=)")

    # --- indexing ----------------------------------------------------------
    def _offset(self, coord):
        """The element offset of ``coord``: base_offset plus a raw index
        for a single integer, plus layout(coord) for a tuple."""
        if not isinstance(coord, tuple) and self._raw_scalar_index:
            return add(self.base_offset, coord)
        self._need_layout("a coordinate tuple")
        shape, stride = self.shape, self.stride
        if isinstance(coord, tuple) and len(coord) == 1 and \
                not isinstance(shape, tuple):
            coord = coord[0]  # (i,) into a rank-1 shape
        return add(self.base_offset, self._coordinate_offset(
            crd2idx(coord, shape, stride)))

    def __getitem__(self, coord):
        check_coord(coord)
        if has_none(coord):
            return self._slice(coord)
        return self._read(self._offset(coord))

    def __setitem__(self, coord, value):
        check_coord(coord)
        if has_none(coord):
            fail(f"tensor {self.name}: assignment needs every mode fixed; "
                 "to write a slice use t[...].store(values)")
        self._write(self._offset(coord), value)

    def _slice(self, coord) -> "Tensor":
        self._need_layout("slicing")
        shape, stride = self.shape, self.stride
        if not isinstance(coord, tuple):
            coord = (coord,)  # t[None] is t[(None,)], as in the original
        if not isinstance(shape, tuple):
            shape, stride = (shape,), (stride,)
        if len(coord) > len(shape):
            fail(f"tensor {self.name}: slice {show_coord(coord)} has "
                 f"{len(coord)} modes but the shape {self.shape} has "
                 f"{len(shape)}")
        kept = []
        offset = slice_offset(coord, shape, stride, kept)
        if len(kept) == 1:
            layout = _make_layout(kept[0][0], kept[0][1])
        else:
            layout = _make_layout(tuple(s for s, _ in kept),
                                  tuple(d for _, d in kept))
        if self.swizzled:
            # The fixed part's offset goes under the swizzle (CuTe's
            # slicing of a composed layout); base_offset stays outside it.
            outer = self.layout
            return self._with(SwizzledLayout(
                outer.swizzle, add(outer.offset, offset), layout),
                self.base_offset)
        return self._with(layout, add(self.base_offset, offset))

    # --- memory ------------------------------------------------------------
    def _memory(self):
        """(indexable memory, core handle) of this tensor in the kernel
        being traced: a buffer parameter, or the threadgroup array."""
        tracer = current_tracer(f"reading or writing tensor {self.name}")
        if self.address_space == "threadgroup":
            return self._threadgroup_array(tracer)
        if self.buffer_index < 0:
            fail(f"tensor {self.name} has no buffer (buffer_index "
                 f"{self.buffer_index}); give it the index of a buffer "
                 "parameter")
        proxy = self._parameter(tracer)
        if proxy.dtype != self.dtype:
            fail(f"tensor {self.name} has element type {self.dtype.name} but "
                 f"buffer parameter {self.buffer_index} ({proxy.name}) holds "
                 f"{proxy.dtype.name}")
        if proxy.lanes != 1:
            fail(f"tensor {self.name}: buffer {proxy.name} holds vectors "
                 "(vec_width); tensors view scalar buffers")
        return proxy, proxy._buffer

    def _parameter(self, tracer):
        """The buffer proxy of parameter ``buffer_index`` in the kernel
        being traced, which must carry this tensor's name: a name and an
        index that disagree would silently read whichever the index says."""
        buffers = getattr(tracer, "buffers", {})
        proxy = buffers.get(self.buffer_index)
        if proxy is None:
            fail(f"tensor {self.name} views buffer parameter "
                 f"{self.buffer_index}, which the kernel being traced does "
                 "not have (or which is not a buffer)")
        if proxy.name != self.name:
            named = [i for i, p in buffers.items() if p.name == self.name]
            said = (f"names parameter {named[0]} ('{self.name}')" if named
                    else "names no buffer parameter of this kernel")
            fail(f"Tensor '{self.name}' {said}, but its buffer_index "
                 f"{self.buffer_index} is parameter '{proxy.name}'; give the "
                 f"name and the index of the same parameter (Tensor(A.name, "
                 "A.buffer_index, A.metal_dtype))")
        return proxy

    def _threadgroup_array(self, tracer):
        """The threadgroup array of this tensor's name in the kernel being
        traced, allocated on first request (at the builder's position)."""
        arrays = tracer.__dict__.setdefault("tensor_arrays", {})
        array = arrays.get(self.name)
        if array is None:
            handle = tracer.call(
                "coop_threadgroup_alloc", self.dtype.name, self._storage_size,
                context=f"threadgroup tensor {self.name}: its memory is "
                "allocated where the tensor is made or first used, which "
                "must be the top level of the kernel body (not inside an if_ "
                "or a loop): ")
            array = ThreadgroupTensor(tracer, handle, self.dtype,
                                      self._storage_size)
            arrays[self.name] = array
        elif self._storage_size > array.size:
            fail(f"threadgroup tensor {self.name} needs {self._storage_size} "
                 f"elements, but the array of that name has {array.size} "
                 "(make the largest view first)")
        elif array.dtype != self.dtype:
            fail(f"threadgroup tensor {self.name} is used as "
                 f"{self.dtype.name} and as {array.dtype.name}")
        return array, array._array

    def _buffer(self):
        return self._memory()[0]

    def _read(self, offset):
        return self._buffer()[_index_value(offset)]

    def _write(self, offset, value):
        self._buffer()[_index_value(offset)] = value

    def _element_offsets(self, what: str) -> list:
        self._need_layout(f"{what}()")
        n = self.size()
        if not is_integral(n):
            fail(f"tensor {self.name}.{what}() unrolls one access per "
                 "element, so it needs a static size; this tensor's shape "
                 f"{_dynamic.show(self.shape)} has run-time extents (take a "
                 "static tile of it first: local_tile, local_partition)")
        if n > MAX_FRAGMENT_ELEMENTS:
            fail(f"tensor {self.name}.{what}() would unroll {n} element "
                 f"accesses; it is meant for per-thread fragments of at most "
                 f"{MAX_FRAGMENT_ELEMENTS} elements (slice the tensor first)")
        return [crd2idx(i, self.shape, self.stride) for i in range(n)]

    def _access_plan(self, inner, for_store: bool):
        """The accesses (memory offset from base_offset, int or traced;
        width; lanes) that cover the elements at layout offsets `inner`.
        Under a swizzle with a static offset they are grouped by their
        swizzled offsets; with a traced one, by their offsets under the
        swizzle, where an aligned group of w elements stays one group of w
        consecutive elements in memory when the swizzle neither reads nor
        writes the bits below w and the traced offset is a multiple of w."""
        base_divisor = power_of_two_divisor(self.base_offset)
        if not all(is_integral(x) for x in inner):
            # Run-time strides: one access per element.
            return [(self._coordinate_offset(x), 1, [[i]])
                    for i, x in enumerate(inner)]
        if not self.swizzled:
            return self._accesses(inner, for_store, base_divisor,
                                  self._widths())
        sw, offset = self.layout.swizzle, self.layout.offset
        if not isinstance(offset, IRValue):
            memory = [sw(offset + x) for x in inner]
            return self._accesses(memory, for_store, base_divisor,
                                  self._widths())
        divisor = min(base_divisor, power_of_two_divisor(offset))
        moved = sw.yyy_mask | sw.zzz_mask
        widths = tuple(w for w in self._widths()
                       if sw.shift >= 0 and moved & (w - 1) == 0)
        return [(sw(offset + start), width, lanes) for start, width, lanes in
                self._accesses(inner, for_store, divisor, widths)]

    def _widths(self):
        if self.dtype.name == "b1":
            return ()
        return tuple(w for w in (4, 2)
                     if w * self.dtype.itemsize <= MAX_VECTOR_BYTES)

    def _accesses(self, offsets, for_store: bool, base_divisor: int,
                  widths):
        """The memory accesses that cover ``offsets`` (static, per logical
        element): a list of (offset, width, lanes) where ``lanes[j]`` lists
        the logical elements at ``offset + j``. A group of 4 (else 2)
        elements becomes one vector access when all of its offsets are in
        the fragment, in whatever logical order, and the group's offset is a
        provable multiple of the width (`base_divisor`: the power of two the
        offsets start from is known to be a multiple of). A store whose
        elements overlap (a stride-0 mode) stays scalar, in logical order, so
        the last write wins as in the scalar code."""
        at = {}
        for i, off in enumerate(offsets):
            at.setdefault(off, []).append(i)
        if for_store and len(at) != len(offsets):
            return [(off, 1, [[i]]) for i, off in enumerate(offsets)]
        accesses, covered = [], set()
        for off in offsets:  # logical order of first use
            if off in covered:
                continue
            width = 1
            for w in widths:
                start = off - off % w
                group = range(start, start + w)
                if (base_divisor % w == 0 and
                        all(o in at and o not in covered for o in group)):
                    width = w
                    break
            start = off - off % width
            accesses.append((start, width,
                             [at[o] for o in range(start, start + width)]))
            covered.update(range(start, start + width))
        return accesses

    def _whole_vector_access(self, accesses, offsets):
        """The single access that moves exactly ``offsets`` in logical
        order, or None."""
        n = len(offsets)
        if n >= 2 and len(accesses) == 1 and accesses[0][1] == n and \
                accesses[0][2] == [[i] for i in range(n)]:
            return accesses[0]
        return None

    def _is_vector_fragment(self, offsets) -> bool:
        """1 to 4 elements at consecutive offsets, in logical order (load()
        then gives one scalar or vector value; bool stays a Fragment)."""
        n = len(offsets)
        if not all(is_integral(x) for x in offsets):
            return n == 1 and self.dtype.name != "b1"
        return 1 <= n <= 4 and self.dtype.name != "b1" and \
            offsets == list(range(offsets[0], offsets[0] + n))

    def load(self):
        """Reads every element (in logical order), with 2- or 4-wide vector
        loads where possible. 1 to 4 elements at consecutive offsets give a
        :class:`VectorFragment` (a scalar, ``float2``, ``float3`` or
        ``float4`` value); any other fragment a :class:`Fragment`."""
        offsets = self._element_offsets("load")
        mem, handle = self._memory()
        tracer = current_tracer("Tensor.load")
        accesses = self._access_plan(offsets, for_store=False)
        as_vector = self._is_vector_fragment(offsets)
        whole = self._whole_vector_access(accesses, offsets) \
            if as_vector else None
        if whole is not None:
            index = _index_value(add(self.base_offset, whole[0]))
            vec = tracer.call("vector_load", handle, index._value, whole[1])
            return VectorFragment(IRValue(tracer, vec), self.shape)
        values = [None] * len(offsets)
        for off, width, lanes in accesses:
            index = _index_value(add(self.base_offset, off))
            if width == 1:
                lane_values = [mem[index]]
            else:
                vec = tracer.call("vector_load", handle, index._value,
                                  width)
                lane_values = [IRValue(tracer, tracer.call(
                    "vec_extract", vec, j)) for j in range(width)]
            for value, elements in zip(lane_values, lanes):
                for i in elements:
                    values[i] = value
        if as_vector:
            if len(values) == 1:
                return VectorFragment(values[0], self.shape)
            vec = tracer.call("make_vec", [v._value for v in values])
            return VectorFragment(IRValue(tracer, vec), self.shape)
        return Fragment(values, self.shape)

    def store(self, values) -> None:
        """Writes every element: ``values`` is a Fragment or a list of
        :meth:`size` values in logical order, or one value for all (a vector
        IRValue of ``size`` lanes gives its lanes). Values convert to the
        element type. Vector stores where possible, as in :meth:`load`."""
        offsets = self._element_offsets("store")
        n = len(offsets)
        mem, handle = self._memory()
        tracer = current_tracer("Tensor.store")
        accesses = self._access_plan(offsets, for_store=True)
        if isinstance(values, Fragment):
            values = values.values
        elif isinstance(values, IRValue) and values.lanes > 1:
            if values.lanes != n:
                fail(f"tensor {self.name}.store(): a {values.lanes}-lane "
                     f"vector for {n} elements")
            whole = self._whole_vector_access(accesses, offsets)
            if whole is not None:  # the vector as it is, in one access
                index = _index_value(add(self.base_offset, whole[0]))
                vec = values.cast(self.dtype)
                tracer.call("vector_store", handle, index._value,
                            vec._value)
                return
            values = [values._lane(name) for name in "xyzw"[:n]]
        elif not isinstance(values, (list, tuple)):
            values = [values] * n
        if len(values) != n:
            fail(f"tensor {self.name}.store(): {len(values)} values for "
                 f"{n} elements")
        converted = [to_value(v, self.dtype).cast(self.dtype) for v in values]
        for off, width, lanes in accesses:
            index = _index_value(add(self.base_offset, off))
            if width == 1:
                mem[index] = converted[lanes[0][0]]
                continue
            vec = tracer.call("make_vec", [converted[elements[0]]._value
                                           for elements in lanes])
            tracer.call("vector_store", handle, index._value, vec)


def _atomic_method(name):
    def method(self, index, *args, **kwargs):
        check_coord(index)
        if isinstance(index, tuple) or index is None:
            fail(f"tensor {self.name}.{name}: the index is a single integer "
                 "(a raw element index)")
        memory = self._buffer()
        return getattr(_cooperation, name)(
            memory, add(self.base_offset, index), *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"``enigma.{name}`` on element ``base_offset + index`` "
                      "of this tensor's memory (a raw element index, as the "
                      "original DSL's).")
    return method


for _name in ("atomic_load", "atomic_store", "atomic_exchange",
              "atomic_fetch_add", "atomic_fetch_sub", "atomic_fetch_min",
              "atomic_fetch_max", "atomic_fetch_and", "atomic_fetch_or",
              "atomic_fetch_xor", "atomic_compare_exchange_weak"):
    setattr(Tensor, _name, _atomic_method(_name))
del _name


class IdentityTensor(Tensor):
    """What :func:`make_identity_tensor` returns: element ``c`` is the
    coordinate of ``c`` in the original shape (a tuple, nested like it),
    which survives slicing, division and composition. Read-only; for
    predication (``with enigma.if_(crd[0] < M): ...``). A single integer
    index is a linear index through the layout (CuTe's meaning): there is
    no buffer behind an identity tensor to index raw."""

    _raw_scalar_index = False

    def __init__(self, shape):
        if _dynamic.has_traced(shape):
            # Run-time extents: basis strides keep one component per mode,
            # so a coordinate past an extent stays past it when decoded.
            shape = _dynamic.leaf_tuple(shape, "make_identity_tensor's shape")
            modes = shape if isinstance(shape, tuple) else (shape,)
            strides = tuple(_dynamic.compact_col_major(
                m, _dynamic.Basis.unit(k, len(modes)))
                for k, m in enumerate(modes))
            layout = Layout(shape, strides if isinstance(shape, tuple)
                            else strides[0])
        else:
            layout = make_layout(shape)
        super().__init__("identity", -1, "i32", layout)
        self.coordinate_shape = shape

    def _decode(self, offset):
        if isinstance(offset, _dynamic.Basis) or (
                is_integral(offset) and offset == 0 and self.layout.dynamic):
            modes = self.coordinate_shape if isinstance(
                self.coordinate_shape, tuple) else (self.coordinate_shape,)
            parts = offset.parts if isinstance(offset, _dynamic.Basis) \
                else (0,) * len(modes)
            coord = tuple(idx2crd(p, m) for p, m in zip(parts, modes))
            return coord if isinstance(self.coordinate_shape, tuple) \
                else coord[0]
        return idx2crd(offset, self.coordinate_shape)

    def _read(self, offset):
        return self._decode(offset)

    def _write(self, offset, value):
        fail("an identity tensor is read-only: its elements are coordinates")

    def load(self) -> list:
        """Every element's coordinate, in logical order."""
        offsets = self._element_offsets("load")
        return [self._decode(add(self.base_offset, o)) for o in offsets]

    def store(self, values) -> None:
        """Always an error: an identity tensor holds coordinates."""
        fail("an identity tensor is read-only: its elements are coordinates")

    def __repr__(self) -> str:
        return (f"IdentityTensor({self.coordinate_shape}, "
                f"{self.shape}:{self.stride})")
