"""What a first user of MmaConfig's launch helpers passes from
docs/reference/mma.md alone: a configuration field out of range or a
negative size is named by config.launch / blocks / tiles /
stream_k_schedule (an EnigmaError), never a ZeroDivisionError or a grid
of negative threads."""

import pytest

import enigma


@pytest.mark.parametrize("fields, name", [
    (dict(bm=0), "bm"), (dict(bn=-64), "bn"), (dict(wm=0), "wm"),
    (dict(wn=0), "wn"), (dict(stream_k=-1), "stream_k"),
    (dict(split_k=0), "split_k"), (dict(cluster=0), "cluster"),
    (dict(bm=64.0), "bm"), (dict(stream_k=True), "stream_k")])
def test_launch_names_a_field_out_of_range(fields, name):
    config = enigma.MmaConfig(**fields)
    for call in (lambda: config.launch(100, 100),
                 lambda: config.blocks(100, 100),
                 lambda: config.tiles(100, 100)):
        with pytest.raises(enigma.EnigmaError, match=rf"config\.{name} must"):
            call()


@pytest.mark.parametrize("m, n", [(-1, 5), (5, -1), (2.5, 5)])
def test_launch_names_a_negative_size(m, n):
    with pytest.raises(enigma.EnigmaError, match="must be"):
        enigma.MmaConfig().launch(m, n)


def test_launch_of_empty_products_is_empty():
    assert enigma.MmaConfig().launch(0, 5) == ((0, 1, 1), (128, 1, 1))


def test_stream_k_schedule_groups():
    config = enigma.MmaConfig(bm=64, bn=64, bk=32, wm=4, wn=1,
                              warp_specialized=True, persistent=True,
                              stream_k=3)
    with pytest.raises(enigma.EnigmaError, match="groups must be at least 1"):
        enigma.stream_k_schedule(config, 65, 70, 100, groups=0)
    assert len(enigma.stream_k_schedule(config, 65, 70, 100, groups=2)) == 2


def test_launch_takes_numpy_sizes():
    np = pytest.importorskip("numpy")
    config = enigma.MmaConfig()
    assert config.launch(np.int64(300), np.int32(5)) == config.launch(300, 5)


def test_small_stream_k_workspace_message_reads(arrays):
    """The refusal of a small workspace says what the buffer is for in a
    sentence ("writes its stream-K partials to as an ..." before)."""
    np = pytest.importorskip("numpy")
    config = enigma.MmaConfig(bm=64, bn=64, bk=32, wm=4, wn=1,
                              warp_specialized=True, persistent=True,
                              stream_k=2)

    @enigma.kernel
    def gemm(A: enigma.f16, B: enigma.f16, C: enigma.f32, W: enigma.f32,
             F: enigma.u32):
        enigma.gemm_block(A, B, C, m=8, n=8, k=8, config=config,
                          workspace=W, flags=F)

    floats, flags = enigma.stream_k_workspace(config)
    grid, threads = config.launch(8, 8)
    with pytest.raises(enigma.DispatchError,
                       match="writes its stream-K partials into the "
                             r"workspace as a \(stream_k bm\) x bn matrix"):
        gemm.launch(grid=grid, threads=threads)(
            *(arrays.put(np.zeros(count, dtype)) for count, dtype in (
                (64, np.float16), (64, np.float16), (64, np.float32),
                (floats - 1, np.float32), (flags, np.uint32))))


def test_autotuning_example_of_the_reference_runs_as_written(tmp_path,
                                                              monkeypatch):
    """docs/reference/mma.md's autotuning block, executed as it stands
    (its own cache directory), gives A @ B."""
    import pathlib
    np = pytest.importorskip("numpy")
    monkeypatch.setenv("ENIGMA_CACHE_DIR", str(tmp_path))
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" /
            "reference" / "mma.md").read_text()
    section = text[text.index("## Autotuning"):]
    block = section.split("```python\n", 1)[1].split("```", 1)[0]
    scope = {}
    exec(compile(block, "mma.md", "exec"), scope)
    a, b, c = scope["a"], scope["b"], scope["c"]
    np.testing.assert_allclose(c, a.astype(np.float64) @ b, rtol=1e-2,
                               atol=1e-2)
