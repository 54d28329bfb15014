"""``functx.scipy.stats.beta``: the beta distribution: density, distribution and survival
functions (through ``special.betainc``, as JAX computes them)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points (0 outside ``[loc, loc + scale]``).", "a, b: the shapes.", *LOC_SCALE)


@doc(
    "beta",
    "logpdf",
    "The log density ``xlogy(a - 1, y) + xlog1py(b - 1, -y) - betaln(a, b) - log(scale)``\n    "
    "(NaN for non-positive ``a``, ``b`` or ``scale``).",
    _X,
    "print(beta.logpdf(jnp.array([0.5, 2.0]), 2.0, 2.0))\n[0.40546513       -inf]",
)
def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    one = const(1, x)
    y = (x - loc) / scale
    out = special.xlogy(a - one, y) + special.xlog1py(b - one, -y)
    out = out - special.betaln(a, b) - jnp.log(scale)
    out = jnp.where((x < loc) | (x > loc + scale), const(-np.inf, x), out)
    return jnp.where((a <= 0) | (b <= 0) | (scale <= 0), const(np.nan, x), out)


@doc("beta", "pdf", "The beta density.", _X, "print(beta.pdf(jnp.array([0.5]), 2.0, 2.0))\n[1.5]")
def pdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, b, loc, scale))


def _beta_y(x, loc, scale):
    return jnp.clip((x - loc) / scale, const(0, x), const(1, x))


@doc(
    "beta",
    "cdf",
    "The distribution function ``betainc(a, b, (x - loc) / scale)``.",
    _X,
    "print(beta.cdf(jnp.array([0.2, 0.5]), 2.0, 3.0))\n[0.1808 0.6875]",
)
def cdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    return special.betainc(a, b, _beta_y(x, loc, scale))


@doc(
    "beta",
    "logcdf",
    "The log of the distribution function.",
    _X,
    "print(beta.logcdf(jnp.array([0.5]), 2.0, 3.0))\n[-0.37469345]",
)
def logcdf(x, a, b, loc=0, scale=1):
    return jnp.log(cdf(x, a, b, loc, scale))


@doc(
    "beta",
    "sf",
    "The survival function ``betainc(b, a, 1 - (x - loc) / scale)``.",
    _X,
    "print(beta.sf(jnp.array([0.2, 0.5]), 2.0, 3.0))\n[0.81920004 0.31249997]",
)
def sf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    return special.betainc(b, a, const(1, x) - _beta_y(x, loc, scale))


@doc(
    "beta",
    "logsf",
    "The log of the survival function.",
    _X,
    "print(beta.logsf(jnp.array([0.5]), 2.0, 3.0))\n[-1.1631509]",
)
def logsf(x, a, b, loc=0, scale=1):
    return jnp.log(sf(x, a, b, loc, scale))


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
