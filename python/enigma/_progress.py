"""Progress of long work as one line on stderr, rewritten in place.

Shown only when stderr is a terminal (and ``ENIGMA_PROGRESS`` is not
``0``): redirected to a file or a pipe, nothing is written. Two helpers:

- :class:`Progress`, a counted line for work with steps (an autotune over
  configurations)::

      with Progress("autotune gemm", total=len(configs)) as bar:
          for i, config in enumerate(configs):
              ...
              bar.update(i + 1, f"best {best_us:.1f} us")

- :func:`activity`, for one blocking step of unknown length (building a
  kernel): its line appears only if the step lasts longer than ``DELAY``
  seconds, so fast (cached) work prints nothing.

Lines nest: an activity inside a counted line replaces it while it runs and
the counted line comes back after. Every line is cleared when its work ends,
so the terminal keeps only what the program printed.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time

DELAY = 0.3          # seconds before an activity shows its line
MIN_INTERVAL = 0.1   # seconds between two redraws of a counted line

_lock = threading.RLock()
_stack = []          # the lines being shown, innermost last
_shown = False       # whether a line is on the terminal now
_compiles = {"count": 0, "seconds": 0.0}


def _enabled(stream) -> bool:
    if os.environ.get("ENIGMA_PROGRESS", "") == "0":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _write(text: str) -> None:
    global _shown
    stream = sys.stderr
    if not _enabled(stream):
        return
    width = shutil.get_terminal_size((80, 24)).columns
    if len(text) > width - 1:
        text = text[:max(0, width - 2)] + "…"
    stream.write("\r\x1b[K" + text)
    stream.flush()
    _shown = bool(text)


def clear_line() -> None:
    """Removes the line now shown (before other output is written)."""
    global _shown
    with _lock:
        if _shown:
            stream = sys.stderr
            if _enabled(stream):
                stream.write("\r\x1b[K")
                stream.flush()
            _shown = False


def _redraw() -> None:
    with _lock:
        if _stack:
            _write(_stack[-1]._text())
        else:
            clear_line()


class Progress:
    """A counted progress line: ``enigma: <title> <done>/<total> <detail>``
    (and the elapsed time), redrawn at most every ``MIN_INTERVAL`` seconds.
    Use it as a context manager, or call :meth:`close`."""

    def __init__(self, title: str, total: int | None = None):
        self.title = title
        self.total = total
        self.done = 0
        self.detail = ""
        self._start = time.perf_counter()
        self._last = 0.0
        self._closed = False
        with _lock:
            _stack.append(self)
            _redraw()

    def _text(self) -> str:
        count = f"{self.done}/{self.total}" if self.total else f"{self.done}"
        elapsed = time.perf_counter() - self._start
        detail = f" {self.detail}" if self.detail else ""
        return f"enigma: {self.title} {count}{detail} ({elapsed:.1f} s)"

    def update(self, done: int | None = None, detail: str | None = None,
               force: bool = False) -> None:
        """Sets the steps done (default: one more) and the detail text."""
        self.done = self.done + 1 if done is None else int(done)
        if detail is not None:
            self.detail = detail
        now = time.perf_counter()
        final = self.total is not None and self.done >= self.total
        if force or final or now - self._last >= MIN_INTERVAL:
            self._last = now
            with _lock:
                if _stack and _stack[-1] is self:
                    _write(self._text())

    def close(self) -> None:
        """Takes the line away (and shows the enclosing one again)."""
        if self._closed:
            return
        self._closed = True
        with _lock:
            if self in _stack:
                _stack.remove(self)
            _redraw()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Activity:
    """One blocking step; see :func:`activity`."""

    def __init__(self, text: str):
        self.text = text
        self._start = time.perf_counter()
        self._timer = None
        self._visible = False

    def _text(self) -> str:
        count = _compiles["count"]
        so_far = _compiles["seconds"] + time.perf_counter() - self._start
        return (f"enigma: {self.text} (build {count + 1} of this run, "
                f"{so_far:.1f} s building so far)")

    def _show(self):
        with _lock:
            if self._timer is None:  # already over
                return
            self._visible = True
            _stack.append(self)
            _write(self._text())

    def __enter__(self):
        if _enabled(sys.stderr):
            self._timer = threading.Timer(DELAY, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc):
        with _lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            _compiles["count"] += 1
            _compiles["seconds"] += time.perf_counter() - self._start
            if self._visible:
                _stack.remove(self)
                _redraw()


def activity(text: str) -> _Activity:
    """A context manager around a blocking step (it must release the GIL
    for its line to appear while it runs, as Enigma's builds do): after
    ``DELAY`` seconds, ``enigma: <text> (build N of this run, S s building
    so far)`` is shown until the step ends."""
    return _Activity(text)
