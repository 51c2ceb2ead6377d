"""What a first user of enigma.attention passes from
docs/reference/attention.md alone: tile configurations the kernels cannot
run (refused with a ValueError naming the field, never a wrong result or
an error from deep inside a kernel), arguments of the wrong kind, numpy
scalars, read-only arrays; results against float64 numpy and PyTorch
autograd."""

import dataclasses

import numpy as np
import pytest

import enigma
from conftest import misaligned
import enigma.attention as ea
from _attention_reference import make, reference_bhsd, values


def arrays(rng, sq=8, skv=8, hq=4, hkv=2, d=64, dtype="bf16"):
    return (make(rng, (1, hq, sq, d), dtype),
            make(rng, (1, hkv, skv, d), dtype),
            make(rng, (1, hkv, skv, d), dtype))


@pytest.mark.parametrize("fields, field", [
    (dict(rows=0), "rows"), (dict(rows=32), "rows"), (dict(rows=96), "rows"),
    (dict(rows=-64), "rows"), (dict(bc=0), "bc"), (dict(bc=8), "bc"),
    (dict(bc=-16), "bc"), (dict(bc=40), "bc")])
def test_classic_forward_config_is_checked(rng, fields, field):
    q, k, v = arrays(rng)
    with pytest.raises(ValueError, match=rf"attention: .*{field} must be"):
        ea.attention(q, k, v, config=ea.ForwardConfig(**fields),
                     num_splits=0)


@pytest.mark.parametrize("fields, field", [
    (dict(stages=3), "stages"), (dict(stages=0), "stages"),
    (dict(simdgroups=0), "simdgroups"), (dict(dq_simdgroups=0),
                                         "dq_simdgroups"),
    (dict(bq=0), "bq"), (dict(bq=40), "bq"), (dict(bk=0), "bk"),
    (dict(bk=40), "bk")])
def test_backward_config_is_checked(rng, fields, field):
    q, k, v = arrays(rng)
    o, lse = ea.attention(q, k, v, return_lse=True)
    config = dataclasses.replace(ea.BackwardConfig(), **fields)
    with pytest.raises(ValueError,
                       match=rf"attention_backward: .*{field} must"):
        ea.attention_backward(q, q, k, v, o, lse, config=config)


@pytest.mark.parametrize("fields", [dict(bq=48), dict(bq=16),
                                    dict(simdgroups=3)])
def test_atomic_backward_needs_whole_query_blocks(rng, fields):
    """The atomic dQ needs bq a multiple of 16 * simdgroups (its result
    was wrong before this was checked); the deterministic mode takes it."""
    q, k, v = arrays(rng)
    o, lse = ea.attention(q, k, v, return_lse=True)
    config = dataclasses.replace(ea.BackwardConfig(), **fields)
    with pytest.raises(ValueError, match="multiple of 16 \\* simdgroups"):
        ea.attention_backward(q, q, k, v, o, lse, config=config,
                              deterministic=False)
    ea.attention_backward(q, q, k, v, o, lse, config=config)


def test_arguments_of_the_wrong_kind(rng):
    q, k, v = arrays(rng)
    with pytest.raises(TypeError, match="attention: runtime must be"):
        ea.attention(q, k, v, runtime="cpu")
    with pytest.raises(TypeError, match="attention: config must be a "
                                        "ForwardConfig"):
        ea.attention(q, k, v, config=ea.BackwardConfig())
    o, lse = ea.attention(q, k, v, return_lse=True)
    with pytest.raises(TypeError, match="attention_backward: config must "
                                        "be a BackwardConfig"):
        ea.attention_backward(q, q, k, v, o, lse, config=ea.ForwardConfig())
    with pytest.raises(ValueError, match="attention: causal must be a bool"):
        ea.attention(q, k, v, causal="yes")


def test_numpy_scalars_and_read_only_arrays(runtime, rng):
    """A numpy float scale and numpy bool causal are numbers like any
    other; read-only inputs (np.load(mmap_mode="r")) are only read."""
    q, k, v = arrays(rng, sq=5, skv=19)
    for a in (q, k, v):
        a.setflags(write=False)
    scale = np.float32(0.1)
    for num_splits in (None, 0):
        o, lse = ea.attention(q, k, v, causal=np.bool_(True), scale=scale,
                              return_lse=True, num_splits=num_splits,
                              runtime=runtime)
        want_o, want_lse = reference_bhsd(q, k, v, True, float(scale))
        np.testing.assert_allclose(values(o), want_o, atol=2e-2, rtol=2e-2)
        np.testing.assert_allclose(lse, want_lse, atol=1e-3, rtol=1e-3)


def test_torch_tensors_refuse_numpy_only_arguments(rng):
    """PyTorch tensors run through the ops on their own device with the
    default tile shapes: a runtime or config given with them was ignored
    without a word; it is refused."""
    torch = pytest.importorskip("torch")
    q, k, v = (torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
               for a in arrays(rng))
    with pytest.raises(ValueError, match="attention: runtime= and config= "
                                         "are for numpy arrays"):
        ea.attention(q, k, v, runtime=enigma.CpuRuntime())
    with pytest.raises(ValueError, match="attention: runtime= and config="):
        ea.attention(q, k, v, config=ea.ForwardConfig())
    o, lse = ea.attention(q, k, v, return_lse=True)
    with pytest.raises(ValueError, match="attention_backward: runtime="):
        ea.attention_backward(q, q, k, v, o, lse,
                              config=ea.BackwardConfig())


def test_yes_no_arguments_are_bools(rng):
    """deterministic="no" is a truthy string: it ran the deterministic
    mode, the opposite of what it says."""
    q, k, v = arrays(rng)
    o, lse = ea.attention(q, k, v, return_lse=True)
    with pytest.raises(ValueError,
                       match="attention_backward: deterministic must be a "
                             "bool"):
        ea.attention_backward(q, q, k, v, o, lse, deterministic="no")
    with pytest.raises(ValueError, match="attention: return_lse must be"):
        ea.attention(q, k, v, return_lse="no")


def test_torch_yes_no_arguments_are_bools(rng):
    torch = pytest.importorskip("torch")
    q, k, v = (torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
               for a in arrays(rng))
    with pytest.raises(ValueError, match="enigma.torch.attention: causal "
                                         "must be a bool"):
        ea.attention(q, k, v, causal="no")
    with pytest.raises(ValueError, match="enigma.torch.attention: scale "
                                         "must be a positive"):
        ea.attention(q, k, v, scale="a")
    o, lse = ea.attention(q, k, v, return_lse=True)
    with pytest.raises(ValueError, match="deterministic must be a bool"):
        ea.attention_backward(q, q, k, v, o, lse, deterministic="no")


def test_misaligned_inputs(runtime, rng):
    """Contiguous inputs that do not start on a 16-byte boundary are only
    read: copied, not refused."""
    q, k, v = arrays(rng, sq=3, skv=21, dtype="f16")
    for num_splits in (None, 0):
        o = ea.attention(misaligned(q), misaligned(k), v, causal=True,
                         num_splits=num_splits, runtime=runtime)
        want, _ = reference_bhsd(q, k, v, True)
        np.testing.assert_allclose(values(o), want, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("name", ["forward_config", "backward_config",
                                  "decode_config"])
def test_default_configs_name_a_wrong_head_dimension(name):
    """d = 96 was a KeyError (or a configuration for a kernel that does
    not exist)."""
    with pytest.raises(ValueError, match=rf"{name}: d \(the head "
                                         r"dimension\) must be 64, 128 or"):
        getattr(ea, name)(enigma.CpuRuntime(), 96)
    with pytest.raises(ValueError, match="forward_configs: d"):
        ea.forward_configs(96)


@pytest.mark.parametrize("runtime_of", ["cpu", "cuda"])
def test_forward_config_refuses_what_is_not_a_flag_or_a_length(runtime_of):
    """forward_config's choice depends on paged, causal and max_sq: a
    string for causal (truthy) chose the causal threshold, one for max_sq
    was a TypeError from a comparison or, off sm_90, not noticed at all.
    Refused with the argument's name on every runtime."""
    from enigma._attention.launch import Target
    runtime = Target(runtime_of)
    with pytest.raises(ValueError, match="forward_config: causal must be a "
                                         "bool, got 'no'"):
        ea.forward_config(runtime, 64, causal="no")
    with pytest.raises(ValueError, match="forward_config: paged must be a "
                                         "bool, got 1"):
        ea.forward_config(runtime, 64, paged=1)
    for bad in ("4096", -1, 2.0, True):
        with pytest.raises(ValueError, match="forward_config: max_sq must "
                                             "be None or an int of at "
                                             "least 0"):
            ea.forward_config(runtime, 64, max_sq=bad)
    assert ea.forward_config(runtime, 64, max_sq=np.int64(4096),
                             causal=np.bool_(True)) == \
        ea.forward_config(runtime, 64, max_sq=4096, causal=True)


def test_first_example_of_the_reference_runs_as_written():
    """docs/reference/attention.md's first block, executed as it stands:
    every form gives the same numbers, and those of float64 numpy."""
    import pathlib
    pytest.importorskip("torch")
    text = (pathlib.Path(__file__).resolve().parents[2] / "docs" /
            "reference" / "attention.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    scope = {}
    exec(compile(block, "attention.md", "exec"), scope)
    q, k, v, o = scope["q"], scope["k"], scope["v"], scope["o"]
    want, want_lse = reference_bhsd(q, k, v, True)
    np.testing.assert_allclose(values(o), want, atol=2e-3, rtol=2e-3)
    np.testing.assert_allclose(scope["lse"], want_lse, atol=1e-4, rtol=1e-4)
    packed = o.transpose(0, 2, 1, 3).reshape(256, -1, 64)
    np.testing.assert_array_equal(scope["o_varlen"], packed)
    np.testing.assert_array_equal(scope["o_paged"], packed)
    np.testing.assert_array_equal(scope["ot"].detach().numpy(), o)
    for grad, name in ((scope["qt"].grad, "dq"), (scope["kt"].grad, "dk"),
                       (scope["vt"].grad, "dv")):
        np.testing.assert_array_equal(grad.numpy(), scope[name])


def test_attention_module_reached_from_the_package():
    """`import enigma` alone, then `enigma.attention.attention(...)`: the
    library module is imported on first use, as `import enigma.attention`
    would, and computes the same thing (checked against float64 numpy)."""
    import subprocess
    import sys
    code = (
        "import numpy as np, enigma\n"
        "rng = np.random.default_rng()\n"
        "q, k, v = (rng.standard_normal((1, 2, 5, 64)).astype(np.float16)"
        " for _ in range(3))\n"
        "o = enigma.attention.attention(q, k, v, runtime=enigma.CpuRuntime())\n"
        "s = q.astype(np.float64) @ k.astype(np.float64).transpose(0, 1, 3, 2)"
        " / 8.0\n"
        "p = np.exp(s - s.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)\n"
        "assert np.allclose(o, p @ v.astype(np.float64), atol=2e-3)\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and "ok" in done.stdout, done.stderr[-2000:]
