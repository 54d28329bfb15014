"""The two Gumbel distributions' formulas, shared by ``gumbel_r`` (maxima) and ``gumbel_l``
(minima): with ``z = (x - loc) / scale`` and ``s = -1`` (right) or ``+1`` (left), the log density
is ``-log(scale) + s z - exp(s z)``; every function is NaN where ``scale <= 0``."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy.stats._common import const, promote


def log1mexp(x):
    """``log(1 - exp(-x))`` for ``x > 0``, accurate at both ends."""
    return jnp.where(x > np.log(2), jnp.log1p(-jnp.exp(-x)), jnp.log(-jnp.expm1(-x)))


def _z(x, loc, scale):
    x, loc, scale = promote(x, loc, scale)
    return (x - loc) / scale, scale > const(0, scale), scale


def logpdf(sign, x, loc, scale):
    z, ok, scale = _z(x, loc, scale)
    sz = z * sign
    return jnp.where(ok, -jnp.log(scale) + sz - jnp.exp(sz), const(np.nan, z))


def log_lower(sign, x, loc, scale):
    """The log of the tail ``exp(-exp(s z))``: the CDF of ``gumbel_r``, the SF of
    ``gumbel_l``."""
    z, ok, _ = _z(x, loc, scale)
    return jnp.where(ok, -jnp.exp(z * sign), const(np.nan, z))


def log_upper(sign, x, loc, scale):
    """The log of the other tail ``1 - exp(-exp(s z))``."""
    z, ok, _ = _z(x, loc, scale)
    return jnp.where(ok, log1mexp(jnp.exp(z * sign)), const(np.nan, z))


def upper(sign, x, loc, scale):
    z, ok, _ = _z(x, loc, scale)
    return jnp.where(ok, -jnp.expm1(-jnp.exp(z * sign)), const(np.nan, z))


def ppf(sign, p, loc, scale):
    """The point where the CDF is ``p``: ``loc - scale log(-log(p))`` (right),
    ``loc + scale log(-log1p(-p))`` (left); NaN outside ``0 < p < 1``."""
    p, loc, scale = promote(p, loc, scale)
    ok = (p > 0) & (p < 1)
    inner = -jnp.log(p) if sign < 0 else -jnp.log1p(-p)
    q = loc - scale * jnp.log(inner) if sign < 0 else loc + scale * jnp.log(inner)
    return jnp.where(ok, q, const(np.nan, q))
