"""``functx.scipy.stats.pareto``: the Pareto distribution with shape ``b``
(``jax.scipy.stats.pareto``): density ``b / y**(b + 1)`` for ``y = (x - loc) / scale >= 1``."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points (the density is 0 below ``loc + scale``).", "b: the shape.", *LOC_SCALE)


def _y(x, b, loc, scale):
    x, b, loc, scale = promote(x, b, loc, scale)
    return (x - loc) / scale, b, scale, x < loc + scale


@doc(
    "pareto",
    "logpdf",
    "The log density ``log(b / scale) - (b + 1) log(y)`` (``-inf`` below ``loc + scale``).",
    _X,
    "print(pareto.logpdf(jnp.array([0.5, 2.0]), 3.0))\n[      -inf -1.6739764]",
)
def logpdf(x, b, loc=0, scale=1):
    y, b, scale, below = _y(x, b, loc, scale)
    out = -(jnp.log(scale / b) + (b + 1) * jnp.log(y))
    return jnp.where(below, const(-np.inf, out), out)


@doc("pareto", "pdf", "The density.", _X, "print(pareto.pdf(jnp.array([1.0]), 3.0))\n[3.]")
def pdf(x, b, loc=0, scale=1):
    return jnp.exp(logpdf(x, b, loc, scale))


@doc(
    "pareto",
    "cdf",
    "The CDF ``1 - y**-b`` (0 below ``loc + scale``).",
    _X,
    "print(pareto.cdf(jnp.array([2.0]), 1.0))\n[0.5]",
)
def cdf(x, b, loc=0, scale=1):
    y, b, _, below = _y(x, b, loc, scale)
    out = 1 - y ** (-b)
    return jnp.where(below, jnp.zeros_like(out), out)


@doc(
    "pareto",
    "logcdf",
    "The log CDF ``log1p(-y**-b)`` (``-inf`` below ``loc + scale``).",
    _X,
    "print(pareto.logcdf(jnp.array([2.0]), 1.0))\n[-0.6931472]",
)
def logcdf(x, b, loc=0, scale=1):
    y, b, _, below = _y(x, b, loc, scale)
    out = jnp.log1p(-(y ** (-b)))
    return jnp.where(below, const(-np.inf, out), out)


@doc(
    "pareto",
    "logsf",
    "The log survival function ``-b log(y)`` (0 below ``loc + scale``).",
    _X,
    "print(pareto.logsf(jnp.array([2.0]), 1.0))\n[-0.6931472]",
)
def logsf(x, b, loc=0, scale=1):
    y, b, _, below = _y(x, b, loc, scale)
    out = -b * jnp.log(y)
    return jnp.where(below, jnp.zeros_like(out), out)


@doc("pareto", "sf", "The survival function.", _X, "print(pareto.sf(jnp.array([2.0]), 1.0))\n[0.5]")
def sf(x, b, loc=0, scale=1):
    return jnp.exp(logsf(x, b, loc, scale))


@doc(
    "pareto",
    "ppf",
    "The quantile function ``loc + scale (1 - q)**(-1 / b)`` (NaN outside ``0 <= q <= 1``).",
    ("q: the probabilities.", "b: the shape.", *LOC_SCALE),
    "print(pareto.ppf(jnp.array([0.5]), 1.0))\n[2.]",
)
def ppf(q, b, loc=0, scale=1):
    q, b, loc, scale = promote(q, b, loc, scale)
    out = loc + scale * (1 - q) ** (-1 / b)
    bad = jnp.isnan(q) | (q < 0) | (q > 1)
    return jnp.where(bad, const(np.nan, out), out)


__all__ = ["cdf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
