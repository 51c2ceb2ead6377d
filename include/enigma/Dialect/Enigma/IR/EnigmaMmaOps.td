//===- EnigmaMmaOps.td - The matrix multiply-accumulate family -*- tablegen -*-===//
//
// A family of ops generated into its own EnigmaMmaOps.h.inc so that it
// builds independently; it includes only the dialect base, never other
// families' files (TableGen would emit their records again).
//
// Matrix multiply-accumulate on simdgroup fragments (docs/design/mma.md,
// docs/reference/mma.md). A fragment is an M x N matrix held collectively by
// the 32 lanes of one simdgroup, in a register layout that belongs to the
// target; in the IR it is a builtin `tensor<MxNxT>`. A row vector (one value
// per row of an M-row fragment) is a `tensor<MxT>`. Element-wise arithmetic
// on fragments is upstream arith / math on those tensors. The operands of a
// product are tiles in threadgroup memory (or, for A, a fragment), so that
// each target loads them the way its instruction wants.
//
// The fragment ops must be reached by every lane of the simdgroup; the tile
// copy by every thread of the threadgroup.
//
//===----------------------------------------------------------------------===//
#ifndef ENIGMA_MMA_OPS_TD
#define ENIGMA_MMA_OPS_TD

include "enigma/Dialect/Enigma/IR/EnigmaDialect.td"
include "mlir/IR/EnumAttr.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

// Plain I32EnumAttr (an IntegerAttr printed as a keyword): an AttrDef here
// would define the dialect's attribute parser a second time.
def Enigma_MmaReduceKind : I32EnumAttr<"MmaReduceKind", "row reduction", [
    I32EnumAttrCase<"Sum", 0, "sum">,
    I32EnumAttrCase<"Max", 1, "max">,
    I32EnumAttrCase<"Min", 2, "min">
  ]> {
  let cppNamespace = "::enigma";
}

// 8-bit float fragments only hold converted values on their way to
// memory (and from it): the builder computes on them in f32.
def Enigma_FragmentElement : AnyTypeOf<[F32, F16, BF16, I32, I1, F8E4M3FN,
                                        F8E5M2],
    "float, half, bfloat, int, bool or an 8-bit float">;
def Enigma_Fragment : TensorRankOf<[F32, F16, BF16, I32, I1, F8E4M3FN,
                                    F8E5M2], [2]>;
def Enigma_FragmentOrRow : TensorRankOf<[F32, F16, BF16, I32, I1, F8E4M3FN,
                                         F8E5M2], [1, 2]>;
def Enigma_FloatFragment : TensorRankOf<[F32, F16, BF16], [2]>;
def Enigma_FloatRow : TensorRankOf<[F32, F16, BF16], [1]>;
def Enigma_AccumulatorFragment : TensorRankOf<[F32], [2]>;
def Enigma_MmaMemRef : MemRefRankOf<[F32, F16, BF16, I32, F8E4M3FN, F8E5M2],
                                    [1]>;
def Enigma_MmaOperandMemRef : MemRefRankOf<[F32, F16, BF16, F8E4M3FN, F8E5M2],
                                           [1]>;
def Enigma_TileCopyMemRef : MemRefRankOf<[F32, F16, BF16, I8, I16, I32,
                                          F8E4M3FN, F8E5M2], [1]>;

// The shared verifier of every op (MmaOps.cpp): inside a kernel, not under
// control flow that depends on the lane (or, for the tile copy, on the
// thread), and the op's own rules.
class Enigma_MmaOp<string mnemonic, list<Trait> traits = []>
    : Enigma_Op<mnemonic, traits> {
  let hasVerifier = 1;
  let extraClassDefinition = [{
    ::mlir::LogicalResult $cppClass::verify() {
      return ::enigma::verifyMmaOp(getOperation());
    }
  }];
}

def Enigma_MmaFillOp : Enigma_MmaOp<"mma_fill", [NoMemoryEffect]> {
  let summary = "a fragment or row vector with every element `value`";
  let description = [{
    `value` must be the same in every lane of the simdgroup (a value that
    provably differs between lanes is rejected).
  }];
  let arguments = (ins Enigma_FragmentElement:$value);
  let results = (outs Enigma_FragmentOrRow:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
}

def Enigma_MmaIotaOp : Enigma_MmaOp<"mma_iota", [NoMemoryEffect]> {
  let summary = "a fragment of each element's row (dim 0) or column index";
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>,
                                              IntMaxValue<1>]>:$dim);
  let results = (outs TensorRankOf<[I32], [2]>:$result);
  let assemblyFormat = "$dim attr-dict `:` type($result)";
}

def Enigma_MmaLoadOp
    : Enigma_MmaOp<"mma_load", [AttrSizedOperandSegments]> {
  let summary = "a fragment read from memory";
  let description = [{
    Element (r, c) is `memref[offset + r * ld + c]` (with `transpose`,
    `memref[offset + c * ld + r]`); `ld` may be 0 (every row reads the same
    elements). With bounds, elements at `r >= rows` or `c >= cols` are 0 and
    their memory is not read. `offset`, `ld` and the bounds must be the same
    in every lane. The memory is a device buffer or threadgroup memory of
    the fragment's element type.
  }];
  let arguments = (ins Arg<Enigma_MmaMemRef, "", [MemRead]>:$memref,
                       Index:$offset, Index:$ld, Optional<Index>:$rows,
                       Optional<Index>:$cols, UnitAttr:$transpose);
  let results = (outs Enigma_Fragment:$result);
  let assemblyFormat = [{
    $memref `[` $offset `]` `,` $ld (`bounds` $rows^ `,` $cols)? attr-dict
    `:` type($memref) `->` type($result)
  }];
}

def Enigma_MmaGatherOp : Enigma_MmaOp<"mma_gather"> {
  let summary = "a fragment of elements read at per-element indices";
  let description = [{
    Element (r, c) is `memref[offset + index(r, c)]`, `index` an integer
    fragment of the result's shape (built from `mma_iota` and arithmetic),
    read as unsigned. `offset` must be the same in every lane; the indices
    may differ element by element, which is what a layout the matrix
    hardware does not read directly (packed or permuted weights, a paged
    table) needs. Every index must be inside the memory; it is not checked.
  }];
  let arguments = (ins Arg<Enigma_MmaMemRef, "", [MemRead]>:$memref,
                       Index:$offset, TensorRankOf<[I32], [2]>:$index);
  let results = (outs Enigma_Fragment:$result);
  let assemblyFormat = [{
    $memref `[` $offset `+` $index `]` attr-dict `:` type($memref) `,`
    type($index) `->` type($result)
  }];
}

def Enigma_MmaStoreOp
    : Enigma_MmaOp<"mma_store", [AttrSizedOperandSegments]> {
  let summary = "a fragment written to memory";
  let description = [{
    Writes element (r, c) to `memref[offset + r * ld + c]` (with
    `transpose`, `memref[offset + c * ld + r]`). With bounds, elements at
    `r >= rows` or `c >= cols` are not written.
  }];
  let arguments = (ins Enigma_Fragment:$value,
                       Arg<Enigma_MmaMemRef, "", [MemWrite]>:$memref,
                       Index:$offset, Index:$ld, Optional<Index>:$rows,
                       Optional<Index>:$cols, UnitAttr:$transpose);
  let assemblyFormat = [{
    $value `,` $memref `[` $offset `]` `,` $ld (`bounds` $rows^ `,` $cols)?
    attr-dict `:` type($value) `,` type($memref)
  }];
}

def Enigma_MmaOp : Enigma_MmaOp<"mma", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "acc + A * B with A (M x K) and B (K x N) in threadgroup memory";
  let description = [{
    `M x N` come from the accumulator, `K` is the attribute `k`. Element
    (r, c) of A is `a[a_base + swizzle(a_offset + r * a_ld + c)]`, or with
    `a_transpose` `a[a_base + swizzle(a_offset + c * a_ld + r)]` (A stored
    K x M); likewise B (`b_transpose`: B stored N x K). A swizzle is CuTe's
    Swizzle<bits, base, shift> of the offset inside the tile's domain; it
    must keep 16-byte chunks whole (base >= log2(16 / element bytes)).
    `a_base` and `b_base` must be multiples of 16 bytes.

    Operands are f16, bf16 (the same for A and B), f32, or 8-bit floats
    (f8E4M3FN / f8E5M2, A and B of either format: exact products summed
    in f32, K a multiple of 32); the accumulator is f32. f32 operands may
    use TF32 only with `tf32`.

    `a_block_stride` / `b_block_stride`: the stored columns come in blocks
    of `ld` columns, block j at offset j * stride (element (sr, sc) at
    offset + (sc / ld) * stride + sr * ld + sc % ld, before the swizzle):
    the layout Hopper's wgmma reads for a B stored K x N.

    `warpgroup`: the four simdgroups 4q .. 4q + 3 reach the product
    together, each with the next 16 rows of one A tile (its accumulator has
    16 rows) and the same B (its offsets the same in every thread). The result of each simdgroup is the one above;
    the fact lets sm_90a run the four as one wgmma. The front end sets it
    only where it built the offsets that way (enigma.mma(warpgroup=True)).

    `asynchronous` (with `warpgroup`): the product may still be in flight
    when the op returns; the group's previous asynchronous product is
    complete. Its result may only become the accumulator of another
    asynchronous product (also through loop-carried values) or the operand
    of enigma.mma_wait, which completes it. Elsewhere than Hopper every
    product is complete at once.
  }];
  let arguments = (ins Enigma_AccumulatorFragment:$acc,
                       Arg<Enigma_MmaOperandMemRef, "", [MemRead]>:$a,
                       Index:$a_base, Index:$a_offset,
                       Arg<Enigma_MmaOperandMemRef, "", [MemRead]>:$b,
                       Index:$b_base, Index:$b_offset,
                       ConfinedAttr<I64Attr, [IntPositive]>:$k,
                       ConfinedAttr<I64Attr, [IntPositive]>:$a_ld,
                       ConfinedAttr<I64Attr, [IntPositive]>:$b_ld,
                       UnitAttr:$a_transpose, UnitAttr:$b_transpose,
                       OptionalAttr<DenseI32ArrayAttr>:$a_swizzle,
                       OptionalAttr<DenseI32ArrayAttr>:$b_swizzle,
                       UnitAttr:$tf32,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$a_block_stride,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$b_block_stride,
                       UnitAttr:$warpgroup, UnitAttr:$asynchronous);
  let results = (outs Enigma_AccumulatorFragment:$result);
  let assemblyFormat = [{
    $acc `,` $a `[` $a_base `,` $a_offset `]` `,` $b `[` $b_base `,`
    $b_offset `]` attr-dict `:` type($a) `,` type($b) `,` type($acc)
  }];
}

def Enigma_MmaWaitOp
    : Enigma_MmaOp<"mma_wait", [AllTypesMatch<["acc", "result"]>,
                                MemoryEffects<[MemWrite]>]> {
  let summary = "completes the asynchronous products of an accumulator";
  let description = [{
    The result is `acc` once every asynchronous warpgroup product
    (enigma.mma or enigma.mma_reg `asynchronous`) of the simdgroup's group
    is complete; their
    reads of threadgroup memory are over too. It writes nothing; the
    memory effect keeps it in place.

    `pending` = N > 0: only the products issued before the group's N most
    recent ones are complete (Hopper's `wgmma.wait_group N`), so `acc` must
    be older than N asynchronous products. The verifier proves it: at least
    N asynchronous products at the top level of the wait's block precede
    it, after `acc`'s own product when that is in the same block (else
    `acc` comes from before the block: a loop's carried value).
  }];
  let arguments = (ins Enigma_AccumulatorFragment:$acc,
                       DefaultValuedAttr<ConfinedAttr<I64Attr,
                           [IntMinValue<0>, IntMaxValue<7>]>, "0">:$pending);
  let results = (outs Enigma_AccumulatorFragment:$result);
  let assemblyFormat = "$acc attr-dict `:` type($acc)";
}

def Enigma_MmaRegOp
    : Enigma_MmaOp<"mma_reg", [AllTypesMatch<["acc", "result"]>]> {
  let summary = "acc + A * B with A a fragment and B in threadgroup memory";
  let description = [{
    `a` is an M x K fragment of f16 or bf16 (e.g. a softmax converted from
    an accumulator); B is as in enigma.mma, of the same element type, also
    with `b_block_stride`.

    `warpgroup`: the four simdgroups 4q .. 4q + 3 reach the product
    together, each with its own 16-row A fragment and the same B (its
    offsets the same in every thread). The result of each simdgroup is the
    one above; the fact lets sm_90a run the four as one wgmma that reads A
    from registers.

    `asynchronous` (with `warpgroup`): as enigma.mma's. The product may
    still be in flight when the op returns (A's values are read while it
    runs; they are values, so nothing can change them); its result may
    only become the accumulator of another asynchronous product or the
    operand of enigma.mma_wait.
  }];
  let arguments = (ins Enigma_AccumulatorFragment:$acc,
                       TensorRankOf<[F16, BF16], [2]>:$a,
                       Arg<Enigma_MmaOperandMemRef, "", [MemRead]>:$b,
                       Index:$b_base, Index:$b_offset,
                       ConfinedAttr<I64Attr, [IntPositive]>:$b_ld,
                       UnitAttr:$b_transpose,
                       OptionalAttr<DenseI32ArrayAttr>:$b_swizzle,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$b_block_stride,
                       UnitAttr:$warpgroup, UnitAttr:$asynchronous);
  let results = (outs Enigma_AccumulatorFragment:$result);
  let assemblyFormat = [{
    $acc `,` $a `,` $b `[` $b_base `,` $b_offset `]` attr-dict `:`
    type($a) `,` type($b) `,` type($acc)
  }];
}

def Enigma_MmaReduceRowsOp
    : Enigma_MmaOp<"mma_reduce_rows", [NoMemoryEffect]> {
  let summary = "sum, max or min of each row of a fragment";
  let description = [{
    A row vector: element r combines row r of `value`. max and min ignore
    NaN unless a whole row is NaN (fmax / fmin). The order of a sum is the
    target's.
  }];
  let arguments = (ins Enigma_FloatFragment:$value, Enigma_MmaReduceKind:$kind);
  let results = (outs Enigma_FloatRow:$result);
  let assemblyFormat = [{
    $kind $value attr-dict `:` type($value) `->` type($result)
  }];
}

def Enigma_MmaBroadcastRowsOp
    : Enigma_MmaOp<"mma_broadcast_rows", [NoMemoryEffect]> {
  let summary = "a row vector repeated along the columns of a fragment";
  let arguments = (ins TensorRankOf<[F32, F16, BF16, I32, I1], [1]>:$value);
  let results = (outs Enigma_Fragment:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
}

def Enigma_MmaHalvesOp : Enigma_MmaOp<"mma_halves", [NoMemoryEffect]> {
  let summary = "the 16-bit halves of a 32-bit fragment's elements";
  let description = [{
    An M x N fragment of 32-bit words as an M x 2N fragment of f16 or bf16:
    the low and high 16 bits of word (r, c) are the elements (r, j) and
    (r, j + 1) of the result, with, for c = 8 b + 2 i + h (h = 0 or 1),
    j = 16 b + 8 h + 2 i. Each lane keeps the halves of its own words on
    every target (the pairs sit where a product's A operand reads them on
    NVIDIA's tensor cores), so the op moves no data; a kernel that packs
    two 16-bit values per word (4-bit weights decoded two at a time)
    chooses its words' columns by this rule.
  }];
  let arguments = (ins TensorRankOf<[I32, F32], [2]>:$value);
  let results = (outs TensorRankOf<[F16, BF16], [2]>:$result);
  let assemblyFormat = "$value attr-dict `:` type($value) `->` type($result)";
}

def Enigma_CopyTileAsyncOp : Enigma_MmaOp<"copy_tile_async"> {
  let summary = "a tile copied by the whole threadgroup into threadgroup memory";
  let description = [{
    For r < rows, c < cols: `dst[dst_base + swizzle(r * dst_ld + c)] =
    src[src_offset + r * src_ld + c]` when `r < valid_rows` and
    `c < valid_cols`, else 0 (the source is not read there). The threads
    of the threadgroup share the work, so every thread must reach the op
    with the same operands. The copy may complete asynchronously: the
    elements are defined after enigma.copy_async_commit,
    enigma.copy_async_wait and a threadgroup barrier.

    With `block_stride` the columns are stored in blocks of `dst_ld`
    (`cols` a multiple of it): column c lands in block `c / dst_ld`, which
    starts `block_stride` elements after the previous one and is swizzled
    inside itself: `dst[dst_base + (c / dst_ld) * block_stride +
    swizzle(r * dst_ld + c % dst_ld)]` (the layout a product's operand
    with the same `block_stride` reads, when it is a multiple of the
    swizzle's period).
  }];
  let arguments = (ins Arg<Enigma_TileCopyMemRef, "", [MemWrite]>:$dst,
                       Index:$dst_base,
                       Arg<Enigma_TileCopyMemRef, "", [MemRead]>:$src,
                       Index:$src_offset, Index:$src_ld, Index:$valid_rows,
                       Index:$valid_cols,
                       ConfinedAttr<I64Attr, [IntPositive]>:$rows,
                       ConfinedAttr<I64Attr, [IntPositive]>:$cols,
                       ConfinedAttr<I64Attr, [IntPositive]>:$dst_ld,
                       OptionalAttr<DenseI32ArrayAttr>:$dst_swizzle,
                       OptionalAttr<ConfinedAttr<I64Attr, [IntPositive]>>:$block_stride);
  let assemblyFormat = [{
    $dst `[` $dst_base `]` `,` $src `[` $src_offset `]` `,` $src_ld `,`
    $valid_rows `,` $valid_cols attr-dict `:` type($dst) `,` type($src)
  }];
}

def Enigma_CopyAsyncCommitOp : Enigma_MmaOp<"copy_async_commit", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "closes the group of this thread's tile copies issued so far";
  let assemblyFormat = "attr-dict";
}

def Enigma_CopyAsyncWaitOp : Enigma_MmaOp<"copy_async_wait", [
    MemoryEffects<[MemRead, MemWrite]>]> {
  let summary = "waits until at most `pending` recent copy groups are open";
  let description = [{
    The copies of this thread's groups other than the `pending` most
    recently committed ones are complete. A threadgroup barrier afterwards
    makes every thread's completed copies visible to the whole group.
  }];
  let arguments = (ins ConfinedAttr<I64Attr, [IntMinValue<0>,
                                              IntMaxValue<7>]>:$pending);
  let assemblyFormat = "$pending attr-dict";
}

#endif
