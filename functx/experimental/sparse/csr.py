"""CSR and CSC, JAX's older compressed-row and compressed-column matrices
(``jax.experimental.sparse.CSR``, ``CSC``): a 2-D array stored as ``data``, ``indices`` and
``indptr``, and the functions ``csr_fromdense``, ``csr_todense``, ``csr_matvec``,
``csr_matmat``. Each converts the row pointers to row indices and runs COO's product or
scatter (``coo.py``), so ``jit``, ``grad`` in ``data`` and the dense operand, and ``vmap`` of the
dense operand compose with them. A CSC matrix is the CSR matrix of its transpose.

As with COO, functx raises a FunctxValueError or FunctxTypeError where JAX's abstract
evaluation asserts.
"""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.errors import FunctxValueError, UnsupportedError
from functx.experimental.sparse._base import JAXSparse
from functx.experimental.sparse.bcoo import _scatter_sum
from functx.experimental.sparse.bcsr import _coo_indices, _csr_indices
from functx.experimental.sparse.coo import (
    _check,
    _diagonal,
    _nonzeros,
    _product,
    _product_doc,
    _promoted_product,
)
from functx.source_info import where
from functx.tree_util import register_pytree_node_class


def _rows(mat, name):
    """(row, col) of a CSR matrix's entries (rows from ``indptr``; padding gets row ``rows``),
    its buffers checked against its shape as JAX's abstract evaluation does."""
    shape, data, indices, indptr = mat.shape, mat.data, mat.indices, mat.indptr
    _check(len(shape) == 2, f"{name}: the matrix must be 2-D, got {shape=}")
    _check(data.ndim == indices.ndim == indptr.ndim == 1, f"{name}: buffers must be 1-D")
    _check(data.shape == indices.shape, f"{name}: data and indices lengths differ")
    _check(indptr.shape == (shape[0] + 1,), f"{name}: indptr must have length rows + 1")
    coo = _coo_indices(indices, indptr)
    return coo[:, 0], coo[:, 1]


class _Compressed(JAXSparse):
    """What CSR and CSC share: three buffers and a shape, a pytree whose aux data is the shape."""

    def __init__(self, args, *, shape):
        self.data, self.indices, self.indptr = (jnp.asarray(a) for a in args)
        super().__init__(args, shape=shape)

    nse = property(lambda self: self.data.size, doc="the number of stored entries")
    dtype = property(lambda self: self.data.dtype, doc="the dtype of ``data``")

    def tree_flatten(self):
        return (self.data, self.indices, self.indptr), {"shape": self.shape}

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        if aux_data.keys() != {"shape"}:
            raise FunctxValueError(f"{cls.__name__}.tree_unflatten: invalid {aux_data=}")
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        obj.shape = aux_data["shape"]
        return obj

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        shape = tuple(shape)
        if len(shape) != 2:
            raise FunctxValueError(f"{cls.__name__} must have ndim=2; got {shape=}")
        data = jnp.zeros(0, dtype)
        n = shape[0] if cls is CSR else shape[1]
        bufs = (data, jnp.zeros(0, index_dtype), jnp.zeros(n + 1, index_dtype))
        return cls(bufs, shape=shape)

    def transpose(self, axes=None):
        """The transposed matrix: the same buffers read as the other format."""
        if axes is not None:
            raise UnsupportedError("axes argument to transpose()" + where())
        other = CSC if isinstance(self, CSR) else CSR
        return other((self.data, self.indices, self.indptr), shape=self.shape[::-1])

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        """The matrix of a dense matrix (``csr_fromdense``; of the transpose for CSC)."""
        if cls is CSR:
            return csr_fromdense(mat, nse=nse, index_dtype=index_dtype)
        return csr_fromdense(jnp.asarray(mat).T, nse=nse, index_dtype=index_dtype).T

    def __matmul__(self, other):
        csr = self if isinstance(self, CSR) else self.T

        def product(data, x):
            row, col = _rows(csr, "matmul")
            return _product(data, row, col, x, csr.shape, isinstance(self, CSC), "matmul")

        return _promoted_product(self, other, product)


@register_pytree_node_class
class CSR(_Compressed):
    """A 2-D sparse matrix in compressed-sparse-row format (``jax.experimental.sparse.CSR``):
    a pytree of ``data``, the column ``indices`` and the row pointers ``indptr`` (the entries
    of row ``r`` are ``indptr[r]:indptr[r + 1]``).

    Arguments:
      args: the triple ``(data, indices, indptr)``.
      shape: the matrix's shape ``(rows, cols)``.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import CSR
      >>> m = CSR.fromdense(jnp.array([[0.0, 2.0], [1.0, 3.0]]))
      >>> m, m.indices.tolist(), m.indptr.tolist()
      (CSR(float32[2, 2], nse=3), [1, 0, 1], [0, 1, 3])
      >>> m @ jnp.array([1.0, 10.0])
      Array([20., 31.], dtype=float32)
    """

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        row, col = _diagonal(N, M, k, index_dtype)
        if row is None:
            return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype)
        data = jnp.ones(row.shape, dtype)
        _, indptr = _csr_indices(jnp.stack([row, col], axis=-1), N, np.dtype(index_dtype))
        return cls((data, col, indptr), shape=(N, M))

    def todense(self):
        """The dense matrix (``csr_todense``)."""
        return csr_todense(self)


@register_pytree_node_class
class CSC(_Compressed):
    """A 2-D sparse matrix in compressed-sparse-column format (``jax.experimental.sparse.CSC``):
    the CSR buffers of its transpose (``indices`` are rows, ``indptr`` points to columns).

    Arguments:
      args: the triple ``(data, indices, indptr)``.
      shape: the matrix's shape ``(rows, cols)``.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import CSC
      >>> m = CSC.fromdense(jnp.array([[0.0, 2.0], [1.0, 3.0]]))
      >>> m.indices.tolist(), m.indptr.tolist()
      ([1, 0, 1], [0, 1, 3])
      >>> m @ jnp.array([1.0, 10.0])
      Array([20., 31.], dtype=float32)
    """

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        return CSR._eye(M, N, -k, dtype=dtype, index_dtype=index_dtype).T

    def todense(self):
        """The dense matrix."""
        return csr_todense(self.T).T


def csr_fromdense(mat, *, nse=None, index_dtype=np.int32) -> CSR:
    """The CSR matrix of a dense matrix (``jax.experimental.sparse.csr_fromdense``): its
    nonzeros in row-major order, then padding entries (column 0, value 0, past ``indptr[-1]``).

    Arguments:
      mat: a 2-D dense array.
      nse: the number of stored entries; by default the number of nonzeros, which needs a
        concrete ``mat`` (pass it under ``jit``).
      index_dtype: the dtype of ``indices`` and ``indptr``.
    Returns:
      a CSR matrix.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import csr_fromdense
      >>> m = csr_fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]), nse=3)
      >>> m.data, m.indices.tolist(), m.indptr.tolist()
      (Array([1., 2., 0.], dtype=float32), [1, 0, 0], [0, 1, 2])
    """
    data, row, col, real = _nonzeros(mat, nse, "csr_fromdense")
    rows = jnp.shape(mat)[0]
    coo = jnp.stack([jnp.where(real, row, rows), col], axis=-1)
    indices, indptr = _csr_indices(coo, rows, np.dtype(index_dtype))
    return CSR((data, indices, indptr), shape=jnp.shape(mat))


def csr_todense(mat: CSR):
    """The dense matrix of a CSR matrix (``jax.experimental.sparse.csr_todense``): entries at
    one position add up, padding entries are dropped.

    Arguments:
      mat: a CSR matrix.
    Returns:
      an Array of ``mat.shape`` and ``mat.dtype``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import CSR, csr_todense
      >>> csr_todense(CSR((jnp.array([1.0, 2.0]), jnp.array([1, 0]), jnp.array([0, 1, 2])),
      ...                 shape=(2, 2)))
      Array([[0., 1.],
             [2., 0.]], dtype=float32)
    """
    row, col = _rows(mat, "csr_todense")
    return _scatter_sum(mat.data, [row, col], mat.shape)


def csr_matvec(mat: CSR, v, transpose=False):
    _check(jnp.ndim(v) == 1, f"csr_matvec: v must be 1-D, got shape {jnp.shape(v)}")
    row, col = _rows(mat, "csr_matvec")
    return _product(mat.data, row, col, v, mat.shape, transpose, "csr_matvec")


def csr_matmat(mat: CSR, B, *, transpose=False):
    _check(jnp.ndim(B) == 2, f"csr_matmat: B must be 2-D, got shape {jnp.shape(B)}")
    row, col = _rows(mat, "csr_matmat")
    return _product(mat.data, row, col, B, mat.shape, transpose, "csr_matmat")


csr_matvec.__doc__ = _product_doc(
    "csr", "matvec", "csr_matvec(m, jnp.array([1.0, 10.0]))\n      Array([20.,  1.], dtype=float32)"
)
csr_matmat.__doc__ = _product_doc(
    "csr",
    "matmat",
    "csr_matmat(m, jnp.array([[1.0, 0.0], [0.0, 1.0]]), transpose=True)\n"
    "      Array([[0., 1.],\n             [2., 0.]], dtype=float32)",
)
