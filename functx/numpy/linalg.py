"""``functx.numpy.linalg``: decompositions and solves (on ``functx.lax.linalg``'s primitives),
norms, and the matrix products re-exported from functx.numpy.

Differences from ``jax.numpy.linalg`` (deliberate):

* The matrix norms ``ord=2``, ``ord=-2`` and ``ord='nuc'`` need a singular value decomposition,
  which functx's primitive set does not have: they raise ``FunctxTypeError``.
* The 2-norm is ``sqrt(sum(x * x))`` with a derivative of 0 (JAX's is NaN) where the norm is 0; the
  values are the same.
"""

from __future__ import annotations

from functx import lax
from functx.errors import FunctxTypeError, missing_name_hook as _missing_name_hook
from functx.numpy import _core as jnp, _validate as _v
from functx.source_info import where


def _sqrt_sumsq(x, axis, keepdims):
    # sqrt(sum(x^2)), with a gradient of 0 (not NaN) where the sum is 0.
    s = jnp.sum(jnp.multiply(x, x), axis=axis, keepdims=keepdims)
    zero = jnp.equal(s, 0)
    safe = jnp.where(zero, jnp.ones_like(s), s)
    return jnp.where(zero, jnp.zeros_like(s), jnp.sqrt(safe))


def _canon_axis(a, ndim):
    return _v.axis(a, ndim, "norm", "axis")


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002
    """Vector and matrix norms, like ``jax.numpy.linalg.norm``.

    Arguments:
      x: the array; integers and bools are promoted to a float dtype first.
      ord: the order: for vectors any number, ``inf`` or ``-inf``; for matrices ``None``/``'fro'``,
        ``1``, ``-1``, ``inf``, ``-inf`` (``2``, ``-2`` and ``'nuc'`` are not supported).
      axis: ``None`` (all axes), an int (vector norm) or a pair (matrix norm).
      keepdims: keep the reduced axes with size 1.
    Returns:
      The norm, an array of the promoted float dtype.
    Example:
      >>> functx.numpy.linalg.norm(functx.numpy.array([3.0, 4.0]))
      Array(5., dtype=float32)
    """
    x = jnp.asarray(x) if not jnp._is_array(x) else x
    (x,) = jnp._promote_float("norm", x)
    ndim = x.ndim
    if axis is None:
        if ord is None:
            return _sqrt_sumsq(x, None, keepdims)
        axis = tuple(range(ndim))
    elif isinstance(axis, (tuple, list)):
        axis = _v.axes(axis, ndim, "norm", sort=False)
    else:
        axis = (_canon_axis(axis, ndim),)
    if len(axis) == 1:
        return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
    if len(axis) == 2:
        row, col = axis
        if ord is None or ord in ("f", "fro"):
            return _sqrt_sumsq(x, axis, keepdims)
        if ord in (1, -1):
            if not keepdims and col > row:
                col -= 1
            s = jnp.sum(jnp.abs(x), axis=row, keepdims=keepdims)
            if ord == 1:
                return jnp.max(s, axis=col, keepdims=keepdims, initial=0)
            return jnp.min(s, axis=col, keepdims=keepdims)
        if ord in (jnp.inf, -jnp.inf):
            if not keepdims and row > col:
                row -= 1
            s = jnp.sum(jnp.abs(x), axis=col, keepdims=keepdims)
            if ord == jnp.inf:
                return jnp.max(s, axis=row, keepdims=keepdims, initial=0)
            return jnp.min(s, axis=row, keepdims=keepdims)
        if ord in ("nuc", 2, -2):
            raise FunctxTypeError(
                f"norm: matrix ord={ord!r} needs a singular value "
                f"decomposition, which functx does not have{where()}"
            )
        raise FunctxTypeError(f"norm: invalid order {ord!r} for a matrix norm{where()}")
    raise FunctxTypeError(
        f"norm: improper number of axes {axis}: pass one axis for a vector "
        f"norm or two for a matrix norm{where()}"
    )


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    """The vector norm over ``axis`` (None: all axes; a tuple: those axes flattened), like
    ``jax.numpy.linalg.vector_norm``. As in JAX, ``ord`` 1 and ``inf`` keep an integer dtype."""
    x = jnp.asarray(x) if not jnp._is_array(x) else x
    if ord is None or ord == 2:
        return _sqrt_sumsq(x, axis, keepdims)
    if ord == jnp.inf:
        return jnp.max(jnp.abs(x), axis=axis, keepdims=keepdims, initial=0)
    if ord == -jnp.inf:
        return jnp.min(jnp.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        if x.dtype not in (jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64):
            raise FunctxTypeError(
                f"vector_norm: ord=0 needs a float array, got {x.aval.str_short()}{where()}"
            )
        return jnp.sum(jnp.not_equal(x, 0), dtype=x.dtype, axis=axis, keepdims=keepdims)
    if ord == 1:
        return jnp.sum(jnp.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise FunctxTypeError(f"vector_norm: invalid order {ord!r}{where()}")
    (ax,) = jnp._promote_float("vector_norm", jnp.abs(x))
    p = float(ord)
    out = jnp.sum(jnp.power(ax, jnp.asarray(p, ax.dtype)), axis=axis, keepdims=keepdims)
    return jnp.power(out, jnp.asarray(1.0 / p, ax.dtype))


def matrix_norm(x, /, *, keepdims=False, ord="fro"):  # noqa: A002
    """``norm(x, ord, axis=(-2, -1))``, like ``jax.numpy.linalg.matrix_norm``."""
    return norm(x, ord, (-2, -1), keepdims)


def _inexact(name, *xs):
    """The operands as Arrays of one inexact dtype (JAX's ``promote_dtypes_inexact``)."""
    del name
    xs = [jnp.asarray(x) if not jnp._is_array(x) else x for x in xs]
    return jnp._promote_only(*xs, kind="inexact")


def _mT(x):
    return jnp.swapaxes(x, -1, -2)


def _mH(x):
    x = _mT(x)
    return lax.conj(x) if x.dtype.kind == "c" else x


def cholesky(a, *, upper=False, symmetrize_input=True):
    """The Cholesky factor of Hermitian positive-definite matrices, like
    ``jax.numpy.linalg.cholesky``.

    Arguments:
      a: an array ``[..., n, n]`` (integers are promoted to a float dtype).
      upper: return the upper factor ``U`` (``a = U^H U``) instead of the lower ``L``
        (``a = L L^H``).
      symmetrize_input: factor ``(a + a^H) / 2`` (True) or read only one triangle.
    Returns:
      The factor, shape ``[..., n, n]``; NaNs where ``a`` is not positive definite.
    Example:
      >>> functx.numpy.linalg.cholesky(functx.numpy.array([[4.0, 2.0], [2.0, 5.0]]))
      Array([[2., 0.],
             [1., 2.]], dtype=float32)
    """
    (a,) = _inexact("cholesky", a)
    L = lax.linalg.cholesky(a, symmetrize_input=symmetrize_input)
    return _mH(L) if upper else L


matmul = jnp.matmul
tensordot = jnp.tensordot
vecdot = jnp.vecdot
outer = jnp.outer
matrix_transpose = jnp.matrix_transpose


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "cholesky",
    "norm",
    "vector_norm",
    "matrix_norm",
    "matmul",
    "tensordot",
    "vecdot",
    "outer",
    "matrix_transpose",
]
