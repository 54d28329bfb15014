"""``functx.scipy.stats.chi2``: the chi-squared distribution: density, distribution and
survival functions (through ``special.gammainc``/``gammaincc``, as JAX computes them)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points (the density is 0 below ``loc``).", "df: the degrees of freedom.", *LOC_SCALE)


@doc(
    "chi2",
    "logpdf",
    "The log density of the chi-squared distribution.",
    _X,
    "print(chi2.logpdf(jnp.array([1.0]), 2))\n[-1.1931472]",
)
def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote(x, df, loc, scale)
    y = (x - loc) / scale
    h = df / const(2, x)
    out = (h - const(1, x)) * jnp.log(y) - y / const(2, x)
    out = out - special.gammaln(h) - h * const(np.log(2.0), x) - jnp.log(scale)
    return jnp.where(x < loc, const(-np.inf, x), out)


@doc(
    "chi2",
    "pdf",
    "The chi-squared density.",
    _X,
    "print(chi2.pdf(jnp.array([1.0]), 2))\n[0.30326533]",
)
def pdf(x, df, loc=0, scale=1):
    return jnp.exp(logpdf(x, df, loc, scale))


def _chi2_y(x, loc, scale):
    return jnp.clip((x - loc) / (scale * const(2, scale)), const(0, x), const(np.inf, x))


@doc(
    "chi2",
    "cdf",
    "The distribution function ``gammainc(df / 2, (x - loc) / (2 scale))``.",
    _X,
    "print(chi2.cdf(jnp.array([1.0, 3.0]), 2.0))\n[0.39346933 0.77686983]",
)
def cdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote(x, df, loc, scale)
    return special.gammainc(df / const(2, df), _chi2_y(x, loc, scale))


@doc(
    "chi2",
    "logcdf",
    "The log of the distribution function.",
    _X,
    "print(chi2.logcdf(jnp.array([1.0]), 2.0))\n[-0.93275213]",
)
def logcdf(x, df, loc=0, scale=1):
    return jnp.log(cdf(x, df, loc, scale))


@doc(
    "chi2",
    "sf",
    "The survival function ``gammaincc(df / 2, (x - loc) / (2 scale))``.",
    _X,
    "print(chi2.sf(jnp.array([1.0, 3.0]), 2.0))\n[0.60653067 0.22313017]",
)
def sf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote(x, df, loc, scale)
    return special.gammaincc(df / const(2, df), _chi2_y(x, loc, scale))


@doc(
    "chi2",
    "logsf",
    "The log of the survival function.",
    _X,
    "print(chi2.logsf(jnp.array([1.0]), 2.0))\n[-0.5]",
)
def logsf(x, df, loc=0, scale=1):
    return jnp.log(sf(x, df, loc, scale))


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
