"""``functx.nn``: activations and normalizations with JAX's names and numerics."""

from __future__ import annotations

import numpy as np

from functx import dtypes, lax
from functx import numpy as jnp
from functx.errors import FunctxTypeError, where


def _float(x):
    x = jnp.asarray(x) if not hasattr(x, "aval") else x
    return x if x.dtype in dtypes.FLOATS else jnp.astype(x, dtypes.default_float)


def relu(x):
    """max(x, 0); the derivative at 0 is 0, like JAX's."""
    x = jnp.asarray(x) if not hasattr(x, "aval") else x
    return jnp.maximum(x, jnp.zeros((), x.dtype))


def relu6(x):
    return jnp.minimum(relu(x), 6.0)


def sigmoid(x):
    return lax.logistic(_float(x))


def log_sigmoid(x):
    return -softplus(-_float(x))


def silu(x):
    x = _float(x)
    return x * lax.logistic(x)


swish = silu


def softplus(x):
    """log(1 + exp(x)), computed as logaddexp(x, 0)."""
    x = _float(x)
    return jnp.logaddexp(x, jnp.zeros((), x.dtype))


def elu(x, alpha=1.0):
    x = _float(x)
    safe = jnp.where(x > 0, jnp.zeros((), x.dtype), x)
    return jnp.where(x > 0, x, alpha * jnp.expm1(safe))


def leaky_relu(x, negative_slope=0.01):
    x = _float(x)
    return jnp.where(x >= 0, x, negative_slope * x)


def gelu(x, approximate: bool = True):
    """GELU: the tanh approximation (default, like JAX) or the exact erf form."""
    x = _float(x)
    if approximate:
        c = np.sqrt(2 / np.pi).astype(x.dtype) if x.dtype != dtypes.bfloat16 else float(np.sqrt(2 / np.pi))
        cdf = 0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * (x * x * x))))
        return x * cdf
    return x * (lax.erf(x * float(1 / np.sqrt(2))) + 1) / 2


def _axis(axis, ndim):
    return tuple(a % ndim for a in ((axis,) if isinstance(axis, int) else axis))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """log(sum(b * exp(a))) computed stably; the max is held constant for the gradient, as in JAX."""
    a = _float(a)
    if axis is None:
        axis = tuple(range(a.ndim))
    axes = _axis(axis, a.ndim) if a.ndim else ()
    if where is not None:
        a = jnp.where(where, a, -np.inf)
    amax = jnp.max(a, axis=axes, keepdims=True, initial=-np.inf) if a.size == 0 else \
        jnp.max(a, axis=axes, keepdims=True)
    amax = lax.stop_gradient(jnp.where(jnp.isfinite(amax), amax, jnp.zeros((), a.dtype)))
    e = jnp.exp(a - amax)
    if b is not None:
        e = e * b
    s = jnp.sum(e, axis=axes, keepdims=True)
    sign = jnp.sign(s)
    out = jnp.log(jnp.abs(s)) + amax
    if not keepdims:
        out = jnp.squeeze(out, axes)
        sign = jnp.squeeze(sign, axes)
    if return_sign:
        return out, sign
    if b is not None:
        out = jnp.where(sign < 0, np.nan, out)
    return out


def softmax(x, axis=-1, where=None):
    """exp(x - max) / sum(exp(x - max)) along ``axis``."""
    x = _float(x)
    axes = _axis(axis, x.ndim)
    if where is not None:
        x = jnp.where(where, x, -np.inf)
    xmax = lax.stop_gradient(jnp.max(x, axis=axes, keepdims=True))
    unnormalized = jnp.exp(x - xmax)
    if where is not None:
        unnormalized = jnp.where(where, unnormalized, 0.0)
    return unnormalized / jnp.sum(unnormalized, axis=axes, keepdims=True)


def log_softmax(x, axis=-1, where=None):
    x = _float(x)
    axes = _axis(axis, x.ndim)
    if where is not None:
        x = jnp.where(where, x, -np.inf)
    shifted = x - lax.stop_gradient(jnp.max(x, axis=axes, keepdims=True))
    e = jnp.exp(shifted)
    if where is not None:
        e = jnp.where(where, e, 0.0)
    return shifted - jnp.log(jnp.sum(e, axis=axes, keepdims=True))


def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None):
    """(x - mean) / sqrt(variance + epsilon), JAX's ``nn.standardize``."""
    x = _float(x)
    if mean is None:
        mean = jnp.mean(x, axis=axis, keepdims=True, where=where)
    if variance is None:
        # E[x^2] - E[x]^2 like JAX, with a clamp at zero.
        variance = jnp.mean(jnp.square(x - mean), axis=axis, keepdims=True, where=where)
    return (x - mean) * lax.rsqrt(variance + epsilon)


def one_hot(x, num_classes: int, *, dtype=None, axis=-1):
    """One-hot encode integer ``x``; out-of-range values give all-zero rows, like JAX."""
    if not isinstance(num_classes, (int, np.integer)):
        raise FunctxTypeError(f"one_hot: num_classes must be a Python int, got {num_classes!r}"
                              f"{where()}")
    x = jnp.asarray(x) if not hasattr(x, "aval") else x
    dtype = dtypes.float32 if dtype is None else dtypes.canonicalize(dtype)
    out_ndim = x.ndim + 1
    axis = axis % out_ndim
    shape = list(x.shape)
    shape.insert(axis, num_classes)
    classes = lax.broadcasted_iota(x.dtype if x.dtype in dtypes.INTEGERS else dtypes.int32,
                                   tuple(shape), axis)
    xe = jnp.expand_dims(x, axis)
    return jnp.astype(jnp.equal(xe, classes), dtype)


__all__ = ["relu", "relu6", "sigmoid", "log_sigmoid", "silu", "swish", "softplus", "elu",
           "leaky_relu", "gelu", "logsumexp", "softmax", "log_softmax", "standardize", "one_hot"]
