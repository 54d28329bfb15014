"""BCSR, JAX's batched compressed-sparse-row format (``jax.experimental.sparse.BCSR``), as a
view of BCOO: each operation converts the row pointers to row indices (or back) and runs the
BCOO operation, so ``jit``, ``grad`` (in ``data`` and the dense operands) and ``vmap`` compose
with it as they do with BCOO.

A BCSR array of ``shape = batch + (rows, cols) + dense`` (exactly two sparse dims) stores
``data`` of shape ``batch + (nse,) + dense``, the column of each entry in ``indices``
(``batch + (nse,)``) and ``indptr`` (``batch + (rows + 1,)``): the entries of row ``r`` are
``indptr[r]:indptr[r + 1]``. Entries past ``indptr[-1]`` are padding (their row reads as
``rows``, out of bounds), and a batch dim of a buffer may have size 1 (it broadcasts).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from functx import lax, numpy as jnp
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.experimental.sparse import bcoo as _bcoo
from functx.experimental.sparse._base import JAXSparse
from functx.experimental.sparse.bcoo import (
    BCOO,
    _extract,
    _matmul,
    _scatter_sum,
    bcoo_dot_general,
    bcoo_fromdense,
    bcoo_sum_duplicates,
    bcoo_todense,
)
from functx.source_info import where
from functx.tree_util import register_pytree_node_class


def _compatible(batch, full):
    return len(batch) == len(full) and all(s in (1, t) for s, t in zip(batch, full))


def _layout(data, indices, indptr, shape):
    """The n_batch of a BCSR's buffers, checked against ``shape`` with JAX's ValueErrors."""
    if indices.ndim < 1 or not np.issubdtype(indices.dtype, np.integer):
        raise FunctxTypeError(f"BCSR indices must be integers of ndim >= 1, got {indices.dtype}")
    if not np.issubdtype(indptr.dtype, np.integer):
        raise FunctxTypeError(f"BCSR indptr must be integers, got {indptr.dtype}")
    n_batch, nse = indices.ndim - 1, indices.shape[-1]
    n_dense = len(shape) - n_batch - 2
    if n_dense < 0:
        raise FunctxValueError(
            f"BCSR array must have 2 sparse dimensions; {shape=} with {indices.shape=} has "
            f"{len(shape) - n_batch}" + where()
        )
    batch = shape[:n_batch]
    for name, buf in (("indices", indices), ("indptr", indptr), ("data", data)):
        if not _compatible(buf.shape[:n_batch], batch):
            raise FunctxValueError(
                f"{name} batch dimensions not compatible for {name}.shape={buf.shape}, {shape=}"
            )
    if indptr.shape[n_batch:] != (shape[n_batch] + 1,):
        raise FunctxValueError("indptr shape must match the matrix shape plus 1." + where())
    if data.shape[n_batch:] != (nse, *shape[n_batch + 2 :]):
        raise FunctxValueError(f"Invalid {data.shape=} for {nse=}, {n_batch=}, {n_dense=}")
    return n_batch


def _coo_indices(indices, indptr):
    """The BCOO indices (``batch + (nse, 2)``) of BCSR ``indices`` and ``indptr``: the row of
    entry ``p`` is one less than the number of row starts ``indptr`` at or before ``p`` (``rows``
    for the padding past ``indptr[-1]``)."""
    nb = indices.ndim - 1
    batch = tuple(np.broadcast_shapes(indices.shape[:nb], indptr.shape[:nb]))
    b, nse = math.prod(batch), indices.shape[-1]
    cols = jnp.broadcast_to(indices, batch + indices.shape[nb:]).reshape((b, nse))
    ptr = jnp.broadcast_to(indptr, batch + indptr.shape[nb:]).reshape((b, -1))
    # a one at each row start, summed: the running count is the row (JAX's csr-to-coo rule)
    brow = lax.broadcasted_iota(ptr.dtype, ptr.shape, 0).reshape(-1)
    starts = _scatter_sum(jnp.ones(ptr.size, cols.dtype), [brow, ptr.reshape(-1)], (b, nse))
    rows = (jnp.cumsum(starts, axis=1) - 1).astype(cols.dtype)
    return jnp.stack([rows, cols], axis=-1).reshape(batch + (nse, 2))


def _csr_indices(coo_indices, n_rows, index_dtype):
    """BCSR (indices, indptr) of sorted BCOO indices ``batch + (nse, 2)``: the columns, and the
    running count of entries per row (out-of-bounds rows are not counted)."""
    batch, nse = coo_indices.shape[:-2], coo_indices.shape[-2]
    b = math.prod(batch)
    rows = coo_indices[..., 0].reshape((b, nse))
    brow = lax.broadcasted_iota(rows.dtype, rows.shape, 0).reshape(-1)
    counts = _scatter_sum(jnp.ones(b * nse, index_dtype), [brow, rows.reshape(-1)], (b, n_rows))
    indptr = jnp.concatenate([jnp.zeros((b, 1), index_dtype), jnp.cumsum(counts, axis=1)], 1)
    indptr = indptr.astype(index_dtype).reshape(batch + (n_rows + 1,))
    return coo_indices[..., 1].astype(index_dtype), indptr


@register_pytree_node_class
class BCSR(JAXSparse):
    """A sparse array in batched compressed-sparse-row format
    (``jax.experimental.sparse.BCSR``): a pytree of ``data``, ``indices`` and ``indptr``.

    Arguments:
      args: the triple ``(data, indices, indptr)``: ``data`` of shape
        ``batch + (nse,) + dense``, the column ``indices`` (integers) of shape
        ``batch + (nse,)``, the row pointers ``indptr`` of shape ``batch + (rows + 1,)``.
      shape: the shape of the array, ``batch + (rows, cols) + dense``.
      indices_sorted: whether the columns are known to be sorted within each row.
      unique_indices: whether the indices are known to hold no duplicates.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCSR
      >>> m = BCSR.fromdense(jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]]))
      >>> m
      BCSR(float32[2, 3], nse=3)
      >>> m.indices, m.indptr
      (Array([1, 0, 2], dtype=int32), Array([0, 1, 3], dtype=int32))
      >>> m @ jnp.ones(3)
      Array([2., 5.], dtype=float32)
    """

    def __init__(
        self,
        args: tuple,
        *,
        shape: Sequence[int],
        indices_sorted: bool = False,
        unique_indices: bool = False,
    ):
        self.data, self.indices, self.indptr = (jnp.asarray(a) for a in args)
        super().__init__(args, shape=shape)
        self.indices_sorted, self.unique_indices = indices_sorted, unique_indices
        self._n_batch = _layout(self.data, self.indices, self.indptr, self.shape)

    # -- pytree: the batch part of the shape follows the buffers (vmap maps a batch dim)
    def tree_flatten(self):
        aux = (self.shape, self._n_batch, self.indices_sorted, self.unique_indices)
        return (self.data, self.indices, self.indptr), aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.indices, obj.indptr = children
        shape, n_batch, obj.indices_sorted, obj.unique_indices = aux
        nb = getattr(obj.indices, "ndim", n_batch + 1) - 1
        if nb < 0:
            raise FunctxValueError(
                "Cannot map a BCSR array with n_batch=0: in_axes for a BCSR must be one of its "
                "batch dims (BCSR.fromdense(..., n_batch=1) makes the leading dim one)" + where()
            )
        if nb != n_batch:  # vmap removed or added batch dims
            bufs = (obj.data, obj.indices, obj.indptr)
            shape = tuple(np.broadcast_shapes(*(x.shape[:nb] for x in bufs))) + shape[n_batch:]
        obj.shape, obj._n_batch = shape, nb
        return obj

    # -- layout
    nse = property(lambda self: self.indices.shape[-1], doc="the number of stored entries")
    n_batch = property(lambda self: self.indices.ndim - 1, doc="the number of batch dims")
    n_sparse = property(lambda self: 2, doc="the number of sparse dims (always 2)")
    n_dense = property(lambda self: self.data.ndim - self.indices.ndim, doc="the dense dims")
    dtype = property(lambda self: self.data.dtype, doc="the dtype of ``data``")

    def transpose(self, axes=None):
        """Not implemented, as in JAX (``to_bcoo().transpose()`` is)."""
        raise UnsupportedError("Transpose is not implemented." + where())

    # -- conversion
    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        """The BCSR array of a dense array (``bcsr_fromdense``)."""
        return bcsr_fromdense(
            mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype
        )

    @classmethod
    def from_bcoo(cls, arr: BCOO) -> BCSR:
        """The BCSR array of a BCOO array with two sparse dims (its indices sorted first)."""
        if not isinstance(arr, BCOO):
            raise FunctxTypeError(f"BCSR.from_bcoo: expected a BCOO array, got {type(arr)}")
        if arr.n_sparse != 2:
            raise UnsupportedError(f"BSCR.from_bcoo requires n_sparse=2; got {arr.n_sparse=}")
        arr = arr if arr.indices_sorted else arr.sort_indices()
        indices, indptr = _csr_indices(arr.indices, arr.shape[arr.n_batch], arr.indices.dtype)
        return cls((arr.data, indices, indptr), shape=arr.shape)

    @classmethod
    def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
        """The BCSR array of a 2-D ``scipy.sparse`` array or matrix (converted to CSR)."""
        if n_dense or n_batch:
            raise UnsupportedError("BCSR from_scipy_sparse with nonzero n_dense/n_batch.")
        if mat.ndim != 2:
            raise FunctxValueError(
                f"BCSR from_scipy_sparse requires 2D array; {mat.ndim}D is given."
            )
        mat = mat.tocsr()
        index_dtype = index_dtype or np.int32
        bufs = (mat.data, mat.indices.astype(index_dtype), mat.indptr.astype(index_dtype))
        return cls(bufs, shape=mat.shape)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
        shape = tuple(operator.index(s) for s in shape)
        if n_dense < 0 or n_batch < 0 or nse < 0:
            raise FunctxValueError(f"Invalid inputs: {shape=}, {n_dense=}, {n_batch=}, {nse=}")
        if len(shape) - n_dense - n_batch != 2:
            raise FunctxValueError("BCSR sparse.empty: must have 2 sparse dimensions.")
        batch, (rows, cols) = shape[:n_batch], shape[n_batch : n_batch + 2]
        dense = shape[n_batch + 2 :]
        data = jnp.zeros((*batch, nse, *dense), dtype)
        indices = jnp.full((*batch, nse), cols, index_dtype)
        return cls((data, indices, jnp.zeros((*batch, rows + 1), index_dtype)), shape=shape)

    def to_bcoo(self) -> BCOO:
        """The BCOO array with the same entries (row indices from ``indptr``)."""
        indices = _coo_indices(self.indices, self.indptr)
        return BCOO((self.data, indices), shape=self.shape)

    def todense(self):
        """The dense array (``bcsr_todense``)."""
        return bcsr_todense(self)

    def sum_duplicates(self, nse=None, remove_zeros=True) -> BCSR:
        """The array with duplicate indices summed and the indices sorted; with
        ``remove_zeros`` (the default) entries whose data is zero are dropped first."""
        return BCSR.from_bcoo(self.to_bcoo().sum_duplicates(nse=nse, remove_zeros=remove_zeros))

    # -- products: a BCSR on the left only, as in JAX
    def __matmul__(self, other):
        if isinstance(other, JAXSparse):
            raise UnsupportedError("matmul between two sparse objects." + where())
        return _matmul(self.to_bcoo(), other)

    def __rmatmul__(self, other):
        raise UnsupportedError(_LHS_ONLY + where())


_LHS_ONLY = "bcsr_dot_general currently implemented for BCSR lhs and ndarray rhs."


def _require_bcsr(mat, name):
    if not isinstance(mat, BCSR):
        raise FunctxTypeError(f"{name}: expected a BCSR array, got {type(mat).__name__}" + where())


def bcsr_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32) -> BCSR:
    """The BCSR array of a dense array (``jax.experimental.sparse.bcsr_fromdense``): per batch,
    the nonzero entries in row-major order, then padding.

    Arguments:
      mat: a dense array with two sparse dims (``mat.ndim == n_batch + 2 + n_dense``).
      nse: the number of stored entries per batch; by default the largest count of nonzeros of a
        batch, which needs a concrete ``mat`` (pass it under ``jit``). Extra nonzeros are dropped.
      n_batch: the number of leading dims that are batch dims.
      n_dense: the number of trailing dims that are dense dims.
      index_dtype: the dtype of ``indices`` and ``indptr``.
    Returns:
      a BCSR array.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import bcsr_fromdense
      >>> m = bcsr_fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]), nse=3)
      >>> m.data, m.indices.tolist(), m.indptr.tolist()
      (Array([1., 2., 0.], dtype=float32), [1, 0, 2], [0, 1, 2])
    """
    mat = jnp.asarray(mat)
    if mat.ndim - operator.index(n_batch) - operator.index(n_dense) != 2:
        raise FunctxValueError("bcsr_fromdense: must have 2 sparse dimensions." + where())
    coo = bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)
    indices, indptr = _csr_indices(coo.indices, mat.shape[n_batch], coo.indices.dtype)
    return BCSR((coo.data, indices, indptr), shape=mat.shape)


def bcsr_todense(mat: BCSR):
    """The dense array of a BCSR array (``jax.experimental.sparse.bcsr_todense``): entries at
    one position add up, padding entries are dropped.

    Arguments:
      mat: a BCSR array.
    Returns:
      an Array of ``mat.shape`` and ``mat.dtype``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCSR, bcsr_todense
      >>> m = BCSR((jnp.array([1.0, 2.0, 5.0]), jnp.array([1, 1, 0]), jnp.array([0, 2, 3])),
      ...          shape=(2, 2))
      >>> bcsr_todense(m)
      Array([[0., 3.],
             [5., 0.]], dtype=float32)
    """
    _require_bcsr(mat, "bcsr_todense")
    return bcoo_todense(mat.to_bcoo())


def bcsr_extract(indices, indptr, mat):
    """The entries of a dense array at BCSR positions (``jax.experimental.sparse.bcsr_extract``):
    the ``data`` buffer of a BCSR array with ``indices`` and ``indptr`` that reads as ``mat``
    there (zero at padding).

    Arguments:
      indices: the column indices, ``batch + (nse,)``.
      indptr: the row pointers, ``batch + (rows + 1,)``.
      mat: a dense array of shape ``batch + (rows, cols) + dense``.
    Returns:
      an Array of shape ``batch + (nse,) + dense``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import bcsr_extract
      >>> bcsr_extract(jnp.array([1, 0]), jnp.array([0, 1, 2]), jnp.array([[1.0, 2.0], [3.0, 4.0]]))
      Array([2., 3.], dtype=float32)
    """
    indices, indptr, mat = jnp.asarray(indices), jnp.asarray(indptr), jnp.asarray(mat)
    data = jnp.zeros(indices.shape + mat.shape[indices.ndim + 1 :], mat.dtype)
    positions = BCSR((data, indices, indptr), shape=mat.shape)  # JAX's checks of the buffers
    return _extract(positions.to_bcoo(), mat)


def bcsr_dot_general(
    lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None
):
    """A general contraction (``lax.dot_general``) of a BCSR array and a dense array
    (``jax.experimental.sparse.bcsr_dot_general``): the BCOO product of ``lhs.to_bcoo()``.

    Arguments:
      lhs: a BCSR array (or a dense array, with a dense ``rhs``).
      rhs: a dense array.
      dimension_numbers: ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` as in
        ``lax.dot_general``; ``lhs``'s batch dims there must be among its batch dims and its
        contracting dims must not be dense dims.
      precision: unused, as in JAX.
      preferred_element_type: the result's dtype (default: the operands' promoted dtype).
      out_sharding: unused.
    Returns:
      a dense Array, as ``lax.dot_general`` of the dense operands gives.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCSR, bcsr_dot_general
      >>> m = BCSR.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
      >>> bcsr_dot_general(m, jnp.array([[1.0, 2.0], [3.0, 4.0]]),
      ...                  dimension_numbers=(((1,), (0,)), ((), ())))
      Array([[3., 4.],
             [2., 4.]], dtype=float32)
    """
    del precision, out_sharding
    if not isinstance(rhs, JAXSparse) and not isinstance(lhs, JAXSparse):
        return lax.dot_general(
            lhs, rhs, dimension_numbers, preferred_element_type=preferred_element_type
        )
    if not isinstance(lhs, BCSR) or isinstance(rhs, JAXSparse):
        raise UnsupportedError(_LHS_ONLY + where())
    return bcoo_dot_general(
        lhs.to_bcoo(),
        rhs,
        dimension_numbers=dimension_numbers,
        preferred_element_type=preferred_element_type,
    )


def bcsr_sum_duplicates(mat: BCSR, nse=None) -> BCSR:
    """A BCSR array in which entries at equal positions are summed into one, with sorted indices
    (``jax.experimental.sparse.bcsr_sum_duplicates``).

    Arguments:
      mat: a BCSR array.
      nse: the number of stored entries of the result; by default the largest count of distinct
        in-bounds positions of a batch, which needs concrete indices (pass it under ``jit``).
        Extra positions are dropped.
    Returns:
      a BCSR array.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCSR, bcsr_sum_duplicates
      >>> m = BCSR((jnp.array([1.0, 2.0, 4.0]), jnp.array([1, 1, 0]), jnp.array([0, 2, 3])),
      ...          shape=(2, 2))
      >>> s = bcsr_sum_duplicates(m)
      >>> s.data, s.indices.tolist(), s.indptr.tolist()
      (Array([3., 4.], dtype=float32), [1, 0], [0, 1, 2])
    """
    _require_bcsr(mat, "bcsr_sum_duplicates")
    return BCSR.from_bcoo(bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


def bcsr_broadcast_in_dim(mat: BCSR, *, shape, broadcast_dimensions, sharding=None) -> BCSR:
    """A BCSR array broadcast to a larger shape (``jax.experimental.sparse.bcsr_broadcast_in_dim``,
    the sparse ``lax.broadcast_in_dim``), through ``bcoo_broadcast_in_dim``: new dims before the
    two sparse dims become batch dims, new dims after them dense dims.

    Arguments:
      mat: a BCSR array.
      shape: the shape of the result.
      broadcast_dimensions: the dim of the result that each dim of ``mat`` becomes.
      sharding: unused.
    Returns:
      a BCSR array of ``shape``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCSR, bcsr_broadcast_in_dim
      >>> m = BCSR.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
      >>> b = bcsr_broadcast_in_dim(m, shape=(3, 2, 2), broadcast_dimensions=(1, 2))
      >>> b, b.todense()[2].tolist()
      (BCSR(float32[3, 2, 2], nse=2, n_batch=1), [[0.0, 1.0], [2.0, 0.0]])
    """
    _require_bcsr(mat, "bcsr_broadcast_in_dim")
    out = _bcoo.bcoo_broadcast_in_dim(
        mat.to_bcoo(), shape=shape, broadcast_dimensions=broadcast_dimensions, sharding=sharding
    )
    return BCSR.from_bcoo(out)


def bcsr_concatenate(operands: Sequence[BCSR], *, dimension: int) -> BCSR:
    """BCSR arrays joined along a batch or sparse dim (``jax.experimental.sparse.bcsr_concatenate``,
    the sparse ``lax.concatenate``), through ``bcoo_concatenate``.

    Arguments:
      operands: BCSR arrays of equal layouts and shapes except along ``dimension``.
      dimension: a batch or sparse dim (not a dense one).
    Returns:
      a BCSR array holding the entries of every operand.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCSR, bcsr_concatenate
      >>> m = BCSR.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
      >>> bcsr_concatenate([m, m], dimension=1).todense().tolist()
      [[0.0, 1.0, 0.0, 1.0], [2.0, 0.0, 2.0, 0.0]]
    """
    for mat in operands:
        _require_bcsr(mat, "bcsr_concatenate")
    out = _bcoo.bcoo_concatenate([mat.to_bcoo() for mat in operands], dimension=dimension)
    return BCSR.from_bcoo(out)
