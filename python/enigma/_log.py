"""What Enigma compiles, takes from its caches and launches, on stderr.

``ENIGMA_LOG=info`` (read at import) or ``enigma.set_log_level("info")``
turns it on; ``debug`` adds more (the streams launches are queued on, why a
runtime was chosen). Off, the cost is one test of a module flag (``INFO``)
where a message would be made, and nothing at all in the function-call
form's C++ launch path.
"""

from __future__ import annotations

import logging
import os
import sys

from . import _core
from ._progress import clear_line

logger = logging.getLogger("enigma")

# Read by the places that log, before they build a message.
INFO = False
DEBUG = False

_LEVELS = {"": logging.WARNING, "0": logging.WARNING, "off": logging.WARNING,
           "warning": logging.WARNING, "info": logging.INFO,
           "1": logging.INFO, "debug": logging.DEBUG}


class _StderrHandler(logging.Handler):
    """Writes to the sys.stderr of the moment (test capture and redirects
    replace it after import)."""

    def emit(self, record):
        try:
            clear_line()  # a progress line must not run into the message
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001 - logging must never raise
            self.handleError(record)


_handler = _StderrHandler()
_handler.setFormatter(logging.Formatter("enigma: %(message)s"))


def set_log_level(level) -> None:
    """``"info"``, ``"debug"`` or ``"off"`` (also a ``logging`` level
    number): what Enigma reports on stderr, as ``ENIGMA_LOG`` does."""
    global INFO, DEBUG
    if isinstance(level, str):
        key = level.strip().lower()
        if key not in _LEVELS:
            raise ValueError(f"log level must be one of off, info, debug; "
                             f"got {level!r}")
        number = _LEVELS[key]
    else:
        number = int(level)
    logger.setLevel(number)
    INFO = number <= logging.INFO
    DEBUG = number <= logging.DEBUG
    if INFO and _handler not in logger.handlers:
        logger.addHandler(_handler)
        logger.propagate = False
    elif not INFO and _handler in logger.handlers:
        logger.removeHandler(_handler)
        logger.propagate = True
    # The function-call form's C++ launch path logs through this, or
    # (None) not at all.
    _core.launch_setup({"log_launch": _log_launch if INFO else None})


def _log_launch(name, key, runtime, stream, own_stream):
    grid, threads = key
    where = runtime.name
    if where == "cuda":
        where += " (" + ("the runtime's stream, waited for" if own_stream
                         else f"stream 0x{stream:x}") + ")"
    info("launch %s grid %s threads %s on %s", name, grid, threads, where)


def info(message: str, *args) -> None:
    logger.info(message, *args)


def debug(message: str, *args) -> None:
    logger.debug(message, *args)


def milliseconds(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def configure_from_environment() -> None:
    level = os.environ.get("ENIGMA_LOG", "")
    try:
        set_log_level(level)
    except ValueError:
        set_log_level("info")
        logger.warning("ENIGMA_LOG=%r is not one of off, info, debug; "
                       "logging at info", level)
