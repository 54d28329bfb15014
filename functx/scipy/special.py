"""``functx.scipy.special``: ``jax.scipy.special``'s functions with JAX's formulas and derivatives.

Each is a composite of functx primitives (no new primitive): ``xlogy``, ``xlog1py``, ``logit``,
``entr`` and ``log_ndtr`` carry JAX's custom derivative rules, so ``grad`` gives JAX's values at
the special points (``xlogy(0, 0)`` is 0, its gradient ``(-inf, nan)``, as in JAX). Integer
inputs are converted to a float dtype first (float64 for 64-bit integers, float32 otherwise), as
everywhere in functx; JAX with x64 enabled gives float64 for all integers. ``gammaln`` has no
derivative yet (it needs digamma).
"""

from __future__ import annotations

import numpy as np

from functx import nn as _nn, numpy as jnp, ops
from functx.control.custom_derivatives import custom_jvp
from functx.errors import FunctxTypeError, FunctxValueError, missing_name_hook as _missing_name_hook
from functx.source_info import where as _loc


def _float(name, *args):
    args = [jnp.asarray(a) if not hasattr(a, "aval") else a for a in args]
    return jnp._core._promote_float(name, *args)


def _c(v, x):
    return jnp.asarray(np.asarray(v, x.dtype))


def logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False, where=None):
    """Log-sum-exp reduction, ``log(sum(b * exp(a), axis))``, computed stably (JAX's
    ``jax.scipy.special.logsumexp``, the same function as ``functx.nn.logsumexp``).

    Arguments:
      a: the input array.
      axis: an int, a tuple of ints, or None (all axes).
      b: scaling factors for the exponentials, broadcastable to ``a``'s shape.
      keepdims: keep the reduced axes as size-1 dimensions.
      return_sign: return ``(log|sum|, sign(sum))``; otherwise the result is NaN where the sum is
        negative.
      where: elements to include in the reduction.
    Returns:
      An array (or a pair of arrays with ``return_sign``) of ``a``'s float dtype. A row of only
      ``-inf`` gives ``-inf`` (and a zero gradient), as in JAX.

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.logsumexp(functx.numpy.array([0.0, 0.0])))
      0.6931472
    """
    return _nn.logsumexp(a, axis=axis, b=b, keepdims=keepdims, return_sign=return_sign, where=where)


def erf(x):
    """The error function ``2/sqrt(pi) * integral_0^x exp(-t^2) dt``.

    Arguments:
      x: the input (integers are converted to float).
    Returns:
      An array of the input's float dtype.

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.erf(functx.numpy.array([0.0, 1.0])))
      [0.        0.8427008]
    """
    (x,) = _float("erf", x)
    return ops.erf(x)


def erfc(x):
    """The complementary error function ``1 - erf(x)``, accurate where ``erf(x)`` is near 1.

    Arguments:
      x: the input (integers are converted to float).
    Returns:
      An array of the input's float dtype.

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.erfc(functx.numpy.array([0.0, 5.0])))
      [1.0000000e+00 1.5374598e-12]
    """
    (x,) = _float("erfc", x)
    return ops.erfc(x)


def gammaln(x):
    """The log of the absolute value of the gamma function (``lax.lgamma``).

    Its derivative (digamma) is not implemented yet: ``grad`` raises ``UnsupportedError``.

    Arguments:
      x: the input (integers are converted to float).
    Returns:
      An array of the input's float dtype.

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.gammaln(functx.numpy.array([1.0, 5.0])))
      [0.        3.1780539]
    """
    (x,) = _float("gammaln", x)
    return ops.lgamma(x)


def expit(x):
    """The logistic sigmoid ``1 / (1 + exp(-x))`` (``lax.logistic``).

    Arguments:
      x: the input (integers are converted to float).
    Returns:
      An array of the input's float dtype.

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.expit(functx.numpy.array([0.0, 2.0])))
      [0.5      0.880797]
    """
    (x,) = _float("expit", x)
    return ops.logistic(x)


@custom_jvp
def _logit(x):
    return jnp.log(x / (_c(1, x) - x))


def _logit_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _logit(x), t / (x * (_c(1, x) - x))


_logit.defjvp(_logit_jvp)


def logit(x):
    """The inverse of ``expit``: ``log(x / (1 - x))``; its derivative is ``1 / (x (1 - x))``.

    Arguments:
      x: the input (integers are converted to float).
    Returns:
      An array of the input's float dtype (``-inf`` at 0, ``inf`` at 1, NaN outside [0, 1]).

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.logit(functx.numpy.array([0.5, 0.25])))
      [ 0.        -1.0986123]
    """
    (x,) = _float("logit", x)
    return _logit(x)


def _xlogy_impl(x, y):
    ok = jnp.logical_or(x != 0, jnp.isnan(y))
    return jnp.where(ok, x * jnp.log(y), jnp.zeros_like(x))


@custom_jvp
def _xlogy(x, y):
    return _xlogy_impl(x, y)


def _xlogy_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlogy(x, y), tx * jnp.log(y) + ty * x / y


_xlogy.defjvp(_xlogy_jvp)


def xlogy(x, y):
    """``x * log(y)``, with ``xlogy(0, y) = 0`` for every ``y`` but NaN (JAX's and SciPy's rule).

    The derivative is JAX's rule ``(log(y), x / y)`` everywhere, so at ``(0, 0)`` the gradient
    is ``(-inf, nan)`` exactly as ``jax.grad`` gives.

    Arguments:
      x: the multiplier.
      y: the argument of the log (broadcast together with ``x``; integers become float).
    Returns:
      An array of the promoted float dtype.

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.xlogy(functx.numpy.array([0.0, 2.0]), functx.numpy.array([0.0, 3.0])))
      [0.        2.1972246]
    """
    x, y = _float("xlogy", x, y)
    return _xlogy(x, y)


@custom_jvp
def _xlog1py(x, y):
    ok = jnp.logical_or(x != 0, jnp.isnan(y))
    return jnp.where(ok, x * jnp.log1p(y), jnp.zeros_like(x))


def _xlog1py_jvp(primals, tangents):
    (x, y), (tx, ty) = primals, tangents
    return _xlog1py(x, y), tx * jnp.log1p(y) + ty * x / (_c(1, y) + y)


_xlog1py.defjvp(_xlog1py_jvp)


def xlog1py(x, y):
    """``x * log1p(y)``, with ``xlog1py(0, y) = 0`` for every ``y`` but NaN (JAX's rule), and
    JAX's derivative ``(log1p(y), x / (1 + y))``.

    Arguments:
      x: the multiplier.
      y: the argument of ``log1p`` (broadcast together with ``x``; integers become float).
    Returns:
      An array of the promoted float dtype.

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.xlog1py(functx.numpy.array([0.0, 2.0]), functx.numpy.array([-1.0, 1.0])))
      [0.        1.3862944]
    """
    x, y = _float("xlog1py", x, y)
    return _xlog1py(x, y)


@custom_jvp
def _xlogx(x):
    return _xlogy_impl(x, x)


def _xlogx_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    return _xlogx(x), t * (jnp.log(x) + _c(1, x))


_xlogx.defjvp(_xlogx_jvp)


def entr(x):
    """Elementwise entropy: ``-x log(x)`` for ``x > 0``, 0 at 0, ``-inf`` for ``x < 0``; the
    derivative is ``-(log(x) + 1)`` (``inf`` at 0, as in JAX).

    Arguments:
      x: the input (integers are converted to float).
    Returns:
      An array of the input's float dtype.

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.entr(functx.numpy.array([0.0, 0.5, -1.0])))
      [-0.         0.3465736       -inf]
    """
    (x,) = _float("entr", x)
    return jnp.where(x < _c(0, x), jnp.full_like(x, -np.inf), -_xlogx(x))


def _ndtr(x):
    half_sqrt_2 = _c(0.5 * np.sqrt(2.0), x)
    w = x * half_sqrt_2
    z = jnp.abs(w)
    y = jnp.where(
        z < half_sqrt_2,
        _c(1, x) + ops.erf(w),
        jnp.where(w > _c(0, x), _c(2, x) - ops.erfc(z), ops.erfc(z)),
    )
    return _c(0.5, x) * y


def ndtr(x):
    """The standard normal CDF, ``(1 + erf(x / sqrt(2))) / 2``, computed with ``erfc`` in the
    tails (JAX's formula) so that small values keep their relative accuracy.

    Arguments:
      x: the input (integers are converted to float).
    Returns:
      An array of the input's float dtype.

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.ndtr(functx.numpy.array([0.0, -3.0])))
      [0.5       0.0013499]
    """
    (x,) = _float("ndtr", x)
    return _ndtr(x)


_LOG_NDTR_SEGMENTS = {np.dtype(np.float64): (-20.0, 8.0), np.dtype(np.float32): (-10.0, 5.0)}
_HALF_LOG_2PI = 0.5 * np.log(2.0 * np.pi)


def _log_ndtr_series(x, series_order):
    if series_order <= 0:
        return jnp.ones_like(x)
    x2 = x * x
    even = jnp.zeros_like(x)
    odd = jnp.zeros_like(x)
    x2n = x2
    for n in range(1, series_order + 1):
        y = _c(np.prod(np.arange(2 * n - 1, 1, -2)), x) / x2n
        if n % 2:
            odd = odd + y
        else:
            even = even + y
        x2n = x2n * x2
    return _c(1, x) + even - odd


def _log_ndtr_value(x, series_order):
    lower, upper = _LOG_NDTR_SEGMENTS[np.dtype(x.dtype)]
    lo, hi = _c(lower, x), _c(upper, x)
    above = x > hi
    res = _ndtr(jnp.where(above, -x, jnp.maximum(x, lo)))
    xl = jnp.minimum(x, lo)
    tail = (
        _c(-0.5, x) * (xl * xl)
        - jnp.log(-xl)
        - _c(_HALF_LOG_2PI, x)
        + jnp.log(_log_ndtr_series(xl, series_order))
    )
    return jnp.where(above, -res, jnp.where(x > lo, jnp.log(res), tail))


def _make_log_ndtr(series_order):
    @custom_jvp
    def f(x):
        return _log_ndtr_value(x, series_order)

    def f_jvp(primals, tangents):
        (x,), (t,) = primals, tangents
        ans = f(x)
        logpdf = _c(-0.5, x) * (x * x) - _c(_HALF_LOG_2PI, x)
        return ans, t * jnp.exp(logpdf - ans)

    f.defjvp(f_jvp)
    return f


_LOG_NDTR = {}


def log_ndtr(x, series_order=3):
    """``log(ndtr(x))``, accurate in both tails (JAX's three-segment method): ``-ndtr(-x)`` above
    8 (float64; 5 for float32), ``log(ndtr(x))`` in the middle, and the asymptotic series of
    order ``series_order`` below -20 (float64; -10 for float32). The derivative is
    ``exp(log_pdf(x) - log_ndtr(x))``.

    Arguments:
      x: a float32 or float64 array (integers are converted to float first).
      series_order: a Python int in ``[0, 30]``.
    Returns:
      An array of ``x``'s dtype.
    Raises:
      TypeError: for another float dtype or a non-int ``series_order``; ValueError for a
      ``series_order`` out of range (JAX's errors).

    Example:
      >>> import functx
      >>> import functx.scipy.special as fs
      >>> print(fs.log_ndtr(functx.numpy.array([0.0, -30.0])))
      [  -0.6931472 -454.32123  ]
    """
    if isinstance(series_order, bool) or not isinstance(series_order, int):
        raise FunctxTypeError(f"series_order must be a Python integer.{_loc()}")
    if series_order < 0:
        raise FunctxValueError(f"series_order must be non-negative.{_loc()}")
    if series_order > 30:
        raise FunctxValueError(f"series_order must be <= 30.{_loc()}")
    (x,) = _float("log_ndtr", x)
    if np.dtype(x.dtype) not in _LOG_NDTR_SEGMENTS:
        raise FunctxTypeError(f"x.dtype={np.dtype(x.dtype)} is not supported.{_loc()}")
    if series_order not in _LOG_NDTR:
        _LOG_NDTR[series_order] = _make_log_ndtr(series_order)
    return _LOG_NDTR[series_order](x)


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "entr",
    "erf",
    "erfc",
    "expit",
    "gammaln",
    "log_ndtr",
    "logit",
    "logsumexp",
    "ndtr",
    "xlog1py",
    "xlogy",
]
