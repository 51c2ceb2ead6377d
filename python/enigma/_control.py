"""_control family of the Enigma language."""

__all__ = []


def prepare_kernel_function(fn):
    """Returns the function to trace for ``fn``; control-flow support may
    rewrite its source (e.g. ``for i in enigma.range(...)``)."""
    return fn
