"""``functx.experimental.sparse``: JAX's ``jax.experimental.sparse`` for the BCOO format
(batched-coordinate sparse arrays), built from functx's gather, scatter-add, sort and
``dot_general``, so that ``jit``, ``grad`` (in ``data`` and in the dense operands) and ``vmap``
(a BCOO is a pytree of ``data`` and ``indices``) compose with it and both backends run it.

Not here yet (each raises an AttributeError saying so): BCSR, COO, CSR, CSC, ``sparsify``, the
sparse-sparse products and the ``bcoo_*`` shape operations beyond transpose and reduce_sum.
"""

from __future__ import annotations

from functx.errors import (
    FunctxValueError,
    UnsupportedError,
    missing_name_hook as _missing_name_hook,
)

# -- the bcoo shape operations, sparse products, sparsify and the sparse derivatives (sparse36a) --
from functx.experimental.sparse import random as random, transform as transform
from functx.experimental.sparse.bcoo import (
    BCOO as BCOO,
    _empty,
    _eye,
    bcoo_broadcast_in_dim as bcoo_broadcast_in_dim,
    bcoo_concatenate as bcoo_concatenate,
    bcoo_dot_general as bcoo_dot_general,
    bcoo_dot_general_sampled as bcoo_dot_general_sampled,
    bcoo_dynamic_slice as bcoo_dynamic_slice,
    bcoo_extract as bcoo_extract,
    bcoo_fromdense as bcoo_fromdense,
    bcoo_gather as bcoo_gather,
    bcoo_multiply_dense as bcoo_multiply_dense,
    bcoo_multiply_sparse as bcoo_multiply_sparse,
    bcoo_reduce_sum as bcoo_reduce_sum,
    bcoo_reshape as bcoo_reshape,
    bcoo_rev as bcoo_rev,
    bcoo_slice as bcoo_slice,
    bcoo_sort_indices as bcoo_sort_indices,
    bcoo_squeeze as bcoo_squeeze,
    bcoo_sum_duplicates as bcoo_sum_duplicates,
    bcoo_todense as bcoo_todense,
    bcoo_transpose as bcoo_transpose,
    bcoo_update_layout as bcoo_update_layout,
)
from functx.experimental.sparse.random import random_bcoo as random_bcoo
from functx.experimental.sparse.transform import (
    grad as grad,
    jacfwd as jacfwd,
    jacobian as jacobian,
    jacrev as jacrev,
    sparsify as sparsify,
    value_and_grad as value_and_grad,
)
from functx.experimental.sparse.util import (
    SparseEfficiencyError as SparseEfficiencyError,
    SparseEfficiencyWarning as SparseEfficiencyWarning,
)

_FORMATS = ("bcsr", "bcoo", "coo", "csr", "csc")


def _format(sparse_format):
    if sparse_format not in _FORMATS:
        raise FunctxValueError(
            f"sparse_format={sparse_format!r} not recognized; must be one of {list(_FORMATS)}"
        )
    if sparse_format != "bcoo":
        raise UnsupportedError(f"sparse_format={sparse_format!r} is not in functx yet (bcoo is)")


def todense(arr):
    """The dense array of a sparse array; a dense array passes through
    (``jax.experimental.sparse.todense``).

    Arguments:
      arr: a BCOO array or a dense array.
    Returns:
      a dense array.
    Example:
      >>> from functx.experimental import sparse
      >>> sparse.todense(sparse.eye(2))
      Array([[1., 0.],
             [0., 1.]], dtype=float32)
    """
    return arr.todense() if isinstance(arr, BCOO) else arr


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """A sparse array with no stored entries, or ``nse`` padding entries
    (``jax.experimental.sparse.empty``).

    Arguments:
      shape: the array's shape.
      dtype: the dtype of ``data`` (default float32, or float64 under x64).
      index_dtype: the dtype of ``indices``.
      sparse_format: ``"bcoo"`` (the only format functx has).
      **kwds: ``n_batch``, ``n_dense`` and ``nse`` (default 0) of the BCOO layout.
    Returns:
      a BCOO array that reads as zeros.
    Example:
      >>> from functx.experimental import sparse
      >>> sparse.empty((2, 3))
      BCOO(float32[2, 3], nse=0)
    """
    _format(sparse_format)
    return _empty(tuple(shape), dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
    """A 2-D sparse array with ones on a diagonal (``jax.experimental.sparse.eye``).

    Arguments:
      N: the number of rows.
      M: the number of columns (default ``N``).
      k: the diagonal: 0 the main one, positive above it, negative below.
      dtype: the dtype of ``data`` (default float32, or float64 under x64).
      index_dtype: the dtype of ``indices``.
      sparse_format: ``"bcoo"`` (the only format functx has).
      **kwds: ``n_batch`` and ``n_dense`` of the BCOO layout.
    Returns:
      a BCOO array.
    Example:
      >>> from functx.experimental import sparse
      >>> sparse.eye(2, 3, k=1).indices.tolist()
      [[0, 1], [1, 2]]
    """
    _format(sparse_format)
    return _eye(N, N if M is None else M, k, dtype=dtype, index_dtype=index_dtype, **kwds)


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
    # (sparse36a)
    "SparseEfficiencyError",
    "SparseEfficiencyWarning",
    "bcoo_broadcast_in_dim",
    "bcoo_concatenate",
    "bcoo_dot_general_sampled",
    "bcoo_dynamic_slice",
    "bcoo_gather",
    "bcoo_multiply_sparse",
    "bcoo_reshape",
    "bcoo_rev",
    "bcoo_slice",
    "bcoo_squeeze",
    "bcoo_update_layout",
    "grad",
    "jacfwd",
    "jacobian",
    "jacrev",
    "random_bcoo",
    "sparsify",
    "value_and_grad",
]
