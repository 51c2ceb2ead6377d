"""Turns of consumer warpgroups (enigma.consumer_turn, docs/reference/
pipelines.md, docs/design/consumer-turns.md): they change no result.

* A pipeline of two consumer warpgroups under a persistent tile loop,
  each iteration taking two turns (one waiting for a value), gives the
  results of the same kernel without turns bit for bit, and of a float64
  numpy reference, on every backend under test: odd sizes, more tiles
  than threadgroups, and pipelines of no iteration.
* The mistakes the front end and the verifier reject, with the user's
  file and line.
* The CUDA text: turns opened once and closed once around the consumers,
  the pipelined attention kernel taking its turns at its products.
* On CUDA (the GPU script): the pipelined attention forward with two
  consumer warpgroups taking turns against float64 numpy, in a process of
  its own with a time limit (a turn that never comes fails, not hangs).
"""

import dataclasses
import os
import subprocess
import sys

import numpy as np
import pytest

from conftest import assert_no_spills_on_hopper, box_thread_sums

import enigma

_INNER = "ENIGMA_CONSUMER_TURNS_ON_CUDA"


@pytest.fixture(autouse=True)
def _isolated_on_cuda(request):
    """On CUDA a turn that never comes would hang the whole suite: the
    tests here run there in a process of their own with a time limit
    (test_consumer_turns_on_cuda_in_their_own_process)."""
    runtime = request.node.funcargs.get("runtime")
    if runtime is not None and runtime.name == "cuda" and \
            os.environ.get(_INNER) != "1":
        pytest.skip("run by test_consumer_turns_on_cuda_in_their_own_process")


BOX_ROWS, BOX_COLS, THREADS = 16, 32, 256
PER_THREAD = BOX_ROWS * BOX_COLS // THREADS
START = 0.25


def _tile_sums(ring, X, rows, cols, t, boxes, g, turns):
    """The pipeline of tile g (below)."""
    def producer(i, slot):
        enigma.stage_copy(ring, slot, 0, X, at=(i * BOX_ROWS, g * BOX_COLS),
                          shape=(rows, cols), ld=cols,
                          box=(BOX_ROWS, BOX_COLS))

    def consumer(i, slot, carry):
        stage = ring.stage(0, slot)
        w = (i + 1).cast("float")     # PER_THREAD = 2 elements a thread
        if turns:
            with enigma.consumer_turn():
                total = carry[0] + stage[t] * w + stage[t + THREADS] * w
            with enigma.consumer_turn(after=total):
                carry[0] = total * 0.5
        else:
            carry[0] = (carry[0] + stage[t] * w + stage[t + THREADS] * w) * \
                0.5

    total, = enigma.pipeline_loop(ring, boxes, producer=producer,
                                  consumer=consumer, init=[START])
    return total


def _turn_sums(turns: bool):
    """Tile g (of ``tiles``, walked by a persistent loop) of column block g
    of X (rows x cols, zero outside), per thread t: for each box i,
    total = (total + (i + 1) * sum_j box_i[t + 256 j]) / 2, in two steps
    that are turns when ``turns``."""
    @enigma.kernel
    def turn_sums(X: enigma.f32, rows: enigma.Scalar(enigma.u32),
                  cols: enigma.Scalar(enigma.u32),
                  tiles: enigma.Scalar(enigma.u32), Out: enigma.f32):
        ring = enigma.pipeline_ring(3, [("float", BOX_ROWS * BOX_COLS)],
                                    threads=THREADS)
        t = enigma.thread_index_in_threadgroup()
        boxes = (rows + (BOX_ROWS - 1)) // BOX_ROWS
        with enigma.for_range(enigma.threadgroup_position_in_grid("x"),
                              tiles, enigma.threadgroups_per_grid("x"),
                              dtype="uint") as g:
            Out[g * THREADS + t] = _tile_sums(ring, X, rows, cols, t, boxes,
                                              g, turns)
    return turn_sums


def _turn_sums_reference(x, tiles):
    sums = box_thread_sums(x, tiles, BOX_ROWS, BOX_COLS, THREADS)
    out = np.full((tiles, THREADS), START)
    for i in range(sums.shape[1]):
        out = 0.5 * (out + (i + 1) * sums[:, i])
    return out.reshape(-1)


def _run(runtime, kernel, x, rows, cols, threadgroups):
    tiles = -(-max(cols, 1) // BOX_COLS)
    raw = runtime.execute(enigma.compile(kernel), [x],
                          output_size=tiles * THREADS * 4,
                          scalars=[rows, cols, tiles],
                          grid=(threadgroups * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    return np.frombuffer(raw, np.float32), tiles


@pytest.mark.parametrize("rows,cols,threadgroups", [
    (1, 1, 1),        # one box, one tile
    (37, 45, 1),      # edges; two tiles walked by one threadgroup
    (100, 130, 2),    # seven boxes, five tiles over two threadgroups
])
def test_turns_change_no_result(runtime, rng, rows, cols, threadgroups):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    with_turns, tiles = _run(runtime, _turn_sums(True), x, rows, cols,
                             threadgroups)
    without, _ = _run(runtime, _turn_sums(False), x, rows, cols,
                      threadgroups)
    np.testing.assert_array_equal(with_turns, without)
    np.testing.assert_allclose(with_turns,
                               _turn_sums_reference(x.astype(np.float64),
                                                    tiles),
                               rtol=1e-5, atol=1e-5)


def test_turns_of_pipelines_with_no_iteration(runtime):
    """No box: no turn is taken, and the kernel still ends (on CUDA the
    turns opened at the start are closed at the end)."""
    x = np.zeros((1, 64), np.float32)
    out, _ = _run(runtime, _turn_sums(True), x, 0, 64, 1)
    assert np.all(out == START)


# --------------------------------------------------------------------------
# Mistakes
# --------------------------------------------------------------------------

def _error(kernel):
    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(kernel)
    return str(info.value)


def _ring_kernel(consumer, producer_extra=None, outside=None):
    @enigma.kernel
    def bad(X: enigma.f32, Out: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=256)
        if outside:
            outside()

        def producer(i, slot):
            if producer_extra:
                producer_extra()
            enigma.stage_copy(ring, slot, 0, X, at=(i * 16, 0),
                              shape=(64, 32), ld=32, box=(16, 32))

        enigma.pipeline_loop(ring, 4, producer=producer,
                             consumer=lambda i, slot, carry: consumer(
                                 ring, i, slot))
    return bad


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("b,hq,hkv,sq,skv,d", [
    (1, 2, 1, 1, 1, 64),
    (1, 2, 1, 150, 77, 64),      # two query tiles, Sq > Skv
    (2, 2, 2, 130, 300, 128),    # whole blocks and a partial one
])
def test_attention_with_turns_equals_without(runtime, rng, causal, b, hq,
                                             hkv, sq, skv, d):
    """ForwardConfig(turns=True): the pipelined forward's two consumer
    warpgroups take turns; the result is the same bit for bit."""
    import enigma.attention as ea
    from _attention_reference import check_forward, make, reference_bhsd
    from enigma._attention.forward import ForwardConfig
    if runtime.name == "metal-host":
        pytest.skip("two warpgroups of rows and their stages pass Metal's "
                    "32 KiB")
    config = ForwardConfig(32, 128, True, pipelined=True, stages=2)
    q = make(rng, (b, hq, sq, d), "bf16")
    k = make(rng, (b, hkv, skv, d), "bf16")
    v = make(rng, (b, hkv, skv, d), "bf16")
    got = [ea.attention(q, k, v, causal=causal, return_lse=True,
                        config=dataclasses.replace(config, turns=turns),
                        runtime=runtime) for turns in (False, True)]
    np.testing.assert_array_equal(got[0][0], got[1][0])
    np.testing.assert_array_equal(got[0][1], got[1][1])
    check_forward(*got[1], *reference_bhsd(q, k, v, causal), v)


def test_turns_are_the_pipelined_attentions():
    import enigma.attention as ea
    from enigma._attention.forward import ForwardConfig
    q = np.zeros((1, 1, 4, 64), np.float16)
    for config, match in ((ForwardConfig(64, 64, turns=True),
                           "pipelined"),
                          (ForwardConfig(32, 128, True, pipelined=True,
                                         turns="yes"), "must be a bool")):
        with pytest.raises(ValueError, match=match):
            ea.attention(q, q, q, config=config, runtime=enigma.CpuRuntime())


def test_a_turn_outside_a_consumer_is_refused():
    def turn():
        with enigma.consumer_turn():
            pass
    for kernel in (_ring_kernel(lambda ring, i, slot: None, outside=turn),
                   _ring_kernel(lambda ring, i, slot: None,
                                producer_extra=turn)):
        msg = _error(kernel)
        assert "consumer_turn belongs at the top level of a " \
            "pipeline_loop's consumer" in msg, msg


def test_a_turn_under_a_branch_of_a_consumer_is_refused():
    def consumer(ring, i, slot):
        with enigma.if_(i % 2 == 1):
            with enigma.consumer_turn():
                pass
    msg = _error(_ring_kernel(consumer))
    assert "consumer_turn belongs at the top level" in msg, msg


def test_turns_do_not_nest():
    def consumer(ring, i, slot):
        with enigma.consumer_turn():
            with enigma.consumer_turn():
                pass
    msg = _error(_ring_kernel(consumer))
    assert "turns do not nest" in msg, msg


def test_a_barrier_in_a_turn_is_refused_where_it_was_written():
    def consumer(ring, i, slot):
        with enigma.consumer_turn():
            enigma.barrier()
    msg = _error(_ring_kernel(consumer))
    assert "holds 'enigma.barrier'" in msg and "the GPU would hang" in msg, \
        msg
    assert "test_consumer_turns.py" in msg, msg


def test_a_turn_waits_only_for_floats():
    def consumer(ring, i, slot):
        with enigma.consumer_turn(after=i):
            pass
    msg = _error(_ring_kernel(consumer))
    assert "after[0] must be a float value or fragment" in msg, msg


# --------------------------------------------------------------------------
# The CUDA text
# --------------------------------------------------------------------------

def test_cuda_text_opens_and_closes_the_turns_once():
    src = enigma.compile(_turn_sums(True)).cuda_source
    consumers = src.split("// the consumers: the threadgroup's threads")[1]
    assert consumers.count("enigma_turns_open<2u>(") == 1
    assert consumers.count("enigma_turns_close<2u>(") == 1
    assert consumers.index("enigma_turns_open") < consumers.index("for (")
    assert consumers.count("enigma_turn_begin<2u>(") == 2
    assert consumers.count("enigma_turn_end<2u>(") == 2
    assert "enigma_turn_after(0u, " in consumers
    # The consumers' loops end before the turns close.
    close = consumers.index("enigma_turns_close")
    assert consumers.rindex("enigma_turn_end", 0, close) < close
    plain = enigma.compile(_turn_sums(False)).cuda_source
    assert "enigma_turn" not in plain


def _attention_kernels():
    from enigma._attention import forward_ws, plans

    class Hopper:
        name = "cuda"
        architecture = 90
    for d in (64, 128):
        config = [c for c in plans.forward_configs(d, "ws")
                  if c.rows == 128][0] if d == 64 else \
            plans.forward_config(Hopper(), d)
        # Turns are the serial schedule's (the D 128 default overlaps).
        config = dataclasses.replace(config, turns=True, overlap=False)
        for causal in (False, True):
            yield d, causal, forward_ws.forward_ws_kernel("bf16", d, causal,
                                                          config)


def test_pipelined_attention_takes_turns_at_its_products(monkeypatch):
    """Two warpgroups of 64 query rows: per iteration of each of the two
    pipelines, Q K^T issued in one turn and P V (waiting for the row sums)
    in the next; the sm_90a build has no spills."""
    from enigma._attention.launch import compiled
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    for d, causal, kernel in _attention_kernels():
        src = compiled(kernel).cuda_source
        what = f"d={d} causal={causal}"
        assert src.count("enigma_turns_open<2u>(") == 1, what
        assert src.count("enigma_turn_begin<2u>(enigma_linear, 0u)") == 2
        assert src.count("enigma_turn_begin<2u>(enigma_linear, "
                         "enigma_turn_after(0u, ") == 2, what
        assert src.count("enigma_turn_end<2u>(") == 4, what
        assert_no_spills_on_hopper(src, what)


# --------------------------------------------------------------------------
# On a GPU
# --------------------------------------------------------------------------

def test_consumer_turns_on_cuda_in_their_own_process():
    """Where the suite runs on CUDA: this file's kernels on CUDA (the box
    sums with turns, the pipelined attention taking turns) in a process of
    their own with a time limit."""
    if "cuda" not in os.environ.get("ENIGMA_TEST_BACKENDS", ""):
        pytest.skip("runs where ENIGMA_TEST_BACKENDS includes cuda")
    env = dict(os.environ, ENIGMA_TEST_BACKENDS="cuda", **{_INNER: "1"})
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         __file__, "-k", "not own_process"],
        capture_output=True, text=True, timeout=600, env=env,
        cwd=os.path.dirname(__file__))
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout, done.stdout[-2000:]


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("b,hq,hkv,sq,skv,d", [
    (1, 2, 1, 1, 1, 128),        # one row, one key: one turn each at most
    (2, 4, 2, 130, 383, 128),    # three whole blocks and a partial one
    (1, 2, 2, 300, 129, 128),    # Sq > Skv: causal rows without keys
    (1, 3, 1, 257, 256, 64),     # D 64, two whole blocks
])
def test_pingpong_attention_matches_the_reference(rng, causal, b, hq, hkv,
                                                  sq, skv, d):
    """The pipelined forward with two consumer warpgroups taking turns
    (rows = 128) on CUDA against float64 numpy."""
    if os.environ.get(_INNER) != "1":
        pytest.skip("run by test_consumer_turns_on_cuda_in_their_own_"
                    "process")
    import enigma.attention as ea
    from _attention_reference import check_forward, make, reference_bhsd
    from enigma._attention import plans
    runtime = enigma.CudaRuntime()
    if not plans.hopper(runtime):
        pytest.skip("the pipelined kernel needs an sm_90 GPU")
    config = plans.forward_config(runtime, 128) if d == 128 else \
        [c for c in plans.forward_configs(64, "ws") if c.rows == 128][0]
    # Turns are the serial schedule's (the D 128 default overlaps).
    config = dataclasses.replace(config, turns=True, overlap=False)
    assert config.pipelined and config.rows == 128
    q = make(rng, (b, hq, sq, d), "bf16")
    k = make(rng, (b, hkv, skv, d), "bf16")
    v = make(rng, (b, hkv, skv, d), "bf16")
    o, lse = ea.attention(q, k, v, causal=causal, return_lse=True,
                          config=config, runtime=runtime)
    check_forward(o, lse, *reference_bhsd(q, k, v, causal), v)
