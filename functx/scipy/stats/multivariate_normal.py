"""``functx.scipy.stats.multivariate_normal``: the multivariate normal density, through a Cholesky
factorization of the covariance and a triangular solve (``functx.lax.linalg``), as JAX computes
it. ``allow_singular`` other than None raises NotImplementedError, as in JAX."""

from __future__ import annotations

import numpy as np

from functx import numpy as jnp
from functx.control import linalg
from functx.errors import FunctxValueError
from functx.scipy.stats._common import const, doc, promote

_X = (
    "x: the points, with the event dimension last.",
    "mean: the mean (a scalar or a vector of the event size).",
    "cov: the covariance (a scalar, or matrices ``(..., n, n)``, positive definite).",
    "allow_singular: must be None (JAX raises NotImplementedError otherwise).",
)


@doc(
    "multivariate_normal",
    "logpdf",
    "The log density ``-|L^-1 (x - mean)|^2 / 2 - n log(2 pi) / 2 - sum(log(diag(L)))``, ``L`` the "
    "Cholesky factor of ``cov``.",
    _X,
    "print(multivariate_normal.logpdf(jnp.array([0.5, 1.0]), jnp.zeros(2), jnp.eye(2)))\n-2.462877",
)
def logpdf(x, mean, cov, allow_singular=None):
    if allow_singular is not None:
        raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf")
    x, mean, cov = promote(x, mean, cov)
    log2pi = const(np.log(2 * np.pi), x)
    half = const(0.5, x)
    if not mean.shape:
        return -half * jnp.square(x - mean) / cov - half * (log2pi + jnp.log(cov))
    n = mean.shape[-1]
    y = x - mean
    if not cov.shape:
        quad = jnp.sum(y * y, axis=-1)
        return -half * quad / cov - const(n / 2, x) * (log2pi + jnp.log(cov))
    if cov.ndim < 2 or cov.shape[-2:] != (n, n):
        raise FunctxValueError("multivariate_normal.logpdf got incompatible shapes")
    L = linalg.cholesky(cov)
    batch = np.broadcast_shapes(y.shape[:-1], L.shape[:-2])
    y = jnp.broadcast_to(y, batch + (n,))
    L = jnp.broadcast_to(L, batch + (n, n))
    z = linalg.triangular_solve(L, y, left_side=False, lower=True, transpose_a=True)
    logdet = jnp.sum(jnp.log(jnp.diagonal(L, axis1=-2, axis2=-1)), axis=-1)
    return -half * jnp.sum(z * z, axis=-1) - const(n / 2, x) * log2pi - logdet


@doc(
    "multivariate_normal",
    "pdf",
    "The multivariate normal density.",
    _X[:3],
    "print(multivariate_normal.pdf(jnp.array([0.5, 1.0]), jnp.zeros(2), jnp.eye(2)))\n0.08518951",
)
def pdf(x, mean, cov):
    return jnp.exp(logpdf(x, mean, cov))


__all__ = ["logpdf", "pdf"]
