"""``functx.scipy.stats.betabinom``: the beta-binomial distribution (a binomial whose success
probability is beta distributed).

Differences from JAX: the support is ``0 <= floor(k) - loc <= n`` as in SciPy; JAX tests
``floor(k) >= 0`` instead of ``floor(k) >= loc``, so for ``loc != 0`` it gives mass below ``loc``
or none just above 0 (tests/scipy/test_stats_more.py checks SciPy's values there)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import const, doc, promote

_K = (
    "k: the number of successes (rounded down, as in JAX).",
    "n: the number of trials (NaN where negative).",
    "a, b: the beta shapes (NaN where not positive).",
    "loc: the shift (default 0).",
)


@doc(
    "betabinom",
    "logpmf",
    "The log probability ``betaln(y + a, n - y + b) - betaln(a, b) - log1p(n)\n    "
    "- betaln(n - y + 1, y + 1)`` with ``y = floor(k) - loc`` (``-inf`` outside ``[0, n]``,\n"
    "    as in SciPy: JAX's bound is ``floor(k) >= 0``, which differs for ``loc != 0``).",
    _K,
    "print(betabinom.logpmf(jnp.array([0.0, 1.0, 3.0]), 2, 1.5, 2.5))\n"
    "[-0.8266785  -0.98082924        -inf]",
)
def logpmf(k, n, a, b, loc=0):
    k, n, a, b, loc = promote(k, n, a, b, loc)
    y = jnp.floor(k) - loc
    one, zero = const(1, y), const(0, y)
    comb = -(jnp.log1p(n) + special.betaln(n - y + one, y + one))
    out = comb + special.betaln(y + a, n - y + b) - special.betaln(a, b)
    out = jnp.where((y == zero) & (n == zero), zero, out)
    out = jnp.where((y < zero) | (y > n) | (y + a <= zero), const(-np.inf, y), out)
    return jnp.where((n < zero) | (a <= zero) | (b <= zero), const(np.nan, y), out)


@doc(
    "betabinom",
    "pmf",
    "The beta-binomial probability mass.",
    _K,
    "print(betabinom.pmf(jnp.array([0.0, 1.0]), 2, 1.5, 2.5))\n[0.4375 0.375 ]",
)
def pmf(k, n, a, b, loc=0):
    return jnp.exp(logpmf(k, n, a, b, loc))


__all__ = ["logpmf", "pmf"]
