"""BCOO, JAX's batched-coordinate sparse format (``jax.experimental.sparse.BCOO``), as composites
of functx's gather, scatter-add, sort and ``dot_general``: every operation runs on both backends
and under ``jit``, ``grad`` and ``vmap`` with no rule of its own.

A BCOO array of ``shape = batch + sparse + dense`` (``n_batch``, ``n_sparse``, ``n_dense`` dims)
stores ``data`` of shape ``batch + (nse,) + dense`` and ``indices`` of shape
``batch + (nse, n_sparse)``: entry ``i`` of batch ``b`` holds ``data[b, i]`` at the sparse position
``indices[b, i]``. A batch dim of ``data`` or ``indices`` may have size 1 (it broadcasts). Entries
at equal positions add up; an entry whose index is out of bounds is padding (it reads as zero and
is dropped when written), and functx pads, as JAX does, with the index ``sparse_shape``.

Most operations work on the "flat" form: the batch dims broadcast and merged into one dim ``B``,
so ``data`` is ``(B, nse, *dense)`` and ``indices`` ``(B, nse, n_sparse)``; a position is then the
tuple ``(arange(B)[:, None], indices[..., 0], ..., indices[..., n_sparse - 1])`` of advanced
indices into the dense array reshaped to ``(B, *sparse, *dense)``.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from functx import dtypes, lax, numpy as jnp, ops
from functx.errors import ConcretizationError, FunctxTypeError, FunctxValueError, UnsupportedError
from functx.experimental.sparse._base import JAXSparse
from functx.source_info import where
from functx.tracing import ShapeDtypeStruct, Tracer, eval_shape
from functx.transforms.vmap import vmap
from functx.tree_util import register_pytree_node_class


def _layout(data, indices, shape):
    """(n_batch, n_sparse, n_dense, nse) of a BCOO's buffers, checked against ``shape`` with
    JAX's ValueErrors."""
    if indices.ndim < 2:
        raise FunctxValueError(f"BCOO indices must have at least 2 dims, got {indices.shape=}")
    n_batch, (nse, n_sparse) = indices.ndim - 2, indices.shape[-2:]
    n_dense = len(shape) - n_batch - n_sparse
    if n_dense < 0:
        raise FunctxValueError(f"Invalid {indices.shape=} for {shape=}")
    batch = shape[:n_batch]
    if any(s not in (1, t) for s, t in zip(data.shape[:n_batch], batch)):
        raise FunctxValueError(f"data batch dimensions not compatible for {data.shape=}, {shape=}")
    if data.shape[n_batch:] != (nse, *shape[n_batch + n_sparse :]):
        raise FunctxValueError(f"Invalid {data.shape=} for {nse=}, {n_batch=}, {n_dense=}")
    if any(s not in (1, t) for s, t in zip(indices.shape[:n_batch], batch)):
        raise FunctxValueError(
            f"indices batch dimensions not compatible for {indices.shape=}, {shape=}"
        )
    return n_batch, n_sparse, n_dense, nse


def _split(shape, n_batch, n_sparse):
    return shape[:n_batch], shape[n_batch : n_batch + n_sparse], shape[n_batch + n_sparse :]


@register_pytree_node_class
class BCOO(JAXSparse):
    """An N-dimensional sparse array in batched-coordinate format
    (``jax.experimental.sparse.BCOO``): a pytree of ``data`` and ``indices``.

    Arguments:
      args: the pair ``(data, indices)``: ``data`` of shape ``batch + (nse,) + dense``,
        ``indices`` (integers) of shape ``batch + (nse, n_sparse)``.
      shape: the shape of the array, ``batch + sparse + dense``.
      indices_sorted: whether the indices are known to be sorted (lexicographically, per batch).
      unique_indices: whether the indices are known to hold no duplicates.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO
      >>> m = BCOO.fromdense(jnp.array([[0.0, 2.0, 0.0], [1.0, 0.0, 4.0]]))
      >>> m
      BCOO(float32[2, 3], nse=3)
      >>> m.indices
      Array([[0, 1],
             [1, 0],
             [1, 2]], dtype=int32)
      >>> (m @ jnp.ones(3)).tolist(), (m * 2).todense().tolist()
      ([2.0, 5.0], [[0.0, 4.0, 0.0], [2.0, 0.0, 8.0]])
    """

    __array_priority__ = 2000  # ``dense * bcoo`` and ``dense @ bcoo`` reach BCOO's methods

    def __init__(
        self,
        args: tuple,
        *,
        shape: Sequence[int],
        indices_sorted: bool = False,
        unique_indices: bool = False,
    ):
        data, indices = args
        self.data, self.indices = jnp.asarray(data), jnp.asarray(indices)
        self.shape = tuple(operator.index(s) for s in shape)
        self.indices_sorted, self.unique_indices = indices_sorted, unique_indices
        self._n_batch = _layout(self.data, self.indices, self.shape)[0]

    # -- pytree: the batch part of the shape follows the buffers, so that ``vmap`` maps (or
    #    adds) a leading batch dim as JAX's BCOO does
    def tree_flatten(self):
        aux = (self.shape, self._n_batch, self.indices_sorted, self.unique_indices)
        return (self.data, self.indices), aux

    @classmethod
    def tree_unflatten(cls, aux, children):
        obj = object.__new__(cls)
        obj.data, obj.indices = children
        shape, n_batch, obj.indices_sorted, obj.unique_indices = aux
        nb = getattr(obj.indices, "ndim", n_batch + 2) - 2
        if nb < 0:
            raise FunctxValueError(
                "Cannot map a BCOO array with n_batch=0: in_axes for a BCOO must be one of its "
                "batch dims (BCOO.fromdense(..., n_batch=1) makes the leading dim one)" + where()
            )
        if nb != n_batch:  # vmap removed or added batch dims
            data_b, ind_b = obj.data.shape[:nb], obj.indices.shape[:nb]
            shape = tuple(np.broadcast_shapes(data_b, ind_b)) + shape[n_batch:]
        obj.shape, obj._n_batch = shape, nb
        return obj

    # -- layout
    nse = property(lambda self: self.indices.shape[-2], doc="the number of stored entries")
    n_batch = property(lambda self: self.indices.ndim - 2, doc="the number of batch dims")
    n_sparse = property(lambda self: self.indices.shape[-1], doc="the number of sparse dims")
    n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch, doc="the dense dims")
    dtype = property(lambda self: self.data.dtype, doc="the dtype of ``data``")
    ndim = property(lambda self: len(self.shape), doc="the number of dims")
    size = property(lambda self: math.prod(self.shape), doc="the number of elements")
    T = property(lambda self: self.transpose(), doc="the transpose (all dims reversed)")

    def __len__(self):
        return self.shape[0]

    def __repr__(self):
        extra = f", nse={self.nse}"
        extra += f", n_batch={self.n_batch}" if self.n_batch else ""
        extra += f", n_dense={self.n_dense}" if self.n_dense else ""
        inner = f"BCOO({self.dtype}{list(self.shape)}{extra})"
        return f"Tracer[{inner}]" if isinstance(self.data, Tracer) else inner

    # -- construction and conversion
    @classmethod
    def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
        """The BCOO array of a dense array (``bcoo_fromdense``)."""
        return bcoo_fromdense(
            mat, nse=nse, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype
        )

    def todense(self):
        """The dense array (``bcoo_todense``)."""
        return bcoo_todense(self)

    def block_until_ready(self):
        self.data.block_until_ready()
        self.indices.block_until_ready()
        return self

    def astype(self, dtype):
        """The array with ``data`` cast to ``dtype`` (same indices)."""
        return self._with_data(self.data.astype(dtype))

    def _with_data(self, data):
        return BCOO(
            (data, self.indices),
            shape=self.shape,
            indices_sorted=self.indices_sorted,
            unique_indices=self.unique_indices,
        )

    def reshape(self, *args, **kwargs):
        raise UnsupportedError("BCOO.reshape is not implemented in functx yet")

    # -- operations
    def transpose(self, axes=None):
        """The array with its dims permuted (all reversed by default; ``bcoo_transpose``)."""
        perm = tuple(range(self.ndim))[::-1] if axes is None else tuple(axes)
        out = bcoo_transpose(self, permutation=perm)
        nb, ns = self.n_batch, self.n_sparse
        out.indices_sorted = self.indices_sorted and perm[nb : nb + ns] == tuple(range(nb, nb + ns))
        return out

    def sum(self, axis=None):
        """The sum over ``axis`` (all dims by default): a BCOO array, or a dense scalar when every
        dim is summed, as JAX's sparsified ``sum`` gives."""
        axes = range(self.ndim) if axis is None else (axis if isinstance(axis, tuple) else (axis,))
        out = bcoo_reduce_sum(self, axes=tuple(a % max(self.ndim, 1) for a in axes))
        return out.todense() if out.ndim == 0 else out

    def sort_indices(self):
        """The array with its indices sorted (``bcoo_sort_indices``)."""
        return bcoo_sort_indices(self)

    def sum_duplicates(self, nse=None, remove_zeros=True):
        """The array with duplicate indices summed and the indices sorted; with
        ``remove_zeros`` (the default) entries whose data is zero are dropped first."""
        mat = self
        if remove_zeros:
            zero = jnp.all(mat.data == 0, axis=tuple(range(mat.n_batch + 1, mat.data.ndim)))
            pad = jnp.asarray(
                mat.shape[mat.n_batch : mat.n_batch + mat.n_sparse], mat.indices.dtype
            )
            mat = BCOO((mat.data, jnp.where(zero[..., None], pad, mat.indices)), shape=mat.shape)
        return bcoo_sum_duplicates(mat, nse=nse)

    def __mul__(self, other):
        if isinstance(other, BCOO):
            raise UnsupportedError("sparse * sparse (bcoo_multiply_sparse) is not in functx yet")
        return self._with_data(bcoo_multiply_dense(self, other))

    __rmul__ = __mul__

    def __neg__(self):
        return self._with_data(-self.data)

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)


def _matmul(a, b):
    """``a @ b`` with one sparse operand, as ``jnp.matmul``: 1-D and 2-D operands; a stack of
    matrices times a matrix or vector (either side); two stacks of equal rank, their leading
    dims paired (a BCOO's must be its batch dims)."""
    na, nb = len(np.shape(a)), len(np.shape(b))
    if not na or not nb:
        raise FunctxValueError("matmul: an operand is a scalar; use * instead" + where())
    if na > 2 and nb > 2 and na != nb:
        raise UnsupportedError(f"sparse matmul of {na}-D and {nb}-D stacks is not in functx yet")
    batch = tuple(range(na - 2)) if na == nb else ()
    dn = (((na - 1,), (max(nb - 2, 0),)), (batch, batch))
    out = bcoo_dot_general(a, b, dimension_numbers=dn)
    # a matrix times a stack: dot_general puts the matrix's rows first, matmul next to last
    return jnp.moveaxis(out, 0, -2) if na == 2 and nb > 2 else out


# -- the flat form ------------------------------------------------------------------------------


def _flat(mat):
    """(data (B, nse, *dense), indices (B, nse, n_sparse)) with the batch dims broadcast."""
    nb = mat.n_batch
    batch = mat.shape[:nb]
    data = jnp.broadcast_to(mat.data, batch + mat.data.shape[nb:])
    indices = jnp.broadcast_to(mat.indices, batch + mat.indices.shape[nb:])
    b = math.prod(batch)
    return data.reshape((b, *data.shape[nb:])), indices.reshape((b, *indices.shape[nb:]))


def _positions(indices):
    """The advanced-index tuple of flat ``indices`` (B, nse, n_sparse) into (B, *sparse, ...)."""
    rows = lax.broadcasted_iota(indices.dtype, indices.shape[:2], 0)
    return (rows, *(indices[..., k] for k in range(indices.shape[-1])))


def _scatter_sum(values, cols, sizes):
    """``values`` (N, *rest) summed into an array (*sizes, *rest): row ``i`` goes to the position
    given by the index columns ``cols[k][i]`` (negative indices wrap, as in ``jnp`` indexing; an
    out-of-bounds one drops the row). One ``segment_sum`` over row-major positions: a scatter of
    whole rows, where ``.at[cols].add`` would scatter element by element."""
    pos, ok = 0, True
    for c, n in zip(cols, sizes):
        c = jnp.where(c < 0, c + n, c)
        ok = ok & (c >= 0) & (c < n)
        pos = pos * n + c
    pos = jnp.where(ok, pos, -1)
    out = ops.segment_sum(values, pos, num_segments=math.prod(sizes))
    return out.reshape(tuple(sizes) + values.shape[1:])


def _unravel(flat, sizes):
    """The row-major multi-index (one array per dim of ``sizes``) of the flat positions ``flat``."""
    strides = np.cumprod((1, *sizes[::-1]))[:-1][::-1]
    return [(flat // int(st)) % n for st, n in zip(strides, sizes)]


def _padding(indices, sparse_shape):
    """Flat ``indices`` with every out-of-bounds row replaced by ``sparse_shape`` (padding), and
    the mask of the rows that were in bounds."""
    bound = jnp.asarray(sparse_shape, indices.dtype)
    ok = jnp.all((indices >= 0) & (indices < bound), axis=-1)
    return jnp.where(ok[..., None], indices, bound), ok


def _unflat(mat, data, indices, **flags):
    """A BCOO of ``mat``'s shape from flat buffers (batch dims restored)."""
    batch = mat.shape[: mat.n_batch]
    data = data.reshape(batch + data.shape[1:])
    return BCOO((data, indices.reshape(batch + indices.shape[1:])), shape=mat.shape, **flags)


def _require_bcoo(mat, name):
    if not isinstance(mat, BCOO):
        raise FunctxTypeError(f"{name}: expected a BCOO array, got {type(mat).__name__}" + where())


def _index(value, name):
    """``operator.index(value)`` with a functx TypeError naming the argument."""
    try:
        return operator.index(value)
    except TypeError as e:
        raise FunctxTypeError(f"{name}: {e}" + where()) from None


def _concrete_nse(count, name):
    """The default ``nse``: the largest ``count``, which must be concrete."""
    if isinstance(count, Tracer):
        raise ConcretizationError(
            f"{name}: the number of stored elements depends on traced values: pass a concrete "
            "nse (number of stored elements) to use it under jit, vmap or grad" + where()
        )
    return int(np.max(np.asarray(count), initial=0))


# -- conversion ---------------------------------------------------------------------------------


def bcoo_todense(mat: BCOO):
    """The dense array of a BCOO array (``jax.experimental.sparse.bcoo_todense``): entries at one
    position add up, padding entries are dropped.

    Arguments:
      mat: a BCOO array.
    Returns:
      an Array of ``mat.shape`` and ``mat.dtype``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_todense
      >>> m = BCOO((jnp.array([1.0, 2.0, 5.0]), jnp.array([[0, 1], [0, 1], [1, 0]])), shape=(2, 2))
      >>> bcoo_todense(m)
      Array([[0., 3.],
             [5., 0.]], dtype=float32)
    """
    _require_bcoo(mat, "bcoo_todense")
    data, indices = _flat(mat)
    b, nse = indices.shape[:2]
    cols = [c.reshape(b * nse) for c in _positions(indices)]
    sizes = (b, *_split(mat.shape, mat.n_batch, mat.n_sparse)[1])
    return _scatter_sum(data.reshape((b * nse, *data.shape[2:])), cols, sizes).reshape(mat.shape)


def bcoo_extract(sparr: BCOO, arr, *, assume_unique=None) -> BCOO:
    """The entries of a dense array at a BCOO array's positions
    (``jax.experimental.sparse.bcoo_extract``): a BCOO with ``sparr``'s indices whose data are
    ``arr``'s values there (zero at padding).

    Arguments:
      sparr: a BCOO array giving the positions.
      arr: a dense array of ``sparr.shape``.
      assume_unique: unused (functx reads each position; duplicates each read the value).
    Returns:
      a BCOO array.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_extract
      >>> s = BCOO.fromdense(jnp.eye(2))
      >>> bcoo_extract(s, jnp.array([[1.0, 2.0], [3.0, 4.0]])).data
      Array([1., 4.], dtype=float32)
    """
    del assume_unique
    _require_bcoo(sparr, "bcoo_extract")
    arr = jnp.asarray(arr)
    if arr.shape != sparr.shape:
        raise FunctxValueError(f"shape mismatch: {sparr.shape=} {arr.shape=}" + where())
    data = _extract(sparr, arr)
    return BCOO(
        (data, sparr.indices),
        shape=sparr.shape,
        indices_sorted=sparr.indices_sorted,
        unique_indices=sparr.unique_indices,
    )


def _extract(mat, arr):
    """The data of ``arr`` (of ``mat.shape``) at ``mat``'s positions, shaped as ``mat.data``."""
    _, indices = _flat(mat)
    batch, sparse, dense = _split(mat.shape, mat.n_batch, mat.n_sparse)
    flat = arr.reshape((indices.shape[0], *sparse, *dense))
    data = flat.at[_positions(indices)].get(mode="fill", fill_value=0)
    return data.reshape(batch + data.shape[1:])


def bcoo_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32) -> BCOO:
    """The BCOO array of a dense array (``jax.experimental.sparse.bcoo_fromdense``): per batch,
    the nonzero positions in row-major order, then padding.

    Arguments:
      mat: a dense array.
      nse: the number of stored entries per batch; by default the largest count of nonzeros of a
        batch, which needs a concrete ``mat`` (pass it under ``jit``). Extra nonzeros are dropped.
      n_batch: the number of leading dims that are batch dims.
      n_dense: the number of trailing dims that are dense dims.
      index_dtype: the dtype of ``indices``.
    Returns:
      a BCOO array with sorted, unique indices.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import bcoo_fromdense
      >>> m = bcoo_fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]), nse=3)
      >>> m.data, m.indices.tolist()
      (Array([1., 2., 0.], dtype=float32), [[0, 1], [1, 0], [2, 2]])
    """
    mat = jnp.asarray(mat)
    n_batch, n_dense = _index(n_batch, "n_batch"), _index(n_dense, "n_dense")
    n_sparse = mat.ndim - n_batch - n_dense
    if n_batch < 0 or n_dense < 0 or n_sparse < 0:
        raise FunctxValueError(f"Invalid {n_batch=}, {n_dense=} for {mat.shape=}" + where())
    batch, sparse, dense = _split(mat.shape, n_batch, n_sparse)
    b, s = math.prod(batch), math.prod(sparse)
    nz = (mat != 0).reshape((b, s, math.prod(dense)))
    nz = jnp.any(nz, axis=2)
    if nse is None:
        nse = _concrete_nse(jnp.sum(nz, axis=1), "bcoo_fromdense")
    nse = _index(nse, "nse")
    if nse < 0:
        raise FunctxValueError(f"bcoo_fromdense: nse must be non-negative, got {nse}" + where())
    (where_nz,) = vmap(lambda row: jnp.nonzero(row, size=nse, fill_value=s))(nz)
    # the row-major multi-index of each flat position; the fill value s becomes sparse_shape
    cols = [jnp.where(where_nz == s, n, c) for c, n in zip(_unravel(where_nz, sparse), sparse)]
    indices = jnp.stack(cols, axis=-1) if cols else jnp.zeros((b, nse, 0), np.int32)
    indices = indices.astype(index_dtype).reshape((*batch, nse, n_sparse))
    # the data: each batch's values at its flat positions (padding, position s, reads zero)
    rows = lax.broadcasted_iota(where_nz.dtype, where_nz.shape, 0)
    data = mat.reshape((b, s, *dense)).at[rows, where_nz].get(mode="fill", fill_value=0)
    data = data.reshape((*batch, nse, *dense))
    return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


# -- layout-preserving operations -----------------------------------------------------------------


def bcoo_transpose(mat: BCOO, *, permutation: Sequence[int]) -> BCOO:
    """A BCOO array with its dims permuted (``jax.experimental.sparse.bcoo_transpose``): batch,
    sparse and dense dims are each permuted among themselves.

    Arguments:
      mat: a BCOO array.
      permutation: a permutation of ``range(mat.ndim)`` that keeps each of the batch, sparse and
        dense dims in its own group.
    Returns:
      a BCOO array of shape ``[mat.shape[p] for p in permutation]``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_transpose
      >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0, 0.0], [2.0, 0.0, 0.0]]))
      >>> bcoo_transpose(m, permutation=(1, 0)).todense()
      Array([[0., 2.],
             [1., 0.],
             [0., 0.]], dtype=float32)
    """
    _require_bcoo(mat, "bcoo_transpose")
    if not isinstance(permutation, tuple | list | np.ndarray):
        raise FunctxTypeError(
            f"transpose permutation must be a tuple/list/ndarray, got {type(permutation)}."
        )
    perm = tuple(operator.index(p) for p in permutation)
    if sorted(perm) != list(range(mat.ndim)):
        raise FunctxTypeError(
            "transpose permutation isn't a permutation of operand dimensions, got permutation "
            f"{perm} for shape {mat.shape}." + where()
        )
    nb, ns = mat.n_batch, mat.n_sparse
    groups = [perm[:nb], perm[nb : nb + ns], perm[nb + ns :]]
    for (lo, hi), group, kind in zip(
        ((0, nb), (nb, nb + ns), (nb + ns, mat.ndim)), groups, ("batch", "sparse", "dense")
    ):
        if any(not lo <= p < hi for p in group):
            raise UnsupportedError(
                f"transpose permutation cannot permute {kind} axes with other axes; got "
                f"{perm=} for n_batch={nb}, n_sparse={ns}" + where()
            )
    batch_p, sparse_p, dense_p = groups
    data = mat.data.transpose((*batch_p, nb, *(p - ns + 1 for p in dense_p)))
    indices = mat.indices.transpose((*batch_p, nb, nb + 1))
    indices = indices[..., [p - nb for p in sparse_p]] if ns else indices
    shape = tuple(mat.shape[p] for p in perm)
    return BCOO((data, indices), shape=shape, unique_indices=mat.unique_indices)


def bcoo_multiply_dense(sp_mat: BCOO, v):
    """The data of the elementwise product of a BCOO array and a dense array
    (``jax.experimental.sparse.bcoo_multiply_dense``): ``v`` broadcasts to ``sp_mat.shape``.

    Arguments:
      sp_mat: a BCOO array.
      v: a scalar or dense array whose shape broadcasts to ``sp_mat.shape``.
    Returns:
      an Array shaped as ``sp_mat.data``: the product's stored values, at ``sp_mat.indices``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_multiply_dense
      >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
      >>> bcoo_multiply_dense(m, jnp.array([10.0, 100.0]))
      Array([100.,  20.], dtype=float32)
    """
    _require_bcoo(sp_mat, "bcoo_multiply_dense")
    v = jnp.asarray(v) if not isinstance(v, int | float | complex) else v
    if not np.ndim(v):
        return jnp.multiply(sp_mat.data, v)
    if np.broadcast_shapes(np.shape(v), sp_mat.shape) != sp_mat.shape:
        raise UnsupportedError(
            "multiplication between sparse and dense is only implemented for cases where the "
            f"output shape matches the sparse matrix shape. Got shape={sp_mat.shape}, "
            f"v.shape={np.shape(v)}" + where()
        )
    return jnp.multiply(sp_mat.data, _extract(sp_mat, jnp.broadcast_to(v, sp_mat.shape)))


def _lex_order(indices):
    """Per row of flat ``indices`` (B, nse, n): the stable lexicographic order of its entries."""
    keys = [indices[..., k] for k in range(indices.shape[-1])][::-1]
    if not keys:
        return lax.broadcasted_iota(np.int32, indices.shape[:2], 1)
    return vmap(lambda *ks: jnp.lexsort(ks))(*keys)


def _take_rows(x, order):
    """``x`` (B, nse, ...) reordered along its nse dim by ``order`` (B, nse)."""
    return jnp.take_along_axis(x, order.reshape(order.shape + (1,) * (x.ndim - 2)), axis=1)


def bcoo_sort_indices(mat: BCOO) -> BCOO:
    """A BCOO array with the entries of each batch in lexicographic order of their indices
    (``jax.experimental.sparse.bcoo_sort_indices``); duplicates stay.

    Arguments:
      mat: a BCOO array.
    Returns:
      the same array, with ``indices_sorted=True``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_sort_indices
      >>> m = BCOO((jnp.array([1.0, 2.0]), jnp.array([[1, 0], [0, 1]])), shape=(2, 2))
      >>> bcoo_sort_indices(m).indices.tolist()
      [[0, 1], [1, 0]]
    """
    _require_bcoo(mat, "bcoo_sort_indices")
    data, indices = _flat(mat)
    order = _lex_order(indices)
    return _unflat(
        mat,
        _take_rows(data, order),
        _take_rows(indices, order),
        indices_sorted=True,
        unique_indices=mat.unique_indices,
    )


def bcoo_sum_duplicates(mat: BCOO, nse=None) -> BCOO:
    """A BCOO array in which entries at equal positions are summed into one, sorted by index
    (``jax.experimental.sparse.bcoo_sum_duplicates``); out-of-bounds entries become padding.

    Arguments:
      mat: a BCOO array.
      nse: the number of stored entries of the result; by default the largest count of distinct
        in-bounds positions of a batch, which needs concrete indices (pass it under ``jit``).
        Extra positions are dropped.
    Returns:
      a BCOO array with sorted, unique indices.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_sum_duplicates
      >>> m = BCOO((jnp.array([1.0, 2.0, 4.0]), jnp.array([[1], [0], [1]])), shape=(3,))
      >>> s = bcoo_sum_duplicates(m)
      >>> s.data, s.indices.tolist()
      (Array([2., 5.], dtype=float32), [[0], [1]])
    """
    _require_bcoo(mat, "bcoo_sum_duplicates")
    data, indices = _flat(mat)
    sparse = _split(mat.shape, mat.n_batch, mat.n_sparse)[1]
    indices, ok = _padding(indices, sparse)
    order = _lex_order(indices)
    indices, data, ok = (_take_rows(x, order) for x in (indices, data, ok))
    # a new position starts a slot of the output; the padding rows (all equal to sparse_shape,
    # sorted last) share the slot after the last position, as in JAX, or are dropped
    new = jnp.concatenate(
        [jnp.ones_like(ok[:, :1]), jnp.any(indices[:, 1:] != indices[:, :-1], axis=-1)], axis=1
    )
    if nse is None:
        nse = _concrete_nse(jnp.sum(new & ok, axis=1), "bcoo_sum_duplicates")
    nse = _index(nse, "nse")
    slot = jnp.cumsum(new, axis=1) - 1
    rows = lax.broadcasted_iota(slot.dtype, slot.shape, 0)
    b, n_sparse = indices.shape[0], indices.shape[-1]
    pad = jnp.asarray(sparse, indices.dtype)
    out_ind = jnp.broadcast_to(pad, (b, nse, n_sparse)).at[rows, slot].set(indices, mode="drop")
    flat = data.reshape((-1, *data.shape[2:]))
    out_data = _scatter_sum(flat, [rows.reshape(-1), slot.reshape(-1)], (b, nse))
    return _unflat(mat, out_data, out_ind, indices_sorted=True, unique_indices=True)


def bcoo_reduce_sum(mat: BCOO, *, axes: Sequence[int]) -> BCOO:
    """The sum of a BCOO array over some dims (``jax.experimental.sparse.bcoo_reduce_sum``):
    dense dims are summed in ``data``, a sparse dim is dropped from the indices, a batch dim is
    summed (when the indices broadcast along it) or folded into the stored entries. The result
    may hold duplicate indices.

    Arguments:
      mat: a BCOO array.
      axes: the dims to sum over.
    Returns:
      a BCOO array without those dims.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_reduce_sum
      >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 3.0]]))
      >>> bcoo_reduce_sum(m, axes=(0,)).todense()
      Array([2., 4.], dtype=float32)
    """
    _require_bcoo(mat, "bcoo_reduce_sum")
    axes = sorted({operator.index(a) for a in axes})
    if any(not 0 <= a < mat.ndim for a in axes):
        raise FunctxValueError(f"bcoo_reduce_sum: axes {axes} out of range for {mat.shape}")
    nb, ns = mat.n_batch, mat.n_sparse
    data, indices = mat.data, mat.indices
    dense_axes = [a - ns + 1 for a in axes if a >= nb + ns]
    data = data.sum(tuple(dense_axes)) if dense_axes else data
    sparse_axes = [a - nb for a in axes if nb <= a < nb + ns]
    if sparse_axes:
        sparse = mat.shape[nb : nb + ns]
        cols = indices[..., sparse_axes]
        ok = jnp.all((cols >= 0) & (cols < jnp.asarray([sparse[k] for k in sparse_axes])), -1)
        data = jnp.where(ok.reshape(ok.shape + (1,) * (data.ndim - ok.ndim)), data, 0)
        keep = [k for k in range(ns) if k not in sparse_axes]
        indices = indices[..., keep]
    for a in reversed([a for a in axes if a < nb]):
        if indices.shape[a] == 1:
            data, indices = data.sum(a), indices.squeeze(a)
        else:  # fold this batch dim into the stored entries
            size = max(data.shape[a], indices.shape[a])
            data, indices = (
                _fold(jnp.broadcast_to(x, x.shape[:a] + (size,) + x.shape[a + 1 :]), a, nb)
                for x in (data, indices)
            )
        nb -= 1
    shape = tuple(s for i, s in enumerate(mat.shape) if i not in axes)
    return BCOO((data, indices), shape=shape)


def _fold(x, a, nb):
    """``x`` with its batch dim ``a`` (of ``nb``) merged into the entry dim that follows them."""
    x = jnp.moveaxis(x, a, nb - 1)
    return x.reshape(x.shape[: nb - 1] + (x.shape[nb - 1] * x.shape[nb],) + x.shape[nb + 1 :])


def bcoo_dot_general(
    lhs, rhs, *, dimension_numbers, precision=None, preferred_element_type=None, out_sharding=None
):
    """A general contraction (``lax.dot_general``) with a BCOO operand
    (``jax.experimental.sparse.bcoo_dot_general``): sparse-dense or dense-sparse, computed per
    stored entry (gather the dense operand at the entry's indices, multiply, scatter-add into
    the output).

    Arguments:
      lhs: a BCOO array or a dense array.
      rhs: a BCOO array or a dense array.
      dimension_numbers: ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))`` as in
        ``lax.dot_general``; a BCOO operand's batch dims there must be among its batch dims and
        its contracting dims must not be dense dims.
      precision: unused, as in JAX.
      preferred_element_type: the result's dtype (default: the operands' promoted dtype).
      out_sharding: unused.
    Returns:
      a dense Array, as ``lax.dot_general`` of the dense operands gives.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_dot_general
      >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
      >>> bcoo_dot_general(m, jnp.array([[1.0, 2.0], [3.0, 4.0]]),
      ...                  dimension_numbers=(((1,), (0,)), ((), ())))
      Array([[3., 4.],
             [2., 4.]], dtype=float32)
    """
    del precision, out_sharding
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
        raise UnsupportedError("bcoo_dot_general of two BCOO arrays is not in functx yet")
    if isinstance(lhs, BCOO):
        return _sparse_dense(lhs, jnp.asarray(rhs), dn, preferred_element_type)
    if not isinstance(rhs, BCOO):
        return lax.dot_general(lhs, rhs, dn, preferred_element_type=preferred_element_type)
    # dense @ sparse: the sparse-dense product with the operands swapped, then its free dims
    # put back in lhs-then-rhs order
    lhs = jnp.asarray(lhs)
    out = _sparse_dense(
        rhs, lhs, ((dn[0][1], dn[0][0]), (dn[1][1], dn[1][0])), preferred_element_type
    )
    n_b = len(lb)
    n_rfree = rhs.ndim - len(rc) - len(rb)
    n_lfree = lhs.ndim - len(lc) - len(lb)
    perm = (*range(n_b), *range(n_b + n_rfree, n_b + n_rfree + n_lfree), *range(n_b, n_b + n_rfree))
    return out.transpose(perm)


def _sparse_dense(lhs: BCOO, rhs, dn, preferred_element_type):
    """``lax.dot_general(lhs.todense(), rhs, dn)`` from ``lhs``'s stored entries."""
    (lc, rc), (lb, rb) = dn
    nb, ns = lhs.n_batch, lhs.n_sparse
    if lb and max(lb) >= nb:
        raise UnsupportedError(
            "bcoo_dot_general batch dimensions must be among the batch dimensions in the sparse "
            f"representation; got lhs_batch={lb}, n_batch={nb}" + where()
        )
    if any(d >= nb + ns for d in lc):
        raise UnsupportedError("bcoo_dot_general: contracting over dense dimensions." + where())
    out_aval = eval_shape(
        lambda a, b: lax.dot_general(a, b, dn, preferred_element_type=preferred_element_type),
        ShapeDtypeStruct(lhs.shape, lhs.dtype),
        ShapeDtypeStruct(rhs.shape, rhs.dtype),
    )
    # every batch dim becomes a sparse dim: one COO array (nse' = B * nse) of lhs.shape
    data, indices = _flat(lhs)
    batch = lhs.shape[:nb]
    row = lax.broadcasted_iota(indices.dtype, indices.shape[:2], 0)  # the flat batch index
    cols = [c.reshape(-1) for c in _unravel(row, batch)]
    cols += [indices[..., k].reshape(-1) for k in range(ns)]
    data = data.reshape((-1, *data.shape[2:]))
    dims = dict(zip(range(nb + ns), cols))  # lhs dim -> its index column
    pairs = list(zip(lc, rc)) + list(zip(lb, rb))
    # gather the dense operand at each entry's contracting and batch indices
    gathered = rhs.transpose(
        (*[r for _, r in pairs], *[d for d in range(rhs.ndim) if d not in rc and d not in rb])
    )
    if pairs:
        gathered = gathered.at[tuple(dims[d] for d, _ in pairs)].get(mode="fill", fill_value=0)
    else:
        gathered = jnp.broadcast_to(gathered, (data.shape[0], *gathered.shape))
    dtype = out_aval.dtype
    n_dense, n_rfree = data.ndim - 1, gathered.ndim - 1
    prod = data.astype(dtype).reshape(data.shape + (1,) * n_rfree) * gathered.astype(dtype).reshape(
        (gathered.shape[0],) + (1,) * n_dense + gathered.shape[1:]
    )
    out_sparse = [d for d in lb] + [d for d in range(nb + ns) if d not in lc and d not in lb]
    if not out_sparse:
        return prod.sum(0).astype(dtype)
    sizes = out_aval.shape[: len(out_sparse)]
    return _scatter_sum(prod, [dims[d] for d in out_sparse], sizes).reshape(out_aval.shape)


# -- constructors -----------------------------------------------------------------------------


def _empty(shape, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0) -> BCOO:
    shape = tuple(operator.index(s) for s in shape)
    n_sparse = len(shape) - n_dense - n_batch
    if n_sparse < 0 or n_dense < 0 or n_batch < 0 or nse < 0:
        raise FunctxValueError(f"Invalid inputs: {shape=}, {n_dense=}, {n_batch=}, {nse=}")
    batch, sparse, dense = _split(shape, n_batch, n_sparse)
    data = jnp.zeros((*batch, nse, *dense), dtypes.canonicalize_dtype(dtype or np.float32))
    indices = jnp.broadcast_to(jnp.asarray(sparse, index_dtype), (*batch, nse, n_sparse))
    return BCOO((data, indices), shape=shape, indices_sorted=True, unique_indices=True)


def _eye(n, m, k, dtype=None, index_dtype="int32", n_batch=0, n_dense=0) -> BCOO:
    if 2 - n_batch - n_dense < 0 or n_dense < 0 or n_batch < 0:
        raise FunctxValueError(f"Invalid inputs: shape={(n, m)}, {n_dense=}, {n_batch=}")
    size = min(n, m - k) if k > 0 else min(n + k, m)
    if size <= 0:
        return _empty((n, m), dtype, index_dtype, n_dense, n_batch)
    dtype = dtypes.canonicalize_dtype(dtype or np.float32)
    if n_batch or n_dense:
        eye = jnp.eye(n, m, k, dtype=dtype)
        return bcoo_fromdense(eye, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)
    i = jnp.arange(size, dtype=index_dtype)
    indices = jnp.stack([i + max(-k, 0), i + max(k, 0)], axis=1)
    data = jnp.ones(size, dtype)
    return BCOO((data, indices), shape=(n, m), indices_sorted=True, unique_indices=True)
