"""``functx.scipy.interpolate``: JAX's ``jax.scipy.interpolate``: ``RegularGridInterpolator``
(linear and nearest), a pytree so it passes through ``jit`` and ``vmap``."""

from __future__ import annotations

import itertools

import numpy as np

from functx import numpy as jnp
from functx.errors import (
    FunctxValueError,
    UnsupportedError,
    missing_name_hook as _missing_name_hook,
)
from functx.numpy import _core
from functx.tree_util import register_pytree_node

_METHODS = ("linear", "nearest")


def _check_method(method):
    if method not in _METHODS:
        raise FunctxValueError(f"method {method!r} is not defined")


def _points(xi, ndim):
    """The query points as one (..., ndim) array: a tuple of coordinate arrays (broadcast
    together) or an array whose last axis holds the coordinates."""
    if isinstance(xi, tuple) and len(xi) == 1:
        xi = xi[0]
    if isinstance(xi, tuple):
        parts = [jnp.asarray(p) for p in xi]
        shapes = {p.shape for p in parts}
        if len(shapes) > 1:
            parts = jnp.broadcast_arrays(*parts)
            if len({p.shape for p in parts}) > 1:  # pragma: no cover - broadcasting raised
                raise FunctxValueError("coordinate arrays do not have the same shape")
        return jnp.stack([p.astype(float) for p in parts], axis=-1)
    xi = jnp.asarray(xi)
    return xi.reshape(-1, ndim) if xi.ndim == 1 else xi


class RegularGridInterpolator:
    """Interpolates values given on a rectangular grid, as
    ``jax.scipy.interpolate.RegularGridInterpolator``.

    ``RegularGridInterpolator(points, values, method="linear", bounds_error=False,
    fill_value=nan)``: ``points`` is a sequence of N strictly increasing 1-D arrays (the grid
    along each axis, not checked, as in JAX), ``values`` an array whose first N axes match them
    (further axes are carried along), ``method`` ``"linear"`` or ``"nearest"``, and points
    outside the grid take ``fill_value`` (None: extrapolate from the nearest cell).
    ``bounds_error=True`` is not supported (it raises, as in JAX). Calling it,
    ``interp(xi, method=None)``, with points of shape (..., N) (or a tuple of N coordinate
    arrays) gives values of shape ``xi.shape[:-1] + values.shape[N:]``.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.interpolate import RegularGridInterpolator
      >>> grid = (jnp.array([0.0, 1.0, 2.0]), jnp.array([0.0, 10.0]))
      >>> values = jnp.array([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
      >>> interp = RegularGridInterpolator(grid, values)
      >>> print(interp(jnp.array([[0.5, 5.0], [1.5, 10.0], [3.0, 0.0]])))
      [1.5 4.  nan]
    """

    def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
        _check_method(method)
        if bounds_error:
            raise UnsupportedError("`bounds_error` takes no effect under JIT")
        values = jnp.asarray(values)
        if len(points) > values.ndim:
            raise FunctxValueError(
                f"there are {len(points)} point arrays, but values has {values.ndim} dimensions"
            )
        (values,) = _core._promote_only(values, kind="inexact")
        if fill_value is not None:
            fill_value = jnp.asarray(fill_value)
            if not jnp.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
                raise FunctxValueError(
                    "fill_value must be either 'None' or of a type compatible with values"
                )
        self.method, self.bounds_error, self.fill_value = method, bounds_error, fill_value
        self.grid = tuple(jnp.asarray(p) for p in points)
        self.values = values

    def _cells(self, xi):
        """Per axis: the index of the grid cell holding each point (the first or last cell for
        points outside) and the point's fractional position in it; and which points are outside."""
        cells, fracs, outside = [], [], jnp.zeros(xi.shape[:1], bool)
        for x, g in zip(xi.T, self.grid):
            i = jnp.clip(jnp.searchsorted(g, x) - 1, 0, g.size - 2)
            cells.append(i)
            fracs.append((x - g[i]) / (g[i + 1] - g[i]))
            outside = outside | (x < g[0]) | (x > g[-1])
        return cells, fracs, outside

    def __call__(self, xi, method=None):
        method = self.method if method is None else method
        _check_method(method)
        ndim = len(self.grid)
        xi = _points(xi, ndim)
        if xi.shape[-1] != ndim:
            raise FunctxValueError(
                f"the requested sample points xi have dimension {xi.shape[-1]}, but this "
                f"RegularGridInterpolator has dimension {ndim}"
            )
        lead = xi.shape[:-1]
        cells, fracs, outside = self._cells(xi.reshape(-1, ndim))
        trailing = (slice(None),) + (None,) * (self.values.ndim - ndim)
        if method == "nearest":
            out = self.values[tuple(jnp.where(f <= 0.5, i, i + 1) for i, f in zip(cells, fracs))]
        else:
            out = jnp.asarray(0.0)
            for corner in itertools.product((0, 1), repeat=ndim):
                weight = jnp.asarray(1.0)
                for up, f in zip(corner, fracs):
                    weight = weight * (f if up else 1 - f)
                out = (
                    out
                    + self.values[tuple(i + up for i, up in zip(cells, corner))] * weight[trailing]
                )
        if self.fill_value is not None:
            out = jnp.where(
                outside.reshape(outside.shape + (1,) * (out.ndim - 1)), self.fill_value, out
            )
        return out.reshape(lead + self.values.shape[ndim:])


register_pytree_node(
    RegularGridInterpolator,
    lambda r: ((r.grid, r.values, r.fill_value), (r.method, r.bounds_error)),
    lambda aux, kids: RegularGridInterpolator(kids[0], kids[1], aux[0], aux[1], kids[2]),
)

# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["RegularGridInterpolator"]
