"""Pipelines with roles (enigma.pipeline_ring / pipeline_loop / stage_copy,
docs/reference/pipelines.md) on every backend under test, against float64
numpy references with fresh random inputs and poisoned outputs:

* the construct itself, with consumer code that is not a product (sums of
  the stages' boxes weighted by the iteration, carried per thread), at
  sizes that are not multiples of the box (zero-filled edges), with 2 to 4
  stages and several threadgroups;
* the mistakes the front end and the verifier reject, with their numbers;
* bounds-checked mode.

gemm_block's warp-specialised configurations, built on the construct, are
tested in test_gemm_warp_specialized.py.

On CUDA (the GPU script) the same kernels run with a producer warpgroup
issuing TMA copies; the CUDA text of every configuration is compiled here
for sm_90a by NVRTC (no spills, no serialised warpgroup products).
"""

import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from _ptxas_reports import assert_clean_under_other_nvrtc, spill_free
from conftest import (compile_error, box_thread_sums, load_example,
                      skip_cuda_outside_child)

import enigma


@pytest.fixture(autouse=True)
def _isolated_on_cuda(request):
    """On CUDA the kernels here have not run on a GPU before: a pipeline
    that hangs would hang the whole suite. They run there through
    bench/check_gemm_ws.py, one process per configuration with a time
    limit (test_gpu_pipelines_in_their_own_processes below);
    ENIGMA_CUDA_PIPELINE_TESTS=1 runs them in this process too."""
    skip_cuda_outside_child(request,
                            "pipelines on CUDA run in bench/check_gemm_ws.py")


def test_gpu_pipelines_in_their_own_processes():
    """Where the suite runs on CUDA: every warp-specialised configuration
    checked against torch on edge shapes, first in bounds-checked mode,
    each in a process of its own with a time limit (a hang fails)."""
    if "cuda" not in os.environ.get("ENIGMA_TEST_BACKENDS", ""):
        pytest.skip("runs where ENIGMA_TEST_BACKENDS includes cuda")
    script = pathlib.Path(__file__).resolve().parents[2] / "bench" / \
        "check_gemm_ws.py"
    done = subprocess.run([sys.executable, str(script), "--check-only"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


_example = load_example


# --------------------------------------------------------------------------
# The construct
# --------------------------------------------------------------------------

BOX_ROWS, BOX_COLS, THREADS = 16, 32, 128
START = 1.5


def _box_producer(ring, X, rows, cols, g):
    """The producer of the box kernels: box i of column block g of X (rows
    x cols, zero outside) into the slot."""
    def producer(i, slot):
        enigma.stage_copy(ring, slot, 0, X, at=(i * BOX_ROWS, g * BOX_COLS),
                          shape=(rows, cols), ld=cols,
                          box=(BOX_ROWS, BOX_COLS))
    return producer


def _box_ring(stages, X, rows, cols):
    """What the box kernels share: a ring of one 16 x 32 float box per
    slot, this threadgroup's column block g, the thread t, the number of
    boxes and the producer of box i."""
    ring = enigma.pipeline_ring(stages, [("float", BOX_ROWS * BOX_COLS)],
                                threads=THREADS)
    g = enigma.threadgroup_position_in_grid("x")
    t = enigma.thread_index_in_threadgroup()
    boxes = (rows + (BOX_ROWS - 1)) // BOX_ROWS
    return ring, g, t, boxes, _box_producer(ring, X, rows, cols, g)


def _weighted_box_sums(stages):
    """Threadgroup g sums, per thread t, the elements e = t + 128 j of each
    16 x 32 box i of column block g of X (rows x cols, zero outside),
    weighted by i + 1: out[g * 128 + t] = sum_i (i + 1) sum_j box_i[e]."""
    @enigma.kernel
    def box_sums(X: enigma.f32, rows: enigma.Scalar(enigma.u32),
                 cols: enigma.Scalar(enigma.u32), Out: enigma.f32):
        ring, g, t, boxes, producer = _box_ring(stages, X, rows, cols)

        def consumer(i, slot, carry):
            stage = ring.stage(0, slot)
            total = carry[0]
            for j in enigma.range_constexpr(BOX_ROWS * BOX_COLS // THREADS):
                total = total + stage[t + THREADS * j] * \
                    (i + 1).cast("float")
            carry[0] = total

        # A start that is not 0: an output the kernel did not write (the
        # runtime zero-fills outputs) cannot pass.
        total, = enigma.pipeline_loop(ring, boxes, producer=producer,
                                      consumer=consumer, init=[START])
        Out[g * THREADS + t] = total
    return box_sums


def _box_sums_reference(x, groups):
    sums = box_thread_sums(x, groups, BOX_ROWS, BOX_COLS, THREADS)
    out = np.full((groups, THREADS), START)
    for i in range(sums.shape[1]):
        out += (i + 1) * sums[:, i]
    return out.reshape(-1)


@pytest.mark.parametrize("stages", [2, 3, 4, 9, 16])
@pytest.mark.parametrize("rows,cols", [(1, 1), (16, 32), (37, 45),
                                       (100, 64)])
def test_pipeline_loop_matches_its_sequential_meaning(runtime, rng, stages,
                                                      rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    groups = -(-cols // BOX_COLS)
    compiled = enigma.compile(_weighted_box_sums(stages))
    raw = runtime.execute(compiled, [x], output_size=groups * THREADS * 4,
                          scalars=[rows, cols], grid=(groups * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    out = np.frombuffer(raw, np.float32)
    want = _box_sums_reference(x.astype(np.float64), groups)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-4)


def test_pipeline_loop_with_no_iterations(runtime):
    """An empty pipeline copies nothing and returns the initial values."""
    x = np.zeros((1, 32), np.float32)
    compiled = enigma.compile(_weighted_box_sums(2))
    raw = runtime.execute(compiled, [x], output_size=THREADS * 4,
                          scalars=[0, 32], grid=(THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    assert np.all(np.frombuffer(raw, np.float32) == START)


def _box_copies(stages):
    """A pipeline without carried values: each 16 x 32 box i of column
    block g of X goes through the ring to Out, box after box."""
    @enigma.kernel
    def box_copies(X: enigma.f32, rows: enigma.Scalar(enigma.u32),
                   cols: enigma.Scalar(enigma.u32), Out: enigma.f32):
        ring, g, t, boxes, producer = _box_ring(stages, X, rows, cols)

        def consumer(i, slot, carry):
            stage = ring.stage(0, slot)
            base = (g * boxes + i) * (BOX_ROWS * BOX_COLS)
            for j in enigma.range_constexpr(BOX_ROWS * BOX_COLS // THREADS):
                Out[base + t + THREADS * j] = stage[t + THREADS * j]

        assert enigma.pipeline_loop(ring, boxes, producer=producer,
                                    consumer=consumer) == []
    return box_copies


@pytest.mark.parametrize("rows,cols", [(1, 1), (37, 45)])
def test_pipeline_loop_without_carried_values(runtime, rng, rows, cols):
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    groups, boxes = -(-cols // BOX_COLS), -(-rows // BOX_ROWS)
    compiled = enigma.compile(_box_copies(3))
    size = groups * boxes * BOX_ROWS * BOX_COLS
    raw = runtime.execute(compiled, [x], output_size=size * 4,
                          scalars=[rows, cols], grid=(groups * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    padded = np.zeros((boxes * BOX_ROWS, groups * BOX_COLS), np.float32)
    padded[:rows, :cols] = x
    want = padded.reshape(boxes, BOX_ROWS, groups, BOX_COLS).transpose(
        2, 0, 1, 3).reshape(-1)
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), want)


def test_carried_values_assigned_under_if_in_a_consumer(runtime, rng):
    """carry[k] assigned inside an if_ of a consumer is the branch's
    result: here only the odd boxes are added."""
    @enigma.kernel
    def odd_box_sums(X: enigma.f32, rows: enigma.Scalar(enigma.u32),
                     cols: enigma.Scalar(enigma.u32), Out: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", BOX_ROWS * BOX_COLS)],
                                    threads=THREADS)
        g = enigma.threadgroup_position_in_grid("x")
        t = enigma.thread_index_in_threadgroup()
        boxes = (rows + (BOX_ROWS - 1)) // BOX_ROWS

        producer = _box_producer(ring, X, rows, cols, g)

        def consumer(i, slot, carry):
            stage = ring.stage(0, slot)
            with enigma.if_(i % 2 == 1):
                total = carry[0]
                for j in enigma.range_constexpr(
                        BOX_ROWS * BOX_COLS // THREADS):
                    total = total + stage[t + THREADS * j]
                carry[0] = total

        total, = enigma.pipeline_loop(ring, boxes, producer=producer,
                                      consumer=consumer, init=[START])
        Out[g * THREADS + t] = total

    rows, cols = 70, 45
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    groups, boxes = -(-cols // BOX_COLS), -(-rows // BOX_ROWS)
    raw = runtime.execute(enigma.compile(odd_box_sums), [x],
                          output_size=groups * THREADS * 4,
                          scalars=[rows, cols], grid=(groups * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    padded = np.zeros((boxes * BOX_ROWS, groups * BOX_COLS))
    padded[:rows, :cols] = x
    want = np.full(groups * THREADS, START)
    for g in range(groups):
        for i in range(1, boxes, 2):
            box = padded[i * BOX_ROWS:(i + 1) * BOX_ROWS,
                         g * BOX_COLS:(g + 1) * BOX_COLS].reshape(-1)
            for t in range(THREADS):
                want[g * THREADS + t] += box[t::THREADS].sum()
    np.testing.assert_allclose(np.frombuffer(raw, np.float32), want,
                               rtol=1e-5, atol=1e-4)


def test_a_pipeline_kernel_refuses_other_threadgroup_sizes():
    compiled = enigma.compile(_weighted_box_sums(2))
    rt = enigma.CpuRuntime()
    with pytest.raises(enigma.DispatchError, match="threadgroups of 128"):
        rt.execute(compiled, [np.zeros((4, 4), np.float32)],
                   output_size=4 * 256, scalars=[4, 4], grid=(256, 1, 1),
                   threads=(64, 1, 1))


# --------------------------------------------------------------------------
# Mistakes
# --------------------------------------------------------------------------

def test_a_producer_that_stores_is_refused():
    @enigma.kernel
    def bad(X: enigma.f32, Out: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=128)

        def producer(i, slot):
            Out[i] = 1.0

        def consumer(i, slot, carry):
            pass

        enigma.pipeline_loop(ring, 4, producer=producer, consumer=consumer)

    msg = compile_error(bad)
    assert "producer region" in msg and "test_pipelines.py" in msg, msg


def test_a_consumer_that_writes_the_ring_is_refused():
    @enigma.kernel
    def bad(X: enigma.f32, Out: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=128)

        def consumer(i, slot, carry):
            ring.stage(0, slot)[0] = 1.0

        enigma.pipeline_loop(ring, 4, producer=lambda i, slot: None,
                             consumer=consumer)

    msg = compile_error(bad)
    assert "writes a pipeline ring's buffer" in msg, msg


def test_role_registers_that_do_not_fit_are_refused():
    @enigma.kernel
    def bad(X: enigma.f32):
        enigma.pipeline_ring(2, [("float", 512)], threads=256,
                             consumer_registers=248)

    msg = compile_error(bad)
    assert "128 x 40 + 256 x 248 = 68608" in msg and "384 x 168 = 64512" \
        in msg, msg


def test_roles_that_fit_64k_but_not_the_launch_are_refused():
    # 512 consumers at 120 and the producer at 24 fit 64K registers, but a
    # block of 640 threads holds 640 x 96 = 61440 (65536 / 640 in units of
    # 8): setmaxnreg.inc hung on an H100 with these numbers.
    @enigma.kernel
    def bad(X: enigma.f32):
        enigma.pipeline_ring(2, [("float", 512)], threads=512,
                             producer_registers=24, consumer_registers=120)

    msg = compile_error(bad)
    assert "128 x 24 + 512 x 120 = 64512" in msg and \
        "640 x 96 = 61440" in msg and "test_pipelines.py" in msg, msg


def test_a_threadgroup_that_is_not_warpgroups_is_refused():
    @enigma.kernel
    def bad(X: enigma.f32):
        enigma.pipeline_ring(2, [("float", 512)], threads=96)

    assert "multiple of 128" in compile_error(bad)


def test_a_pipeline_under_a_thread_dependent_branch_is_refused():
    @enigma.kernel
    def bad(X: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=128)
        with enigma.if_(enigma.thread_index_in_threadgroup() < 32):
            enigma.pipeline_loop(ring, 4, producer=lambda i, s: None,
                                 consumer=lambda i, s, c: None)

    assert "differs between threads" in compile_error(bad)


def test_front_end_mistakes():
    @enigma.kernel
    def bad_stages(X: enigma.f32):
        enigma.pipeline_ring(17, [("float", 512)], threads=128)

    with pytest.raises(enigma.EnigmaError, match="stages must be 2 to 16"):
        enigma.compile(bad_stages)

    # The classic mainloop counts its copies with cp.async (8 stages at
    # most); the pipelined one takes rings of up to 16.
    with pytest.raises(enigma.EnigmaError,
                       match=r"stages must be 2 to 8 \(warp_specialized: "
                             r"16\), got 9"):
        @enigma.kernel
        def deep_classic(A: enigma.bf16, B: enigma.bf16, C: enigma.bf16):
            enigma.gemm_block(A, B, C, m=64, n=64, k=64,
                              config=enigma.MmaConfig(64, 64, 64, 4, 1, 9))
        enigma.compile(deep_classic)

    @enigma.kernel
    def copy_outside(X: enigma.f32):
        ring = enigma.pipeline_ring(2, [("float", 512)], threads=128)
        enigma.stage_copy(ring, 0, 0, X, at=(0, 0), shape=(4, 4), ld=4,
                          box=(16, 32))

    with pytest.raises(enigma.EnigmaError, match="producer region"):
        enigma.compile(copy_outside)

    with pytest.raises(enigma.EnigmaError, match="cluster must be 1, 2 or 4"):
        @enigma.kernel
        def bad_cluster(A: enigma.bf16, B: enigma.bf16, C: enigma.bf16):
            enigma.gemm_block(A, B, C, m=64, n=64, k=64,
                              config=enigma.MmaConfig(
                                  64, 64, 64, 4, 1, 2,
                                  warp_specialized=True, cluster=3))
        enigma.compile(bad_cluster)

    with pytest.raises(enigma.EnigmaError, match="warp_specialized=True"):
        @enigma.kernel
        def persistent_classic(A: enigma.bf16, B: enigma.bf16,
                               C: enigma.bf16):
            enigma.gemm_block(A, B, C, m=64, n=64, k=64,
                              config=enigma.MmaConfig(64, 64, 64, 4, 1, 2,
                                                      persistent=True))
        enigma.compile(persistent_classic)


# --------------------------------------------------------------------------
# The CUDA text (NVRTC here; the GPU script runs it)
# --------------------------------------------------------------------------

def _cuda_sources():
    bf16, f32 = _example("gemm_bf16"), _example("gemm_f32")
    sources = {}
    for c in enigma.gemm_configs("cuda", "bf16", warp_specialized=True):
        sources[f"bf16 {c}"] = bf16.compiled(c).cuda_source
    for tf32 in (False, True):
        for c in enigma.gemm_configs("cuda", "f32", tf32,
                                     warp_specialized=True):
            sources[f"f32 tf32={tf32} {c}"] = \
                f32.compiled(c, tf32).cuda_source
    # The built-in choices for the Llama-3 projection shapes (split K).
    for m in (16, 128):
        for n, k in ((6144, 4096), (4096, 4096), (28672, 4096),
                     (10240, 8192)):
            c = enigma.gemm_config_for(m, n, k)
            sources.setdefault(f"bf16 {c}", bf16.compiled(c).cuda_source)
    for shares in ("a", "b"):   # the small-batch clusters the bench tries
        c = enigma.MmaConfig(64, 64, 64, 4, 1, 12, warp_specialized=True,
                             persistent=True, cluster=2, cluster_shares=shares)
        sources[f"bf16 {c}"] = bf16.compiled(c).cuda_source
    sources["split-K sum"] = bf16.compiled_reduce(4).cuda_source
    sources["box sums"] = enigma.compile(_weighted_box_sums(3)).cuda_source
    sources["box copies"] = enigma.compile(_box_copies(3)).cuda_source
    return sources


def test_every_pipelined_cuda_text_compiles_for_hopper(monkeypatch):
    monkeypatch.setenv("ENIGMA_NVRTC_OPTIONS", "--ptxas-options=-v")
    silent = []
    for what, source in _cuda_sources().items():
        try:
            _, log = enigma._core.Runtime.nvrtc_check(source, "sm_90a", [],
                                                      log=True)
        except enigma.BackendUnavailableError:
            pytest.skip("NVRTC is not installed here")
        if "Used " not in log:
            # Some NVRTC builds (13.0 on the GPU machines) compile but keep
            # ptxas's -v report out of the program log.
            silent.append(what)
            continue
        assert spill_free(log), what + "\n" + log
        # No ptxas remark or warning of serialised warpgroup products
        # (C7514, C7515), of setmaxnreg ignored (C7508, C7507) or else.
        assert not re.findall(r"\(C75\d\d\)", log), what + "\n" + log
        assert "ptxas warning" not in log, what + "\n" + log
    # The same under the other NVRTC a test process may load (PyTorch's or
    # the toolkit's; _ptxas_reports.py says why).
    assert_clean_under_other_nvrtc(_cuda_sources())
    if silent:
        pytest.skip(f"this NVRTC gave no ptxas report for {len(silent)} "
                    "kernels (they compiled): registers and spills unread")


def test_bounds_checked_pipelines(runtime, rng):
    """Bounds-checked mode: the same results; on CUDA every ring wait gets
    a site (barrier, role, file:line) and a bounded wait."""
    x = rng.standard_normal((37, 45)).astype(np.float32)
    compiled = enigma.compile(_weighted_box_sums(3), bounds_check=True)
    raw = runtime.execute(compiled, [x], output_size=2 * THREADS * 4,
                          scalars=[37, 45], grid=(2 * THREADS, 1, 1),
                          threads=(THREADS, 1, 1))
    np.testing.assert_allclose(np.frombuffer(raw, np.float32),
                               _box_sums_reference(x.astype(np.float64), 2),
                               rtol=1e-5, atol=1e-4)
    sites = [s for s in compiled._artifact.bounds_check_sites
             if s[0] == "ring wait"]
    assert compiled.bounds_checked and len(sites) == 2, sites
    assert "full barrier" in sites[0][1] and "consumer" in sites[0][1]
    assert "empty barrier" in sites[1][1] and "producer" in sites[1][1]
    assert "test_pipelines.py" in sites[0][2]
    src = compiled.cuda_source
    assert "enigma_ring_wait(" in src and "&enigma_ring_check" in src
