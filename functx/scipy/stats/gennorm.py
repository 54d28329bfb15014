"""``functx.scipy.stats.gennorm``: the generalized normal distribution (density
``beta / (2 gamma(1/beta)) exp(-|x|**beta)``; JAX's functions take no ``loc`` or ``scale``)."""

from __future__ import annotations

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import const, doc, promote

_X = ("x: the points.", "beta: the shape (2: a normal of variance 1/2; 1: Laplace).")


@doc(
    "gennorm",
    "logpdf",
    "The log density ``log(beta / 2) - gammaln(1 / beta) - |x|**beta``.",
    _X,
    "print(gennorm.logpdf(jnp.array([0.0, 1.5]), 2.0))\n[-0.5723649 -2.8223648]",
)
def logpdf(x, beta):
    x, beta = promote(x, beta)
    one = const(1, x)
    return jnp.log(const(0.5, x) * beta) - special.gammaln(one / beta) - jnp.abs(x) ** beta


@doc(
    "gennorm",
    "pdf",
    "The generalized normal density.",
    _X,
    "print(gennorm.pdf(jnp.array([0.0, 1.5]), 2.0))\n[0.5641896  0.05946515]",
)
def pdf(x, beta):
    return jnp.exp(logpdf(x, beta))


@doc(
    "gennorm",
    "cdf",
    "The CDF ``(1 + sign(x) gammainc(1 / beta, |x|**beta)) / 2``.",
    _X,
    "print(gennorm.cdf(jnp.array([-1.0, 0.0, 1.5]), 2.0))\n[0.07864961 0.5        0.9830526 ]",
)
def cdf(x, beta):
    x, beta = promote(x, beta)
    one = const(1, x)
    inc = special.gammainc(one / beta, jnp.abs(x) ** beta)
    return const(0.5, x) * (one + jnp.sign(x) * inc)


__all__ = ["cdf", "logpdf", "pdf"]
