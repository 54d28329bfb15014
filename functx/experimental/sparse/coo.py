"""COO, JAX's older coordinate-format matrix (``jax.experimental.sparse.COO``): a 2-D array
stored as ``data``, ``row`` and ``col`` (each of length ``nse``), and its functions
``coo_fromdense``, ``coo_todense``, ``coo_matvec``, ``coo_matmat``, as composites of functx's
``nonzero``, gather and ``segment_sum`` (so ``jit``, ``grad`` in ``data`` and in the dense
operand, and ``vmap`` of the dense operand compose with them). BCOO is the format to prefer.

Where JAX's abstract evaluation asserts (an operand of the wrong rank, length or dtype), functx
raises a FunctxValueError or FunctxTypeError that says which.
"""

from __future__ import annotations

import numpy as np

from functx import lax, numpy as jnp
from functx.errors import FunctxTypeError, FunctxValueError, UnsupportedError
from functx.experimental.sparse._base import JAXSparse
from functx.experimental.sparse.bcoo import _concrete_nse, _index, _scatter_sum
from functx.source_info import where
from functx.tree_util import register_pytree_node_class


def _check(ok, message):
    if not ok:
        raise FunctxValueError(message + where())


def _product(data, row, col, x, shape, transpose, name):
    """``A @ x`` (``A.T @ x`` with ``transpose``) for the matrix ``A`` of ``shape`` holding
    ``data`` at ``(row, col)``: each entry's row of ``x`` times its value, summed per row."""
    x = jnp.asarray(x)
    _check(len(shape) == 2, f"{name}: the matrix must be 2-D, got {shape=}")
    _check(data.shape == row.shape == col.shape, f"{name}: data, row and col lengths differ")
    if data.dtype != x.dtype:
        raise FunctxTypeError(
            f"{name}: the matrix's dtype {data.dtype} differs from the operand's {x.dtype}; "
            "cast one (A @ x promotes them)" + where()
        )
    if transpose:
        row, col = col, row
    n_in, n_out = (shape[0], shape[1]) if transpose else (shape[1], shape[0])
    _check(x.shape[:1] == (n_in,), f"{name}: operand of shape {x.shape} for a matrix of {shape}")
    products = data.reshape(data.shape + (1,) * (x.ndim - 1)) * x[col]
    return _scatter_sum(products, [row], (n_out,))


def _promoted_product(mat, other, product):
    """``mat @ other`` as JAX's COO/CSR/CSC ``__matmul__``: dtypes promoted, 1-D or 2-D."""
    if isinstance(other, JAXSparse):
        raise UnsupportedError("matmul between two sparse objects." + where())
    other = jnp.asarray(other)
    dtype = jnp.promote_types(mat.dtype, other.dtype)
    if other.ndim not in (1, 2):
        raise UnsupportedError(f"matmul with object of shape {other.shape}" + where())
    return product(mat.data.astype(dtype), other.astype(dtype))


@register_pytree_node_class
class COO(JAXSparse):
    """A 2-D sparse matrix in coordinate format (``jax.experimental.sparse.COO``): a pytree of
    ``data``, ``row`` and ``col``. Entries at one position add up.

    Arguments:
      args: the triple ``(data, row, col)`` of equal lengths ``nse``.
      shape: the matrix's shape ``(rows, cols)``.
      rows_sorted: whether the entries are known to be sorted by row.
      cols_sorted: whether the entries are known to be sorted by column.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import COO
      >>> m = COO.fromdense(jnp.array([[0.0, 2.0], [1.0, 0.0]]))
      >>> m, m.row, m.col
      (COO(float32[2, 2], nse=2), Array([0, 1], dtype=int32), Array([1, 0], dtype=int32))
      >>> m @ jnp.array([1.0, 10.0])
      Array([20.,  1.], dtype=float32)
    """

    def __init__(self, args, *, shape, rows_sorted=False, cols_sorted=False):
        self.data, self.row, self.col = (jnp.asarray(a) for a in args)
        self._rows_sorted, self._cols_sorted = rows_sorted, cols_sorted
        super().__init__(args, shape=shape)

    nse = property(lambda self: self.data.size, doc="the number of stored entries")
    dtype = property(lambda self: self.data.dtype, doc="the dtype of ``data``")

    def tree_flatten(self):
        aux = {"shape": self.shape, "rows_sorted": self._rows_sorted}
        return (self.data, self.row, self.col), {**aux, "cols_sorted": self._cols_sorted}

    @classmethod
    def tree_unflatten(cls, aux_data, children):
        if aux_data.keys() != {"shape", "rows_sorted", "cols_sorted"}:
            raise FunctxValueError(f"COO.tree_unflatten: invalid {aux_data=}")
        obj = object.__new__(cls)
        obj.data, obj.row, obj.col = children
        obj.shape = aux_data["shape"]
        obj._rows_sorted, obj._cols_sorted = aux_data["rows_sorted"], aux_data["cols_sorted"]
        return obj

    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
        """The COO matrix of a dense matrix (``coo_fromdense``)."""
        return coo_fromdense(mat, nse=nse, index_dtype=index_dtype)

    @classmethod
    def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
        shape = tuple(shape)
        if len(shape) != 2:
            raise FunctxValueError(f"COO must have ndim=2; got {shape=}")
        data = jnp.zeros(0, dtype)
        index = jnp.zeros(0, index_dtype)
        return cls((data, index, index), shape=shape, rows_sorted=True, cols_sorted=True)

    @classmethod
    def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
        row, col = _diagonal(N, M, k, index_dtype)
        if row is None:
            return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype)
        data = jnp.ones(row.shape, dtype)
        return cls((data, row, col), shape=(N, M), rows_sorted=True, cols_sorted=True)

    def _sort_indices(self):
        """The matrix with its entries sorted by row, then column."""
        if self._rows_sorted:
            return self
        row, col, data = lax.sort((self.row, self.col, self.data), num_keys=2)
        return COO((data, row, col), shape=self.shape, rows_sorted=True)

    def todense(self):
        """The dense matrix (``coo_todense``)."""
        return coo_todense(self)

    def transpose(self, axes=None):
        """The transposed matrix (row and col swapped); ``axes`` is not supported, as in JAX."""
        if axes is not None:
            raise UnsupportedError("axes argument to transpose()" + where())
        return COO(
            (self.data, self.col, self.row),
            shape=self.shape[::-1],
            rows_sorted=self._cols_sorted,
            cols_sorted=self._rows_sorted,
        )

    def __matmul__(self, other):
        return _promoted_product(
            self,
            other,
            lambda data, x: _product(data, self.row, self.col, x, self.shape, False, "matmul"),
        )


def _diagonal(n, m, k, index_dtype):
    """(row, col) of the ``k``-th diagonal of an ``n x m`` matrix, or (None, None) if empty."""
    size = min(n, m - k) if k > 0 else min(n + k, m)
    if size <= 0:
        return None, None
    i = jnp.arange(size, dtype=index_dtype)
    return i + max(-k, 0), i + max(k, 0)


def _nonzeros(mat, nse, name):
    """(data, row, col, count) of the first ``nse`` nonzeros of a 2-D ``mat`` in row-major
    order: padding has row = col = 0 and data 0, as JAX's."""
    mat = jnp.asarray(mat)
    _check(mat.ndim == 2, f"{name}: expected a 2-D matrix, got shape {mat.shape}")
    count = jnp.sum(mat != 0)
    nse = _concrete_nse(count, name) if nse is None else _index(nse, "nse")
    row, col = jnp.nonzero(mat, size=nse, fill_value=0)
    real = jnp.arange(nse) < count
    return jnp.where(real, mat[row, col], 0), row, col, real


def coo_fromdense(mat, *, nse=None, index_dtype=jnp.int32) -> COO:
    """The COO matrix of a dense matrix (``jax.experimental.sparse.coo_fromdense``): its
    nonzeros in row-major order, then padding entries (row 0, column 0, value 0).

    Arguments:
      mat: a 2-D dense array.
      nse: the number of stored entries; by default the number of nonzeros, which needs a
        concrete ``mat`` (pass it under ``jit``).
      index_dtype: the dtype of ``row`` and ``col``.
    Returns:
      a COO matrix with ``rows_sorted=True``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import coo_fromdense
      >>> m = coo_fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]), nse=3)
      >>> m.data, m.row.tolist(), m.col.tolist()
      (Array([1., 2., 0.], dtype=float32), [0, 1, 0], [1, 0, 0])
    """
    data, row, col, _ = _nonzeros(mat, nse, "coo_fromdense")
    bufs = (data, row.astype(index_dtype), col.astype(index_dtype))
    return COO(bufs, shape=jnp.shape(mat), rows_sorted=True)


def coo_todense(mat: COO):
    """The dense matrix of a COO matrix (``jax.experimental.sparse.coo_todense``): entries at
    one position add up, out-of-bounds entries are dropped.

    Arguments:
      mat: a COO matrix.
    Returns:
      an Array of ``mat.shape`` and ``mat.dtype``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import COO, coo_todense
      >>> coo_todense(COO((jnp.array([1.0, 2.0]), jnp.array([0, 0]), jnp.array([1, 1])),
      ...                 shape=(2, 2)))
      Array([[0., 3.],
             [0., 0.]], dtype=float32)
    """
    _check(len(mat.shape) == 2, f"coo_todense: the matrix must be 2-D, got {mat.shape}")
    return _scatter_sum(mat.data, [mat.row, mat.col], mat.shape)


# The operand and the result of each kind of product, for the docstrings ``_product_doc`` writes.
_PRODUCTS = {
    "matvec": (
        "vector",
        "v: a 1-D array of length ``mat.shape[1]`` (``mat.shape[0]`` with ``transpose``) and\n"
        "        dtype ``mat.dtype``.",
        "an Array of length ``mat.shape[0]`` (``mat.shape[1]`` with ``transpose``).",
    ),
    "matmat": (
        "matrix",
        "B: a 2-D array with ``mat.shape[1]`` rows (``mat.shape[0]`` with ``transpose``) and\n"
        "        dtype ``mat.dtype``.",
        "an Array of shape ``(mat.shape[0], B.shape[1])`` (``mat.shape[1]`` rows with\n"
        "        ``transpose``).",
    ),
}


def _product_doc(fmt: str, kind: str, example: str) -> str:
    """The docstring of ``<fmt>_<kind>`` (COO's and CSR's ``matvec`` and ``matmat``), whose
    example multiplies ``[[0, 2], [1, 0]]`` in format ``fmt`` as ``example`` shows (a call of
    the function on ``m``, and its result)."""
    operand, arg, result = _PRODUCTS[kind]
    name, cls = f"{fmt}_{kind}", fmt.upper()
    return f"""The product of a {cls} matrix and a dense {operand}
    (``jax.experimental.sparse.{name}``).

    Arguments:
      mat: a {cls} matrix.
      {arg}
      transpose: whether to multiply by the transposed matrix.
    Returns:
      {result}
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import {cls}, {name}
      >>> m = {cls}.fromdense(jnp.array([[0.0, 2.0], [1.0, 0.0]]))
      >>> {example}
    """


def coo_matvec(mat: COO, v, transpose=False):
    _check(jnp.ndim(v) == 1, f"coo_matvec: v must be 1-D, got shape {jnp.shape(v)}")
    return _product(mat.data, mat.row, mat.col, v, mat.shape, transpose, "coo_matvec")


def coo_matmat(mat: COO, B, *, transpose=False):
    _check(jnp.ndim(B) == 2, f"coo_matmat: B must be 2-D, got shape {jnp.shape(B)}")
    return _product(mat.data, mat.row, mat.col, B, mat.shape, transpose, "coo_matmat")


coo_matvec.__doc__ = _product_doc(
    "coo",
    "matvec",
    "coo_matvec(m, jnp.array([1.0, 10.0])), coo_matvec(m, jnp.array([1.0, 10.0]), True)\n"
    "      (Array([20.,  1.], dtype=float32), Array([10.,  2.], dtype=float32))",
)
coo_matmat.__doc__ = _product_doc(
    "coo",
    "matmat",
    "coo_matmat(m, jnp.array([[1.0, 0.0], [0.0, 1.0]]))\n"
    "      Array([[0., 2.],\n             [1., 0.]], dtype=float32)",
)
