"""The mistakes of the matrix multiply-accumulate family that must be an
EnigmaError naming the user's line (docs/reference/mma.md): fragment
shapes and types, operands, K and pitches, swizzles that split chunks,
fragment operations and copies under a branch, configurations too large,
warpgroup products and argument checks.
"""

import enigma

from _mma_helpers import body_error


def test_fragment_side_not_a_multiple_of_16():
    msg = body_error(lambda A, B: enigma.mma_zeros(24, 32))
    assert "24x32" in msg or "24 x 32" in msg, msg
    assert "multiples of 16" in msg and "test_mma_errors.py" in msg, msg


def test_mma_operands_must_be_threadgroup_tiles_of_one_dtype():
    def body(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 256)
        u = enigma.threadgroup_alloc(enigma.f32, 256)
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(t, ld=16),
                   enigma.mma_operand(u, ld=16), k=16)
    msg = body_error(body)
    assert "one dtype" in msg and "test_mma_errors.py" in msg, msg

    def body2(A, B):
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(A, ld=16),
                   None, k=16)
    msg = body_error(body2)
    assert "threadgroup" in msg, msg


def test_mma_k_and_pitch_rules():
    def body(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 1024)
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(t, ld=32),
                   enigma.mma_operand(t, ld=16), k=24)
    msg = body_error(body)
    assert "K = 24 must be a multiple of 16" in msg, msg

    def body2(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 1024)
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(t, ld=20),
                   enigma.mma_operand(t, ld=16), k=16)
    msg = body_error(body2)
    assert "pitch 20" in msg and "16 bytes" in msg, msg

    def body3(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 256)
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(t, ld=16),
                   enigma.mma_operand(t, ld=16, offset=192), k=16)
    msg = body_error(body3)
    assert "threadgroup array of 256" in msg, msg


def test_swizzle_that_splits_chunks():
    def body(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 1024)
        enigma.mma(enigma.mma_zeros(16, 16),
                   enigma.mma_operand(t, ld=32, swizzle=enigma.Swizzle(2, 1, 4)),
                   enigma.mma_operand(t, ld=16), k=16)
    msg = body_error(body)
    assert "splits 16-byte chunks" in msg, msg


def test_fragment_ops_need_every_lane():
    def body(A, B):
        lane = enigma.thread_index_in_simdgroup()
        acc = enigma.mma_zeros(16, 16)
        with enigma.if_(lane < 4):
            enigma.mma_store(acc, B, ld=16)
    msg = body_error(body)
    assert "every lane" in msg and "test_mma_errors.py" in msg, msg


def test_copy_tile_needs_every_thread():
    def body(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 256)
        with enigma.if_(enigma.thread_index_in_threadgroup() < 64):
            enigma.copy_tile(t, A, 16, 16, src_ld=16)
    msg = body_error(body)
    assert "every thread" in msg, msg


def test_fragments_of_different_shapes_or_dtypes():
    msg = body_error(lambda A, B: enigma.mma_zeros(16, 16) +
                         enigma.mma_zeros(16, 32))
    assert "different shapes" in msg, msg
    msg = body_error(lambda A, B: enigma.mma_zeros(16, 16) +
                         enigma.mma_zeros(16, 16, "bf16"))
    assert "different types" in msg and ".cast()" in msg, msg


def test_gemm_config_too_large_for_threadgroup_memory():
    def body(A, B):
        enigma.gemm_block(A, A, B, m=64, n=64, k=64,
                          config=enigma.MmaConfig(256, 256, 128, 2, 2, 2))
    msg = body_error(body)
    assert "262144 bytes of threadgroup memory" in msg, msg
    assert "Metal: 32 KiB" in msg, msg


def test_warpgroup_product_mistakes():
    def rows32(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma(enigma.mma_zeros(32, 64), enigma.mma_operand(t, ld=64),
                   enigma.mma_operand(t, ld=64), k=64, warpgroup=True)
    msg = body_error(rows32)
    assert "16 rows" in msg and "32 x 64" in msg, msg

    def fragment_a_in_flight_alone(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma(enigma.mma_zeros(16, 64), enigma.mma_zeros(16, 64, "bf16"),
                   enigma.mma_operand(t, ld=64), asynchronous=True)
    msg = body_error(fragment_a_in_flight_alone)
    assert "asynchronous=True applies to warpgroup products only" in msg, msg

    def fragment_a_in_flight_read(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        o = enigma.mma(enigma.mma_zeros(16, 64),
                       enigma.mma_zeros(16, 64, "bf16"),
                       enigma.mma_operand(t, ld=64), warpgroup=True,
                       asynchronous=True)
        enigma.mma_store(o, B, ld=64)
    msg = body_error(fragment_a_in_flight_read)
    assert "is asynchronous" in msg and "enigma.mma_wait" in msg, msg

    def fragment_a_rows32(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma(enigma.mma_zeros(32, 64), enigma.mma_zeros(32, 64, "bf16"),
                   enigma.mma_operand(t, ld=64), warpgroup=True)
    msg = body_error(fragment_a_rows32)
    assert "16 rows" in msg and "32 x 64" in msg, msg

    # One wgmma reads one B for the four simdgroups of a group.
    for a_in_memory in (True, False):
        def varying_b(A, B, a_in_memory=a_in_memory):
            t = enigma.threadgroup_alloc(enigma.bf16, 8192)
            b = enigma.mma_operand(
                t, ld=64, offset=enigma.simdgroup_index_in_threadgroup() * 64)
            a = (enigma.mma_operand(t, ld=64) if a_in_memory
                 else enigma.mma_zeros(16, 64, "bf16"))
            enigma.mma(enigma.mma_zeros(16, 64), a, b, k=64, warpgroup=True)
        msg = body_error(varying_b)
        assert "operand B's offsets must be the same in every thread" in msg, \
            msg

    def overlapping(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma(enigma.mma_zeros(16, 128), enigma.mma_operand(t, ld=64),
                   enigma.mma_operand(t, ld=64, block_stride=1024), k=64)
    msg = body_error(overlapping)
    assert "would overlap" in msg, msg

    def negative(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 8192)
        enigma.mma_operand(t, ld=64, block_stride=-1)
    msg = body_error(negative)
    assert "block_stride must be at least 0" in msg, msg


def test_copy_wait_and_mma_arguments():
    msg = body_error(lambda A, B: enigma.copy_wait(9))
    assert "0 to 7" in msg, msg

    def body(A, B):
        t = enigma.threadgroup_alloc(enigma.bf16, 1024)
        enigma.mma(enigma.mma_zeros(16, 16), enigma.mma_operand(t, ld=32),
                   enigma.mma_operand(t, ld=16))
    msg = body_error(body)
    assert "give k=" in msg, msg
