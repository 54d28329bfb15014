"""``functx.typing``: the static type annotations of JAX's ``jax.typing`` (JAX 0.10.2 exports two).

- ``ArrayLike``: anything functx converts to an Array without a copy of a Python sequence: a
  functx ``Array`` (a tracer inside a transformation is one too), a NumPy array, a NumPy scalar,
  or a Python ``bool``, ``int``, ``float`` or ``complex``. Lists and tuples are not (as in JAX).
- ``DTypeLike``: anything that names a dtype: a string (``"float32"``), a scalar type
  (``np.float32``, ``float``), a ``np.dtype``, or an object with a ``dtype`` attribute
  (``functx.numpy.float32``).

Both are ``typing.Union`` aliases, as in JAX: use them in annotations, and (Python 3.10 or newer)
with ``isinstance``.

Example:
  >>> import numpy as np
  >>> import functx
  >>> from functx.typing import ArrayLike
  >>> def half(x: ArrayLike) -> functx.Array:
  ...     return functx.numpy.asarray(x) / 2
  >>> half(3.0), isinstance(np.ones(2), ArrayLike), isinstance([1.0], ArrayLike)
  (Array(1.5, dtype=float32, weak_type=True), True, False)
"""

from __future__ import annotations

from typing import Any, Protocol, Union, runtime_checkable

import numpy as np

from functx.array import Array
from functx.tracing import Tracer


@runtime_checkable
class SupportsDType(Protocol):
    """An object with a ``dtype`` attribute (``functx.numpy.float32``, an array): one of the
    forms of ``DTypeLike``.

    Example:
      >>> import numpy as np
      >>> from functx.typing import SupportsDType
      >>> isinstance(np.ones(2), SupportsDType), isinstance("float32", SupportsDType)
      (True, False)
    """

    @property
    def dtype(self, /) -> np.dtype: ...


# (Tracer: ``isinstance(tracer, Array)`` is True, but a Union checks ``issubclass(type(x), ...)``,
# which Array's metaclass leaves to the plain class check; listed so traced values are ArrayLike,
# as in JAX)
ArrayLike = Union[  # noqa: UP007 - a Union object, as jax.typing.ArrayLike is
    Array, Tracer, np.ndarray, np.bool_, np.number, bool, int, float, complex
]
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]  # noqa: UP007

__all__ = ["ArrayLike", "DTypeLike"]
