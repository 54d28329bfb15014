"""``functx.scipy.stats.poisson``: the Poisson distribution (``cdf`` through
``special.gammaincc``, as JAX computes it)."""

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


# entropy: below this mean, the sum of -p log p over the first _TERMS counts (masked beyond
# mu + 10 sqrt(mu) + 20, where the mass is negligible); above it, the asymptotic series
_SUMMED_BELOW, _TERMS = 100, 250


@doc(
    "poisson",
    "entropy",
    "The entropy ``-sum p log p``: summed over the counts below a mean of 100, above it the\n"
    "    asymptotic ``log(2 pi e mu) / 2 - 1 / (12 mu)`` (JAX's split; 0 at ``mu = 0``, NaN\n"
    "    below; unlike JAX's, the gradient above 100 is finite).",
    ("mu: the mean.", "loc: the shift (the entropy does not depend on it; it broadcasts)."),
    "print(poisson.entropy(jnp.array([0.0, 0.5, 3.0, 150.0])))\n"
    "[0.         0.92763746 1.9314702  3.9237006 ]",
)
def entropy(mu, loc=0):
    mu, loc = promote(mu, loc)
    k = jnp.arange(_TERMS, dtype=mu.dtype).reshape((_TERMS,) + (1,) * mu.ndim)
    small = jnp.where(mu < _SUMMED_BELOW, mu, jnp.ones_like(mu))  # (no NaN in the unused branch)
    keep = k < jnp.ceil(small + 10 * jnp.sqrt(small) + 20)
    logp = jnp.where(keep, logpmf(k, small), jnp.zeros_like(small))
    # -p log p from log p: no infinite derivative where p underflows to 0
    summed = jnp.sum(jnp.where(keep, -jnp.exp(logp) * logp, jnp.zeros_like(logp)), axis=0)
    big = jnp.where(mu < _SUMMED_BELOW, jnp.full_like(mu, _SUMMED_BELOW), mu)
    series = const(0.5, mu) * jnp.log(const(2 * np.pi * np.e, mu) * big) - 1 / (12 * big)
    out = jnp.where(mu == 0, jnp.zeros_like(mu), jnp.where(mu < _SUMMED_BELOW, summed, series))
    out = jnp.where(mu < 0, const(np.nan, mu), out)
    return jnp.broadcast_to(out, jnp.broadcast_shapes(mu.shape, loc.shape))


__all__ = ["cdf", "entropy", "logpmf", "pmf"]
