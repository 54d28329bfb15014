"""``functx.scipy.stats.gamma``: the gamma distribution: density, distribution and survival
functions (through ``special.gammainc``/``gammaincc``, as JAX computes them)."""

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


def _gamma_y(x, loc, scale):
    return jnp.clip((x - loc) / scale, const(0, x), const(np.inf, x))


@doc(
    "gamma",
    "cdf",
    "The distribution function ``gammainc(a, (x - loc) / scale)`` (0 below ``loc``).",
    _X,
    "print(gamma.cdf(jnp.array([1.0, 3.0]), 2.0))\n[0.26424113 0.8008517 ]",
)
def cdf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote(x, a, loc, scale)
    return special.gammainc(a, _gamma_y(x, loc, scale))


@doc(
    "gamma",
    "logcdf",
    "The log of the distribution function.",
    _X,
    "print(gamma.logcdf(jnp.array([1.0]), 2.0))\n[-1.3308933]",
)
def logcdf(x, a, loc=0, scale=1):
    return jnp.log(cdf(x, a, loc, scale))


@doc(
    "gamma",
    "sf",
    "The survival function ``gammaincc(a, (x - loc) / scale)`` (1 below ``loc``).",
    _X,
    "print(gamma.sf(jnp.array([1.0, -1.0]), 2.0))\n[0.7357589 1.       ]",
)
def sf(x, a, loc=0, scale=1):
    x, a, loc, scale = promote(x, a, loc, scale)
    y = (x - loc) / scale
    return jnp.where(y < const(0, y), const(1, y), special.gammaincc(a, y))


@doc(
    "gamma",
    "logsf",
    "The log of the survival function.",
    _X,
    "print(gamma.logsf(jnp.array([1.0]), 2.0))\n[-0.30685282]",
)
def logsf(x, a, loc=0, scale=1):
    return jnp.log(sf(x, a, loc, scale))


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "sf"]
