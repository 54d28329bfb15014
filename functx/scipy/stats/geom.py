"""``functx.scipy.stats.geom``: the geometric distribution (trials until the first success)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import const, doc, promote

_K = (
    "k: the trial of the first success (1, 2, ...).",
    "p: the success probability.",
    "loc: the shift (default 0).",
)


@doc(
    "geom",
    "logpmf",
    "The log probability ``xlog1py(k - 1, -p) + log(p)`` (``-inf`` for ``k < 1``).",
    _K,
    "print(geom.logpmf(jnp.array([1.0, 2.0, 0.0]), 0.5))\n[-0.6931472 -1.3862944       -inf]",
)
def logpmf(k, p, loc=0):
    k, p, loc = promote(k, p, loc)
    x = k - loc
    out = special.xlog1py(x - const(1, k), -p) + jnp.log(p)
    return jnp.where(x <= 0, const(-np.inf, k), out)


@doc(
    "geom",
    "pmf",
    "The geometric probability mass.",
    _K,
    "print(geom.pmf(jnp.array([2.0]), 0.5))\n[0.25]",
)
def pmf(k, p, loc=0):
    return jnp.exp(logpmf(k, p, loc))


__all__ = ["logpmf", "pmf"]
