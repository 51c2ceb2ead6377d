"""Pieces the attention kernels share, used inside kernel bodies: where a
sequence's rows are (cumulative offsets, clamped so that no value of an
offset array can send a copy outside its tensor), and the copy of a block
of key or value rows into threadgroup memory from a contiguous or a paged
cache, in the layout the products read (rows of 64 elements under the
128-byte swizzle, wider rows in blocks of 64 columns). And, for the
kernels' configuration classes, their numpy integer fields as ints."""

from __future__ import annotations

import dataclasses
import math

from .._control import load_if
from .._dtypes import plain_index
from .._math import iclamp, imin, where
from .._mma import copy_tile, mma_operand, mma_swizzle
from .._threads import metal_cast

NEG_INF = float("-inf")
LOG2E = math.log2(math.e)
LN2 = math.log(2.0)


def plain_fields(config) -> None:
    """Called by a configuration dataclass's ``__post_init__``: its numpy
    integer fields become the Python ints they hold (as the 4-bit
    configurations' do), so ``ForwardConfig(bc=np.int64(32))`` is
    ``ForwardConfig(bc=32)`` and passes the checks of ints."""
    for field in dataclasses.fields(config):
        value = getattr(config, field.name)
        object.__setattr__(config, field.name, plain_index(value))


def u32(x):
    """A traced integer as ``uint``."""
    return metal_cast(x, "uint")


def i32(x):
    """A traced integer as ``int``."""
    return metal_cast(x, "int")


def sequence(cu, b, total):
    """(first row, length) of sequence ``b`` from the cumulative offsets
    ``cu`` (int32), both ``uint``: the start is clamped to ``[0, total]``
    and the end to ``[start, total]``, so that offsets out of order or out
    of range give an empty or shorter sequence, never a read outside the
    tensor (the host checks the values where it can read them)."""
    total = i32(total)
    start = iclamp(i32(cu[b]), 0, total)
    end = iclamp(i32(cu[b + 1]), start, total)
    return u32(start), u32(end - start)


class TileLayout:
    """How a tile of ``rows`` x ``d`` elements is stored in threadgroup
    memory: rows of 64 elements under ``mma_swizzle(64)``, columns beyond
    64 in blocks ``rows * 64`` elements apart (the layout Hopper's wgmma
    reads, K-major or MN-major alike)."""

    def __init__(self, dtype, rows: int, d: int):
        self.dtype, self.rows, self.d = dtype, rows, d
        self.swizzle = mma_swizzle(64, dtype)
        self.block = rows * 64
        self.block_stride = self.block if d > 64 else 0

    @property
    def elements(self) -> int:
        return self.rows * self.d

    def operand(self, tile, *, transpose: bool, row0=0, base=0):
        """The tile (from element ``base`` of ``tile``, a multiple of
        ``elements``) from its row ``row0`` on (a multiple of 8) as an
        ``mma`` operand: ``transpose`` reads it as N x K (K^T of S = Q K^T),
        otherwise as K x N (V of P V)."""
        return mma_operand(tile, ld=64, offset=base + row0 * 64,
                           transpose=transpose, swizzle=self.swizzle,
                           block_stride=self.block_stride)

    def copy(self, tile, src, n: int, *, src_ld, src_offset, valid_rows,
             row0=0, base=0):
        """Copies ``n`` rows of ``src`` (``src_ld`` apart from
        ``src_offset``) into rows ``row0 ..`` of the tile at ``base``; rows
        from ``valid_rows`` on become zero without being read."""
        copy_tile(tile, src, n, self.d, src_ld=src_ld, src_offset=src_offset,
                  dst_ld=64, dst_offset=base + row0 * 64,
                  block_stride=self.block_stride, valid_rows=valid_rows,
                  swizzle=self.swizzle)


class ContiguousKeys:
    """Keys and values of sequence ``b``, head ``hkv`` in a contiguous
    tensor: row ``s`` at ``start * batch_rows + hkv * head_stride + s *
    row_stride`` (``start`` from the cumulative offsets ``cu``)."""

    def __init__(self, K, V, cu, b, hkv, *, total, batch_rows, head_stride,
                 row_stride):
        start, self.length = sequence(cu, b, total)
        self.K, self.V = K, V
        self.base = start * batch_rows + hkv * head_stride
        self.row_stride = row_stride

    def copy(self, layout, tile, which, k0, n: int, row0=0, limit=None,
             base=0):
        """Rows ``k0 .. k0 + n`` of K or V (``which``) into rows ``row0 ..``
        of the tile at ``base`` of ``tile``; rows at or past ``limit``
        (default: the sequence's length) become zero."""
        limit = self.length if limit is None else limit
        layout.copy(tile, self.K if which == "k" else self.V, n,
                    src_ld=self.row_stride,
                    src_offset=self.base + k0 * self.row_stride,
                    valid_rows=where(0, limit - k0, k0 < limit), row0=row0,
                    base=base)


class PagedKeys:
    """Keys and values of sequence ``b``, head ``hkv`` in a paged cache of
    shape (pages, page_size, kv_heads, d): key ``s`` is row ``s %
    page_size`` of page ``table[b * table_stride + s // page_size]``. A
    block of rows is copied in pieces that never cross a page; a page
    number outside ``[0, pages)`` is not read (its rows become zero)."""

    def __init__(self, K, V, table, lengths, b, hkv, *, page_size: int,
                 table_stride, pages, kv_heads, d: int, capacity):
        self.K, self.V, self.table = K, V, table
        self.page_size = page_size
        self.length = u32(iclamp(i32(lengths[b]), 0, i32(capacity)))
        self.row0 = b * table_stride
        self.table_stride, self.pages = table_stride, pages
        self.row_stride = kv_heads * d
        self.page_elements = page_size * kv_heads * d
        self.head = hkv * d

    def copy(self, layout, tile, which, k0, n: int, row0=0, limit=None,
             base=0):
        limit = self.length if limit is None else limit
        piece = math.gcd(self.page_size, n)
        src = self.K if which == "k" else self.V
        for i in range(n // piece):
            r = k0 + i * piece
            slot = r // self.page_size
            page = load_if(self.table, self.row0 + slot,
                           slot < self.table_stride, default=-1)
            ok = (page >= 0) & (u32(page) < self.pages) & (r < limit)
            rows = where(0, imin(limit - r, piece), ok)
            offset = where(0, u32(page) * self.page_elements +
                           (r % self.page_size) * self.row_stride +
                           self.head, ok)
            layout.copy(tile, src, piece, src_ld=self.row_stride,
                        src_offset=offset, valid_rows=rows,
                        row0=row0 + i * piece, base=base)
