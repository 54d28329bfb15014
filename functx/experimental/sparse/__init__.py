"""``functx.experimental.sparse``: JAX's ``jax.experimental.sparse`` for the BCOO format
(batched-coordinate sparse arrays), built from functx's gather, scatter-add, sort and
``dot_general``, so that ``jit``, ``grad`` (in ``data`` and in the dense operands) and ``vmap``
(a BCOO is a pytree of ``data`` and ``indices``) compose with it and both backends run it.

BCSR (``bcsr.py``, a view of BCOO through its row pointers), the older COO, CSR and CSC
matrices (``coo.py``, ``csr.py``), their common base class ``JAXSparse`` and the sparse solvers
of ``linalg`` are here too. A JAX name that functx lacks raises an AttributeError saying so.
"""

from __future__ import annotations

from functx.errors import (
    FunctxValueError,
    missing_name_hook as _missing_name_hook,
)

# -- BCSR, COO, CSR, CSC, the base class, the warnings, linalg (sparse36b) --
from functx.experimental.sparse import (  # the submodules, as in JAX
    bcoo as bcoo,
    bcsr as bcsr,
    coo as coo,
    csr as csr,
    linalg as linalg,
    util as util,
)
from functx.experimental.sparse._base import JAXSparse as JAXSparse
from functx.experimental.sparse.bcoo import (
    BCOO as BCOO,
    _empty,
    _eye,
    bcoo_dot_general as bcoo_dot_general,
    bcoo_extract as bcoo_extract,
    bcoo_fromdense as bcoo_fromdense,
    bcoo_multiply_dense as bcoo_multiply_dense,
    bcoo_reduce_sum as bcoo_reduce_sum,
    bcoo_sort_indices as bcoo_sort_indices,
    bcoo_sum_duplicates as bcoo_sum_duplicates,
    bcoo_todense as bcoo_todense,
    bcoo_transpose as bcoo_transpose,
)
from functx.experimental.sparse.bcsr import (
    BCSR as BCSR,
    bcsr_broadcast_in_dim as bcsr_broadcast_in_dim,
    bcsr_concatenate as bcsr_concatenate,
    bcsr_dot_general as bcsr_dot_general,
    bcsr_extract as bcsr_extract,
    bcsr_fromdense as bcsr_fromdense,
    bcsr_sum_duplicates as bcsr_sum_duplicates,
    bcsr_todense as bcsr_todense,
)
from functx.experimental.sparse.coo import (
    COO as COO,
    coo_fromdense as coo_fromdense,
    coo_matmat as coo_matmat,
    coo_matvec as coo_matvec,
    coo_todense as coo_todense,
)
from functx.experimental.sparse.csr import (
    CSC as CSC,
    CSR as CSR,
    csr_fromdense as csr_fromdense,
    csr_matmat as csr_matmat,
    csr_matvec as csr_matvec,
    csr_todense as csr_todense,
)
from functx.experimental.sparse.util import (
    CuSparseEfficiencyWarning as CuSparseEfficiencyWarning,
    SparseEfficiencyError as SparseEfficiencyError,
    SparseEfficiencyWarning as SparseEfficiencyWarning,
)

# sparse_format -> the class whose _empty/_eye ``empty`` and ``eye`` call (None: BCOO's)
_FORMATS = {"bcsr": BCSR, "bcoo": None, "coo": COO, "csr": CSR, "csc": CSC}


def _format(sparse_format, formats=tuple(_FORMATS)):
    """The class of ``sparse_format`` (None for BCOO), with JAX's errors."""
    if sparse_format not in _FORMATS:
        raise FunctxValueError(
            f"sparse_format={sparse_format!r} not recognized; must be one of {list(_FORMATS)}"
        )
    if sparse_format not in formats:  # JAX's eye has no BCSR
        raise FunctxValueError(f"eye: sparse_format={sparse_format!r} is not one of {formats}")
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
      index_dtype: the dtype of ``indices``.
      sparse_format: ``"bcoo"``, ``"bcsr"``, ``"coo"``, ``"csr"`` or ``"csc"``.
      **kwds: ``n_batch``, ``n_dense`` and ``nse`` (default 0) of the BCOO or BCSR layout.
    Returns:
      a BCOO array that reads as zeros.
    Example:
      >>> from functx.experimental import sparse
      >>> sparse.empty((2, 3))
      BCOO(float32[2, 3], nse=0)
    """
    cls = _format(sparse_format)
    if cls is not None:
        return cls._empty(tuple(shape), dtype=dtype, index_dtype=index_dtype, **kwds)
    return _empty(tuple(shape), dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """A 2-D sparse array with ones on a diagonal (``jax.experimental.sparse.eye``).

    Arguments:
      N: the number of rows.
      M: the number of columns (default ``N``).
      k: the diagonal: 0 the main one, positive above it, negative below.
      dtype: the dtype of ``data`` (default float32, or float64 under x64).
      index_dtype: the dtype of ``indices``.
      sparse_format: ``"bcoo"``, ``"coo"``, ``"csr"`` or ``"csc"`` (JAX has no BCSR eye).
      **kwds: ``n_batch`` and ``n_dense`` of the BCOO layout.
    Returns:
      a BCOO array.
    Example:
      >>> from functx.experimental import sparse
      >>> sparse.eye(2, 3, k=1).indices.tolist()
      [[0, 1], [1, 2]]
    """
    cls = _format(sparse_format, ("bcoo", "coo", "csr", "csc"))
    M = N if M is None else M
    if cls is not None:
        return cls._eye(N, M, k, dtype=dtype, index_dtype=index_dtype, **kwds)
    return _eye(N, M, k, dtype=dtype, index_dtype=index_dtype, **kwds)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "BCOO",
    "bcoo_dot_general",
    "bcoo_extract",
    "bcoo_fromdense",
    "bcoo_multiply_dense",
    "bcoo_reduce_sum",
    "bcoo_sort_indices",
    "bcoo_sum_duplicates",
    "bcoo_todense",
    "bcoo_transpose",
    "empty",
    "eye",
    "todense",
    # sparse36b
    "BCSR",
    "COO",
    "CSC",
    "CSR",
    "CuSparseEfficiencyWarning",
    "JAXSparse",
    "SparseEfficiencyError",
    "SparseEfficiencyWarning",
    "bcoo",
    "bcsr",
    "bcsr_broadcast_in_dim",
    "bcsr_concatenate",
    "bcsr_dot_general",
    "bcsr_extract",
    "bcsr_fromdense",
    "bcsr_sum_duplicates",
    "bcsr_todense",
    "coo",
    "coo_fromdense",
    "coo_matmat",
    "coo_matvec",
    "coo_todense",
    "csr",
    "csr_fromdense",
    "csr_matmat",
    "csr_matvec",
    "csr_todense",
    "linalg",
    "util",
]
