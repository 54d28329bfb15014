"""``functx.scipy.stats.multinomial``: the multinomial distribution over the last axis."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.errors import FunctxValueError
from functx.numpy import _core
from functx.scipy import special
from functx.scipy.stats._common import const, doc, promote

_X = (
    "x: the counts per category, last axis (integers).",
    "n: the number of trials (an integer).",
    "p: the category probabilities, last axis.",
)


@doc(
    "multinomial",
    "logpmf",
    "The log probability ``gammaln(n + 1) + sum(xlogy(x, p) - gammaln(x + 1))``, ``-inf``\n"
    "    unless the counts sum to ``n`` (all of ``x``'s counts, as in JAX).",
    _X,
    "print(multinomial.logpmf(jnp.array([1, 2]), 3, jnp.array([0.5, 0.5])))\n-0.98082924",
    result="``p``'s promoted float dtype",
)
def logpmf(x, n, p):
    (p,) = promote(p)
    x, n = (v if hasattr(v, "aval") else jnp.asarray(v) for v in (x, n))
    x, n = _core._promote_only(x, n)
    if x.dtype.kind not in "iu":
        raise FunctxValueError(
            f"x and n must be of integer type; got x.dtype={x.dtype}, n.dtype={n.dtype}"
        )
    x, n = x.astype(p.dtype), n.astype(p.dtype)
    one = const(1, p)
    terms = jnp.sum(special.xlogy(x, p) - special.gammaln(x + one), axis=-1)
    out = special.gammaln(n + one) + terms
    return jnp.where(jnp.sum(x) == n, out, const(-np.inf, p))


@doc(
    "multinomial",
    "pmf",
    "The multinomial probability mass.",
    _X,
    "print(multinomial.pmf(jnp.array([1, 2]), 3, jnp.array([0.5, 0.5])))\n0.375",
    result="``p``'s promoted float dtype",
)
def pmf(x, n, p):
    return jnp.exp(logpmf(x, n, p))


__all__ = ["logpmf", "pmf"]
