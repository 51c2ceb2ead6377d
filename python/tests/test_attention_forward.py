"""enigma.attention forward and decode on every backend under test, at small
and odd sizes, against float64 numpy (python/tests/_attention_reference.py,
where the tolerance is argued): grouped and multi-query heads, Sq != Skv
both ways with bottom-right causal masks, variable-length batches with
empty sequences, paged caches with shuffled pages, the split-key decode
kernel, and the checks of the arguments."""

import numpy as np
import pytest

import enigma.attention as ea
from _attention_reference import (check_forward, make, paged_cache,
                                  reference_bhsd, reference_varlen, values)


def _metal(runtime):
    return runtime.name in ("metal", "metal-host")


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("b,hq,hkv,sq,skv,d", [
    (1, 1, 1, 1, 1, 64),         # one row, one key
    (2, 4, 2, 33, 70, 64),       # grouped heads, Sq < Skv, edges
    (1, 3, 1, 70, 33, 64),       # multi-query, Sq > Skv: causal rows empty
    (1, 2, 2, 100, 130, 128),    # three key blocks
])
def test_forward(runtime, rng, dtype, causal, b, hq, hkv, sq, skv, d):
    q = make(rng, (b, hq, sq, d), dtype)
    k = make(rng, (b, hkv, skv, d), dtype)
    v = make(rng, (b, hkv, skv, d), dtype)
    o, lse = ea.attention(q, k, v, causal=causal, return_lse=True,
                          num_splits=0, runtime=runtime)
    assert o.dtype == q.dtype and o.shape == q.shape
    assert lse.shape == (b, hq, sq) and lse.dtype == np.float32
    want_o, want_lse = reference_bhsd(q, k, v, causal)
    check_forward(o, lse, want_o, want_lse, v)
    if sq > 1 and skv > 1:   # the other mask must fail the check
        wrong = ea.attention(q, k, v, causal=not causal, num_splits=0,
                             runtime=runtime)
        with pytest.raises(AssertionError):
            check_forward(wrong, None, want_o, want_lse, v)


@pytest.mark.parametrize("q_shared", [False, True])
@pytest.mark.parametrize("bc,rows", [(32, 64), (64, 128)])
def test_forward_tile_shapes(runtime, rng, q_shared, bc, rows):
    """Each tile shape of the CUDA sweep computes the same attention."""
    d = 128
    config = ea.ForwardConfig(bc, rows, q_shared)
    if _metal(runtime) and config.smem_bytes(d) > 32768:
        pytest.skip("beyond Metal's 32 KiB of threadgroup memory")
    q = make(rng, (2, 4, 77, d), "bf16")
    k = make(rng, (2, 1, 150, d), "bf16")
    v = make(rng, (2, 1, 150, d), "bf16")
    o, lse = ea.attention(q, k, v, causal=True, return_lse=True,
                          config=config, runtime=runtime)
    check_forward(o, lse, *reference_bhsd(q, k, v, True), v)


def test_forward_head_dim_256(runtime, rng):
    q = make(rng, (1, 2, 40, 256), "bf16")
    k = make(rng, (1, 1, 50, 256), "bf16")
    v = make(rng, (1, 1, 50, 256), "bf16")
    o, lse = ea.attention(q, k, v, causal=True, return_lse=True,
                          scale=0.05, num_splits=0, runtime=runtime)
    check_forward(o, lse, *reference_bhsd(q, k, v, True, 0.05), v)


@pytest.mark.parametrize("causal", [False, True])
def test_varlen_with_empty_sequences(runtime, rng, causal):
    lengths_q = [5, 7, 0, 3, 66]
    lengths_k = [9, 2, 4, 0, 70]
    cu_q = np.concatenate([[0], np.cumsum(lengths_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lengths_k)]).astype(np.int32)
    q = make(rng, (cu_q[-1], 4, 64), "bf16")
    k = make(rng, (cu_k[-1], 2, 64), "bf16")
    v = make(rng, (cu_k[-1], 2, 64), "bf16")
    o, lse = ea.attention_varlen(q, k, v, cu_q, cu_k, causal=causal,
                                 return_lse=True, num_splits=0,
                                 runtime=runtime)
    assert lse.shape == (4, cu_q[-1])
    want_o, want_lse = reference_varlen(q, k, v, cu_q, cu_k, causal)
    check_forward(o, lse, want_o, want_lse, v)
    assert np.isneginf(lse[:, cu_q[3]:cu_q[4]]).all()   # no keys at all


@pytest.mark.parametrize("page_size", [16, 48, 64])
@pytest.mark.parametrize("num_splits", [0, None, 3])
def test_paged_cache_in_shuffled_pages(runtime, rng, page_size, num_splits):
    """Keys in pages of the cache in random order (spare pages and unused
    table entries hold noise that must not be read): the same attention
    as the packed keys, by the prefill kernel and by split-key decode."""
    lengths_q = [3, 0, 5, 1]
    lengths_k = [40, 17, 0, 130]
    if num_splits == 0:
        lengths_q = [30, 0, 5, 70]
    cu_q = np.concatenate([[0], np.cumsum(lengths_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lengths_k)]).astype(np.int32)
    q = make(rng, (cu_q[-1], 8, 64), "bf16")
    k = make(rng, (cu_k[-1], 2, 64), "bf16")
    v = make(rng, (cu_k[-1], 2, 64), "bf16")
    k_cache, v_cache, table, seqlens = paged_cache(rng, k, v, cu_k,
                                                   page_size)
    o, lse = ea.attention_paged(q, k_cache, v_cache, table, seqlens, cu_q,
                                causal=True, return_lse=True,
                                num_splits=num_splits, runtime=runtime)
    want_o, want_lse = reference_varlen(q, k, v, cu_q, cu_k, True)
    check_forward(o, lse, want_o, want_lse, v)


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("num_splits", [1, 2, 5])
@pytest.mark.parametrize("causal", [False, True])
def test_decode_splits(runtime, rng, d, num_splits, causal):
    """Split-key decode: 1 to 4 queries per sequence (speculative decoding
    with causal), grouped heads packed into rows (8 query heads per key
    head with 4 queries: two tiles of 16 rows), keys over several splits
    whose partial results are merged."""
    sq = 4 if causal else 1
    q = make(rng, (3, 8, sq, d), "bf16")
    k = make(rng, (3, 1, 150, d), "bf16")
    v = make(rng, (3, 1, 150, d), "bf16")
    o, lse = ea.attention(q, k, v, causal=causal, return_lse=True,
                          num_splits=num_splits, runtime=runtime)
    check_forward(o, lse, *reference_bhsd(q, k, v, causal), v)


def test_decode_varlen_with_empty_sequences(runtime, rng):
    cu_q = np.array([0, 2, 2, 3, 5], np.int32)
    cu_k = np.array([0, 0, 50, 120, 121], np.int32)
    q = make(rng, (5, 4, 64), "f16")
    k = make(rng, (121, 4, 64), "f16")
    v = make(rng, (121, 4, 64), "f16")
    for splits in (None, 3):
        o, lse = ea.attention_varlen(q, k, v, cu_q, cu_k, causal=True,
                                     return_lse=True, num_splits=splits,
                                     runtime=runtime)
        check_forward(o, lse, *reference_varlen(q, k, v, cu_q, cu_k, True),
                      v)


def test_decode_beyond_threadgroup_memory_is_a_clear_error(runtime, rng):
    q = make(rng, (1, 1, 1, 256), "bf16")
    k = make(rng, (1, 1, 8, 256), "bf16")
    if not _metal(runtime):
        o = ea.attention(q, k, k, num_splits=2, runtime=runtime)
        check_forward(o, None, *reference_bhsd(q, k, k, False), k)
        return
    with pytest.raises(ValueError, match=r"decode kernel with head "
                       r"dimension 256.*needs \d+ bytes.*32768"):
        ea.attention(q, k, k, num_splits=2, runtime=runtime)
    # Left to the library, the prefill kernel (which fits) runs instead.
    o = ea.attention(q, k, k, runtime=runtime)
    check_forward(o, None, *reference_bhsd(q, k, k, False), k)


def test_empty_batch_and_empty_queries():
    q = np.zeros((0, 2, 64), np.uint16)
    k = np.zeros((3, 1, 64), np.uint16)
    o, lse = ea.attention_varlen(q, k, k, np.zeros(1, np.int32),
                                 np.zeros(1, np.int32), return_lse=True)
    assert o.shape == (0, 2, 64) and lse.shape == (2, 0)
    o = ea.attention(np.zeros((2, 2, 0, 64), np.float16),
                     np.zeros((2, 1, 5, 64), np.float16),
                     np.zeros((2, 1, 5, 64), np.float16))
    assert o.shape == (2, 2, 0, 64)


def _bhsd(shape=(1, 4, 8, 64), dtype=np.uint16):
    return np.zeros(shape, dtype)


@pytest.mark.parametrize("args,message", [
    (lambda: (_bhsd((4, 8, 64)), _bhsd(), _bhsd()),
     r"attention: q must have 4 dimensions"),
    (lambda: (_bhsd((1, 4, 8, 32)), _bhsd((1, 4, 8, 32)),
              _bhsd((1, 4, 8, 32))), r"head dimension.*64, 128 or 256, got 32"),
    (lambda: (_bhsd(), _bhsd((1, 3, 8, 64)), _bhsd((1, 3, 8, 64))),
     r"q has 4 heads and k 3"),
    (lambda: (_bhsd(), _bhsd(dtype=np.float16), _bhsd(dtype=np.float16)),
     r"k is f16 but q is bf16"),
    (lambda: (_bhsd(dtype=np.float32), _bhsd(), _bhsd()),
     r"q must be bfloat16 .* or float16, got f32"),
    (lambda: (_bhsd(), _bhsd(), _bhsd((1, 4, 9, 64))), r"v has shape"),
    (lambda: (_bhsd(), _bhsd((2, 4, 8, 64)), _bhsd((2, 4, 8, 64))),
     r"k has batch size 2, expected 1"),
    (lambda: (_bhsd((1, 4, 64, 8)).transpose(0, 1, 3, 2), _bhsd(), _bhsd()),
     r"q is not contiguous"),
    (lambda: ([[1.0]], _bhsd(), _bhsd()), r"q must be a numpy array"),
])
def test_argument_mistakes(args, message):
    q, k, v = args()
    with pytest.raises((ValueError, TypeError), match=message):
        ea.attention(q, k, v)


def test_scale_and_split_mistakes():
    q = _bhsd()
    with pytest.raises(ValueError, match="scale must be a positive"):
        ea.attention(q, q, q, scale=-1.0)
    with pytest.raises(ValueError, match="num_splits must be None or an int"):
        ea.attention(q, q, q, num_splits=-2)
    with pytest.raises(ValueError, match="at most 16 queries"):
        ea.attention(_bhsd((1, 4, 17, 64)), q, q, num_splits=2)


def test_varlen_offset_mistakes():
    q = np.zeros((6, 2, 64), np.uint16)
    cu = np.array([0, 4, 6], np.int32)
    with pytest.raises(ValueError, match=r"cu_seqlens_q decreases at index "
                       r"2 \(4 then 3\)"):
        ea.attention_varlen(q, q, q, np.array([0, 4, 3], np.int32), cu)
    with pytest.raises(ValueError, match="cu_seqlens_k ends at 7 but the "
                       "tensor holds only 6 rows"):
        ea.attention_varlen(q, q, q, cu, np.array([0, 4, 7], np.int32))
    with pytest.raises(ValueError, match="cu_seqlens_q must be int32"):
        ea.attention_varlen(q, q, q, cu.astype(np.int64), cu)
    with pytest.raises(ValueError, match="cu_seqlens_k has length 2, "
                       "expected 3"):
        ea.attention_varlen(q, q, q, cu, cu[:2])
    with pytest.raises(ValueError, match="max_seqlen_q = 3 but the longest "
                       "sequence has 4"):
        ea.attention_varlen(q, q, q, cu, cu, max_seqlen_q=3)


def test_paged_mistakes(rng):
    q = np.zeros((2, 2, 64), np.uint16)
    cache = np.zeros((4, 16, 1, 64), np.uint16)
    table = np.array([[0, 1], [2, 3]], np.int32)
    lengths = np.array([20, 32], np.int32)
    cu = np.array([0, 1, 2], np.int32)
    with pytest.raises(ValueError, match=r"block_table\[1\] names page 4, "
                       r"outside the cache's 4 pages"):
        ea.attention_paged(q, cache, cache, np.array([[0, 1], [2, 4]],
                                                     np.int32), lengths, cu)
    with pytest.raises(ValueError, match=r"seqlens_k\[0\] = 33 does not fit"):
        ea.attention_paged(q, cache, cache, table,
                           np.array([33, 1], np.int32), cu)
    with pytest.raises(ValueError, match="page size .* multiple of 16 from "
                       "16 to 256, got 8"):
        c8 = np.zeros((4, 8, 1, 64), np.uint16)
        ea.attention_paged(q, c8, c8, table, lengths, cu)
    with pytest.raises(ValueError, match="k_cache must have 4 dimensions"):
        ea.attention_paged(q, q, q, table, lengths, cu)
    # A page past the used ones may be anything.
    ok = ea.attention_paged(q, cache, cache, np.array([[0, 1], [2, 3]],
                                                      np.int32),
                            np.array([5, 16], np.int32), cu)
    assert values(ok).shape == (2, 2, 64)
