"""``functx.experimental.sparse.random``: random sparse arrays (``jax.experimental.sparse.random``),
drawn with ``functx.random`` the way JAX draws them, so that one key gives JAX's arrays bit for
bit."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Sequence

import numpy as np

from functx import dtypes, numpy as jnp, random
from functx.errors import FunctxValueError
from functx.experimental.sparse.bcoo import BCOO, _unravel
from functx.source_info import where
from functx.transforms.vmap import vmap


def random_bcoo(
    key,
    shape: Sequence[int],
    *,
    dtype=jnp.float_,
    indices_dtype=None,
    nse: float | int = 0.2,
    n_batch: int = 0,
    n_dense: int = 0,
    unique_indices: bool = True,
    sorted_indices: bool = False,
    generator: Callable = random.uniform,
    **kwds,
) -> BCOO:
    """A random BCOO array (``jax.experimental.sparse.random_bcoo``): per batch, ``nse`` sparse
    positions drawn with ``random.choice`` (without replacement when ``unique_indices``) and the
    stored values drawn by ``generator``; the same key gives JAX's array.

    Arguments:
      key: a PRNG key.
      shape: the array's shape.
      dtype: the dtype of the stored values.
      indices_dtype: the dtype of the indices (default: the default integer dtype).
      nse: the number of stored entries per batch, or a fraction of the sparse positions when
        ``0 < nse < 1`` (rounded up).
      n_batch: the number of batch dims.
      n_dense: the number of dense dims.
      unique_indices: whether the positions of a batch are distinct.
      sorted_indices: whether to sort the indices (``BCOO.sort_indices``).
      generator: ``generator(key, shape=..., dtype=..., **kwds)`` draws the values (default
        ``functx.random.uniform``).
      **kwds: passed to ``generator``.
    Returns:
      a BCOO array of ``shape``.
    Example:
      >>> import functx
      >>> from functx.experimental import sparse
      >>> m = sparse.random_bcoo(functx.random.key(0), (3, 4), nse=3, dtype="float32")
      >>> m
      BCOO(float32[3, 4], nse=3)
      >>> m.indices.tolist()
      [[0, 0], [0, 3], [2, 1]]
    """
    shape = tuple(operator.index(s) for s in shape)
    n_batch, n_dense = operator.index(n_batch), operator.index(n_dense)
    if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
        raise FunctxValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for shape={shape}")
    n_sparse = len(shape) - n_batch - n_dense
    batch, sparse = shape[:n_batch], shape[n_batch : n_batch + n_sparse]
    dense = shape[n_batch + n_sparse :]
    n_positions = math.prod(sparse)
    if not 0 <= nse < n_positions:
        raise FunctxValueError(
            f"got nse={nse}, expected to be between 0 and {n_positions}" + where()
        )
    if 0 < nse < 1:
        nse = math.ceil(nse * n_positions)
    nse = operator.index(nse)
    if indices_dtype is None:
        indices_dtype = dtypes.canonicalize_dtype(np.int64)
    if n_positions > np.iinfo(indices_dtype).max:
        raise FunctxValueError(
            f"indices_dtype={np.dtype(indices_dtype)} does not have enough range to generate "
            f"sparse indices of size {n_positions}." + where()
        )

    def positions(k):
        if not sparse:
            return jnp.zeros((nse, 0), indices_dtype)
        flat = random.choice(k, n_positions, shape=(nse,), replace=not unique_indices)
        return jnp.stack(_unravel(flat.astype(indices_dtype), sparse), axis=-1)

    keys = random.split(key, math.prod(batch) + 1)
    data = generator(keys[0], shape=(*batch, nse, *dense), dtype=dtype, **kwds)
    indices = vmap(positions)(keys[1:]).reshape((*batch, nse, n_sparse))
    mat = BCOO((data, indices), shape=shape)
    return mat.sort_indices() if sorted_indices else mat


__all__ = ["random_bcoo"]
