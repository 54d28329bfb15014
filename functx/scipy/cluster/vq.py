"""``functx.scipy.cluster.vq``: JAX's ``jax.scipy.cluster.vq``: ``vq``."""

from __future__ import annotations

from functx import numpy as jnp
from functx.errors import FunctxValueError, missing_name_hook as _missing_name_hook
from functx.numpy import _core


def vq(obs, code_book, check_finite: bool = True):
    """Assigns each observation to its nearest code (Euclidean distance), as
    ``jax.scipy.cluster.vq.vq``.

    Arguments:
      obs: the observations, (M, D), or (M,) for one feature.
      code_book: the codes, (K, D), or (K,) like ``obs``.
      check_finite: unused, as in JAX.

    Returns:
      ``(code, dist)``: each observation's nearest code (int32 under x64 off; the first on ties)
      and its distance to it.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.cluster.vq import vq
      >>> obs = jnp.array([[1.0, 1.0], [4.0, 5.0], [0.0, 2.0]])
      >>> code, dist = vq(obs, jnp.array([[0.0, 0.0], [4.0, 4.0]]))
      >>> print(code, dist.round(3))
      [0 1 0] [1.414 1.    2.   ]
    """
    del check_finite
    obs, code_book = _core._promote_only(jnp.asarray(obs), jnp.asarray(code_book), kind="inexact")
    if obs.ndim != code_book.ndim:
        raise FunctxValueError("Observation and code_book should have the same rank")
    if obs.ndim == 1:
        obs, code_book = obs[:, None], code_book[:, None]
    if obs.ndim != 2:
        raise FunctxValueError("ndim different than 1 or 2 are not supported")
    dist = jnp.linalg.norm(obs[:, None, :] - code_book[None, :, :], axis=-1)
    code = jnp.argmin(dist, axis=-1)
    return code, jnp.take_along_axis(dist, code[:, None], axis=1)[:, 0]


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = ["vq"]
