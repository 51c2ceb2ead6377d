"""examples/python/attention_gqa.py, attention_decode.py and
attention_backward.py run as scripts would, at small sizes, on the best
runtime here; each checks itself against numpy (float64) and prints
"pass"."""

import importlib.util
import pathlib
import sys

import pytest

_EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def _load(name):
    key = f"enigma_example_{name}"
    if key not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            key, _EXAMPLES / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[key] = module
    return sys.modules[key]


@pytest.mark.parametrize("name,kwargs", [
    ("attention_gqa", dict(heads=4, kv_heads=1, dim=64, lengths=(9, 0, 40),
                           cached=3)),
    ("attention_gqa", dict(heads=2, kv_heads=2, dim=128, lengths=(33,),
                           cached=0, causal=False, dtype="f16")),
    ("attention_decode", dict(batch=3, heads=8, kv_heads=2, dim=64,
                              keys=200, page_size=32, splits=3)),
    ("attention_backward", dict(batch=1, heads=2, kv_heads=1, seq=40,
                                dim=64, deterministic=True)),
    ("attention_backward", dict(batch=1, heads=2, kv_heads=2, seq=33,
                                dim=64, causal=False, deterministic=False)),
])
def test_example_main(name, kwargs, capsys):
    assert _load(name).main(**kwargs) == 0
    assert capsys.readouterr().out.rstrip().endswith("pass")


@pytest.mark.parametrize("name,argv", [
    ("attention_gqa", ["--lengths", "3,4", "--no-causal", "--dtype", "f16"]),
    ("attention_decode", ["--splits", "2", "--page-size", "16"]),
    ("attention_backward", ["--deterministic", "--no-causal"]),
    ("attention_backward", ["--atomic-dq"]),
])
def test_example_arguments(name, argv):
    args = _load(name).parse_args(argv)
    assert args is not None
