"""``functx.scipy.stats.cauchy``: the Cauchy distribution."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.scipy.stats._common import LOC_SCALE, const, doc, promote

_X = ("x: the points.", *LOC_SCALE)
_Q = ("q: probabilities.", *LOC_SCALE)


@doc(
    "cauchy",
    "logpdf",
    "The log density ``-log(pi scale) - log1p(z**2)``.",
    _X,
    "print(cauchy.logpdf(jnp.array([0.0])))\n[-1.14473]",
)
def logpdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    z = (x - loc) / scale
    return -jnp.log(const(np.pi, x) * scale) - jnp.log1p(z * z)


@doc(
    "cauchy", "pdf", "The Cauchy density.", _X, "print(cauchy.pdf(jnp.array([0.0])))\n[0.31830987]"
)
def pdf(x, loc=0, scale=1):
    return jnp.exp(logpdf(x, loc, scale))


@doc(
    "cauchy",
    "cdf",
    "The CDF ``1/2 + arctan(z) / pi``.",
    _X,
    "print(cauchy.cdf(jnp.array([1.0])))\n[0.75]",
)
def cdf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    return const(0.5, x) + jnp.arctan((x - loc) / scale) / const(np.pi, x)


@doc("cauchy", "logcdf", "The log CDF.", _X, "print(cauchy.logcdf(jnp.array([1.0])))\n[-0.2876821]")
def logcdf(x, loc=0, scale=1):
    return jnp.log(cdf(x, loc, scale))


@doc(
    "cauchy",
    "sf",
    "The survival function, the CDF of the mirrored point.",
    _X,
    "print(cauchy.sf(jnp.array([1.0])))\n[0.25]",
)
def sf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    return cdf(-x, -loc, scale)


@doc(
    "cauchy",
    "logsf",
    "The log survival function.",
    _X,
    "print(cauchy.logsf(jnp.array([1.0])))\n[-1.3862944]",
)
def logsf(x, loc=0, scale=1):
    x, loc, scale = promote(x, loc, scale)
    return logcdf(-x, -loc, scale)


@doc(
    "cauchy",
    "ppf",
    "The quantile function ``loc + scale * tan(pi (q - 1/2))``.",
    _Q,
    "print(cauchy.ppf(jnp.array([0.75])))\n[0.99999994]",
)
def ppf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return jnp.tan(const(np.pi, q) * q - const(np.pi / 2, q)) * scale + loc


@doc(
    "cauchy",
    "isf",
    "The inverse survival function ``loc + scale * tan(pi (1/2 - q))``.",
    _Q,
    "print(cauchy.isf(jnp.array([0.25])))\n[1.]",
)
def isf(q, loc=0, scale=1):
    q, loc, scale = promote(q, loc, scale)
    return jnp.tan(const(np.pi / 2, q) - const(np.pi, q) * q) * scale + loc


__all__ = ["cdf", "isf", "logcdf", "logpdf", "logsf", "pdf", "ppf", "sf"]
