"""``JAXSparse``, the base class of functx's sparse arrays (BCOO, BCSR, COO, CSR, CSC), with
JAX's attributes: ``data``, ``shape``, ``dtype``, ``nse``, ``ndim``, ``size``, ``len``, ``T``, a
repr, ``block_until_ready``, and the arithmetic a format does not define raising
NotImplementedError."""

from __future__ import annotations

import abc
import math
import operator
from collections.abc import Sequence

from functx.errors import UnsupportedError
from functx.tracing import Tracer


def _unsupported(name):
    def method(self, *args, **kwargs):
        raise UnsupportedError(f"{type(self).__name__}.{name} is not implemented")

    method.__name__ = name
    return method


class JAXSparse(abc.ABC):
    """The base class of the sparse array classes (``jax.experimental.sparse.JAXSparse``): a
    subclass stores its buffers, its ``shape``, and defines ``dtype``, ``nse``, ``todense``,
    ``transpose`` and the pytree methods. Cannot be instantiated itself.

    Example:
      >>> from functx.experimental import sparse
      >>> m = sparse.BCSR.fromdense(sparse.eye(3).todense())
      >>> isinstance(m, sparse.JAXSparse), m.ndim, m.size, len(m)
      (True, 2, 9, 3)
    """

    __array_priority__ = 2000  # ``dense @ sparse`` and ``dense * sparse`` reach the sparse class
    __hash__ = None

    def __init__(self, args: tuple, *, shape: Sequence[int]):
        self.shape = tuple(operator.index(s) for s in shape)

    @property
    @abc.abstractmethod
    def dtype(self): ...

    @property
    @abc.abstractmethod
    def nse(self) -> int: ...

    @abc.abstractmethod
    def tree_flatten(self): ...

    @classmethod
    @abc.abstractmethod
    def tree_unflatten(cls, aux_data, children): ...

    @abc.abstractmethod
    def transpose(self, axes=None): ...

    @abc.abstractmethod
    def todense(self): ...

    def __len__(self):
        return self.shape[0]

    size = property(lambda self: math.prod(self.shape), doc="the number of elements")
    ndim = property(lambda self: len(self.shape), doc="the number of dims")
    T = property(lambda self: self.transpose(), doc="the transpose (``transpose()``)")

    def __repr__(self):
        extra = f", nse={self.nse}"
        for name in ("n_batch", "n_dense"):
            extra += f", {name}={getattr(self, name)}" if getattr(self, name, 0) else ""
        inner = f"{type(self).__name__}({self.dtype}{list(self.shape)}{extra})"
        return f"Tracer[{inner}]" if isinstance(self.data, Tracer) else inner

    def block_until_ready(self):
        for buf in self.tree_flatten()[0]:
            buf.block_until_ready()
        return self

    # the arithmetic of JAX's base class: a format that has an operation overrides it
    sum = _unsupported("sum")
    __neg__ = _unsupported("__neg__")
    __pos__ = _unsupported("__pos__")
    __matmul__ = _unsupported("__matmul__")
    __rmatmul__ = _unsupported("__rmatmul__")
    __mul__ = _unsupported("__mul__")
    __rmul__ = _unsupported("__rmul__")
    __add__ = _unsupported("__add__")
    __radd__ = _unsupported("__radd__")
    __sub__ = _unsupported("__sub__")
    __rsub__ = _unsupported("__rsub__")
    __getitem__ = _unsupported("__getitem__")
