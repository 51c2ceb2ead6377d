"""The original Enigma's module path ``enigma._tracing``: programs written
for it import ``Tensor`` (and ``RegisterTensor``, ``IRValue``) from here,
e.g. inside kernel bodies. Thin re-exports of the objects that live in
the leaf (_ir), the kernel layer (_kernel, _control) and _tensor;
docs/compatibility.md lists them."""

from ._control import RegisterTensor  # noqa: F401
from ._ir import (BufferProxy, EnigmaError, Fragment, IRValue,  # noqa: F401
                  Tracer, current_tracer, fail, operands, to_value,
                  user_location)
from ._kernel import KernelDefinition, Param, kernel  # noqa: F401
from ._tensor import Tensor  # noqa: F401
