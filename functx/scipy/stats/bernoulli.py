"""``functx.scipy.stats.bernoulli``: the Bernoulli distribution."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import const, doc, promote

_K = ("k: the outcomes (0 or 1).", "p: the probability of 1.", "loc: the shift (default 0).")


@doc(
    "bernoulli",
    "logpmf",
    "The log probability ``xlogy(k, p) + xlog1py(1 - k, -p)`` (``-inf`` outside [0, 1]).",
    _K,
    "print(bernoulli.logpmf(jnp.array([0.0, 1.0]), 0.25))\n[-0.28768206 -1.3862944 ]",
)
def logpmf(k, p, loc=0):
    k, p, loc = promote(k, p, loc)
    x = k - loc
    out = special.xlogy(x, p) + special.xlog1py(const(1, k) - x, -p)
    return jnp.where((x < 0) | (x > 1), const(-np.inf, k), out)


@doc(
    "bernoulli",
    "pmf",
    "The Bernoulli probability mass.",
    _K,
    "print(bernoulli.pmf(jnp.array([1.0]), 0.25))\n[0.25]",
)
def pmf(k, p, loc=0):
    return jnp.exp(logpmf(k, p, loc))


@doc(
    "bernoulli",
    "cdf",
    "The CDF: 0 below 0, ``1 - p`` on [0, 1), 1 from 1 (NaN for a bad ``p``).",
    ("k: the points.", "p: the probability of 1."),
    "print(bernoulli.cdf(jnp.array([-1.0, 0.5, 1.0]), 0.25))\n[0.   0.75 1.  ]",
)
def cdf(k, p):
    k, p = promote(k, p)
    one = const(1, k)
    out = jnp.where(k < 0, jnp.zeros_like(k * p), jnp.where(k < 1, one - p, one))
    bad = jnp.isnan(k) | jnp.isnan(p) | (p < 0) | (p > 1)
    return jnp.where(bad, const(np.nan, k), out)


@doc(
    "bernoulli",
    "ppf",
    "The quantile function: 0 for ``q <= 1 - p``, else 1 (NaN outside [0, 1]).",
    ("q: probabilities.", "p: the probability of 1."),
    "print(bernoulli.ppf(jnp.array([0.5, 0.9]), 0.25))\n[0. 1.]",
)
def ppf(q, p):
    q, p = promote(q, p)
    one = const(1, q)
    out = jnp.where(q <= one - p, jnp.zeros_like(q * p), jnp.ones_like(q * p))
    bad = jnp.isnan(q) | jnp.isnan(p) | (p < 0) | (p > 1) | (q < 0) | (q > 1)
    return jnp.where(bad, const(np.nan, q), out)


__all__ = ["cdf", "logpmf", "pmf", "ppf"]
