"""``functx.scipy.stats.laplace``: the Laplace (double exponential) distribution."""

from __future__ import annotations

from functx import numpy as jnp
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points.", *LOC_SCALE)


@doc(
    "laplace",
    "logpdf",
    "The log density ``-|x - loc| / scale - log(2 scale)``.",
    _X,
    "print(laplace.logpdf(jnp.array([0.0, 1.0])))\n[-0.6931472 -1.6931472]",
)
def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    return -jnp.abs(x - loc) / scale - jnp.log(const(2, x) * scale)


@doc("laplace", "pdf", "The Laplace density.", _X, "print(laplace.pdf(jnp.array([0.0])))\n[0.5]")
def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


@doc(
    "laplace",
    "cdf",
    "The CDF: ``exp(z) / 2`` for ``z <= 0``, ``1 - exp(-z) / 2`` above.",
    _X,
    "print(laplace.cdf(jnp.array([0.0, 1.0])))\n[0.5       0.8160603]",
)
def cdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    z = (x - loc) / scale
    half = const(0.5, z)
    below = z <= 0
    return jnp.where(
        below,
        half * jnp.exp(jnp.where(below, z, -z)),
        const(1, z) - half * jnp.exp(-jnp.where(below, -z, z)),
    )


__all__ = ["cdf", "logpdf", "pdf"]
