"""``functx.scipy.ndimage``: JAX's ``jax.scipy.ndimage``: ``map_coordinates`` (orders 0 and 1).

Each output value is a weighted sum over the 2**N (order 1) or 1 (order 0) grid points around
its coordinates: per axis, an interpolation rule gives integer indices and weights, a boundary
rule (``_BOUNDARY``) maps indices outside the array back into it, and ``mode='constant'`` puts
``cval`` where any index was outside. A gather per corner, so it runs under jit, vmap and grad
(with respect to the input and the coordinates).
"""

from __future__ import annotations

import functools
import itertools
import operator

from functx import numpy as jnp, ops
from functx.errors import (
    FunctxValueError,
    UnsupportedError,
    missing_name_hook as _missing_name_hook,
)


def _mirror(i, n):
    """Reflection about the edge points: ... 2 1 | 0 1 2 ... n-1 | n-2 ..."""
    period = n - 1
    return jnp.abs((i + period) % (2 * period) - period)


def _reflect(i, n):
    """Reflection about the array's edges: ... 1 0 | 0 1 ... n-1 | n-1 n-2 ..."""
    return (_mirror(2 * i + 1, 2 * n + 1) - 1) // 2


# mode -> (an index array and the axis's length) -> an index inside the array
_BOUNDARY = {
    "constant": lambda i, n: i,
    "nearest": lambda i, n: jnp.clip(i, 0, n - 1),
    "wrap": lambda i, n: i % n,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round(x):
    return x if jnp.issubdtype(x.dtype, jnp.integer) else ops.round(x)


def _nearest(c):
    return [(_round(c).astype(jnp.int32), c.dtype.type(1))]


def _linear(c):
    low = jnp.floor(c)
    up = c - low
    i = low.astype(jnp.int32)
    return [(i, 1 - up), (i + 1, up)]


_ORDERS = {0: _nearest, 1: _linear}


def map_coordinates(input, coordinates, order: int, mode: str = "constant", cval=0.0):  # noqa: A002
    """Samples ``input`` at the given coordinates by nearest-point (``order=0``) or linear
    (``order=1``) interpolation, as ``jax.scipy.ndimage.map_coordinates``.

    The boundary modes are JAX's reading of SciPy's documentation: ``'constant'`` is SciPy's
    ``'grid-constant'`` (points outside take ``cval``, and an interpolation that touches one
    blends it in) and ``'wrap'`` is SciPy's ``'grid-wrap'``; ``'nearest'``, ``'mirror'`` and
    ``'reflect'`` are SciPy's.

    Arguments:
      input: the N-D array sampled.
      coordinates: a sequence of N arrays (broadcast together), the fractional index along each
        axis of every output point.
      order: 0 (nearest; halves round away from zero) or 1 (linear).
      mode: ``'constant'`` (default), ``'nearest'``, ``'mirror'``, ``'wrap'`` or ``'reflect'``.
      cval: the value outside the array when ``mode='constant'`` (default 0).

    Returns:
      the sampled values, of the coordinates' broadcast shape and ``input``'s dtype (integer
      inputs round the interpolated value half away from zero).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.ndimage import map_coordinates
      >>> image = jnp.arange(12.0).reshape(3, 4)
      >>> print(map_coordinates(image, [jnp.array([0.5, 2.5]), jnp.array([1.5, 3.0])], order=1))
      [3.5 5.5]
    """
    x = jnp.asarray(input)
    coords = [jnp.asarray(c) for c in coordinates]
    if len(coords) != x.ndim:
        raise FunctxValueError(
            f"coordinates must be a sequence of length input.ndim, but {len(coords)} != {x.ndim}"
        )
    boundary = _BOUNDARY.get(mode)
    if boundary is None:
        raise UnsupportedError(
            f"functx.scipy.ndimage.map_coordinates does not support mode {mode!r}; "
            f"the modes are {sorted(_BOUNDARY)}"
        )
    rule = _ORDERS.get(order)
    if rule is None:
        raise UnsupportedError(
            f"functx.scipy.ndimage.map_coordinates supports order 0 and 1, got {order!r}"
        )
    cval = jnp.asarray(cval, x.dtype)
    per_axis = [
        [(boundary(i, n), (i >= 0) & (i < n), w) for i, w in rule(c)]
        for c, n in zip(coords, x.shape)
    ]
    terms = []
    for corner in itertools.product(*per_axis):
        idx, inside, weights = zip(*corner)
        value = x[tuple(idx)]
        if mode == "constant":
            value = jnp.where(functools.reduce(operator.and_, inside), value, cval)
        terms.append(functools.reduce(operator.mul, weights) * value)
    out = functools.reduce(operator.add, terms)
    if jnp.issubdtype(x.dtype, jnp.integer):
        out = _round(out)
    return out.astype(x.dtype)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["map_coordinates"]
