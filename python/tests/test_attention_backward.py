"""enigma.attention backward on every backend under test, against PyTorch
autograd in float64 on the same (16-bit) inputs: grouped heads, Sq != Skv
with bottom-right causal masks (rows that see no key), variable-length
batches with empty sequences, the deterministic mode (bit for bit the
same on every run) and the atomic one.

Tolerance, element by element: the kernels round P and dS to 16 bits
before their products (2^-8 relative each, bfloat16), use Delta from the
16-bit O, and round the gradients to 16 bits; so
|g - ref| <= 2^-6 (|P| |dO|-, |dS| |Q|- or |dS| |K|-products, computed in
float64 from magnitudes, with |dP| + rowsum(|dO| |O|) for dP - Delta) +
2^-8 |ref|. A wrong mask, a wrong head or a
missing block is off by the size of the terms."""

import numpy as np
import pytest

import enigma.attention as ea
from _attention_reference import (check_grads, make,
                                  reference_grads, values)

torch = pytest.importorskip("torch")


def _bhsd_to_packed(x):
    """(B, H, S, D) -> (B*S, H, D) and the row ranges of each batch."""
    b, h, s, d = x.shape
    return x.transpose(0, 2, 1, 3).reshape(b * s, h, d)


@pytest.mark.parametrize("deterministic", [True, False])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("b,hq,hkv,sq,skv,d", [
    (2, 4, 2, 37, 70, 64),       # grouped heads, Sq < Skv, edges
    (1, 3, 1, 50, 20, 64),       # multi-query, Sq > Skv: causal rows empty
    (1, 2, 2, 65, 80, 128),
])
def test_backward(runtime, rng, deterministic, causal, b, hq, hkv, sq, skv,
                  d):
    dtype = "bf16" if d == 64 else "f16"
    q = make(rng, (b, hq, sq, d), dtype)
    k = make(rng, (b, hkv, skv, d), dtype)
    v = make(rng, (b, hkv, skv, d), dtype)
    do = make(rng, (b, hq, sq, d), dtype)
    o, lse = ea.attention(q, k, v, causal=causal, return_lse=True,
                          num_splits=0, runtime=runtime)
    got = ea.attention_backward(do, q, k, v, o, lse, causal=causal,
                                deterministic=deterministic, runtime=runtime)
    for g, x in zip(got, (q, k, v)):
        assert g.shape == x.shape and g.dtype == x.dtype
    rows_q = [slice(i * sq, (i + 1) * sq) for i in range(b)]
    rows_k = [slice(i * skv, (i + 1) * skv) for i in range(b)]
    want, bounds = reference_grads(*(_bhsd_to_packed(x) for x in
                                     (q, k, v, do)), rows_q, rows_k, causal,
                                   d ** -0.5)
    unpack = [lambda x, s=s, h=h: x.reshape(b, s, h, d).transpose(0, 2, 1, 3)
              for s, h in ((sq, hq), (skv, hkv), (skv, hkv))]
    check_grads(got, [f(w) for f, w in zip(unpack, want)],
                [f(w) for f, w in zip(unpack, bounds)])
    if deterministic:   # the same bits again
        again = ea.attention_backward(do, q, k, v, o, lse, causal=causal,
                                      deterministic=True, runtime=runtime)
        for g, h in zip(got, again):
            assert np.array_equal(g.view(np.uint16), h.view(np.uint16))


@pytest.mark.parametrize("deterministic", [True, False])
def test_varlen_backward_with_empty_sequences(runtime, rng, deterministic):
    lengths_q = [5, 0, 40, 3]
    lengths_k = [9, 4, 33, 0]
    cu_q = np.concatenate([[0], np.cumsum(lengths_q)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(lengths_k)]).astype(np.int32)
    q = make(rng, (cu_q[-1], 4, 64), "bf16")
    k = make(rng, (cu_k[-1], 1, 64), "bf16")
    v = make(rng, (cu_k[-1], 1, 64), "bf16")
    do = make(rng, (cu_q[-1], 4, 64), "bf16")
    o, lse = ea.attention_varlen(q, k, v, cu_q, cu_k, causal=True,
                                 return_lse=True, num_splits=0,
                                 runtime=runtime)
    got = ea.attention_varlen_backward(do, q, k, v, o, lse, cu_q, cu_k,
                                       causal=True,
                                       deterministic=deterministic,
                                       runtime=runtime)
    rows_q = [slice(cu_q[i], cu_q[i + 1]) for i in range(4)]
    rows_k = [slice(cu_k[i], cu_k[i + 1]) for i in range(4)]
    want, bounds = reference_grads(q, k, v, do, rows_q, rows_k, True,
                                   64 ** -0.5)
    check_grads(got, want, bounds)
    assert not values(got[0])[cu_q[3]:].any()   # no keys: dQ is 0


def test_backward_check_catches_a_wrong_gradient(rng):
    q = make(rng, (1, 1, 20, 64), "bf16")
    do = make(rng, (1, 1, 20, 64), "bf16")
    o, lse = ea.attention(q, q, q, return_lse=True, num_splits=0)
    got = list(ea.attention_backward(do, q, q, q, o, lse, causal=True))
    rows = [slice(0, 20)]
    want, bounds = reference_grads(*(_bhsd_to_packed(x) for x in
                                     (q, q, q, do)), rows, rows, False,
                                   0.125)
    unpack = [lambda x: x.reshape(1, 20, 1, 64).transpose(0, 2, 1, 3)] * 3
    with pytest.raises(AssertionError):   # causal grads, full reference
        check_grads(got, [f(w) for f, w in zip(unpack, want)],
                    [f(w) for f, w in zip(unpack, bounds)])


def test_backward_argument_mistakes():
    q = np.zeros((1, 2, 8, 64), np.uint16)
    lse = np.zeros((1, 2, 8), np.float32)
    with pytest.raises(ValueError, match=r"attention_backward: lse has "
                       r"shape \(1, 2, 9\), expected \(1, 2, 8\)"):
        ea.attention_backward(q, q, q, q, q, np.zeros((1, 2, 9), np.float32))
    with pytest.raises(ValueError, match="do is f16 but q is bf16"):
        ea.attention_backward(q.astype(np.float16), q, q, q, q, lse)
    with pytest.raises(ValueError, match="lse must be float32"):
        ea.attention_backward(q, q, q, q, q, lse.astype(np.float64))


def test_head_dim_256_backward(runtime, rng):
    """Within threadgroup memory the 256-wide heads run; where the
    runtime has too little (Metal's 32 KiB), a clear error."""
    q = make(rng, (1, 1, 20, 256), "bf16")
    do = make(rng, (1, 1, 20, 256), "bf16")
    o, lse = ea.attention(q, q, q, return_lse=True, num_splits=0,
                          runtime=runtime)
    if runtime.name in ("metal", "metal-host"):
        with pytest.raises(ValueError, match=r"backward with head dimension "
                           r"256.*needs \d+ bytes.*gives a threadgroup "
                           r"32768"):
            ea.attention_backward(do, q, q, q, o, lse, runtime=runtime)
        return
    got = ea.attention_backward(do, q, q, q, o, lse, runtime=runtime)
    rows = [slice(0, 20)]
    want, bounds = reference_grads(*(_bhsd_to_packed(x) for x in
                                     (q, q, q, do)), rows, rows, False,
                                   256 ** -0.5)
    # K and V are Q itself: its three gradients add up.
    total = values(got[0]) + values(got[1]) + values(got[2])
    ref = (want[0] + want[1] + want[2]).reshape(1, 20, 1, 256) \
        .transpose(0, 2, 1, 3)
    bound = (bounds[0] + bounds[1] + bounds[2]).reshape(1, 20, 1, 256) \
        .transpose(0, 2, 1, 3)
    assert (np.abs(total - ref) <= 2.0**-6 * bound + 2.0**-7 * np.abs(ref)
            + 1e-5).all()
