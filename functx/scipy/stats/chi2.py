"""``functx.scipy.stats.chi2``: the chi-squared distribution (density only: the CDF needs the
regularized incomplete gamma function, which functx does not have yet)."""

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


__all__ = ["logpdf", "pdf"]
