"""``functx.scipy.stats.binom``: the binomial distribution."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import const, doc, promote

_K = (
    "k: the number of successes.",
    "n: the number of trials.",
    "p: the success probability.",
    "loc: the shift (default 0).",
)


@doc(
    "binom",
    "logpmf",
    "The log probability ``log C(n, k) + xlogy(k, p) + xlog1py(n - k, -p)``\n    "
    "(``-inf`` outside ``[0, n]``).",
    _K,
    "print(binom.logpmf(jnp.array([0.0, 1.0, 3.0]), 2, 0.5))\n[-1.3862944 -0.6931472       -inf]",
)
def logpmf(k, n, p, loc=0):
    k, n, p, loc = promote(k, n, p, loc)
    y = k - loc
    one = const(1, k)
    comb = special.gammaln(n + one) - special.gammaln(y + one) - special.gammaln(n - y + one)
    linear = special.xlogy(y, p) + special.xlog1py(n - y, -p)
    out = comb + linear
    # an exact zero of the linear part (p = 0 or 1 at the edges) is an exact probability 1
    out = jnp.where(((y == 0) & (n == 0)) | (linear == 0), jnp.zeros_like(out), out)
    return jnp.where((k >= loc) & (k < loc + n + one), out, const(-np.inf, k))


@doc(
    "binom",
    "pmf",
    "The binomial probability mass.",
    _K,
    "print(binom.pmf(jnp.array([1.0]), 2, 0.5))\n[0.5]",
)
def pmf(k, n, p, loc=0):
    return jnp.exp(logpmf(k, n, p, loc))


__all__ = ["logpmf", "pmf"]
