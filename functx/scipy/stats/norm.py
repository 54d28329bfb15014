"""``functx.scipy.stats.norm``: the normal distribution (``jax.scipy.stats.norm``)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points.", *LOC_SCALE)
_Q = ("q: probabilities.", *LOC_SCALE)


@doc(
    "norm",
    "logpdf",
    "The log of the normal density.",
    _X,
    "print(norm.logpdf(jnp.array([0.0, 1.0])))\n[-0.9189385 -1.4189385]",
)
def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    z = (x - loc) / scale
    return -(const(np.log(2 * np.pi), x) + z * z) / const(2, x) - jnp.log(scale)


@doc("norm", "pdf", "The normal density.", _X, "print(norm.pdf(jnp.array([0.0])))\n[0.3989423]")
def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


@doc(
    "norm",
    "cdf",
    "The normal CDF (``ndtr`` of the standardized point).",
    _X,
    "print(norm.cdf(jnp.array([0.0, 1.0])))\n[0.5       0.8413447]",
)
def cdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    return special.ndtr((x - loc) / scale)


@doc(
    "norm",
    "logcdf",
    "The log of the normal CDF (``log_ndtr``: accurate in the lower tail).",
    _X,
    "print(norm.logcdf(jnp.array([-10.0])))\n[-53.231285]",
)
def logcdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    return special.log_ndtr((x - loc) / scale)


@doc(
    "norm",
    "sf",
    "The survival function ``1 - cdf``, computed as the CDF of the mirrored point.",
    _X,
    "print(norm.sf(jnp.array([1.0])))\n[0.15865526]",
)
def sf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    return special.ndtr((loc - x) / scale)


@doc(
    "norm",
    "logsf",
    "The log of the survival function.",
    _X,
    "print(norm.logsf(jnp.array([10.0])))\n[-53.231285]",
)
def logsf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    return special.log_ndtr((loc - x) / scale)


@doc(
    "norm",
    "ppf",
    "The quantile function (inverse CDF): ``loc + scale * ndtri(q)``.",
    _Q,
    "print(norm.ppf(jnp.array([0.5, 0.975])))\n[0.        1.9599645]",
)
def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return special.ndtri(q) * scale + loc


@doc(
    "norm",
    "isf",
    "The inverse survival function: ``ppf(1 - q)``.",
    _Q,
    "print(norm.isf(jnp.array([0.5])))\n[0.]",
)
def isf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return ppf(const(1, q) - q, loc, scale)


__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
