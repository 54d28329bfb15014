"""``functx.experimental.sparse.api``: the constructors and conversion shared by every sparse
format (``jax.experimental.sparse.api``): ``empty``, ``eye``, ``todense``."""

from __future__ import annotations

from functx.errors import FunctxValueError
from functx.experimental.sparse._base import JAXSparse
from functx.experimental.sparse.bcoo import _empty as _bcoo_empty, _eye as _bcoo_eye
from functx.experimental.sparse.bcsr import BCSR
from functx.experimental.sparse.coo import COO
from functx.experimental.sparse.csr import CSC, CSR

# sparse_format -> (its empty constructor, its eye constructor: None where JAX has none)
_FORMATS = {
    "bcsr": (BCSR._empty, None),
    "bcoo": (_bcoo_empty, _bcoo_eye),
    "coo": (COO._empty, COO._eye),
    "csr": (CSR._empty, CSR._eye),
    "csc": (CSC._empty, CSC._eye),
}


def _constructors(sparse_format):
    if sparse_format not in _FORMATS:
        raise FunctxValueError(
            f"sparse_format={sparse_format!r} not recognized; must be one of {list(_FORMATS)}"
        )
    return _FORMATS[sparse_format]


def todense(arr):
    """The dense array of a sparse array; a dense array passes through
    (``jax.experimental.sparse.todense``).

    Arguments:
      arr: a sparse array (BCOO, BCSR, COO, CSR, CSC) or a dense array.
    Returns:
      a dense array.
    Example:
      >>> from functx.experimental import sparse
      >>> sparse.todense(sparse.eye(2))
      Array([[1., 0.],
             [0., 1.]], dtype=float32)
    """
    return arr.todense() if isinstance(arr, JAXSparse) else arr


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """A sparse array with no stored entries, or ``nse`` padding entries
    (``jax.experimental.sparse.empty``).

    Arguments:
      shape: the array's shape.
      dtype: the dtype of ``data`` (default float32, or float64 under x64).
      index_dtype: the dtype of the index buffers.
      sparse_format: ``"bcoo"``, ``"bcsr"``, ``"coo"``, ``"csr"`` or ``"csc"``.
      **kwds: ``n_batch``, ``n_dense`` and ``nse`` (default 0) of the BCOO or BCSR layout.
    Returns:
      a sparse array of that format that reads as zeros.
    Example:
      >>> from functx.experimental import sparse
      >>> sparse.empty((2, 3)), sparse.empty((2, 3), sparse_format="csr").indptr.tolist()
      (BCOO(float32[2, 3], nse=0), [0, 0, 0])
    """
    make = _constructors(sparse_format)[0]
    return make(tuple(shape), dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """A 2-D sparse array with ones on a diagonal (``jax.experimental.sparse.eye``).

    Differences from JAX: ``sparse_format="bcsr"`` is a ValueError saying JAX's ``eye`` has no
    BCSR (JAX's is a KeyError).

    Arguments:
      N: the number of rows.
      M: the number of columns (default ``N``).
      k: the diagonal: 0 the main one, positive above it, negative below.
      dtype: the dtype of ``data`` (default float32, or float64 under x64).
      index_dtype: the dtype of the index buffers.
      sparse_format: ``"bcoo"``, ``"coo"``, ``"csr"`` or ``"csc"``.
      **kwds: ``n_batch`` and ``n_dense`` of the BCOO layout.
    Returns:
      a sparse array of that format.
    Example:
      >>> from functx.experimental import sparse
      >>> sparse.eye(2, 3, k=1).indices.tolist(), sparse.eye(2, sparse_format="coo").col.tolist()
      ([[0, 1], [1, 2]], [0, 1])
    """
    make = _constructors(sparse_format)[1]
    if make is None:
        raise FunctxValueError(f"eye: JAX has no sparse_format={sparse_format!r} eye")
    return make(N, N if M is None else M, k, dtype=dtype, index_dtype=index_dtype, **kwds)


__all__ = ["empty", "eye", "todense"]
