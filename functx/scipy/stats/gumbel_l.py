"""``functx.scipy.stats.gumbel_l``: the Gumbel distribution of minima
(``jax.scipy.stats.gumbel_l``)."""

from __future__ import annotations

from functx import numpy as jnp
from functx.scipy.stats import _gumbel as g
from functx.scipy.stats._common import LOC_SCALE, doc

_X = ("x: the points.", *LOC_SCALE)
_S = 1


@doc(
    "gumbel_l",
    "logpdf",
    "The log density (NaN where ``scale <= 0``).",
    _X,
    "print(jnp.round(gumbel_l.logpdf(jnp.array([0.0, 1.0])), 4))\n[-1.     -1.7183]",
)
def logpdf(x, loc=0, scale=1):
    return g.logpdf(_S, x, loc, scale)


@doc(
    "gumbel_l",
    "pdf",
    "The density.",
    _X,
    "print(jnp.round(gumbel_l.pdf(jnp.array([0.0])), 4))\n[0.3679]",
)
def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


@doc(
    "gumbel_l",
    "logcdf",
    "The log CDF.",
    _X,
    "print(jnp.round(gumbel_l.logcdf(jnp.array([0.0])), 4))\n[-0.4587]",
)
def logcdf(x, loc=0, scale=1):
    return g.log_upper(_S, x, loc, scale)


@doc(
    "gumbel_l",
    "cdf",
    "The CDF.",
    _X,
    "print(jnp.round(gumbel_l.cdf(jnp.array([0.0])), 4))\n[0.6321]",
)
def cdf(x, loc=0, scale=1):
    return g.upper(_S, x, loc, scale)


@doc(
    "gumbel_l",
    "logsf",
    "The log survival function.",
    _X,
    "print(jnp.round(gumbel_l.logsf(jnp.array([0.0])), 4))\n[-1.]",
)
def logsf(x, loc=0, scale=1):
    return g.log_lower(_S, x, loc, scale)


@doc(
    "gumbel_l",
    "sf",
    "The survival function.",
    _X,
    "print(jnp.round(gumbel_l.sf(jnp.array([0.0])), 4))\n[0.3679]",
)
def sf(x, loc=0, scale=1):
    return jnp.exp(logsf(x, loc, scale))


@doc(
    "gumbel_l",
    "ppf",
    "The quantile function (NaN outside ``0 < p < 1``).",
    ("p: the probabilities.", *LOC_SCALE),
    "print(jnp.round(gumbel_l.ppf(jnp.array([0.5])), 4))\n[-0.3665]",
)
def ppf(p, loc=0, scale=1):
    return g.ppf(_S, p, loc, scale)


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
