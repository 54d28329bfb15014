"""``functx.scipy.stats``' summary statistics: ``sem``, ``rankdata`` and ``mode``
(``jax.scipy.stats``' functions of those names), composites of sorts, cumulative extrema and
reductions, so they ``jit``, ``vmap`` and (``sem``) differentiate."""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from functx import dtypes, lax, numpy as jnp
from functx.errors import FunctxValueError, UnsupportedError
from functx.scipy.stats._common import const, promote

_POLICIES = ("propagate", "omit", "raise")


def _check_policy(name, nan_policy):
    if nan_policy not in _POLICIES:
        raise FunctxValueError(
            f"Illegal nan_policy value {nan_policy!r}; expected one of "
            "{'propagate', 'omit', 'raise'}"
        )
    if nan_policy == "omit":
        raise UnsupportedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
    if nan_policy == "raise":
        raise UnsupportedError(
            f"{name}: nan_policy='raise' needs to know whether the data hold NaNs, which a "
            "traced computation cannot; check for NaNs outside the call."
        )


def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
    """The standard error of the mean, ``std(a, ddof) / sqrt(n)``, like
    ``jax.scipy.stats.sem``.

    Arguments:
      a: the data.
      axis: the axis of the samples (None: all elements).
      ddof: the delta degrees of freedom of the standard deviation.
      nan_policy: ``'propagate'`` (NaNs give NaN) or ``'omit'`` (NaNs are left out).
      keepdims: keep the reduced axis, of length 1.

    Returns:
      The standard errors, of ``a``'s promoted float dtype.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.stats import sem
      >>> print(sem(jnp.array([1.0, 2.0, 4.0, 5.0])))
      0.91287094
    """
    (b,) = promote(a)
    if nan_policy == "propagate":
        n = b.size if axis is None else b.shape[axis]
        root = const(np.sqrt(n), b)
        return jnp.std(b, axis=axis, ddof=ddof, keepdims=keepdims) / root
    if nan_policy == "omit":
        count = jnp.sum(~jnp.isnan(b), axis=axis, keepdims=keepdims)
        root = jnp.sqrt(count).astype(b.dtype)
        return jnp.nanstd(b, axis=axis, ddof=ddof, keepdims=keepdims) / root
    raise FunctxValueError(f"{nan_policy} is not supported")


_RANKS = ("average", "min", "max", "dense", "ordinal")


def _ranks_1d(a, method):
    """The ranks of a 1-D array (all NaN if it holds a NaN)."""
    n = a.size
    out_dtype = dtypes.default_float()
    keys, order = lax.sort_key_val(a, jnp.arange(n))
    inverse = jnp.zeros(n, order.dtype).at[order].set(jnp.arange(n, dtype=order.dtype))
    if method == "ordinal":
        ranks = (inverse + 1).astype(out_dtype)
    else:
        new = jnp.concatenate([jnp.ones(min(n, 1), bool), keys[1:] != keys[:-1]])
        dense = jnp.cumsum(new)[inverse]
        # starts[j]: where group j begins in sorted order (then n): its ranks end at starts[j+1]
        starts = jnp.nonzero(new, size=n + 1, fill_value=n)[0].astype(out_dtype)
        ranks = {
            "dense": lambda: dense.astype(out_dtype),
            "max": lambda: starts[dense],
            "min": lambda: starts[dense - 1] + 1,
            "average": lambda: const(0.5, starts) * (starts[dense] + starts[dense - 1] + 1),
        }[method]()
    return jnp.where(jnp.any(jnp.isnan(a)), const(np.nan, ranks), ranks)


def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
    """The ranks of the data, from 1, like ``jax.scipy.stats.rankdata``.

    Arguments:
      a: the data.
      method: how tied values rank: ``'average'`` (their mean rank), ``'min'``, ``'max'``,
        ``'dense'`` (consecutive ranks for distinct values) or ``'ordinal'`` (by position).
      axis: rank along this axis (None: the flattened data).
      nan_policy: only ``'propagate'``: data with a NaN rank all NaN.

    Returns:
      The ranks, of the default float dtype: flat when ``axis`` is None, else ``a``'s shape.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.stats import rankdata
      >>> print(rankdata(jnp.array([3, 1, 3, 2])))
      [3.5 1.  3.5 2. ]
    """
    (a,) = (a if hasattr(a, "aval") else jnp.asarray(a),)
    _check_policy("rankdata", nan_policy)
    if method not in _RANKS:
        raise FunctxValueError(f"unknown method '{method}'")
    if axis is not None:
        return jnp.apply_along_axis(lambda v: _ranks_1d(v, method), axis, a)
    return _ranks_1d(jnp.ravel(a), method)


class ModeResult(NamedTuple):
    """``mode``'s result: the modal values and their counts."""

    mode: object
    count: object


def mode(a, axis=0, nan_policy="propagate", keepdims=False):
    """The most common value along an axis (the smallest of equally common ones) and its count,
    like ``jax.scipy.stats.mode``.

    Arguments:
      a: the data (a scalar is one sample).
      axis: the axis of the samples (None: all elements).
      nan_policy: only ``'propagate'`` (NaNs count as one value).
      keepdims: keep the reduced axis, of length 1.

    Returns:
      ``ModeResult(mode, count)``: the modes, of ``a``'s dtype, and their counts (default
      integers; with no samples, NaN modes and zero counts of the default float dtype, as in
      JAX).

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.stats import mode
      >>> print(mode(jnp.array([[1, 2], [1, 3], [2, 3]])))
      ModeResult(mode=Array([1, 3], dtype=int32), count=Array([2, 2], dtype=int32))
    """
    x = jnp.atleast_1d(a if hasattr(a, "aval") else jnp.asarray(a))
    _check_policy("mode", nan_policy)
    if axis is None:
        shape = (1,) * x.ndim if keepdims else ()
        x, axis = jnp.ravel(x), 0
    else:
        axis = operator.index(axis)
        if not -x.ndim <= axis < x.ndim:
            raise FunctxValueError(f"axis {axis} is out of bounds for array of dimension {x.ndim}")
        axis %= x.ndim
        shape = tuple(1 if i == axis else s for i, s in enumerate(x.shape) if keepdims or i != axis)
    x = jnp.moveaxis(x, axis, 0)
    n = x.shape[0]
    if n == 0:
        fill = jnp.zeros(shape, dtypes.default_float())
        return ModeResult(fill + const(np.nan, fill), fill)
    x = jnp.reshape(x, (n, x.size // n))
    s = jnp.sort(x, axis=0)
    same = (s[1:] == s[:-1]) | (jnp.isnan(s[1:]) & jnp.isnan(s[:-1]))
    new = jnp.concatenate([jnp.ones((1, s.shape[1]), bool), ~same], axis=0)
    last = jnp.concatenate([~same, jnp.ones((1, s.shape[1]), bool)], axis=0)
    pos = jnp.broadcast_to(jnp.arange(n)[:, None], s.shape)
    first = lax.cummax(jnp.where(new, pos, 0), axis=0)
    end = lax.cummin(jnp.where(last, pos, n), axis=0, reverse=True)
    runs = (end - first + 1).astype(dtypes.default_int())
    best = jnp.argmax(runs, axis=0)
    value = jnp.take_along_axis(s, best[None], axis=0)[0]
    return ModeResult(jnp.reshape(value, shape), jnp.reshape(jnp.max(runs, axis=0), shape))
