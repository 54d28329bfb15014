"""``functx.scipy.stats.gamma``: the gamma distribution (density only: the CDF needs the
regularized incomplete gamma function, which functx does not have yet)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points (the density is 0 below ``loc``).", "a: the shape.", *LOC_SCALE)


@doc(
    "gamma",
    "logpdf",
    "The log density ``xlogy(a - 1, y) - y - gammaln(a) - log(scale)``, ``y = (x - loc) / scale``.",
    _X,
    "print(gamma.logpdf(jnp.array([1.0, -1.0]), 2.0))\n[ -1. -inf]",
)
def logpdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote(x, a, loc, scale)
    ok = x >= loc
    y = jnp.where(ok, (x - loc) / scale, const(1, x))
    out = special.xlogy(a - const(1, x), y) - y - special.gammaln(a) - jnp.log(scale)
    return jnp.where(ok, out, const(-np.inf, x))


@doc(
    "gamma",
    "pdf",
    "The gamma density.",
    _X,
    "print(gamma.pdf(jnp.array([1.0]), 2.0))\n[0.36787942]",
)
def pdf(x, a, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, loc, scale))


__all__ = ["logpdf", "pdf"]
