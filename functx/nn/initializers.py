"""``functx.nn.initializers``: ``jax.nn.initializers``' weight initializers.

Each builder returns ``init(key, shape, dtype=dtype)``, which draws with ``functx.random``
exactly as JAX's draws with ``jax.random``: the same key, shape and dtype give JAX's bits.
Complex dtypes (JAX's complex branches of ``variance_scaling``) are not supported yet.
"""

from __future__ import annotations

import math
import operator
import typing

import numpy as np

from functx import dtypes, numpy as jnp, random
from functx.errors import FunctxTypeError, FunctxValueError
from functx.source_info import where as _loc


@typing.runtime_checkable
class Initializer(typing.Protocol):
    """What every initializer of this module is (``jax.nn.initializers.Initializer``): a
    callable ``init(key, shape, dtype=None, out_sharding=None)`` returning an array of ``shape``.
    A protocol: ``isinstance(f, Initializer)`` checks only that ``f`` is callable.

    Arguments: (of a call) ``key``, ``shape``, ``dtype=None``, ``out_sharding=None``.
    Returns: (from a call) the array.

    Example:
      >>> import functx
      >>> from functx.nn import initializers
      >>> init: initializers.Initializer = initializers.glorot_normal()
      >>> isinstance(init, initializers.Initializer), init(functx.random.key(0), (2, 3)).shape
      (True, (2, 3))
    """

    def __call__(self, key, shape, dtype=None, out_sharding=None):
        raise NotImplementedError


def _dtype(dtype):
    return dtypes.default_float() if dtype is None else dtypes.canonicalize(dtype)


def _shape(shape):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    try:
        return tuple(operator.index(d) for d in shape)
    except TypeError:
        raise FunctxTypeError(
            f"shape must be a sequence of ints, got {shape!r:.60}{_loc()}"
        ) from None


def _const(v, dt):
    return jnp.asarray(np.asarray(v, dt))


def _filled(name, fill, result):
    """The initializer ``zeros`` or ``ones`` (``name``): ``fill`` (``jnp.zeros``, ``jnp.ones``)
    of the shape and dtype; its example prints ``result``."""

    def initializer(key, shape, dtype=None, out_sharding=None):
        return fill(_shape(shape), _dtype(dtype))

    initializer.__name__ = initializer.__qualname__ = name
    initializer.__doc__ = f"""An initializer: an array of {name} (``key`` is unused).

    Arguments:
      key: a PRNG key (unused).
      shape: the shape.
      dtype: the dtype (default float32).
      out_sharding: must be None (functx has no shardings).
    Returns:
      An array of {name}.

    Example:
      >>> import functx
      >>> print(functx.nn.initializers.{name}(functx.random.key(0), (2,)))
      {result}
    """
    return initializer


zeros = _filled("zeros", jnp.zeros, "[0. 0.]")
ones = _filled("ones", jnp.ones, "[1. 1.]")


def constant(value, dtype=None):
    """Builds an initializer that fills arrays with ``value``.

    Arguments:
      value: the fill value.
      dtype: the default dtype of the arrays.
    Returns:
      ``init(key, shape, dtype=dtype)``.

    Example:
      >>> import functx
      >>> init = functx.nn.initializers.constant(-7)
      >>> print(init(functx.random.key(0), (2,)))
      [-7. -7.]
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        return jnp.full(_shape(shape), value, _dtype(dtype))

    return init


def uniform(scale=1e-2, dtype=None):
    """Builds an initializer drawing uniformly from ``[0, scale)``.

    Arguments:
      scale: the upper bound.
      dtype: the default dtype.
    Returns:
      ``init(key, shape, dtype=dtype)``.

    Example:
      >>> import functx
      >>> w = functx.nn.initializers.uniform(10.0)(functx.random.key(0), (2, 3))
      >>> print(w.shape, bool((w >= 0).all() and (w < 10).all()))
      (2, 3) True
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        dt = _dtype(dtype)
        return random.uniform(key, _shape(shape), dt) * _const(scale, dt)

    return init


def normal(stddev=1e-2, dtype=None):
    """Builds an initializer drawing from a normal distribution of mean 0.

    Arguments:
      stddev: the standard deviation.
      dtype: the default dtype.
    Returns:
      ``init(key, shape, dtype=dtype)``.

    Example:
      >>> import functx
      >>> print(functx.nn.initializers.normal(1.0)(functx.random.key(0), (3,)).shape)
      (3,)
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        dt = _dtype(dtype)
        return random.normal(key, _shape(shape), dt) * _const(stddev, dt)

    return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0):
    """Builds an initializer drawing from a normal distribution truncated to
    ``[lower, upper]``, then multiplied by ``stddev``.

    Arguments:
      stddev: the multiplier (the standard deviation before truncation).
      dtype: the default dtype.
      lower, upper: the truncation bounds, in standard deviations.
    Returns:
      ``init(key, shape, dtype=dtype)``.

    Example:
      >>> import functx
      >>> w = functx.nn.initializers.truncated_normal(1.0)(functx.random.key(0), (100,))
      >>> print(bool((abs(w) <= 2).all()))
      True
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        dt = _dtype(dtype)
        return random.truncated_normal(key, lower, upper, _shape(shape), dt) * _const(stddev, dt)

    return init


def _size(shape, axes):
    if isinstance(axes, (int, np.integer)):
        return shape[axes]
    return math.prod(shape[i] for i in axes)


def _fans(shape, in_axis, out_axis, batch_axis):
    if isinstance(in_axis, (int, np.integer)) and in_axis == -2 and len(shape) <= 1:
        raise FunctxValueError(
            f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor "
            f"with default in_axis. Must be at least 2D or specify in_axis explicitly.{_loc()}"
        )
    n_in, n_out = _size(shape, in_axis), _size(shape, out_axis)
    receptive = math.prod(shape) / n_in / n_out / _size(shape, batch_axis)
    return n_in * receptive, n_out * receptive


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
    """Builds an initializer whose samples have variance ``scale / n``, ``n`` the fan in, the
    fan out, or their arithmetic (``fan_avg``) or geometric (``fan_geo_avg``) mean; axes other
    than ``in_axis``, ``out_axis`` and ``batch_axis`` are a receptive field (convolutions).

    Arguments:
      scale: the variance numerator.
      mode: ``"fan_in"``, ``"fan_out"``, ``"fan_avg"`` or ``"fan_geo_avg"``.
      distribution: ``"truncated_normal"`` (within 2 standard deviations, rescaled to keep the
        variance), ``"normal"`` or ``"uniform"`` (on ``[-sqrt(3 var), sqrt(3 var))``).
      in_axis, out_axis, batch_axis: the axes (ints or sequences) of the inputs, outputs, batch.
      dtype: the default dtype.
    Returns:
      ``init(key, shape, dtype=dtype)``.

    Example:
      >>> import functx
      >>> init = functx.nn.initializers.variance_scaling(2.0, "fan_in", "normal")
      >>> print(init(functx.random.key(0), (256, 64)).std() > 0.08)
      True
    """
    if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
        raise FunctxValueError(f"invalid mode for variance scaling initializer: {mode}{_loc()}")
    if distribution not in ("truncated_normal", "normal", "uniform"):
        raise FunctxValueError(
            f"invalid distribution for variance scaling initializer: {distribution}{_loc()}"
        )

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = _shape(shape)
        dt = _dtype(dtype)
        if dt.kind == "c":
            raise FunctxTypeError(f"complex variance_scaling is not supported yet{_loc()}")
        fan_in, fan_out = _fans(shape, in_axis, out_axis, batch_axis)
        n = {
            "fan_in": fan_in,
            "fan_out": fan_out,
            "fan_avg": (fan_in + fan_out) / 2,
            "fan_geo_avg": (fan_in * fan_out) ** 0.5,
        }[mode]
        var = _const(scale / n, dt)
        if distribution == "truncated_normal":
            # 0.8796...: the standard deviation of a standard normal truncated to (-2, 2)
            std = jnp.sqrt(var) / _const(0.87962566103423978, dt)
            return random.truncated_normal(key, -2, 2, shape, dt) * std
        if distribution == "normal":
            return random.normal(key, shape, dt) * jnp.sqrt(var)
        return random.uniform(key, shape, dt, -1) * jnp.sqrt(_const(3, dt) * var)

    return init


def _preset(name, scale, mode, distribution):
    def builder(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
        return variance_scaling(scale, mode, distribution, in_axis, out_axis, batch_axis, dtype)

    dist = {"uniform": "uniform", "truncated_normal": "truncated normal"}[distribution]
    builder.__name__ = builder.__qualname__ = name
    builder.__doc__ = f"""Builds the {name} initializer: ``variance_scaling({scale}, "{mode}",
    "{distribution}")`` ({dist} samples of variance ``{scale} / {mode.replace("_", " ")}``).

    Arguments:
      in_axis, out_axis, batch_axis: the axes of the inputs, outputs and batch.
      dtype: the default dtype.
    Returns:
      ``init(key, shape, dtype=dtype)``.

    Example:
      >>> import functx
      >>> init = functx.nn.initializers.{name}()
      >>> print(init(functx.random.key(0), (4, 3)).shape)
      (4, 3)
    """
    return builder


glorot_uniform = _preset("glorot_uniform", 1.0, "fan_avg", "uniform")
glorot_normal = _preset("glorot_normal", 1.0, "fan_avg", "truncated_normal")
lecun_uniform = _preset("lecun_uniform", 1.0, "fan_in", "uniform")
lecun_normal = _preset("lecun_normal", 1.0, "fan_in", "truncated_normal")
he_uniform = _preset("he_uniform", 2.0, "fan_in", "uniform")
he_normal = _preset("he_normal", 2.0, "fan_in", "truncated_normal")
xavier_uniform, xavier_normal = glorot_uniform, glorot_normal
kaiming_uniform, kaiming_normal = he_uniform, he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Builds an initializer of (semi-)orthogonal matrices: the ``column_axis`` columns of the
    array, flattened over the other axes, are orthonormal (times ``scale``).

    Arguments:
      scale: the multiplier.
      column_axis: the axis of the columns.
      dtype: the default dtype.
    Returns:
      ``init(key, shape, dtype=dtype)`` (shape of at least 2 dimensions).

    Example:
      >>> import functx, functx.numpy as jnp
      >>> w = functx.nn.initializers.orthogonal()(functx.random.key(0), (3, 3))
      >>> print(bool(jnp.allclose(w.T @ w, jnp.eye(3), atol=1e-5)))
      True
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = _shape(shape)
        dt = _dtype(dtype)
        if len(shape) < 2:
            raise FunctxValueError(f"orthogonal initializer requires at least a 2D shape{_loc()}")
        if any(d == 0 for d in shape):
            return jnp.zeros(shape, dt)
        n_cols = shape[column_axis]
        n_rows = math.prod(shape) // n_cols
        q = random.orthogonal(key, n_rows, (), dt, n_cols)
        q = jnp.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
        return _const(scale, dt) * jnp.moveaxis(q, -1, column_axis)

    return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None):
    """Builds the delta-orthogonal initializer of convolution kernels (3-D to 5-D): zeros except
    an orthogonal matrix at the spatial center.

    Arguments:
      scale: the multiplier.
      column_axis: the axis of the columns of the orthogonal matrix.
      dtype: the default dtype.
    Returns:
      ``init(key, shape, dtype=dtype)``.

    Example:
      >>> import functx
      >>> w = functx.nn.initializers.delta_orthogonal()(functx.random.key(0), (3, 2, 2))
      >>> print(w.shape, float(abs(w[0]).sum()))
      (3, 2, 2) 0.0
    """

    def init(key, shape, dtype=dtype, out_sharding=None):
        shape = _shape(shape)
        dt = _dtype(dtype)
        if len(shape) not in (3, 4, 5):
            raise FunctxValueError(
                f"Delta orthogonal initializer requires a 3D, 4D or 5D shape.{_loc()}"
            )
        if shape[-1] < shape[-2]:
            raise FunctxValueError(f"`fan_in` must be less or equal than `fan_out`. {_loc()}")
        mat = orthogonal(scale, column_axis, dt)(key, shape[-2:])
        w = jnp.zeros(shape, dt)
        center = tuple((k - 1) // 2 for k in shape[:-2])
        return w.at[center].set(mat)

    return init


__all__ = [
    "Initializer",
    "constant",
    "delta_orthogonal",
    "glorot_normal",
    "glorot_uniform",
    "he_normal",
    "he_uniform",
    "kaiming_normal",
    "kaiming_uniform",
    "lecun_normal",
    "lecun_uniform",
    "normal",
    "ones",
    "orthogonal",
    "truncated_normal",
    "uniform",
    "variance_scaling",
    "xavier_normal",
    "xavier_uniform",
    "zeros",
]
