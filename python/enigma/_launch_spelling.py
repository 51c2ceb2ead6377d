"""The spellings of a function-call launch: ``kernel[n]`` (one int, a 1-D
grid of n threads) and ``kernel.launch(grid=... | threadgroups=...,
threads=...)``; anything else in the brackets is an EnigmaError that spells
the launches it may have meant with the user's own numbers
(docs/design/launch-form.md says why)."""

from __future__ import annotations

from ._grid import dims3, is_int
from ._ir import EnigmaError, user_location

# Threads per threadgroup when a launch leaves them out, by the number of
# dimensions of its grid (or threadgroups).
DEFAULT_THREADS = {1: (256, 1, 1), 2: (16, 16, 1), 3: (8, 8, 4)}


def _rank(value) -> int:
    """How many dimensions a grid, threadgroups or threads value gives."""
    return 1 if is_int(value) else len(tuple(value))


def bracket_grid(name: str, key) -> tuple:
    """(grid, threads) of ``kernel[key]``: ``key`` must be one int, the
    threads of a 1-D grid; anything else is an EnigmaError that spells the
    launches it could have meant with the user's own numbers."""
    if is_int(key):
        grid = dims3(key, "grid")
        return grid, DEFAULT_THREADS[1]
    file, line = user_location()
    raise EnigmaError(f"{file}:{line}: {_bracket_message(name, key)}")


def launch_shape(name: str, grid, threadgroups, threads) -> tuple:
    """(grid, threads) of ``kernel.launch(grid=... | threadgroups=...,
    threads=...)``: ``grid`` counts threads (as execute's does), the
    threadgroup count is ``threadgroups``, each threadgroup has ``threads``
    (by default 256, 16 x 16 or 8 x 8 x 4 for 1, 2 or 3 dimensions)."""
    if (grid is None) == (threadgroups is None):
        file, line = user_location()
        raise EnigmaError(
            f"{file}:{line}: {name}.launch() takes exactly one of grid= "
            f"(the grid in threads, as execute counts it) and threadgroups= "
            f"(the number of threadgroups, the grid of a CUDA or Triton "
            f"launch), got {'both' if grid is not None else 'neither'}; "
            f"e.g. {name}.launch(grid=n)(...) or "
            f"{name}.launch(threadgroups=(gx, gy), threads=(16, 16))(...)")
    shape = grid if grid is not None else threadgroups
    counted = dims3(shape, "grid" if grid is not None else "threadgroups")
    if threads is None:
        threads3 = DEFAULT_THREADS[_rank(shape)]
    else:
        threads3 = dims3(threads, "threads")
    if grid is not None:
        return counted, threads3
    total = tuple(g * t for g, t in zip(counted, threads3))
    if any(d >= 2**32 for d in total):
        raise ValueError(
            f"threadgroups {threadgroups!r} of {threads3} threads make a "
            f"grid of {total} threads, past 2^32-1 in a dimension")
    return total, threads3


def _text(value) -> str:
    """A value as the user would write it in a call."""
    if isinstance(value, list):
        value = tuple(value)
    return repr(value)


def _by(value) -> str:
    """(13, 5) -> '13 x 5'; 7 -> '7'."""
    if isinstance(value, (tuple, list)):
        return " x ".join(str(v) for v in value)
    return str(value)


def _shape_like(value) -> bool:
    """An int, or a tuple/list of 1 to 3 ints."""
    if is_int(value):
        return True
    return isinstance(value, (tuple, list)) and 1 <= len(value) <= 3 and \
        all(is_int(v) for v in value)


def _bracket_message(name: str, key) -> str:
    """Why ``kernel[key]`` is refused, and the launches it may have meant,
    each spelled with the numbers given."""
    values = tuple(key) if isinstance(key, (tuple, list)) else None
    # kernel[a, b] and kernel[(a, b)] reach here alike: shown as the first.
    written = (", ".join(_text(v) for v in values)
               if isinstance(key, tuple) and len(key) > 1 else repr(key))
    head = (f"{name}[{written}]: the brackets take one int, the number of "
            f"threads of a 1-D grid ({name}[n](...), threadgroups of 256). ")
    lines = _meanings(name, values) if values is not None else None
    if not lines:
        return (head + f"Got {key!r}. Other launches are written with "
                f"launch(): {name}.launch(grid=(w, h), threads=(16, 16))"
                "(...) counts the grid in threads, "
                f"{name}.launch(threadgroups=(gx, gy), threads=(16, 16))(...)"
                " counts threadgroups")
    why = ("Python passes kernel[a, b] and kernel[(a, b)] alike, and two "
           "numbers mean different launches to Enigma, Triton and CUDA "
           "programmers, so Enigma does not guess. "
           if len(values) >= 2 else "")
    return head + why + "Write the launch you mean:\n" + lines


def positional_launch_message(name: str, args: tuple) -> str:
    """Why ``kernel.launch(a, b)`` is refused (keywords only), with the
    launches it may have meant."""
    written = ", ".join(_text(v) for v in args)
    lines = _meanings(name, args)
    text = (f"{name}.launch({written}): launch() takes keywords only, "
            "grid= (the grid in threads) or threadgroups=, and threads=")
    return text + (". Write the launch you mean:\n" + lines if lines else
                   f"; got {len(args)} positional values")


_DEFAULT_TEXT = {1: "256", 2: "16 x 16", 3: "8 x 8 x 4"}


def _meanings(name: str, values: tuple) -> str | None:
    """The launches ``values`` (as written in brackets) may mean, one per
    line with what it launches; None when they cannot be a launch shape."""
    if not values or len(values) > 3 or \
            not all(v is None or _shape_like(v) for v in values):
        return None
    call = f"{name}.launch"
    lines = []
    if len(values) == 1 or (len(values) == 2 and values[1] is None):
        only = values[0]
        if only is None:
            return None
        if is_int(only):
            lines.append((f"{name}[{only}](...)",
                          f"a 1-D grid of {only} threads"))
        lines.append((f"{call}(grid={_text(only)})(...)",
                      f"a grid of {_by(only)} threads"))
        lines.append((f"{call}(threadgroups={_text(only)})(...)",
                      f"{_by(only)} threadgroups of "
                      f"{_DEFAULT_TEXT[_rank(only)]} threads (Triton's grid "
                      "of programs)"))
    elif any(v is None for v in values):
        return None
    elif len(values) == 2 and all(is_int(v) for v in values):
        a, b = values
        lines += [
            (f"{call}(grid=({a}, {b}))(...)",
             f"a grid of {a} x {b} threads (the grid counts threads, as "
             "execute's does), threadgroups of 16 x 16"),
            (f"{call}(threadgroups=({a}, {b}))(...)",
             f"{a} x {b} threadgroups of 16 x 16 threads (Triton's 2-D "
             "grid of programs)"),
            (f"{call}(threadgroups={a}, threads={b})(...)",
             f"{a} threadgroups of {b} threads (CUDA's <<<{a}, {b}>>>, "
             f"Numba's [{a}, {b}])"),
            (f"{call}(grid={a}, threads={b})(...)",
             f"{a} threads in threadgroups of {b}"),
        ]
    elif len(values) == 2:
        shape, threads = (_text(v) for v in values)
        cuda = ", ".join(f"dim3{_text(v)}" if isinstance(v, (tuple, list))
                         else str(v) for v in values)
        lines += [
            (f"{call}(grid={shape}, threads={threads})(...)",
             f"a grid of {_by(values[0])} threads in threadgroups of "
             f"{_by(values[1])}"),
            (f"{call}(threadgroups={shape}, threads={threads})(...)",
             f"{_by(values[0])} threadgroups of {_by(values[1])} threads "
             f"(CUDA's <<<{cuda}>>>)"),
        ]
    elif all(is_int(v) for v in values):  # three ints
        shape = _text(tuple(values))
        lines += [
            (f"{call}(grid={shape})(...)",
             f"a grid of {_by(values)} threads, threadgroups of 8 x 8 x 4"),
            (f"{call}(threadgroups={shape})(...)",
             f"{_by(values)} threadgroups of 8 x 8 x 4 threads (Triton's "
             "3-D grid of programs)"),
        ]
    else:
        return None
    width = max(len(code) for code, _ in lines)
    return "\n".join(f"    {code.ljust(width)}  # {what}"
                     for code, what in lines)
