"""``functx.scipy.stats.t``: Student's t distribution."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points.", "df: the degrees of freedom.", *LOC_SCALE)


@doc(
    "t",
    "logpdf",
    "The log density of Student's t with ``df`` degrees of freedom.",
    _X,
    "print(t.logpdf(jnp.array([0.0]), 3))\n[-1.0008888]",
)
def logpdf(x, df, loc=0, scale=1):
    x, df, loc, scale = promote(x, df, loc, scale)
    z = (x - loc) / scale
    h = df / const(2, x)
    norm = special.gammaln(h) - special.gammaln(h + const(0.5, x))
    norm = norm + jnp.log(const(np.pi, x) * scale * scale * df) / const(2, x)
    return -(norm + (h + const(0.5, x)) * jnp.log1p(z * z / df))


@doc(
    "t", "pdf", "The density of Student's t.", _X, "print(t.pdf(jnp.array([0.0]), 3))\n[0.36755258]"
)
def pdf(x, df, loc=0, scale=1):
    return jnp.exp(logpdf(x, df, loc, scale))


__all__ = ["logpdf", "pdf"]
