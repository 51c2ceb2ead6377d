"""Shared fixtures: every test that takes ``runtime`` runs once per backend
named in ENIGMA_TEST_BACKENDS (default "cpu"; the GPU script adds "cuda";
"metal-host" runs the Metal source itself on the host)."""

import importlib.util
import os
import pathlib
import secrets
import subprocess
import sys

import numpy as np
import pytest

import enigma

_BACKENDS = [b for b in os.environ.get("ENIGMA_TEST_BACKENDS", "cpu").split(",") if b]
_runtimes = {}


def _make_runtime(name):
    if name not in _runtimes:
        if name == "cpu":
            _runtimes[name] = enigma.CpuRuntime()
        elif name == "cuda":
            _runtimes[name] = enigma.CudaRuntime()
        elif name == "metal-host":
            _runtimes[name] = enigma.MetalHostRuntime()
        else:
            raise ValueError(f"unknown backend {name!r} in ENIGMA_TEST_BACKENDS")
    return _runtimes[name]


@pytest.fixture(params=_BACKENDS)
def runtime(request):
    """A runtime of each backend under test."""
    return _make_runtime(request.param)


@pytest.fixture
def rng():
    """A fresh random generator; its seed is printed so a failure can be
    replayed with ENIGMA_TEST_SEED."""
    seed = int(os.environ.get("ENIGMA_TEST_SEED", secrets.randbits(32)))
    print(f"random seed: {seed} (replay with ENIGMA_TEST_SEED={seed})")
    return np.random.default_rng(seed)


def tagged_line(path, tag):
    """The line of the file ``path`` that ends with the comment ``# <tag>``
    (tests that expect an error to name their own line find it this way)."""
    with open(path) as f:
        for number, text in enumerate(f, start=1):
            if text.rstrip().endswith(f"# {tag}"):
                return number
    raise AssertionError(f"no line tagged {tag!r} in {path}")


_EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def misaligned(a):
    """A C-contiguous copy of ``a`` that starts one element past a 16-byte
    boundary (as ``x[1:]`` of rows that are not whole 16-byte chunks)."""
    buf = np.empty(a.size + 16, a.dtype)
    start = next(i for i in range(1, 16)
                 if (buf.ctypes.data + i * a.itemsize) % 16)
    view = buf[start:start + a.size].reshape(a.shape)
    view[...] = a
    assert view.flags["C_CONTIGUOUS"] and view.ctypes.data % 16
    return view


def compile_error(fn) -> str:
    """The message of the EnigmaError that compiling ``fn`` raises."""
    import enigma
    with pytest.raises(enigma.EnigmaError) as info:
        enigma.compile(fn)
    return str(info.value)


def pipeline_sass():
    """tools/sass/pipeline_sass.py as a module (NVRTC to an sm_90a cubin,
    cuobjdump's SASS), loaded once per process."""
    key = "enigma_tool_pipeline_sass"
    if key not in sys.modules:
        path = _EXAMPLES.parents[1] / "tools" / "sass" / "pipeline_sass.py"
        spec = importlib.util.spec_from_file_location(key, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[key] = module
    return sys.modules[key]


def assert_no_spills_on_hopper(source, what):
    """NVRTC builds ``source`` for sm_90a (the caller sets
    ``ENIGMA_NVRTC_OPTIONS=--ptxas-options=-v``): no spills and no
    serialised warpgroup products in ptxas's report, or, where this NVRTC
    keeps the report to itself (13.0 on the GPU machines), no local
    memory in the SASS; and the same under the other NVRTC a test
    process may load (_ptxas_reports.py). Skips where NVRTC or cuobjdump
    is missing."""
    import enigma
    try:
        _, log = enigma._core.Runtime.nvrtc_check(source, "sm_90a", [],
                                                  log=True)
    except enigma.BackendUnavailableError:
        pytest.skip("NVRTC is not installed here")
    from _ptxas_reports import assert_clean_under_other_nvrtc, spill_free
    assert_clean_under_other_nvrtc({str(what): source})
    if "Used " in log:
        assert spill_free(log), f"{what}\n{log}"
        assert "C7514" not in log and "C7515" not in log, f"{what}\n{log}"
        return
    sass_tool = pipeline_sass()
    tool = sass_tool.cuobjdump()
    if tool is None:
        pytest.skip("this NVRTC gave no ptxas report and cuobjdump is "
                    "missing: spills unread")
    sass, _, _ = sass_tool.sass_of(source, tool)
    assert not sass_tool.uses_local_memory(sass), what


def run_on_cuda_in_child(test_file):
    """Where the suite runs on CUDA: ``test_file``'s tests on the GPU in a
    child process limited to 10 minutes (a wait that never ends fails
    instead of hanging the suite); its tests named ``own_process`` stay
    out."""
    if "cuda" not in os.environ.get("ENIGMA_TEST_BACKENDS", ""):
        pytest.skip("runs where ENIGMA_TEST_BACKENDS includes cuda")
    env = dict(os.environ, ENIGMA_TEST_BACKENDS="cuda",
               ENIGMA_CUDA_PIPELINE_TESTS="1")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", test_file, "-q", "-p",
         "no:cacheprovider", "-k", "not own_process"],
        capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def skip_cuda_outside_child(request, why):
    """In an autouse fixture: skips a test on the CUDA runtime unless it
    runs in the child process of :func:`run_on_cuda_in_child`."""
    runtime = request.node.funcargs.get("runtime")
    if runtime is not None and runtime.name == "cuda" and \
            os.environ.get("ENIGMA_CUDA_PIPELINE_TESTS") != "1":
        pytest.skip(why)


def gemm_operands(rng, m, n, k, dtype):
    """(A, B as the kernel takes them, A and B in float64): normal
    values, bfloat16 bits for "bf16", else float32."""
    a = rng.standard_normal((m, k))
    b = rng.standard_normal((k, n))
    if dtype == "bf16":
        ex = load_example("gemm_bf16")
        a, b = ex.to_bf16(a), ex.to_bf16(b)
        return a, b, ex.from_bf16(a).astype(np.float64), \
            ex.from_bf16(b).astype(np.float64)
    a, b = a.astype(np.float32), b.astype(np.float32)
    return a, b, a.astype(np.float64), b.astype(np.float64)


def check_float_product(c, fa, fb, extra=0.0):
    """``c`` (float32) against ``fa @ fb + extra`` in float64, within the
    float accumulation error 2 K 2^-24 (|a| @ |b|) and the rounding of
    ``extra``'s addition; NaN (a poisoned element left) fails."""
    want = fa @ fb + extra
    bound = 2 * fa.shape[1] * 2.0**-24 * (np.abs(fa) @ np.abs(fb)) + \
        abs(extra) * 2.0**-23 + 1e-30
    err = np.abs(c - want)
    bad = ~(err <= bound)
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} elements out of "
                           f"tolerance, worst {float(np.nanmax(err))}")


def box_thread_sums(x, groups, box_rows, box_cols, threads):
    """float64 array [group, box, thread]: ``x`` zero-padded to whole
    boxes, group ``g`` its column block ``g`` of ``box_cols``, box ``i``
    its rows ``i * box_rows ...``; each thread's sum of the box's
    elements ``t, t + threads, ...`` (row-major) - what the pipeline
    tests' consumers add per stage."""
    rows, cols = x.shape
    boxes = -(-rows // box_rows)
    padded = np.zeros((boxes * box_rows, groups * box_cols))
    padded[:rows, :cols] = x
    out = np.zeros((groups, boxes, threads))
    for g in range(groups):
        for i in range(boxes):
            box = padded[i * box_rows:(i + 1) * box_rows,
                         g * box_cols:(g + 1) * box_cols].reshape(-1)
            for t in range(threads):
                out[g, i, t] = box[t::threads].sum()
    return out


def load_example(name):
    """Imports examples/python/<name>.py as module ``enigma_example_<name>``
    (once per process)."""
    key = f"enigma_example_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, _EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[key]
        raise
    return module


# How every error of bounds-checked mode ends: the thread that made it.
BY_THREAD = r"by thread \((?P<x>\d+), (?P<y>\d+), (?P<z>\d+)\)"


def checked_error(pattern, excinfo):
    """The fields of a bounds-checked mode error that ``pattern`` (a
    compiled regular expression with named groups, most ending in
    BY_THREAD) finds in the raised exception's message: the groups as
    strings, ``thread`` as (x, y, z) ints when the pattern has BY_THREAD,
    and ``message``, the whole text."""
    message = str(excinfo.value)
    match = pattern.search(message)
    assert match, message
    fields = match.groupdict()
    if {"x", "y", "z"} <= fields.keys():
        fields["thread"] = (int(fields["x"]), int(fields["y"]),
                            int(fields["z"]))
    fields["message"] = message
    return fields


def assert_reported_at(path, fields, tag):
    """The error's ``where`` field (``file:line``, from checked_error)
    names the line of the test file ``path`` tagged ``# <tag>``."""
    file, line = fields["where"].rsplit(":", 1)
    assert os.path.basename(file) == os.path.basename(path), fields["message"]
    assert int(line) == tagged_line(path, tag), fields["message"]


def run_kernel(runtime, compiled, inputs, out_dtype, out_count, grid, threads,
               **kwargs):
    """Executes and returns the single output as a numpy array."""
    out_dtype = np.dtype(out_dtype)
    raw = runtime.execute(compiled, inputs, output_size=out_count * out_dtype.itemsize,
                          grid=grid, threads=threads, **kwargs)
    return np.frombuffer(raw, dtype=out_dtype).copy()


# --- The function-call form on every runtime ---------------------------------

class CallArrays:
    """Arrays of the backend under test for the function-call form: numpy
    for the CPU and MSL host runtimes (host memory), PyTorch CUDA tensors
    for CUDA."""

    def __init__(self, runtime):
        self.runtime = runtime
        if runtime.name in ("cpu", "metal-host"):  # host memory
            self.torch = None
        elif runtime.name == "cuda":
            self.torch = pytest.importorskip("torch")
            if not self.torch.cuda.is_available():
                pytest.skip("PyTorch has no CUDA device")
        else:
            pytest.skip("the function-call form runs on CpuRuntime, "
                        "MetalHostRuntime and CudaRuntime")

    def put(self, array, bf16=False):
        """A copy of ``array`` on the device; with ``bf16``, uint16 bits as
        bfloat16 (a PyTorch dtype; numpy arrays stay uint16)."""
        array = np.ascontiguousarray(array)
        if self.torch is None:
            return array.copy()
        tensor = self.torch.from_numpy(array.copy())
        if bf16:
            tensor = self.torch.from_numpy(array.view(np.int16).copy()).view(
                self.torch.bfloat16)
        return tensor.to(f"cuda:{self.runtime.device}")

    def get(self, array):
        if self.torch is None:
            return array
        self.torch.cuda.synchronize()
        return array.cpu().numpy()


@pytest.fixture
def arrays(runtime):
    """Arrays of the runtime under test; the launches of the test go to
    that runtime (chosen from the arrays, or with use_runtime for the MSL
    host runtime, which takes host arrays as the CPU backend does)."""
    made = CallArrays(runtime)
    if runtime.name == "metal-host":
        with enigma.use_runtime(runtime):
            yield made
    else:
        yield made
