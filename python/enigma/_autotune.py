"""Autotuning (docs/reference/mma.md, section Autotuning): time a list of
configurations of a kernel on a runtime once, keep the fastest, remember it
on disk.

    @enigma.autotune(configs=enigma.gemm_configs("cuda", "bf16"),
                     key=["m", "n", "k"])
    def gemm(config, m, n, k):
        return enigma.Launch(compile_for(config), *config.launch(m, n),
                             scalars=[m, n, k])

    launch = gemm.best(rt, [a, b], output_size=m * n * 4, m=m, n=n, k=k)
    out = launch.execute(rt, [a, b], output_size=m * n * 4)

The builder is called with one configuration and the key values and
returns a :class:`Launch`. :meth:`Autotuner.best` builds and times every
configuration once for each new key (a warm-up launch, then the median of
``repeat`` batches of ``batch`` launches queued back to back on the
caller's inputs, as wall time per launch: the steady state of a kernel run
many times, with the clocks and power of such a run; a configuration that
fails to compile or launch, or whose first output ``check`` rejects, is
skipped), and writes the winner as JSON under the artifact cache directory
(``ENIGMA_CACHE_DIR``, default ``~/.cache/enigma``; ``ENIGMA_DISABLE_CACHE=1``
turns it off), keyed by the builder's source, the configurations, the key
values and the runtime. Later processes read the winner and compile only
that one. Progress is one line on stderr, rewritten in place, when stderr
is a terminal.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os
import socket
import tempfile
import time

import numpy as np

from . import _core, _progress
from ._dtypes import plain_index

__all__ = ["autotune", "Autotuner", "Launch"]


class Launch:
    """A compiled kernel and how to launch it: ``grid`` and ``threads``
    (3-tuples, counted in threads as everywhere in Enigma), the ``scalars``
    it takes, the bytes each output needs (``output_bytes``: outputs given
    smaller are a DispatchError, since the kernel's writes reach that far),
    and anything else the builder wants to hand on in ``extra``."""

    __slots__ = ("compiled", "grid", "threads", "scalars", "output_bytes",
                 "extra")

    def __init__(self, compiled, grid, threads, scalars=(), output_bytes=None,
                 extra=None):
        self.compiled = compiled
        self.grid = tuple(grid)
        self.threads = tuple(threads)
        self.scalars = list(scalars)
        output_bytes = plain_index(output_bytes)
        if isinstance(output_bytes, int):
            output_bytes = [output_bytes]
        self.output_bytes = None if output_bytes is None else \
            [int(b) for b in output_bytes]
        self.extra = extra

    def _check_outputs(self, kwargs):
        if self.output_bytes is None:
            return
        given = kwargs.get("output_sizes")
        if given is None and kwargs.get("output_size") is not None:
            given = [kwargs["output_size"]]
        if given is None and kwargs.get("outputs") is not None:
            given = [getattr(o, "nbytes", None) for o in kwargs["outputs"]]
        if given is None:
            return
        for i, (have, need) in enumerate(zip(given, self.output_bytes)):
            if have is not None and int(have) < need:
                raise _core.DispatchError(
                    f"kernel {self.compiled.kernel_name}: output {i} has "
                    f"{int(have)} bytes, this launch writes {need}")

    def prepare(self, rt, inputs, **kwargs):
        """``rt.prepare`` of this kernel with its scalars."""
        self._check_outputs(kwargs)
        return rt.prepare(self.compiled, inputs, scalars=self.scalars,
                          **kwargs)

    def execute(self, rt, inputs, **kwargs):
        """``rt.execute`` of this kernel with its launch shape and
        scalars."""
        self._check_outputs(kwargs)
        return rt.execute(self.compiled, inputs, grid=self.grid,
                          threads=self.threads, scalars=self.scalars,
                          **kwargs)

    def __repr__(self) -> str:
        return f"Launch(grid={self.grid}, threads={self.threads})"


def _cache_dir():
    if os.environ.get("ENIGMA_DISABLE_CACHE") == "1":
        return None
    root = os.environ.get("ENIGMA_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "enigma")
    return os.path.join(root, "autotune")


def _describe(config) -> str:
    if hasattr(config, "as_dict"):
        config = config.as_dict()
    if isinstance(config, dict):
        return ", ".join(f"{k}={v}" for k, v in config.items())
    return repr(config)


class Autotuner:
    """What :func:`autotune` returns (see the module documentation)."""

    def __init__(self, fn, configs, key, warmup=1, repeat=5, batch=10):
        if not configs:
            raise ValueError("autotune needs at least one configuration")
        self.fn = fn
        self.configs = list(configs)
        self.key = list(key)
        self.warmup = int(warmup)
        self.repeat = int(repeat)
        self.batch = int(batch)
        self.timings = {}     # key values -> [(config, microseconds or error)]
        self._best = {}       # (runtime, key values) -> config index
        self._built = {}      # (config index, problem) -> Launch
        self.__name__ = getattr(fn, "__name__", "autotuned")
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, config, **problem) -> Launch:
        """The builder itself: one configuration's Launch."""
        return self.fn(config, **problem)

    def build(self, index: int, problem: dict) -> Launch:
        """The Launch of configuration ``index`` (built once per problem)."""
        memo = (index, tuple(sorted(problem.items())))
        if memo not in self._built:
            launch = self.fn(self.configs[index], **problem)
            if not isinstance(launch, Launch):
                raise TypeError(f"the autotuned function {self.__name__} must "
                                f"return an enigma.Launch, got "
                                f"{type(launch).__name__}")
            self._built[memo] = launch
        return self._built[memo]

    def _key_values(self, problem):
        missing = [k for k in self.key if k not in problem]
        if missing:
            raise TypeError(f"{self.__name__}: missing key arguments "
                            f"{missing}")
        return tuple(problem[k] for k in self.key)

    def _cache_file(self, rt, key_values):
        folder = _cache_dir()
        if folder is None:
            return None
        try:
            source = inspect.getsource(self.fn)
        except (OSError, TypeError):
            source = getattr(self.fn, "__qualname__", self.__name__)
        h = hashlib.sha256()
        # How it times is part of the key: winners of single launches at
        # full clock (before batches) are timed again.
        timing = "back-to-back batches"
        for part in (source, repr([_describe(c) for c in self.configs]),
                     timing, repr(key_values), rt.name,
                     str(getattr(rt, "device", 0)), socket.gethostname()):
            h.update(part.encode())
            h.update(b"\0")
        return os.path.join(folder, f"{self.__name__}-{h.hexdigest()[:32]}"
                            ".json")

    def _read_cache(self, path):
        try:
            with open(path) as f:
                data = json.load(f)
            index = int(data["index"])
            if 0 <= index < len(self.configs) and \
                    data.get("config") == _describe(self.configs[index]):
                return index
        except (OSError, ValueError, KeyError, TypeError):
            pass
        return None

    def _write_cache(self, path, index, results):
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path))
            with os.fdopen(fd, "w") as f:
                json.dump({"index": index,
                           "config": _describe(self.configs[index]),
                           "timings_us": [[_describe(c), t]
                                          for c, t in results]}, f, indent=1)
            os.replace(tmp, path)   # atomic: readers see old or new file
        except OSError:
            pass

    def best(self, rt, inputs, *, check=None, **kwargs) -> Launch:
        """The fastest configuration's Launch for these key values on
        ``rt``, timing them on ``inputs`` the first time. ``kwargs`` are
        the builder's problem arguments (including the key) plus what
        ``rt.prepare`` takes for the outputs (``output_size``,
        ``output_sizes``, ``outputs``); ``check(prepared)``, if given, is
        called after the warm-up launch and may raise to reject a
        configuration (e.g. a wrong result)."""
        prepare_args = {k: kwargs.pop(k) for k in
                        ("output_size", "output_sizes", "outputs")
                        if k in kwargs}
        problem = kwargs
        key_values = self._key_values(problem)
        memo = (rt.name, getattr(rt, "device", 0), key_values)
        if memo in self._best:
            return self.build(self._best[memo], problem)
        path = self._cache_file(rt, key_values)
        index = self._read_cache(path) if path else None
        if index is None:
            index, results = self._tune(rt, inputs, problem, prepare_args,
                                        check, key_values)
            if path:
                self._write_cache(path, index, results)
        self._best[memo] = index
        return self.build(index, problem)

    def _time_us(self, prepared, launch) -> float:
        """Microseconds per launch: the median over ``repeat`` batches of
        ``batch`` launches queued back to back. Single launches of an idle
        GPU run at full clock; a kernel run many times meets the power cap,
        which ranks some configurations differently."""
        batch = max(1, self.batch)
        samples = []
        for _ in range(max(1, self.repeat)):
            prepared.synchronize()
            start = time.perf_counter()
            for _ in range(batch):
                prepared.dispatch_async(launch.grid, launch.threads)
            prepared.synchronize()
            samples.append((time.perf_counter() - start) * 1e6 / batch)
        return float(np.median(samples))

    def _tune(self, rt, inputs, problem, prepare_args, check, key_values):
        results = []
        best, best_us = None, float("inf")
        label = f"autotune {self.__name__} " + \
            ", ".join(f"{k}={v}" for k, v in zip(self.key, key_values))
        with _progress.Progress(label, total=len(self.configs)) as bar:
            for i, config in enumerate(self.configs):
                bar.update(i, f"timing {_describe(config)}" + (
                    f", best {best_us:.1f} us" if best is not None else ""),
                    force=True)
                try:
                    launch = self.build(i, problem)
                    prepared = launch.prepare(rt, inputs, **prepare_args)
                    try:
                        for _ in range(max(1, self.warmup)):
                            prepared.dispatch(launch.grid, launch.threads)
                        if check is not None:
                            check(prepared)
                        us = self._time_us(prepared, launch)
                    finally:
                        prepared.release()
                except Exception as e:  # noqa: BLE001 - a failing config is skipped
                    results.append((config,
                                    f"failed: {str(e).splitlines()[0]}"))
                    continue
                results.append((config, us))
                if us < best_us:
                    best, best_us = i, us
        self.timings[key_values] = results
        if best is None:
            raise RuntimeError(f"{label}: every configuration failed: " +
                               "; ".join(f"{_describe(c)}: {t}"
                                         for c, t in results))
        return best, results


def autotune(configs, key, *, warmup=1, repeat=5, batch=10):
    """Decorator: ``fn(config, **problem) -> enigma.Launch`` becomes an
    :class:`Autotuner` over ``configs`` (any objects the builder
    understands, e.g. :class:`enigma.MmaConfig`), re-tuned for each new
    combination of the ``key`` arguments. See the module documentation."""
    def wrap(fn):
        return Autotuner(fn, configs, key, warmup=warmup, repeat=repeat,
                         batch=batch)
    return wrap
