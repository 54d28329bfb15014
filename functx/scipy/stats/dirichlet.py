"""``functx.scipy.stats.dirichlet``: the Dirichlet distribution."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.errors import FunctxValueError
from functx.scipy import special
from functx.scipy.stats._common import const, doc, promote
from functx.source_info import where as _loc

_X = (
    "x: points of the simplex along axis 0: ``K`` entries, or ``K - 1`` (the last is implied).",
    "alpha: the ``K`` concentration parameters (1-D).",
)


@doc(
    "dirichlet",
    "logpdf",
    "The log density ``sum(xlogy(alpha - 1, x)) - sum(gammaln(alpha)) + gammaln(sum(alpha))``\n    "
    "(``-inf`` off the simplex: entries > 0 summing to 1 within 1e-6).",
    _X,
    "print(dirichlet.logpdf(jnp.array([0.25, 0.75]), jnp.array([2.0, 2.0])))\n0.11778307",
)
def logpdf(x, alpha):
    x, alpha = promote(x, alpha)
    if alpha.ndim != 1:
        raise FunctxValueError(
            f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}{_loc()}"
        )
    K = alpha.shape[0]
    if x.ndim == 0 or x.shape[0] not in (K, K - 1):
        raise FunctxValueError(
            "`x` must have either the same number of entries as `alpha` or one entry fewer; "
            f"got x.shape={x.shape}, alpha.shape={alpha.shape}{_loc()}"
        )
    one = const(1, x)
    if x.shape[0] != K:
        x = jnp.concatenate([x, one - jnp.sum(x, 0, keepdims=True)], 0)
    a = jnp.reshape(alpha, (K,) + (1,) * (x.ndim - 1))
    norm = jnp.sum(special.gammaln(alpha)) - special.gammaln(jnp.sum(alpha))
    out = jnp.sum(special.xlogy(a - one, x), 0) - norm
    simplex = jnp.all(x > 0, 0) & (jnp.abs(jnp.sum(x, 0) - one) < const(1e-6, x))
    return jnp.where(simplex, out, const(-np.inf, x))


@doc(
    "dirichlet",
    "pdf",
    "The Dirichlet density.",
    _X,
    "print(dirichlet.pdf(jnp.array([0.5, 0.5]), jnp.array([2.0, 2.0])))\n1.5",
)
def pdf(x, alpha):
    return jnp.exp(logpdf(x, alpha))


__all__ = ["logpdf", "pdf"]
