"""``functx.scipy.stats.logistic``: the logistic distribution."""

from __future__ import annotations

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points.", *LOC_SCALE)
_Q = ("q: probabilities.", *LOC_SCALE)


@doc(
    "logistic",
    "logpdf",
    "The log density ``-2 logaddexp(z / 2, -z / 2) - log(scale)``.",
    _X,
    "print(logistic.logpdf(jnp.array([0.0])))\n[-1.3862944]",
)
def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    half = (x - loc) / scale / const(2, x)
    return const(-2, x) * jnp.logaddexp(half, -half) - jnp.log(scale)


@doc(
    "logistic", "pdf", "The logistic density.", _X, "print(logistic.pdf(jnp.array([0.0])))\n[0.25]"
)
def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


@doc(
    "logistic",
    "cdf",
    "The CDF ``expit((x - loc) / scale)``.",
    _X,
    "print(logistic.cdf(jnp.array([0.0])))\n[0.5]",
)
def cdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    return special.expit((x - loc) / scale)


@doc(
    "logistic",
    "sf",
    "The survival function ``expit(-(x - loc) / scale)``.",
    _X,
    "print(logistic.sf(jnp.array([0.0])))\n[0.5]",
)
def sf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    return special.expit((loc - x) / scale)


@doc(
    "logistic",
    "ppf",
    "The quantile function ``loc + scale * logit(q)``.",
    _Q,
    "print(logistic.ppf(jnp.array([0.5])))\n[0.]",
)
def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return special.logit(q) * scale + loc


@doc(
    "logistic",
    "isf",
    "The inverse survival function ``loc - scale * logit(q)``.",
    _Q,
    "print(logistic.isf(jnp.array([0.5])))\n[0.]",
)
def isf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return -special.logit(q) * scale + loc


__all__ = ["cdf", "isf", "logpdf", "pdf", "ppf", "sf"]
