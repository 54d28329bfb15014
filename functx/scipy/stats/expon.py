"""``functx.scipy.stats.expon``: the exponential distribution (``jax.scipy.stats.expon``)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points (the density is 0 below ``loc``).", *LOC_SCALE)


def _z(x, loc, scale):
    x, loc, scale = promote(x, loc, scale)
    return x, loc, scale, (x - loc) / scale


@doc(
    "expon",
    "logpdf",
    "The log density ``-(x - loc) / scale - log(scale)`` (``-inf`` below ``loc``).",
    _X,
    "print(expon.logpdf(jnp.array([-1.0, 0.5])))\n[-inf -0.5]",
)
def logpdf(x, loc=0, scale=1):
    x, loc, scale, z = _z(x, loc, scale)
    return jnp.where(x < loc, const(-np.inf, z), -z - jnp.log(scale))


@doc("expon", "pdf", "The exponential density.", _X, "print(expon.pdf(jnp.array([0.0])))\n[1.]")
def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


@doc(
    "expon",
    "logsf",
    "The log survival function ``-(x - loc) / scale`` (0 below ``loc``).",
    _X,
    "print(expon.logsf(jnp.array([2.0])))\n[-2.]",
)
def logsf(x, loc=0, scale=1):
    x, loc, scale, z = _z(x, loc, scale)
    return jnp.where(x < loc, jnp.zeros_like(z), -z)


@doc(
    "expon",
    "sf",
    "The survival function ``exp(-(x - loc) / scale)``.",
    _X,
    "print(expon.sf(jnp.array([0.0])))\n[1.]",
)
def sf(x, loc=0, scale=1):
    return jnp.exp(logsf(x, loc, scale))


@doc(
    "expon",
    "cdf",
    "The CDF ``-expm1(-(x - loc) / scale)`` (0 below ``loc``).",
    _X,
    "print(expon.cdf(jnp.array([1.0])))\n[0.63212055]",
)
def cdf(x, loc=0, scale=1):
    x, loc, scale, z = _z(x, loc, scale)
    return jnp.where(x < loc, jnp.zeros_like(z), -jnp.expm1(-z))


@doc(
    "expon",
    "logcdf",
    "The log CDF, ``log1p(-sf)``.",
    _X,
    "print(expon.logcdf(jnp.array([1.0])))\n[-0.45867512]",
)
def logcdf(x, loc=0, scale=1):
    return jnp.log1p(-sf(x, loc, scale))


@doc(
    "expon",
    "ppf",
    "The quantile function ``loc - scale * log1p(-q)`` (NaN outside [0, 1]).",
    ("q: probabilities.", *LOC_SCALE),
    "print(expon.ppf(jnp.array([0.5])))\n[0.6931472]",
)
def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    bad = jnp.isnan(q) | (q < 0) | (q > 1)
    return jnp.where(bad, const(np.nan, q), loc - scale * jnp.log1p(-q))


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
