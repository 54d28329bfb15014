"""``functx.scipy.stats.poisson``: the Poisson distribution (``cdf`` through
``special.gammaincc``, as JAX computes it; ``entropy`` is not there yet)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import const, doc, promote

_K = (
    "k: the counts (non-integers and negatives have probability 0).",
    "mu: the mean.",
    "loc: the shift (default 0).",
)


@doc(
    "poisson",
    "logpmf",
    "The log probability ``xlogy(k, mu) - gammaln(k + 1) - mu``.",
    _K,
    "print(poisson.logpmf(jnp.array([0.0, 2.0, 1.5]), 2.0))\n[-2.        -1.3068528       -inf]",
)
def logpmf(k, mu, loc=0):
    k, mu, loc = promote(k, mu, loc)
    x = k - loc
    out = special.xlogy(x, mu) - special.gammaln(x + const(1, k)) - mu
    return jnp.where((x < 0) | (jnp.round(k) != k), const(-np.inf, k), out)


@doc(
    "poisson",
    "pmf",
    "The Poisson probability mass.",
    _K,
    "print(poisson.pmf(jnp.array([0.0]), 2.0))\n[0.13533528]",
)
def pmf(k, mu, loc=0):
    return jnp.exp(logpmf(k, mu, loc))


@doc(
    "poisson",
    "cdf",
    "The distribution function ``gammaincc(floor(k - loc) + 1, mu)`` (0 below ``loc``).",
    ("k: the points.", "mu: the mean.", "loc: the location (default 0)."),
    "print(poisson.cdf(jnp.array([0.0, 2.0, -1.0]), 1.5))\n[0.22313017 0.80884683 0.        ]",
)
def cdf(k, mu, loc=0):
    k, mu, loc = promote(k, mu, loc)
    x = k - loc
    p = special.gammaincc(jnp.floor(const(1, x) + x), mu)
    return jnp.where(x < const(0, x), const(0, x), p)


__all__ = ["cdf", "logpmf", "pmf"]
