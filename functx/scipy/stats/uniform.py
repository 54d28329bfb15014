"""``functx.scipy.stats.uniform``: the uniform distribution on ``[loc, loc + scale]``."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points.", *LOC_SCALE)


@doc(
    "uniform",
    "logpdf",
    "The log density ``-log(scale)`` inside the interval, ``-inf`` outside.",
    _X,
    "print(uniform.logpdf(jnp.array([0.5, 2.0]), 0, 2))\n[-0.6931472 -0.6931472]",
)
def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    out = jnp.broadcast_to(-jnp.log(scale), jnp.broadcast_shapes(x.shape, loc.shape, scale.shape))
    return jnp.where((x < loc) | (x > loc + scale), const(-np.inf, x), out)


@doc(
    "uniform",
    "pdf",
    "The uniform density.",
    _X,
    "print(uniform.pdf(jnp.array([0.5, 2.0])))\n[1. 0.]",
)
def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


@doc(
    "uniform",
    "cdf",
    "The CDF ``clip((x - loc) / scale, 0, 1)``.",
    _X,
    "print(uniform.cdf(jnp.array([-1.0, 0.25, 3.0])))\n[0.   0.25 1.  ]",
)
def cdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    z = (x - loc) / scale
    return jnp.where(x < loc, jnp.zeros_like(z), jnp.where(x > loc + scale, jnp.ones_like(z), z))


@doc(
    "uniform",
    "ppf",
    "The quantile function ``loc + scale * q`` (NaN outside [0, 1]).",
    ("q: probabilities.", *LOC_SCALE),
    "print(uniform.ppf(jnp.array([0.5]), 1, 2))\n[2.]",
)
def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    bad = jnp.isnan(q) | (q < 0) | (q > 1)
    return jnp.where(bad, const(np.nan, q), loc + scale * q)


__all__ = ["cdf", "logpdf", "pdf", "ppf"]
