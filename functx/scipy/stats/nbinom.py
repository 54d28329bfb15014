"""``functx.scipy.stats.nbinom``: the negative binomial distribution (failures before the
``n``-th success)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import const, doc, promote

_K = (
    "k: the number of failures (``-inf`` below ``loc``).",
    "n: the number of successes (real values allowed).",
    "p: the success probability.",
    "loc: the shift (default 0).",
)


@doc(
    "nbinom",
    "logpmf",
    "The log probability ``gammaln(k + n) - gammaln(n) - gammaln(k + 1) + xlogy(n, p)\n    "
    "+ xlogy(k, 1 - p)``.",
    _K,
    "print(nbinom.logpmf(jnp.array([0.0, 2.0, -1.0]), 3, 0.5))\n[-2.0794415 -1.6739764       -inf]",
)
def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote(k, n, p, loc)
    one = const(1, k)
    y = k - loc
    comb = special.gammaln(y + n) - special.gammaln(n) - special.gammaln(y + one)
    out = comb + special.xlogy(n, p) + special.xlogy(y, one - p)
    return jnp.where(k < loc, const(-np.inf, k), out)


@doc(
    "nbinom",
    "pmf",
    "The negative binomial probability mass.",
    _K,
    "print(nbinom.pmf(jnp.array([0.0, 2.0]), 3, 0.5))\n[0.125  0.1875]",
)
def pmf(k, n, p, loc=0):
    return jnp.exp(logpmf(k, n, p, loc))


__all__ = ["logpmf", "pmf"]
