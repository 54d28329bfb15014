"""``functx.scipy.stats.wrapcauchy``: the wrapped Cauchy distribution on ``[0, 2 pi]``."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy.stats._common import const, doc, promote

_X = ("x: the angles (``-inf`` outside ``[0, 2 pi]``).", "c: the shape, in ``(0, 1)`` (else NaN).")


@doc(
    "wrapcauchy",
    "logpdf",
    "The log density ``log(1 - c**2) - log(2 pi) - log(1 + c**2 - 2 c cos x)``.",
    _X,
    "print(wrapcauchy.logpdf(jnp.array([0.0, 3.0, 7.0]), 0.5))\n[-0.7392647 -2.9320316       -inf]",
)
def logpdf(x, c):
    x, c = promote(x, c)
    one = const(1, x)
    out = jnp.log(one - c * c) - const(np.log(2 * np.pi), x)
    out = out - jnp.log(one + c * c - const(2, x) * c * jnp.cos(x))
    out = jnp.where((x >= 0) & (x <= const(2 * np.pi, x)), out, const(-np.inf, x))
    return jnp.where((c > 0) & (c < 1), out, const(np.nan, x))


@doc(
    "wrapcauchy",
    "pdf",
    "The wrapped Cauchy density.",
    _X,
    "print(wrapcauchy.pdf(jnp.array([0.0, 3.0]), 0.5))\n[0.47746485 0.05328866]",
)
def pdf(x, c):
    return jnp.exp(logpdf(x, c))


__all__ = ["logpdf", "pdf"]
