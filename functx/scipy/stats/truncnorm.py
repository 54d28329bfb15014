"""``functx.scipy.stats.truncnorm``: the normal distribution truncated to ``[a, b]`` (in
standard deviations from ``loc``). The truncated mass is computed in the tail where it is small,
as JAX does, so far tails keep their precision."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats import norm
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points.", "a, b: the truncation bounds, standardized.", *LOC_SCALE)


def _log_diff(big, small):
    """``log(exp(big) - exp(small))`` for ``big >= small``."""
    out = big + jnp.log1p(-jnp.exp(small - big))
    return jnp.where(small == big, const(-np.inf, big), out)


def _log_mass(a, b):
    """``log(ndtr(b) - ndtr(a))``: from the left tail when ``b <= 0``, the mirrored right tail
    when ``a > 0``, else as one minus both tails."""
    right = a > 0
    lo, hi = jnp.where(right, -b, a), jnp.where(right, -a, b)
    tail = _log_diff(special.log_ndtr(hi), special.log_ndtr(lo))
    central = jnp.log1p(-special.ndtr(a) - special.ndtr(-b))
    return jnp.where((b <= 0) | right, tail, central)


@doc(
    "truncnorm",
    "logpdf",
    "The log density: the normal's, less the log of the mass within ``[a, b]``\n    "
    "(``-inf`` outside, NaN where ``a >= b``).",
    _X,
    "print(truncnorm.logpdf(jnp.array([0.0, 2.0]), -1.0, 1.0))\n[-0.53722334        -inf]",
)
def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    out = norm.logpdf(x, loc, scale) - _log_mass(a, b)
    z = (x - loc) / scale
    out = jnp.where((z < a) | (z > b), const(-np.inf, x), out)
    return jnp.where(a >= b, const(np.nan, x), out)


@doc(
    "truncnorm",
    "pdf",
    "The truncated normal density.",
    _X,
    "print(truncnorm.pdf(jnp.array([0.0, 2.0]), -1.0, 1.0))\n[0.58436865 0.        ]",
)
def pdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, b, loc, scale))


@doc(
    "truncnorm",
    "logcdf",
    "The log CDF: ``0`` above ``b``, ``-inf`` below ``a``; near 1 it is ``log1p(-sf)``.",
    _X,
    "print(truncnorm.logcdf(jnp.array([-2.0, 0.0, 0.5]), -1.0, 1.0))\n"
    "[       -inf -0.69314706 -0.24788049]",
)
def logcdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    z, a, b = jnp.broadcast_arrays((x - loc) / scale, a, b)
    whole = _log_mass(a, b)
    below, above = _log_mass(a, z) - whole, _log_mass(z, b) - whole
    zero = const(0, z)
    out = jnp.where(z > a, below, zero)  # (NaN points: 0, as JAX)
    out = jnp.where(below > const(-0.1, z), jnp.log1p(-jnp.exp(above)), out)
    out = jnp.where(z <= a, const(-np.inf, z), out)
    out = jnp.where(z >= b, zero, out)
    return jnp.where(a >= b, const(np.nan, z), out)


@doc(
    "truncnorm",
    "cdf",
    "The truncated normal CDF.",
    _X,
    "print(truncnorm.cdf(jnp.array([-2.0, 0.0, 0.5]), -1.0, 1.0))\n"
    "[0.         0.5000001  0.78045315]",
)
def cdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logcdf(x, a, b, loc, scale))


@doc(
    "truncnorm",
    "logsf",
    "The log survival function: the log CDF of the mirrored point and bounds.",
    _X,
    "print(truncnorm.logsf(jnp.array([-2.0, 0.0, 0.5]), -1.0, 1.0))\n"
    "[ 0.         -0.69314706 -1.5161899 ]",
)
def logsf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    return logcdf(-x, -b, -a, -loc, scale)


@doc(
    "truncnorm",
    "sf",
    "The survival function ``1 - cdf``.",
    _X,
    "print(truncnorm.sf(jnp.array([-2.0, 0.0, 0.5]), -1.0, 1.0))\n[1.        0.5000001 0.2195468]",
)
def sf(x, a, b, loc=0, scale=1):
    return jnp.exp(logsf(x, a, b, loc, scale))


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
