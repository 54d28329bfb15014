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
import warnings
from collections.abc import Sequence

import numpy as np

from functx import dtypes, lax, numpy as jnp, ops
from functx.errors import ConcretizationError, FunctxTypeError, FunctxValueError, UnsupportedError
from functx.experimental.sparse._base import JAXSparse
from functx.experimental.sparse.util import SparseEfficiencyError, SparseEfficiencyWarning
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

    def astype(self, *args, **kwargs):
        """The array cast as ``jnp``'s ``astype`` (``sparsify``: duplicates are summed first, as
        a cast does not distribute over them)."""
        return _sparsified(lambda x: x.astype(*args, **kwargs), self)

    def _with_data(self, data):
        return BCOO(
            (data, self.indices),
            shape=self.shape,
            indices_sorted=self.indices_sorted,
            unique_indices=self.unique_indices,
        )

    def reshape(self, *args, **kwargs):
        """The array reshaped as ``jnp.reshape`` would (``-1`` allowed): ``bcoo_reshape``."""
        return _sparsified(lambda x: x.reshape(*args, **kwargs), self)

    def update_layout(self, *, n_batch=None, n_dense=None, on_inefficient="error"):
        """The same array with ``n_batch`` / ``n_dense`` changed (``bcoo_update_layout``)."""
        return bcoo_update_layout(
            self, n_batch=n_batch, n_dense=n_dense, on_inefficient=on_inefficient
        )

    def __getitem__(self, idx):
        """Indexing as ``jnp``'s (integers, slices, ``None``, ``...``, integer arrays), each
        step done by its sparse operation (``sparsify``)."""
        out = _sparsified(lambda x: x[idx], self)
        # (an empty result can come back dense, as in JAX: made sparse again)
        return out if isinstance(out, BCOO) or np.size(out) else bcoo_fromdense(out)

    def __iter__(self):
        return (self[i] for i in range(self.shape[0]))

    # -- operations
    def transpose(self, axes=None):
        """The array with its dims permuted (all reversed by default; ``bcoo_transpose``)."""
        perm = tuple(range(self.ndim))[::-1] if axes is None else tuple(axes)
        out = bcoo_transpose(self, permutation=perm)
        nb, ns = self.n_batch, self.n_sparse
        out.indices_sorted = self.indices_sorted and perm[nb : nb + ns] == tuple(range(nb, nb + ns))
        return out

    def sum(self, *args, **kwargs):
        """The sum as ``jnp``'s ``sum`` (``axis``, ``dtype``, ``keepdims``; all dims by
        default), through ``sparsify``: a BCOO array, or a dense scalar when every dim is summed,
        as JAX's."""
        return _sparsified(lambda x: x.sum(*args, **kwargs), self)

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
            return _multiply_sparse(self, other)
        return self._with_data(bcoo_multiply_dense(self, other))

    __rmul__ = __mul__

    def __neg__(self):
        return self._with_data(-self.data)

    def __pos__(self):
        return self

    def __abs__(self):
        return _sparsified(abs, self)

    def __add__(self, other):
        return _sparsified(operator.add, self, other)

    def __radd__(self, other):
        return _sparsified(operator.add, other, self)

    def __sub__(self, other):
        return _sparsified(operator.sub, self, other)

    def __rsub__(self, other):
        return _sparsified(operator.sub, other, self)

    def __truediv__(self, other):
        return _sparsified(operator.truediv, self, other)

    def __rtruediv__(self, other):
        return _sparsified(operator.truediv, other, self)

    def __pow__(self, other):
        return _sparsified(lambda x: x**other, self)

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)


#: ``{"sparsify": sparsify}``, registered by ``transform.py`` (which builds on this module): the
#: BCOO methods that run a ``jnp`` function on a BCOO go through it.
_SPARSIFY: dict = {}


def _sparsified(fn, *args):
    """``sparsify(fn)(*args)``."""
    return _SPARSIFY["sparsify"](fn)(*args)


def _matmul(a, b):
    """``a @ b`` with a sparse operand, as ``jnp.matmul``: 1-D and 2-D operands; a stack of
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
    the output); sparse-sparse pairs the entries whose contracting indices agree (JAX's
    ``bcoo_spdot_general``: sparse contracting dims, no dense dims, and in functx the batch dims
    paired must be the leading batch dims of both).

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
      a dense Array, as ``lax.dot_general`` of the dense operands gives; a BCOO array when both
      operands are sparse.
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
        return _sparse_sparse(lhs, rhs, dn, preferred_element_type)
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


def _sparse_sparse(lhs: BCOO, rhs: BCOO, dn, preferred_element_type) -> BCOO:
    """``lax.dot_general`` of two BCOO arrays, as a BCOO (JAX's ``bcoo_spdot_general``): every
    pair of entries whose contracting indices agree gives a product at the pair's free indices,
    and the duplicates are summed. Sparse contracting dims only, no dense dims; batch dims of the
    contraction must be the leading batch dims of both (functx has no other case)."""
    (lc, rc), (lb, rb) = dn
    out_aval = eval_shape(
        lambda a, b: lax.dot_general(a, b, dn, preferred_element_type=preferred_element_type),
        ShapeDtypeStruct(lhs.shape, lhs.dtype),
        ShapeDtypeStruct(rhs.shape, rhs.dtype),
    )
    if lhs.n_dense or rhs.n_dense:
        raise UnsupportedError("bcoo_spdot_general with dense dimensions." + where())
    for m, b, c in ((lhs, lb, lc), (rhs, rb, rc)):
        if b and max(b) >= m.n_batch:
            raise UnsupportedError(
                "bcoo_spdot_general: batch_dims must correspond to batch dimensions of the "
                "sparse representation." + where()
            )
        if c and (min(c) < m.n_batch or max(c) >= m.n_batch + m.n_sparse):
            raise UnsupportedError(
                "bcoo_spdot_general only supports contraction of sparse indices." + where()
            )
        if tuple(b) != tuple(range(m.n_batch)):
            raise UnsupportedError(
                "bcoo_dot_general of two BCOO arrays: functx pairs batch dims only when they are "
                f"the leading batch dims of both, in order; got batch dims {b} for "
                f"n_batch={m.n_batch}" + where()
            )
    nb = len(lb)
    (ld, li), (rd, ri) = _flat(lhs), _flat(rhs)
    lcs, rcs = [d - nb for d in lc], [d - nb for d in rc]
    lfree = [k for k in range(lhs.n_sparse) if k not in lcs]
    rfree = [k for k in range(rhs.n_sparse) if k not in rcs]
    lok = jnp.all(li < jnp.asarray(lhs.shape[nb:], li.dtype), axis=-1)
    rok = jnp.all(ri < jnp.asarray(rhs.shape[nb:], ri.dtype), axis=-1)
    meet = jnp.all(li[:, :, None, lcs] == ri[:, None, :, rcs], axis=-1)
    meet = meet & lok[:, :, None] & rok[:, None, :]
    dtype = out_aval.dtype
    data = jnp.where(meet, ld[:, :, None].astype(dtype) * rd[:, None, :].astype(dtype), 0)
    b, nl, nr = meet.shape
    dt = jnp.result_type(li.dtype, ri.dtype)
    cols = [jnp.broadcast_to(li[:, :, None, lfree], (b, nl, nr, len(lfree))).astype(dt)]
    cols.append(jnp.broadcast_to(ri[:, None, :, rfree], (b, nl, nr, len(rfree))).astype(dt))
    indices = jnp.concatenate(cols, axis=-1).reshape((b, nl * nr, len(lfree) + len(rfree)))
    batch = out_aval.shape[:nb]
    n_pos = math.prod(out_aval.shape[nb:])
    nse = (lhs.nse if lfree else 1) * (rhs.nse if rfree else 1)
    pairs = BCOO(
        (data.reshape((*batch, nl * nr)), indices.reshape((*batch, nl * nr, indices.shape[-1]))),
        shape=out_aval.shape,
    )
    out = bcoo_sum_duplicates(pairs, nse=min(nse, n_pos))
    return BCOO((out.data, out.indices), shape=out_aval.shape)


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


# -- shape operations ---------------------------------------------------------------------------
# Each is ``lax``'s operation of the same name on the dense array, done on the buffers: batch and
# dense dims move with ``data`` (and batch dims with ``indices``), sparse dims by rewriting the
# index columns. Entries that leave the array become padding (index = the new sparse shape, data
# zero); where the new sparse shape has fewer positions than ``nse``, duplicates are summed down to
# that many entries (JAX's rule).


def _check_shape(fn, shape, dtype, *args, **kwargs):
    """Validate an operation's arguments with its dense ``lax`` version (its errors, functx's),
    returning the dense result's aval."""
    return eval_shape(lambda x: fn(x, *args, **kwargs), ShapeDtypeStruct(shape, dtype))


def _batch_full(x, batch):
    """``x`` with its leading batch dims broadcast to ``batch`` (undoing size-1 broadcasting)."""
    return jnp.broadcast_to(x, tuple(batch) + x.shape[len(batch) :])


def _window(mat, data, indices, starts, spans, strides, shape):
    """Keep the entries whose sparse index ``i`` has ``0 <= i - start < span`` and
    ``(i - start) % stride == 0`` (moved to ``(i - start) // stride``); the others become
    padding."""
    nb, ns = mat.n_batch, mat.n_sparse
    if not ns:
        return BCOO((data, indices), shape=shape)
    dt = indices.dtype
    rel = indices - jnp.asarray(starts, dt)
    keep = (rel >= 0) & (rel < jnp.asarray(spans, dt))
    if any(s != 1 for s in strides):  # (static: unit strides need no division)
        step = jnp.asarray(strides, dt)
        keep, rel = keep & (rel % step == 0), rel // step
    keep = jnp.all(keep, axis=-1)
    indices = jnp.where(keep[..., None], rel, jnp.asarray(shape[nb : nb + ns], dt))
    data = jnp.where(keep.reshape(keep.shape + (1,) * mat.n_dense), data, 0)
    out = BCOO((data, indices), shape=shape)
    n_pos = math.prod(shape[nb : nb + ns])
    if out.nse > n_pos:  # more entries than positions: the duplicates summed (JAX's nse rule)
        out = bcoo_sum_duplicates(out, nse=n_pos)
        out = BCOO((out.data, out.indices), shape=shape)
    return out


def bcoo_slice(
    mat: BCOO,
    *,
    start_indices: Sequence[int],
    limit_indices: Sequence[int],
    strides: Sequence[int] | None = None,
) -> BCOO:
    """A static slice of a BCOO array (``jax.experimental.sparse.bcoo_slice``, the sparse
    ``lax.slice``).

    Arguments:
      mat: a BCOO array.
      start_indices: the first index of the slice along each dim.
      limit_indices: the end (exclusive) of the slice along each dim.
      strides: the step along each dim (default 1).
    Returns:
      a BCOO array of the sliced shape, with the same layout; ``nse`` is kept unless the slice's
      sparse part has fewer positions (then the duplicates are summed down to that many).
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_slice
      >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]))
      >>> bcoo_slice(m, start_indices=(0, 1), limit_indices=(2, 3)).todense()
      Array([[1., 0.],
             [0., 3.]], dtype=float32)
    """
    if not isinstance(mat, BCOO):
        raise FunctxTypeError(
            f"bcoo_slice: input should be BCOO array, got type(mat)={type(mat)}" + where()
        )
    start = [_index(i, "start_indices") for i in start_indices]
    limit = [_index(i, "limit_indices") for i in limit_indices]
    step = [1] * mat.ndim if strides is None else [_index(i, "strides") for i in strides]
    if not len(start) == len(limit) == len(step) == mat.ndim:
        raise FunctxValueError(f"bcoo_slice: indices must have size mat.ndim={mat.ndim}" + where())
    if any(s <= 0 for s in step):
        raise FunctxValueError(
            f"strides must be a sequence of positive integers; got {step}" + where()
        )
    if not all(0 <= a <= b <= n for a, b, n in zip(start, limit, mat.shape)):
        raise FunctxValueError(
            f"bcoo_slice: invalid indices. Got start_indices={start}, limit_indices={limit} and "
            f"shape={mat.shape}" + where()
        )
    nb, ns = mat.n_batch, mat.n_sparse
    cut = [slice(a, b, s) for a, b, s in zip(start, limit, step)]

    def batch_cut(x):  # a broadcast (size-1) batch dim of a buffer stays as it is
        return tuple(
            c if x.shape[i] == mat.shape[i] else slice(None) for i, c in enumerate(cut[:nb])
        )

    data = mat.data[(*batch_cut(mat.data), slice(None), *cut[nb + ns :])]
    indices = mat.indices[batch_cut(mat.indices)]
    shape = tuple(len(range(a, b, s)) for a, b, s in zip(start, limit, step))
    spans = [b - a for a, b in zip(start[nb : nb + ns], limit[nb : nb + ns])]
    return _window(mat, data, indices, start[nb : nb + ns], spans, step[nb : nb + ns], shape)


def bcoo_dynamic_slice(mat: BCOO, start_indices: Sequence, slice_sizes: Sequence[int]) -> BCOO:
    """A slice of a BCOO array at traced start indices
    (``jax.experimental.sparse.bcoo_dynamic_slice``, the sparse ``lax.dynamic_slice``): a
    negative start wraps once, then the window is clamped into the array.

    Arguments:
      mat: a BCOO array.
      start_indices: one integer scalar (may be traced) per dim.
      slice_sizes: the static size of the slice along each dim.
    Returns:
      a BCOO array of shape ``slice_sizes`` with the same layout (``nse`` as ``bcoo_slice``).
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_dynamic_slice
      >>> m = BCOO.fromdense(jnp.array([0.0, 1.0, 0.0, 2.0]))
      >>> bcoo_dynamic_slice(m, (jnp.array(2),), (2,)).todense()
      Array([0., 2.], dtype=float32)
    """
    _require_bcoo(mat, "bcoo_dynamic_slice")
    sizes = tuple(_index(s, "slice_sizes") for s in slice_sizes)
    _check_shape(lax.dynamic_slice, mat.shape, mat.dtype, tuple(start_indices), sizes)
    nb, ns = mat.n_batch, mat.n_sparse
    dt = mat.indices.dtype
    # the start of each dim: a negative one wraps once, then the window is clamped into the array
    starts = [jnp.asarray(s).astype(dt) for s in start_indices]
    starts = [
        jnp.clip(jnp.where(s < 0, s + n, s), 0, n - k) for s, n, k in zip(starts, mat.shape, sizes)
    ]
    zero = jnp.zeros((), dt)

    def batch_part(x):  # a broadcast (size-1) batch dim of a buffer stays as it is
        full = [x.shape[i] == mat.shape[i] for i in range(nb)]
        return [s if f else zero for s, f in zip(starts, full)], [
            k if f else 1 for k, f in zip(sizes, full)
        ]

    d_start, d_size = batch_part(mat.data)
    data = lax.dynamic_slice(
        mat.data, [*d_start, zero, *starts[nb + ns :]], [*d_size, mat.nse, *sizes[nb + ns :]]
    )
    i_start, i_size = batch_part(mat.indices)
    indices = lax.dynamic_slice(mat.indices, [*i_start, zero, zero], [*i_size, mat.nse, ns])
    sp = slice(nb, nb + ns)
    return _window(
        mat, data, indices, jnp.stack(starts[sp]) if ns else (), sizes[sp], [1] * ns, sizes
    )


def bcoo_reshape(
    mat: BCOO, *, new_sizes: Sequence[int], dimensions: Sequence[int] | None = None, sharding=None
) -> BCOO:
    """A BCOO array reshaped (``jax.experimental.sparse.bcoo_reshape``, the sparse
    ``lax.reshape``): batch, sparse and dense dims must each reshape among themselves.

    Arguments:
      mat: a BCOO array.
      new_sizes: the new shape (same size). Its leading dims up to the batch size are the new
        batch dims, those up to the batch-times-sparse size the new sparse dims, the rest dense.
      dimensions: a permutation applied first (each of the batch, sparse and dense groups
        permuted among itself), as in ``lax.reshape``.
      sharding: unused.
    Returns:
      a BCOO array with the same ``nse``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_reshape
      >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]))
      >>> bcoo_reshape(m, new_sizes=(4,)).indices.tolist()
      [[1], [2]]
    """
    del sharding
    _require_bcoo(mat, "bcoo_reshape")
    new_sizes = tuple(_index(s, "new_sizes") for s in new_sizes)
    if dimensions is not None and tuple(dimensions) != tuple(range(mat.ndim)):
        mat = bcoo_transpose(mat, permutation=dimensions)
    if math.prod(new_sizes) != mat.size:
        raise FunctxTypeError(
            f"reshape total size must be unchanged, got new_sizes {new_sizes} for shape "
            f"{mat.shape}." + where()
        )
    nb, ns = mat.n_batch, mat.n_sparse
    batch, sparse, dense = _split(mat.shape, nb, ns)
    n_batch_el, n_sparse_el = math.prod(batch), math.prod(sparse)
    ends = list(np.cumprod(new_sizes, dtype=np.int64))
    if n_batch_el != 1 and n_batch_el not in ends:
        raise FunctxValueError(
            "bcoo_reshape: new shape cannot mix batch and sparse dimensions; got "
            f"shape={mat.shape} new_shape={new_sizes} with n_batch={nb}" + where()
        )
    if n_sparse_el != 1 and n_batch_el * n_sparse_el not in ends:
        raise FunctxValueError(
            "bcoo_reshape: new shape cannot mix sparse and dense dimensions; got "
            f"shape={mat.shape} new_shape={new_sizes} with n_dense={mat.n_dense}" + where()
        )
    # a new dim belongs to the first group whose cumulative size it does not pass
    new_nb = int(np.searchsorted(ends, n_batch_el, side="right"))
    new_end = int(np.searchsorted(ends, n_batch_el * n_sparse_el, side="right"))
    new_batch, new_sparse, new_dense = _split(new_sizes, new_nb, new_end - new_nb)
    data = _batch_full(mat.data, batch).reshape((*new_batch, mat.nse, *new_dense))
    indices = _batch_full(mat.indices, batch).reshape((*new_batch, mat.nse, ns))
    if new_sparse and sparse:
        ok = jnp.all((indices >= 0) & (indices < jnp.asarray(sparse, indices.dtype)), axis=-1)
        flat = 0
        for k, n in enumerate(sparse):
            flat = flat * n + indices[..., k]
        cols = _unravel(jnp.where(ok, flat, 0), new_sparse)
        indices = jnp.where(
            ok[..., None], jnp.stack(cols, axis=-1), jnp.asarray(new_sparse, indices.dtype)
        )
    elif new_sparse:  # (no sparse dims before: each entry is at position 0)
        indices = jnp.zeros((*new_batch, mat.nse, len(new_sparse)), indices.dtype)
    else:
        indices = indices[..., :0]
    return BCOO((data, indices), shape=new_sizes)


def bcoo_squeeze(arr: BCOO, *, dimensions: Sequence[int]) -> BCOO:
    """A BCOO array without some size-1 dims (``jax.experimental.sparse.bcoo_squeeze``, the
    sparse ``lax.squeeze``).

    Arguments:
      arr: a BCOO array.
      dimensions: the dims to remove (negative counts from the end); each must have size 1.
    Returns:
      a BCOO array with the same ``nse`` and flags.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_squeeze
      >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0, 2.0]]))
      >>> bcoo_squeeze(m, dimensions=(0,)).shape
      (3,)
    """
    _require_bcoo(arr, "bcoo_squeeze")
    dims = set()
    for d in dimensions:
        d = _index(d, "dimensions")
        if not -arr.ndim <= d < arr.ndim:
            raise FunctxValueError(
                f"axis {d} is out of bounds for array of dimension {arr.ndim}" + where()
            )
        dims.add(d % arr.ndim)
    if any(arr.shape[d] != 1 for d in dims):
        raise FunctxValueError(
            "cannot select an axis to squeeze out which has size not equal to one, got "
            f"shape={arr.shape} and dimensions={tuple(dimensions)}" + where()
        )
    nb, ns = arr.n_batch, arr.n_sparse
    batch_dims = tuple(d for d in sorted(dims) if d < nb)
    dense_dims = tuple(d - ns + 1 for d in sorted(dims) if d >= nb + ns)
    keep = [k for k in range(ns) if nb + k not in dims]
    data = arr.data.squeeze(batch_dims + dense_dims) if batch_dims + dense_dims else arr.data
    indices = arr.indices[..., keep].squeeze(batch_dims) if batch_dims else arr.indices[..., keep]
    return BCOO(
        (data, indices),
        shape=tuple(s for i, s in enumerate(arr.shape) if i not in dims),
        indices_sorted=arr.indices_sorted,
        unique_indices=arr.unique_indices,
    )


def bcoo_rev(operand: BCOO, dimensions: Sequence[int]) -> BCOO:
    """A BCOO array reversed along some dims (``jax.experimental.sparse.bcoo_rev``, the sparse
    ``lax.rev``).

    Arguments:
      operand: a BCOO array.
      dimensions: the dims to reverse.
    Returns:
      a BCOO array with the same layout and ``nse``.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_rev
      >>> bcoo_rev(BCOO.fromdense(jnp.array([1.0, 0.0, 2.0, 0.0])), (0,)).todense()
      Array([0., 2., 0., 1.], dtype=float32)
    """
    _require_bcoo(operand, "bcoo_rev")
    dimensions = tuple(_index(d, "dimensions") for d in dimensions)
    _check_shape(lax.rev, operand.shape, operand.dtype, dimensions)
    nb, ns = operand.n_batch, operand.n_sparse
    data, indices = operand.data, operand.indices
    batch = [d for d in dimensions if d < nb]
    data_dims = batch + [d - ns + 1 for d in dimensions if d >= nb + ns]
    # (a broadcast, size-1 batch dim of a buffer reads the same reversed)
    data = jnp.flip(data, data_dims) if data_dims else data
    indices = jnp.flip(indices, batch) if batch else indices
    flip = np.zeros(ns, bool)
    flip[[d - nb for d in dimensions if nb <= d < nb + ns]] = True
    if flip.any():
        sparse = jnp.asarray(operand.shape[nb : nb + ns], indices.dtype)
        ok = jnp.all((indices >= 0) & (indices < sparse), axis=-1, keepdims=True)
        turned = jnp.where(flip, sparse - 1 - indices, indices)
        indices = jnp.where(ok, turned, sparse)
    return BCOO((data, indices), shape=operand.shape)


def bcoo_broadcast_in_dim(
    mat: BCOO, *, shape: Sequence[int], broadcast_dimensions: Sequence[int], sharding=None
) -> BCOO:
    """A BCOO array broadcast to a larger shape (``jax.experimental.sparse.bcoo_broadcast_in_dim``,
    the sparse ``lax.broadcast_in_dim``): new dims before the first sparse dim become batch
    dims, new dims after the last dense dim dense dims; new dims among the sparse dims must have
    size 1.

    Arguments:
      mat: a BCOO array.
      shape: the result's shape.
      broadcast_dimensions: for each dim of ``mat``, the dim of the result it becomes.
      sharding: unused.
    Returns:
      a BCOO array of ``shape``; batch and dense data are copied along new dims.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_broadcast_in_dim
      >>> m = BCOO.fromdense(jnp.array([0.0, 1.0]))
      >>> bcoo_broadcast_in_dim(m, shape=(3, 2), broadcast_dimensions=(1,))
      BCOO(float32[3, 2], nse=1, n_batch=1)
    """
    del sharding
    _require_bcoo(mat, "bcoo_broadcast_in_dim")
    shape = tuple(_index(s, "shape") for s in shape)
    bdims = tuple(_index(d, "broadcast_dimensions") for d in broadcast_dimensions)
    if len(bdims) != mat.ndim:
        raise FunctxValueError(
            f"spinfo.shape={mat.shape} and broadcast_dimensions={bdims} must have the same "
            "length" + where()
        )
    _check_shape(lax.broadcast_in_dim, mat.shape, mat.dtype, shape, bdims)
    nb, ns, nd = mat.n_batch, mat.n_sparse, mat.n_dense
    b_dims, s_dims, d_dims = bdims[:nb], bdims[nb : nb + ns], bdims[nb + ns :]
    if max(b_dims, default=0) > min(s_dims, default=len(shape)):
        raise FunctxValueError("Cannot mix batch and sparse dimensions during broadcast_in_dim")
    if max(s_dims, default=0) > min(d_dims, default=len(shape)):
        raise FunctxValueError("Cannot mix sparse and dense dimensions during broadcast_in_dim")
    new_nb = min(bdims[nb:], default=len(shape))
    new_nd = len(shape) - min(d_dims) if nd else 0
    new_ns = len(shape) - new_nb - new_nd
    if math.prod(mat.shape[nb : nb + ns]) != math.prod(shape[new_nb : new_nb + new_ns]):
        raise UnsupportedError("Adding sparse dimensions with lengths != 1" + where())
    data, indices = mat.data, mat.indices
    if (new_nb, new_nd) != (nb, nd):
        new_batch = shape[:new_nb]
        data = lax.broadcast_in_dim(
            data,
            (*new_batch, mat.nse, *shape[new_nb + new_ns :]),
            (*b_dims, new_nb, *(d - new_ns + 1 for d in d_dims)),
        )
        indices = lax.broadcast_in_dim(
            indices, (*new_batch, mat.nse, ns), (*b_dims, new_nb, new_nb + 1)
        )
    if new_ns != ns:  # new size-1 sparse dims: index column 0
        cols = [
            indices[..., s_dims.index(d)] if d in s_dims else None
            for d in range(new_nb, new_nb + new_ns)
        ]
        zero = jnp.zeros(indices.shape[:-1], indices.dtype)
        indices = (
            jnp.stack([zero if c is None else c for c in cols], axis=-1)
            if cols
            else indices[..., :0]
        )
    return BCOO((data, indices), shape=shape)


def _set_nse(mat: BCOO, nse: int) -> BCOO:
    """``mat`` with ``nse`` entries: padding entries appended (or trailing entries dropped)."""
    if nse == mat.nse:
        return mat
    nb = mat.n_batch
    if nse < mat.nse:
        return BCOO(
            (
                mat.data[(slice(None),) * nb + (slice(0, nse),)],
                mat.indices[(slice(None),) * nb + (slice(0, nse),)],
            ),
            shape=mat.shape,
        )
    extra = nse - mat.nse
    pad_d = jnp.zeros((*mat.data.shape[:nb], extra, *mat.data.shape[nb + 1 :]), mat.dtype)
    pad_i = jnp.broadcast_to(
        jnp.asarray(mat.shape[nb : nb + mat.n_sparse], mat.indices.dtype),
        (*mat.indices.shape[:nb], extra, mat.n_sparse),
    )
    return BCOO(
        (jnp.concatenate([mat.data, pad_d], nb), jnp.concatenate([mat.indices, pad_i], nb)),
        shape=mat.shape,
    )


def bcoo_concatenate(operands: Sequence[BCOO], *, dimension: int) -> BCOO:
    """BCOO arrays joined along a batch or sparse dim
    (``jax.experimental.sparse.bcoo_concatenate``, the sparse ``lax.concatenate``).

    Arguments:
      operands: BCOO arrays of one layout whose shapes agree except along ``dimension``.
      dimension: the dim to join along (a batch or sparse dim).
    Returns:
      a BCOO array. Along a sparse dim the entries are appended (``nse`` is the sum); along a
      batch dim the ``nse`` is the largest (the others padded).
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_concatenate
      >>> a = BCOO.fromdense(jnp.array([1.0, 0.0]))
      >>> b = BCOO.fromdense(jnp.array([0.0, 2.0, 3.0]))
      >>> bcoo_concatenate([a, b], dimension=0).todense()
      Array([1., 0., 0., 2., 3.], dtype=float32)
    """
    dimension = _index(dimension, "dimension")
    operands = list(operands)
    if not all(isinstance(op, BCOO) for op in operands):
        raise FunctxValueError(
            "bcoo_concatenate: expected operands to be a sequence of BCOO arrays. "
            f"Got {operands}" + where()
        )
    out = eval_shape(
        lambda *xs: lax.concatenate(xs, dimension),
        *(ShapeDtypeStruct(op.shape, op.dtype) for op in operands),
    )
    if len({op.n_dense for op in operands}) > 1:
        raise FunctxValueError(
            "bcoo_concatenate requires inputs to have matching nse dimensions." + where()
        )
    n_batches = {op.n_batch for op in operands}
    if len(n_batches) > 1 and max(n_batches) == 1:
        # ``x[None]`` of a BCOO has one batch dim of size 1: align the layouts
        for n in (1, 0):
            if all(op.shape[0] == 1 for op in operands if op.n_batch != n):
                operands = [bcoo_update_layout(op, n_batch=n) for op in operands]
                break
        n_batches = {op.n_batch for op in operands}
    if len(n_batches) != 1:
        raise FunctxValueError(
            "bcoo_concatenate requires inputs to have matching batch dimensions." + where()
        )
    nb, ns = operands[0].n_batch, operands[0].n_sparse
    ax = dimension if dimension < nb else None
    for buf in ("data", "indices"):
        batches = {
            tuple(s for i, s in enumerate(getattr(op, buf).shape[:nb]) if i != ax)
            for op in operands
        }
        if len(batches) != 1:
            raise UnsupportedError(
                "concatenation of arrays with broadcasted batch indices" + where()
            )
    if dimension < nb:
        nse = max(op.nse for op in operands)
        operands = [_set_nse(op, nse) for op in operands]
        data = jnp.concatenate([op.data for op in operands], dimension)
        indices = jnp.concatenate([op.indices for op in operands], dimension)
    elif dimension < nb + ns:
        offsets = np.cumsum([0] + [op.shape[dimension] for op in operands[:-1]])
        column = np.arange(ns) == dimension - nb
        data = jnp.concatenate([op.data for op in operands], nb)
        indices = jnp.concatenate(
            [
                op.indices + jnp.asarray(column * off, op.indices.dtype)
                for op, off in zip(operands, offsets)
            ],
            nb,
        )
    else:
        raise UnsupportedError("Concatenation along dense dimensions." + where())
    return BCOO((data, indices), shape=out.shape)


def _grid(sizes, dtype):
    """The row-major multi-indices of ``sizes``: an int array (prod(sizes), len(sizes))."""
    cols = _unravel(jnp.arange(math.prod(sizes), dtype=dtype), tuple(sizes))
    return jnp.stack(cols, axis=-1) if cols else jnp.zeros((1, 0), dtype)


def _one_hot_place(data, cols, sizes, axis):
    """``data`` (..., nse, *dense) spread over new axes of ``sizes`` inserted at ``axis``: the
    entry's values at the position given by its index columns ``cols`` (..., nse, k), zeros
    elsewhere (an out-of-bounds position drops the value)."""
    ok = jnp.all((cols >= 0) & (cols < jnp.asarray(sizes, cols.dtype)), axis=-1)
    flat = 0
    for j, n in enumerate(sizes):
        flat = flat * n + cols[..., j]
    flat = jnp.where(ok, flat, -1)
    p = math.prod(sizes)
    n_lead = flat.ndim - 1  # the batch dims before the entry dim
    hit = flat[..., None, :] == jnp.arange(p, dtype=flat.dtype)[:, None]  # (..., P, nse)
    if axis > n_lead:  # the new axes after the entry dim: (..., nse, P)
        hit = jnp.swapaxes(hit, -1, -2)
    hit = hit.reshape(hit.shape + (1,) * (data.ndim - n_lead - 1))
    where = n_lead if axis == n_lead else n_lead + 1
    spread = jnp.where(hit, jnp.expand_dims(data, where), 0)
    return spread.reshape(spread.shape[:where] + tuple(sizes) + spread.shape[where + 1 :])


def bcoo_update_layout(
    mat: BCOO,
    *,
    n_batch: int | None = None,
    n_dense: int | None = None,
    on_inefficient: str | None = "error",
) -> BCOO:
    """The same array in another layout, ``n_batch`` and ``n_dense`` changed
    (``jax.experimental.sparse.bcoo_update_layout``).

    Batch or dense dims that become sparse multiply ``nse`` by their size; sparse dims that
    become batch or dense dims store explicit zeros, which is inefficient unless they have size
    1: then ``on_inefficient`` says what happens.

    Arguments:
      mat: a BCOO array.
      n_batch: the new number of batch dims (default: unchanged).
      n_dense: the new number of dense dims (default: unchanged).
      on_inefficient: ``"error"`` (raise :class:`SparseEfficiencyError`), ``"warn"``
        (a :class:`SparseEfficiencyWarning`) or None (say nothing).
    Returns:
      a BCOO array equal to ``mat`` in the new layout.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_update_layout
      >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0]]), n_batch=1)
      >>> bcoo_update_layout(m, n_batch=0)
      BCOO(float32[2, 2], nse=2)
    """
    _require_bcoo(mat, "bcoo_update_layout")
    n_batch = mat.n_batch if n_batch is None else _index(n_batch, "n_batch")
    n_dense = mat.n_dense if n_dense is None else _index(n_dense, "n_dense")
    if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
        return mat
    if on_inefficient not in ("error", "warn", None):
        raise FunctxValueError(
            f"on_inefficent={on_inefficient!r}; expected one of ['error', 'warn', None]."
        )
    if n_batch < 0:
        raise FunctxValueError(f"n_batch must be non-negative; got {n_batch}" + where())
    if n_dense < 0:
        raise FunctxValueError(f"n_dense must be non-negative; got {n_dense}" + where())
    if n_batch + n_dense > mat.ndim:
        raise FunctxValueError(
            f"sum of n_batch={n_batch} and n_dense={n_dense} cannot be larger than "
            f"mat.ndim={mat.ndim}." + where()
        )
    shape, nd0 = mat.shape, mat.n_dense
    for kind, new, old, dims in (
        ("n_dense", n_dense, nd0, shape[mat.ndim - n_dense : mat.ndim - nd0]),
        ("n_batch", n_batch, mat.n_batch, shape[mat.n_batch : n_batch]),
    ):
        if new > old and any(d > 1 for d in dims) and on_inefficient is not None:
            msg = (
                f"For matrix of shape {shape}, increasing {kind} from {old} to {new} results in "
                "inefficient storage."
            )
            if on_inefficient == "error":
                raise SparseEfficiencyError(
                    msg + " To disable this error, set the on_inefficient argument of "
                    "bcoo_update_layout to 'warn' or None." + where()
                )
            warnings.warn(
                msg + " To disable this warning, set the on_inefficient argument of "
                "bcoo_update_layout to None.",
                SparseEfficiencyWarning,
                stacklevel=2,
            )
    data, indices = mat.data, mat.indices
    nb, nd = mat.n_batch, nd0
    idt = indices.dtype
    if n_dense < nd:  # the leading dense dims become trailing sparse dims
        moved = data.shape[nb + 1 : nb + 1 + nd - n_dense]
        p = math.prod(moved)
        data = data.reshape(
            (*data.shape[:nb], data.shape[nb] * p, *data.shape[nb + 1 + len(moved) :])
        )
        grid = jnp.broadcast_to(_grid(moved, idt), (*indices.shape[:-1], p, len(moved)))
        old = jnp.broadcast_to(indices[..., None, :], (*indices.shape[:-1], p, indices.shape[-1]))
        indices = jnp.concatenate([old, grid], axis=-1)
        indices = indices.reshape((*indices.shape[:nb], -1, indices.shape[-1]))
        nd = n_dense
    if n_batch < nb:  # the trailing batch dims become leading sparse dims
        moved = shape[n_batch:nb]
        data, indices = _batch_full(data, shape[:nb]), _batch_full(indices, shape[:nb])
        nse, p = indices.shape[nb], math.prod(moved)
        grid = jnp.broadcast_to(
            _grid(moved, idt)[:, None, :], (*shape[:n_batch], p, nse, len(moved))
        )
        indices = indices.reshape((*shape[:n_batch], p, nse, indices.shape[-1]))
        indices = jnp.concatenate([grid, indices], axis=-1)
        indices = indices.reshape((*shape[:n_batch], p * nse, indices.shape[-1]))
        data = data.reshape((*shape[:n_batch], p * nse, *data.shape[nb + 1 :]))
        nb = n_batch
    if n_dense > nd:  # the trailing sparse dims become leading dense dims
        k = n_dense - nd
        sizes = shape[mat.ndim - n_dense : mat.ndim - nd]
        data = _one_hot_place(data, indices[..., -k:], sizes, nb + 1)
        indices = indices[..., :-k]
        nd = n_dense
    if n_batch > nb:  # the leading sparse dims become trailing batch dims
        k = n_batch - nb
        sizes = shape[nb:n_batch]
        data = _one_hot_place(data, indices[..., :k], sizes, nb)
        rest = indices[..., k:]
        indices = jnp.broadcast_to(
            jnp.expand_dims(rest, tuple(range(nb, nb + k))),
            (*rest.shape[:nb], *sizes, *rest.shape[nb:]),
        )
    return BCOO((data, indices), shape=shape)


# -- products and gathers ----------------------------------------------------------------------


def bcoo_multiply_sparse(lhs: BCOO, rhs: BCOO) -> BCOO:
    """The elementwise product of two BCOO arrays
    (``jax.experimental.sparse.bcoo_multiply_sparse``): every pair of entries at one position
    (size-1 dims broadcast) gives an entry of the product.

    Arguments:
      lhs: a BCOO array.
      rhs: a BCOO array of the same rank and number of dense dims, whose shape broadcasts with
        ``lhs``'s.
    Returns:
      a BCOO array of the broadcast shape with ``lhs.nse * rhs.nse`` entries (the unmatched ones
      padding) and ``min(lhs.n_batch, rhs.n_batch)`` batch dims.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import BCOO, bcoo_multiply_sparse
      >>> a = BCOO.fromdense(jnp.array([1.0, 0.0, 2.0]))
      >>> b = BCOO.fromdense(jnp.array([0.0, 3.0, 4.0]))
      >>> bcoo_multiply_sparse(a, b).todense()
      Array([0., 0., 8.], dtype=float32)
    """
    _require_bcoo(lhs, "bcoo_multiply_sparse")
    _require_bcoo(rhs, "bcoo_multiply_sparse")
    if lhs.ndim != rhs.ndim:
        raise FunctxTypeError(
            "bcoo_multiply_sparse: arrays must have same number of dimensions, got "
            f"{lhs.shape}, {rhs.shape}" + where()
        )
    if lhs.n_dense != rhs.n_dense:
        raise UnsupportedError(
            "bcoo_multiply_sparse: arrays with differing numbers of dense dimensions: "
            f"{lhs}, {rhs}" + where()
        )
    shape = tuple(np.broadcast_shapes(lhs.shape, rhs.shape))
    nb = min(lhs.n_batch, rhs.n_batch)
    lhs, rhs = (bcoo_update_layout(m, n_batch=nb) for m in (lhs, rhs))
    batch, ns = shape[:nb], lhs.n_sparse
    sparse = shape[nb : nb + ns]
    (ld, li), (rd, ri) = (
        (
            x.reshape((math.prod(batch), *x.shape[nb:]))
            for x in (_batch_full(m.data, batch), _batch_full(m.indices, batch))
        )
        for m in (lhs, rhs)
    )
    nl, nr = lhs.nse, rhs.nse
    nse = nl * nr
    dt = jnp.result_type(lhs.dtype, rhs.dtype)
    # the sparse dims where both have more than one position decide whether two entries meet
    dims = [k for k in range(ns) if lhs.shape[nb + k] != 1 and rhs.shape[nb + k] != 1]
    meet = jnp.all(li[:, :, None, dims] == ri[:, None, :, dims], axis=-1).reshape(-1, nse)
    (pair,) = vmap(lambda m: jnp.nonzero(m, size=nse, fill_value=0))(meet)
    found = jnp.arange(nse) < jnp.sum(meet, axis=1, keepdims=True)
    il, ir = pair // max(nr, 1), pair % max(nr, 1)
    data = _take_rows(ld, il).astype(dt) * _take_rows(rd, ir).astype(dt)
    data = jnp.where(found.reshape(found.shape + (1,) * (data.ndim - 2)), data, 0)
    # (a size-1 dim of one operand has index 0 there: the larger index is the product's)
    indices = jnp.maximum(_take_rows(li, il), _take_rows(ri, ir))
    indices = jnp.where(found[..., None], indices, jnp.asarray(sparse, li.dtype))
    data = data.reshape((*batch, nse, *data.shape[2:]))
    return BCOO((data, indices.reshape((*batch, nse, ns))), shape=shape)


def _multiply_sparse(x: BCOO, y: BCOO) -> BCOO:
    """``x * y``: the stored values multiplied where both share one set of unique indices,
    else ``bcoo_multiply_sparse`` (a rule of ``sparsify`` and BCOO's ``*``)."""
    if x.indices is y.indices and x.unique_indices and x.shape == y.shape:
        return x._with_data(x.data * y.data)
    return bcoo_multiply_sparse(x, y)


def _extract_at(indices, arr):
    """The values of the dense ``arr`` at the BCOO ``indices`` (batch dims broadcast), shaped as
    a BCOO's data (zero at padding)."""
    nb, ns = indices.ndim - 2, indices.shape[-1]
    batch, sparse, dense = _split(arr.shape, nb, ns)
    flat = _batch_full(indices, batch).reshape((math.prod(batch), *indices.shape[nb:]))
    data = (
        arr.reshape((flat.shape[0], *sparse, *dense))
        .at[_positions(flat)]
        .get(mode="fill", fill_value=0)
    )
    return data.reshape(batch + data.shape[1:])


def bcoo_dot_general_sampled(A, B, indices, *, dimension_numbers):
    """A contraction of two dense arrays read only at given BCOO positions
    (``jax.experimental.sparse.bcoo_dot_general_sampled``): the ``data`` of
    ``lax.dot_general(A, B, dimension_numbers)`` at ``indices`` (the transpose of a sparse
    product, as its gradient in the sparse operand's data uses).

    Arguments:
      A: a dense array.
      B: a dense array.
      indices: BCOO indices (``batch + (nse, n_sparse)``) into the product's shape.
      dimension_numbers: ``((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))``.
    Returns:
      an Array shaped as a BCOO's data: the product's values at ``indices`` (zero at padding).
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import bcoo_dot_general_sampled
      >>> A, B = jnp.array([[1.0, 2.0], [3.0, 4.0]]), jnp.array([[1.0, 0.0], [0.0, 1.0]])
      >>> bcoo_dot_general_sampled(A, B, jnp.array([[0, 1], [1, 0]]),
      ...                          dimension_numbers=(((1,), (0,)), ((), ())))
      Array([2., 3.], dtype=float32)
    """
    (lc, rc), (lb, rb) = dimension_numbers
    dn = ((tuple(lc), tuple(rc)), (tuple(lb), tuple(rb)))
    indices = jnp.asarray(indices)
    return _extract_at(indices, lax.dot_general(A, B, dn))


def bcoo_gather(
    operand: BCOO,
    start_indices,
    dimension_numbers,
    slice_sizes,
    *,
    unique_indices: bool = False,
    indices_are_sorted: bool = False,
    mode=None,
    fill_value=None,
) -> BCOO:
    """``lax.gather`` of a BCOO array (``jax.experimental.sparse.bcoo_gather``): each window is a
    ``bcoo_dynamic_slice``, the windows are stacked along new batch dims.

    Arguments:
      operand: a BCOO array.
      start_indices: an integer array whose last axis holds the start of a window.
      dimension_numbers: a ``lax.GatherDimensionNumbers`` (no operand batching dims).
      slice_sizes: the window's size along every dim of ``operand``.
      unique_indices: unused, as in JAX.
      indices_are_sorted: unused, as in JAX.
      mode: ``None`` or ``"promise_in_bounds"`` (windows clamped into the array); JAX has no
        other mode for BCOO either.
      fill_value: unused.
    Returns:
      a BCOO array of ``lax.gather``'s output shape.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx import lax
      >>> from functx.experimental.sparse import BCOO, bcoo_gather
      >>> m = BCOO.fromdense(jnp.array([[0.0, 1.0], [2.0, 0.0], [0.0, 3.0]]))
      >>> dn = lax.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(0,),
      ...                                 start_index_map=(0,))
      >>> bcoo_gather(m, jnp.array([[2], [0]]), dn, slice_sizes=(1, 2)).todense()
      Array([[0., 3.],
             [0., 1.]], dtype=float32)
    """
    del unique_indices, indices_are_sorted, fill_value
    _require_bcoo(operand, "bcoo_gather")
    if mode is not None and str(getattr(mode, "name", mode)).lower() != "promise_in_bounds":
        raise UnsupportedError(f"bcoo_gather: mode={mode!r} not yet supported." + where())
    return _gather(operand, jnp.asarray(start_indices), dimension_numbers, tuple(slice_sizes))


def _gather(operand, start_indices, dn, slice_sizes):
    out = eval_shape(
        lambda x, i: lax.gather(x, i, dn, slice_sizes),
        ShapeDtypeStruct(operand.shape, operand.dtype),
        ShapeDtypeStruct(start_indices.shape, start_indices.dtype),
    )
    if getattr(dn, "operand_batching_dims", ()):
        raise UnsupportedError("bcoo_gather: operand_batching_dims are not in functx" + where())
    sizes, mapped = list(operand.shape), [None] * operand.ndim
    zero = jnp.zeros((), start_indices.dtype)
    starts = [zero] * operand.ndim
    for i, d in enumerate(dn.start_index_map):
        starts[d], sizes[d], mapped[d] = start_indices[..., i].reshape(-1), slice_sizes[d], 0

    def window(starts):
        piece = bcoo_dynamic_slice(operand, starts, sizes)
        return bcoo_squeeze(piece, dimensions=dn.collapsed_slice_dims)

    res = vmap(window, in_axes=(mapped,))(starts)
    lead = start_indices.shape[:-1]
    res = bcoo_reshape(res, new_sizes=(*lead, *res.shape[1:]))
    if res.ndim:
        # the gathered dims come first: move the window dims to offset_dims
        batch_pos = [p for p in range(len(out.shape)) if p not in dn.offset_dims]
        perm = np.argsort(batch_pos + list(dn.offset_dims))
        if sorted(perm[: len(batch_pos)]) != list(range(len(batch_pos))):
            res = bcoo_update_layout(res, n_batch=0)
        res = bcoo_transpose(res, permutation=tuple(int(p) for p in perm))
    return bcoo_reshape(res, new_sizes=out.shape).astype(out.dtype)


# -- constructors -----------------------------------------------------------------------------


def _empty(shape, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0) -> BCOO:
    shape = tuple(operator.index(s) for s in shape)
    n_sparse = len(shape) - n_dense - n_batch
    if n_sparse < 0 or n_dense < 0 or n_batch < 0 or nse < 0:
        raise FunctxValueError(f"Invalid inputs: {shape=}, {n_dense=}, {n_batch=}, {nse=}")
    batch, sparse, dense = _split(shape, n_batch, n_sparse)
    data = jnp.zeros((*batch, nse, *dense), dtypes.canonicalize_dtype(dtype or float))
    indices = jnp.broadcast_to(jnp.asarray(sparse, index_dtype), (*batch, nse, n_sparse))
    return BCOO((data, indices), shape=shape, indices_sorted=True, unique_indices=True)


def _eye(n, m, k, dtype=None, index_dtype="int32", n_batch=0, n_dense=0) -> BCOO:
    if 2 - n_batch - n_dense < 0 or n_dense < 0 or n_batch < 0:
        raise FunctxValueError(f"Invalid inputs: shape={(n, m)}, {n_dense=}, {n_batch=}")
    size = min(n, m - k) if k > 0 else min(n + k, m)
    if size <= 0:
        return _empty((n, m), dtype, index_dtype, n_dense, n_batch)
    dtype = dtypes.canonicalize_dtype(dtype or float)
    if n_batch or n_dense:
        eye = jnp.eye(n, m, k, dtype=dtype)
        return bcoo_fromdense(eye, n_batch=n_batch, n_dense=n_dense, index_dtype=index_dtype)
    i = jnp.arange(size, dtype=index_dtype)
    indices = jnp.stack([i + max(-k, 0), i + max(k, 0)], axis=1)
    data = jnp.ones(size, dtype)
    return BCOO((data, indices), shape=(n, m), indices_sorted=True, unique_indices=True)
