"""``functx.scipy.stats.vonmises``: the von Mises distribution on the circle (JAX's
``logpdf`` and ``pdf``; no support restriction on ``x``, as in JAX)."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy import special
from functx.scipy.stats._common import const, doc, promote

_X = ("x: the angles.", "kappa: the concentration (NaN where not positive).")


@doc(
    "vonmises",
    "logpdf",
    "The log density ``kappa (cos x - 1) - log(2 pi i0e(kappa))`` (the scaled Bessel\n    "
    "function keeps large ``kappa`` finite).",
    _X,
    "print(vonmises.logpdf(jnp.array([0.0, 1.0]), 2.0))\n[-0.66187066 -1.5812662 ]",
)
def logpdf(x, kappa):
    x, kappa = promote(x, kappa)
    out = kappa * (jnp.cos(x) - const(1, x)) - jnp.log(const(2 * np.pi, x) * special.i0e(kappa))
    return jnp.where(kappa > 0, out, const(np.nan, x))


@doc(
    "vonmises",
    "pdf",
    "The von Mises density.",
    _X,
    "print(vonmises.pdf(jnp.array([0.0, 1.0]), 2.0))\n[0.5158854  0.20571446]",
)
def pdf(x, kappa):
    return jnp.exp(logpdf(x, kappa))


__all__ = ["logpdf", "pdf"]
