"""``functx.scipy.stats.gumbel_r``: the Gumbel distribution of maxima
(``jax.scipy.stats.gumbel_r``)."""

from __future__ import annotations

from functx import numpy as jnp
from functx.scipy.stats import _gumbel as g
from functx.scipy.stats._common import LOC_SCALE, doc

_X = ("x: the points.", *LOC_SCALE)
_S = -1


@doc(
    "gumbel_r",
    "logpdf",
    "The log density (NaN where ``scale <= 0``).",
    _X,
    "print(jnp.round(gumbel_r.logpdf(jnp.array([0.0, 1.0])), 4))\n[-1.     -1.3679]",
)
def logpdf(x, loc=0, scale=1):
    return g.logpdf(_S, x, loc, scale)


@doc(
    "gumbel_r",
    "pdf",
    "The density.",
    _X,
    "print(jnp.round(gumbel_r.pdf(jnp.array([0.0])), 4))\n[0.3679]",
)
def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


@doc(
    "gumbel_r",
    "logcdf",
    "The log CDF.",
    _X,
    "print(jnp.round(gumbel_r.logcdf(jnp.array([0.0])), 4))\n[-1.]",
)
def logcdf(x, loc=0, scale=1):
    return g.log_lower(_S, x, loc, scale)


@doc(
    "gumbel_r",
    "cdf",
    "The CDF.",
    _X,
    "print(jnp.round(gumbel_r.cdf(jnp.array([0.0])), 4))\n[0.3679]",
)
def cdf(x, loc=0, scale=1):
    return jnp.exp(logcdf(x, loc, scale))


@doc(
    "gumbel_r",
    "logsf",
    "The log survival function.",
    _X,
    "print(jnp.round(gumbel_r.logsf(jnp.array([0.0])), 4))\n[-0.4587]",
)
def logsf(x, loc=0, scale=1):
    return g.log_upper(_S, x, loc, scale)


@doc(
    "gumbel_r",
    "sf",
    "The survival function.",
    _X,
    "print(jnp.round(gumbel_r.sf(jnp.array([0.0])), 4))\n[0.6321]",
)
def sf(x, loc=0, scale=1):
    return g.upper(_S, x, loc, scale)


@doc(
    "gumbel_r",
    "ppf",
    "The quantile function (NaN outside ``0 < p < 1``).",
    ("p: the probabilities.", *LOC_SCALE),
    "print(jnp.round(gumbel_r.ppf(jnp.array([0.5])), 4))\n[0.3665]",
)
def ppf(p, loc=0, scale=1):
    return g.ppf(_S, p, loc, scale)


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
