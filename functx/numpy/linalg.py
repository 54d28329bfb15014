"""``functx.numpy.linalg``: norms (and matrix products re-exported from functx.numpy)."""

from __future__ import annotations

from functx.errors import FunctxTypeError, where
from functx.numpy import _core as jnp


def _safe_sqrt_sumsq(x, axis, keepdims):
    # sqrt(sum(x^2)) with a gradient of 0 (not NaN) at x == 0, as JAX's norm has.
    s = jnp.sum(jnp.multiply(x, x), axis=axis, keepdims=keepdims)
    zero = jnp.equal(s, 0)
    safe = jnp.where(zero, jnp.ones_like(s), s)
    return jnp.where(zero, jnp.zeros_like(s), jnp.sqrt(safe))


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    """Vector norms (any ord) and matrix Frobenius/1/inf norms, like ``jax.numpy.linalg.norm``."""
    x = jnp.asarray(x)
    if x.dtype not in (jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64):
        x = jnp.astype(x, jnp.float32)
    if axis is None:
        if ord is None:
            out = _safe_sqrt_sumsq(jnp.ravel(x), 0, False)
            return jnp.reshape(out, (1,) * x.ndim) if keepdims else out
        axis = tuple(range(x.ndim))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    if len(axes) == 1:
        ax = axes[0]
        if ord is None or ord == 2:
            return _safe_sqrt_sumsq(x, ax, keepdims)
        if ord == jnp.inf:
            return jnp.max(jnp.abs(x), axis=ax, keepdims=keepdims)
        if ord == -jnp.inf:
            return jnp.min(jnp.abs(x), axis=ax, keepdims=keepdims)
        if ord == 0:
            return jnp.sum(jnp.astype(jnp.not_equal(x, 0), x.dtype), axis=ax, keepdims=keepdims)
        if ord == 1:
            return jnp.sum(jnp.abs(x), axis=ax, keepdims=keepdims)
        p = float(ord)
        return jnp.power(jnp.sum(jnp.power(jnp.abs(x), p), axis=ax, keepdims=keepdims), 1.0 / p)
    if len(axes) == 2:
        r, c = (a % x.ndim for a in axes)
        if ord in (None, "fro"):
            return _safe_sqrt_sumsq(x, (r, c), keepdims)
        if ord == 1:
            s = jnp.sum(jnp.abs(x), axis=r, keepdims=True)
            out = jnp.max(s, axis=c, keepdims=True)
        elif ord == -1:
            s = jnp.sum(jnp.abs(x), axis=r, keepdims=True)
            out = jnp.min(s, axis=c, keepdims=True)
        elif ord == jnp.inf:
            s = jnp.sum(jnp.abs(x), axis=c, keepdims=True)
            out = jnp.max(s, axis=r, keepdims=True)
        elif ord == -jnp.inf:
            s = jnp.sum(jnp.abs(x), axis=c, keepdims=True)
            out = jnp.min(s, axis=r, keepdims=True)
        else:
            raise FunctxTypeError(f"norm: matrix ord={ord!r} is not supported (needs an SVD)"
                                  f"{where()}")
        return out if keepdims else jnp.squeeze(out, (r, c))
    raise FunctxTypeError(f"norm: axis must be an int or a pair, got {axis!r}{where()}")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    if axis is None:
        x = jnp.ravel(x)
        axis = 0
    return norm(x, ord, axis, keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    return norm(x, ord, (-2, -1), keepdims)


matmul = jnp.matmul
tensordot = jnp.tensordot
vecdot = jnp.vecdot
outer = jnp.outer
matrix_transpose = jnp.matrix_transpose

__all__ = ["norm", "vector_norm", "matrix_norm", "matmul", "tensordot", "vecdot", "outer",
           "matrix_transpose"]
