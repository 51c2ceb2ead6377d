"""enigma.compile and CompiledKernel (docs/reference/core.md): kernels and
the kernel an @enigma.jit function launches."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time

from . import _core, _log
from ._dtypes import as_dtype, plain_index
from ._ir import BufferProxy, EnigmaError, user_location
from ._jit import JitFunction, run_host
from ._kernel import KernelCalls, KernelDefinition, Launchable, Param
from ._tensor import IdentityTensor, Tensor


class CompiledKernel(Launchable):
    """A compiled kernel: its sources for every target, its parameter list,
    and (where xcrun exists) the Metal library.

    ``enigma.compile`` makes them; they launch on arrays as kernels do
    (``compiled[n](...)``, ``compiled.launch(grid=..., threads=...)(...)``),
    with the options they were compiled with (docs/reference/launch.md). Constructed directly, with the original
    Enigma's fields (``CompiledKernel(kernel_name, metallib_path,
    metallib_bytes, metal_source, mlir_source=None, grid=None, block=None,
    scalar_params=None, num_params=None, param_names=None)``), it is the
    kernel function ``kernel_name`` of hand-written Metal ``metal_source``:
    MetalRuntime runs its metallib, MetalHostRuntime and CpuRuntime run its
    MSL on the CPU (docs/runtimes.md, "The MSL host runtime"); its
    parameters are read from the MSL declaration."""

    def __init__(self, kernel_name, metallib_path=None, metallib_bytes=None,
                 metal_source=None, mlir_source=None, grid=None, block=None,
                 scalar_params=None, num_params=None, param_names=None):
        if not isinstance(kernel_name, str):
            raise TypeError("kernel_name must be the Metal kernel function's "
                            f"name (str), got {type(kernel_name).__name__}")
        if not isinstance(metal_source, str):
            raise TypeError("CompiledKernel(kernel_name, metallib_path, "
                            "metallib_bytes, metal_source, ...) needs the "
                            "Metal source text as metal_source; kernels "
                            "written in Python come from enigma.compile")
        artifact, raw = _core.msl_host_artifact(metal_source, kernel_name, [])
        params = params_of(artifact)
        self._init(artifact, params, None, metallib_path, None, grid, block)
        self._metal_source_only = True
        self._metallib_bytes = metallib_bytes
        self._given_mlir = mlir_source
        self._bytes_params = [p for p, r in zip(params, raw) if r]
        names = [p.name for p in params]
        if num_params is not None and num_params != len(params):
            raise EnigmaError(
                f"num_params={num_params}, but {kernel_name} in metal_source "
                f"has {len(params)} parameters ({', '.join(names)})")
        if param_names is not None and list(param_names) != names:
            raise EnigmaError(
                f"param_names={list(param_names)}, but {kernel_name} in "
                f"metal_source has the parameters {names}")
        del scalar_params  # derived from the source

    @classmethod
    def _make(cls, artifact, params, mlir_traced, metallib_path=None,
              work_dir=None, grid=None, block=None):
        """What ``enigma.compile`` returns."""
        self = cls.__new__(cls)
        self._init(artifact, params, mlir_traced, metallib_path, work_dir,
                   grid, block)
        return self

    def _init(self, artifact, params, mlir_traced, metallib_path, work_dir,
              grid, block):
        self._artifact = artifact
        self.params = params
        self.traced_ir = mlir_traced
        self.metallib_path = metallib_path
        self.work_dir = work_dir
        self.grid = grid
        self.block = block
        self._metal_source_only = False
        self._metallib_bytes = None
        self._given_mlir = None

    def _launch_label(self) -> str:
        return "compiled"

    def __call__(self, *args, **kwargs):
        # compiled(a, b) as a function: Python's "not callable" said how to
        # launch instead.
        file, line = user_location()
        raise EnigmaError(
            f"{file}:{line}: a compiled kernel ({self.kernel_name}) is not "
            "called directly: launch it on your arrays with compiled[n](...) "
            "(a 1-D grid of n threads) or compiled.launch(grid=..., "
            "threads=...)(...) (docs/reference/launch.md), or run it with a "
            "runtime's execute(compiled, inputs, ...)")

    def _make_calls(self):
        if self._metal_source_only:
            raise EnigmaError(
                f"{self.kernel_name} was made from Metal source "
                "(CompiledKernel(kernel_name, ..., metal_source)); launch it "
                "with a runtime's execute() or prepare()")
        return KernelCalls(self.kernel_name, self.params, compiled=self)

    @property
    def param_names(self) -> list:
        """The parameter names, in declaration order (the original DSL's
        field)."""
        return [p.name for p in self.params]

    @property
    def num_params(self) -> int:
        """The number of parameters, buffers and scalars."""
        return len(self.params)

    @property
    def scalar_params(self) -> list:
        """``(name, parameter index, Metal type)`` of every scalar
        parameter, as the original DSL lists them."""
        return [(p.name, i, p.dtype.msl) for i, p in enumerate(self.params)
                if p.kind == "scalar"]

    @property
    def kernel_name(self) -> str:
        """``enigma_kernel_<python name>``, also the MSL function name."""
        return self._artifact.kernel_name

    @property
    def metal_source(self) -> str:
        """The generated Metal Shading Language."""
        return self._artifact.msl_source

    kernel_source = metal_source

    @property
    def mlir_source(self) -> str | None:
        """The optimised ``enigma``-dialect MLIR the sources were printed
        from (for a kernel made from Metal source: what was given)."""
        if self._metal_source_only:
            return self._given_mlir
        return self._artifact.mlir_source

    @property
    def cuda_source(self) -> str:
        """The CUDA C++ that CudaRuntime compiles with NVRTC."""
        return self._artifact.cuda_source

    @property
    def cpp_source(self) -> str:
        """The host C++ that CpuRuntime compiles."""
        return self._artifact.cpp_source

    @property
    def bounds_checked(self) -> bool:
        """True when compiled in bounds-checked mode (``bounds_check=True``
        or ``ENIGMA_BOUNDS_CHECK=1``) with at least one check (an access,
        integer arithmetic, threadgroup memory or simdgroup lanes)."""
        return bool(self._artifact.bounds_check_sites)

    @property
    def threadgroup_memory_bytes(self) -> int:
        """Bytes of threadgroup memory the kernel declares (its
        ``threadgroup_alloc`` arrays, each rounded up to 16 bytes, and in
        bounds-checked mode their shadows); dynamic threadgroup memory
        comes on top at each launch."""
        return self._artifact.threadgroup_memory_bytes

    @property
    def has_metallib(self) -> bool:
        if self._metallib_bytes is not None:
            return True
        return self.metallib_path is not None and os.path.exists(
            self.metallib_path)

    @property
    def metallib_bytes(self) -> bytes | None:
        """The compiled .metallib, or None where xcrun is unavailable."""
        if self._metallib_bytes is not None:
            return self._metallib_bytes
        if not self.has_metallib:
            return None
        with open(self.metallib_path, "rb") as f:
            return f.read()

    def export_metal(self, path=None) -> str:
        """Writes the MSL to ``path`` (default ``<kernel_name>.metal`` in the
        current directory) and returns the path."""
        path = path or f"{self.kernel_name}.metal"
        with open(path, "w") as f:
            f.write(self.metal_source)
        return os.path.abspath(path)

    def __repr__(self) -> str:
        sig = ", ".join(f"{p.name}: {p.kind} {p.dtype.name}"
                        for p in self.params)
        return f"<CompiledKernel {self.kernel_name}({sig})>"


def params_of(artifact) -> list:
    """The parameters of a compiled artifact, as Param records."""
    return [Param(p.name, p.kind, as_dtype(p.dtype), p.vec_width,
                  p.multiple_of, written=p.written) for p in artifact.params]


def _xcrun_available() -> bool:
    return shutil.which("xcrun") is not None


def _run_tool(args, what):
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{what} failed (exit {proc.returncode}):\n"
                           f"$ {' '.join(args)}\n{proc.stderr.strip()}")


def _build_metallib(msl: str, name: str, work_dir: str | None,
                    keep_source: bool) -> str:
    """metal -> .air -> metallib with Apple's tools; returns the .metallib."""
    out_dir = work_dir or tempfile.mkdtemp(prefix="enigma-")
    source = os.path.join(out_dir, name + ".metal")
    air = os.path.join(out_dir, name + ".air")
    lib = os.path.join(out_dir, name + ".metallib")
    with open(source, "w") as f:
        f.write(msl)
    try:
        return _run_metal_tools(source, air, lib, keep_source or work_dir is not None)
    except BaseException:
        if work_dir is None:  # our own temporary folder: leave nothing behind
            shutil.rmtree(out_dir, ignore_errors=True)
        raise


def _run_metal_tools(source: str, air: str, lib: str, keep_source: bool) -> str:
    # No fast math: NaN/inf and rounding must match the CPU and CUDA backends.
    _run_tool(["xcrun", "-sdk", "macosx", "metal", "-fno-fast-math", "-c",
               source, "-o", air],
              "xcrun metal")
    _run_tool(["xcrun", "-sdk", "macosx", "metallib", air, "-o", lib],
              "xcrun metallib")
    os.remove(air)
    if not keep_source:
        os.remove(source)
    return lib


def compile(fn, *args, keep_metal_source=False, dump_ir=False,
            dump_mlir=False, work_dir=None, vec_width=0, emit_only=None,
            bounds_check=None, cuda_tma=None):
    """Traces ``fn`` (an ``@enigma.kernel``) and compiles it for every target.

    ``dump_ir`` prints the traced IR (before optimisation), ``dump_mlir`` the
    optimised MLIR; ``dump_mlir="locations"`` prints it with every op's
    source location (``loc("file.py":line:0)``, the user's line that
    created it), and ``mlir_source`` and ``traced_ir`` (the IR ``dump_ir``
    prints) then carry them too. ``work_dir`` receives ``<kernel_name>.metal`` and
    ``.mlir``. Where ``xcrun`` exists the MSL is compiled to a .metallib
    unless ``emit_only`` (or ``ENIGMA_EMIT_ONLY=1``).

    ``vec_width=N`` (2 or 4; 0 or 1 is off) makes every float-like buffer
    (f32, f16, bf16) a buffer of N-lane vectors (``device float4*``): a load
    gives a vector, a store takes one (or a scalar, filling every lane), and
    the runtimes size those buffers in vectors, so launch n/N threads.

    ``bounds_check=True`` (or env ``ENIGMA_BOUNDS_CHECK=1`` when left None)
    compiles in bounds-checked mode: every buffer and threadgroup access
    checks its index, an out-of-bounds access does not happen (a load gives
    zero), and the first one is raised after the dispatch as an
    ``enigma.BoundsCheckError`` (an ``EnigmaRuntimeError``) naming the buffer, index, size, thread and
    source line (docs/runtimes.md, "Bounds-checked mode").

    ``cuda_tma=True`` (or env ``ENIGMA_CUDA_TMA=1`` when left None) lets
    the CUDA text copy whole tiles of ``enigma.copy_tile`` with the Tensor
    Memory Accelerator on sm_90 GPUs (one bulk copy per tile, issued by one
    thread, completing on an mbarrier) instead of ``cp.async`` in every
    thread. Off by default: in ``gemm_block`` it measured slower than
    ``cp.async`` (docs/design/tma.md). Other targets ignore it.
    """
    if isinstance(fn, JitFunction):
        launch, grid, block, where = run_host(fn, args, vec_width)
        params = _buffer_params(_tensors_in(list(args) + launch.arguments),
                                where)
        compiled = compile(_LaunchedKernel(launch, params),
                           keep_metal_source=keep_metal_source,
                           dump_ir=dump_ir, dump_mlir=dump_mlir,
                           work_dir=work_dir, vec_width=vec_width,
                           emit_only=emit_only, bounds_check=bounds_check,
                           cuda_tma=cuda_tma)
        compiled.grid, compiled.block = grid, block
        compiled.threadgroup_memory = launch.smem
        return compiled
    if not isinstance(fn, KernelDefinition):
        if isinstance(fn, CompiledKernel):
            raise EnigmaError(f"enigma.compile expects a kernel, got {fn!r}, "
                              "which is compiled already")
        if callable(fn):
            raise EnigmaError(
                f"{getattr(fn, '__name__', fn)!r} is not an Enigma kernel; "
                "decorate it with @enigma.kernel")
        raise EnigmaError(f"enigma.compile expects a kernel, got {fn!r}")
    if args:
        raise EnigmaError("arguments to enigma.compile are only taken by "
                          "@enigma.jit functions; an @enigma.kernel takes none")
    vec_width = plain_index(vec_width)
    if (isinstance(vec_width, bool) or not isinstance(vec_width, int) or
            vec_width not in (0, 1, 2, 4)):
        raise EnigmaError(f"vec_width must be 2 or 4 (0 or 1 turns it off), "
                          f"got {vec_width!r}")
    if dump_mlir not in (False, True, None, "locations"):
        raise EnigmaError(f"dump_mlir must be True, False or \"locations\", "
                          f"got {dump_mlir!r}")
    if bounds_check is None:
        bounds_check = os.environ.get("ENIGMA_BOUNDS_CHECK", "") not in ("", "0")
    if cuda_tma is None:
        cuda_tma = os.environ.get("ENIGMA_CUDA_TMA", "") not in ("", "0")
    started = time.perf_counter() if _log.INFO else 0.0
    tracer = fn.trace(vec_width)
    traced = tracer.builder.mlir_text(dump_mlir == "locations")
    if dump_ir:
        print(f"// traced IR of {fn.kernel_name}\n{traced}")
    try:
        artifact = tracer.builder.compile(True, dump_mlir == "locations",
                                          bool(bounds_check), bool(cuda_tma))
    except EnigmaError as e:
        raise EnigmaError(str(e)) from None
    if dump_mlir:
        print(f"// MLIR of {fn.kernel_name}\n{artifact.mlir_source}")
    if work_dir is not None:
        os.makedirs(work_dir, exist_ok=True)
        with open(os.path.join(work_dir, artifact.kernel_name + ".metal"), "w") as f:
            f.write(artifact.msl_source)
        with open(os.path.join(work_dir, artifact.kernel_name + ".mlir"), "w") as f:
            f.write(artifact.mlir_source)
    if emit_only is None:
        emit_only = os.environ.get("ENIGMA_EMIT_ONLY", "") not in ("", "0")
    metallib = None
    # A kernel Metal cannot run (artifact.metal_unsupported) has MSL that
    # xcrun would refuse; the Metal runtimes refuse it with the reason.
    if not emit_only and _xcrun_available() and not artifact.metal_unsupported:
        metallib = _build_metallib(artifact.msl_source, artifact.kernel_name,
                                   work_dir, keep_metal_source)
    params = params_of(artifact)
    _record_sources(artifact)
    if _log.INFO:
        _log.info("compiled %s (traced, optimised, printed as MSL, CUDA and "
                  "host C++%s) in %s", artifact.kernel_name,
                  ", bounds-checked" if bounds_check else "",
                  _log.milliseconds(time.perf_counter() - started))
    compiled = CompiledKernel._make(artifact, params, traced, metallib,
                                    work_dir)
    # A dispatch that faults runs again compiled in bounds-checked mode to
    # find the access (_runtime.py).
    compiled._bounds_check_source = (fn, vec_width)
    return compiled


# --------------------------------------------------------------------------
# The kernel an @enigma.jit function launches
# --------------------------------------------------------------------------

def _tensors_in(values, address_space="device") -> list:
    """Tensors of ``address_space`` among ``values`` (looking into lists
    and tuples); of device tensors only those with a buffer (identity and
    buffer-less tensors are not parameters)."""
    found = []
    for v in values:
        if isinstance(v, IdentityTensor):
            continue
        if isinstance(v, Tensor):
            if v.address_space == address_space and (
                    address_space != "device" or v.buffer_index >= 0):
                found.append(v)
        elif isinstance(v, (list, tuple)):
            found.extend(_tensors_in(v, address_space))
    return found


def _buffer_params(tensors, where: str) -> list:
    """One buffer Param per buffer_index, indices 0..n-1."""
    by_index = {}
    for t in tensors:
        seen = by_index.setdefault(t.buffer_index, t)
        if (seen.name, seen.dtype) != (t.name, t.dtype):
            raise EnigmaError(
                f"{where}: buffer {t.buffer_index} is viewed as tensor "
                f"{seen.name!r} ({seen.dtype.name}) and as {t.name!r} "
                f"({t.dtype.name}); views of one buffer share name and type")
    indices = sorted(by_index)
    if indices != list(range(len(indices))):
        raise EnigmaError(
            f"{where}: the tensors use buffer indices {indices}; they must be "
            f"0 to {len(indices) - 1} without gaps (each is a kernel "
            "parameter, bound in that order)")
    return [Param(by_index[i].name, "buffer", by_index[i].dtype)
            for i in indices]


class _LaunchedKernel(KernelDefinition):
    """The kernel of a launch, traced with its recorded arguments: Tensors
    bind to buffer parameters, everything else is passed as it is."""

    def __init__(self, launch, params):
        kernel = launch.kernel
        self.fn = kernel.fn
        self.__name__ = kernel.__name__
        self.__doc__ = kernel.__doc__
        self.__wrapped__ = kernel.__wrapped__
        self.params = params
        self._arguments = launch.arguments

    def bind_arguments(self, tracer, vec_width):
        if vec_width > 1:
            raise EnigmaError("vec_width does not apply to @enigma.jit "
                              "kernels: Tensor.load()/store() choose vector "
                              "accesses themselves")
        tracer.buffers = {}
        for index, p in enumerate(self.params):
            buf = tracer.call("add_vector_buffer", p.name, p.dtype.name, 1,
                              at=tracer.location)
            tracer.buffers[index] = BufferProxy(tracer, p.name, p.dtype, buf)
            tracer.buffers[index].buffer_index = index
        # Threadgroup tensors passed in are allocated at the top of the body.
        for t in _tensors_in(self._arguments, address_space="threadgroup"):
            t._threadgroup_array(tracer)
        return list(self._arguments)


def _record_sources(artifact):
    """With ENIGMA_SOURCE_DUMP_DIR set, keeps every generated MSL and CUDA
    text so CI can check them all: the MSL against the host stand-in of
    metal_stdlib, the CUDA through NVRTC. The MSL of a kernel Metal cannot
    run (artifact.metal_unsupported) is left out: no Metal runtime loads it."""
    dump_dir = os.environ.get("ENIGMA_SOURCE_DUMP_DIR")
    if not dump_dir:
        return
    import hashlib
    os.makedirs(dump_dir, exist_ok=True)
    import json
    sources = [(artifact.cuda_source, ".cu")]
    # MSL of a kernel Metal cannot run is refused before it is compiled.
    if not artifact.metal_unsupported:
        sources.append((artifact.msl_source, ".metal"))
    for text, ext in sources:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = os.path.join(dump_dir, f"{artifact.kernel_name}-{digest}{ext}")
        if not os.path.exists(path):
            with open(path, "w") as f:
                f.write(text)
            if ext == ".cu":
                # The function constants the source reads, for the check.
                with open(path + ".json", "w") as f:
                    json.dump({"constants": [list(c) for c in
                                             artifact.constants]}, f)
