"""``functx.scipy.stats.beta``: the beta distribution (density only: the CDF needs the
regularized incomplete beta function, which functx does not have yet)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points (0 outside ``[loc, loc + scale]``).", "a, b: the shapes.", *LOC_SCALE)


@doc(
    "beta",
    "logpdf",
    "The log density ``xlogy(a - 1, y) + xlog1py(b - 1, -y) - betaln(a, b) - log(scale)``\n    "
    "(NaN for non-positive ``a``, ``b`` or ``scale``).",
    _X,
    "print(beta.logpdf(jnp.array([0.5, 2.0]), 2.0, 2.0))\n[0.40546513       -inf]",
)
def logpdf(x, a, b, loc=0, scale=1):
    x, a, b, loc, scale = promote(x, a, b, loc, scale)
    one = const(1, x)
    y = (x - loc) / scale
    out = special.xlogy(a - one, y) + special.xlog1py(b - one, -y)
    out = out - special.betaln(a, b) - jnp.log(scale)
    out = jnp.where((x < loc) | (x > loc + scale), const(-np.inf, x), out)
    return jnp.where((a <= 0) | (b <= 0) | (scale <= 0), const(np.nan, x), out)


@doc("beta", "pdf", "The beta density.", _X, "print(beta.pdf(jnp.array([0.5]), 2.0, 2.0))\n[1.5]")
def pdf(x, a, b, loc=0, scale=1):
    return jnp.exp(logpdf(x, a, b, loc, scale))


__all__ = ["logpdf", "pdf"]
