"""``functx.numpy.linalg``: decompositions and solves (on ``functx.lax.linalg``'s primitives),
norms, and the matrix products re-exported from functx.numpy.

Differences from ``jax.numpy.linalg`` (deliberate):

* The matrix norms ``ord=2``, ``ord=-2`` and ``ord='nuc'`` need a singular value decomposition,
  which functx's primitive set does not have: they raise ``FunctxTypeError``.
* The 2-norm is ``sqrt(sum(x * x))`` with a derivative of 0 (JAX's is NaN) where the norm is 0; the
  values are the same.
"""

from __future__ import annotations

from typing import NamedTuple

from functx import lax
from functx.control.custom_derivatives import custom_jvp
from functx.control.linalg import lu_solve as _lu_solve
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


def _batch_to(x, batch, core):
    """``x`` with its batch axes (all but the last ``core``) broadcast to ``batch``."""
    if x.shape[: x.ndim - core] == batch:
        return x
    return jnp.broadcast_to(x, batch + x.shape[x.ndim - core :])


def _solve_square(a, b, vector):
    """Solve ``a x = b`` by LU (``a`` ``[..., n, n]``, ``b`` ``[..., n]`` when ``vector``, else
    ``[..., n, k]``), broadcasting the batch axes."""
    bcore = 1 if vector else 2
    batch = jnp.broadcast_shapes(a.shape[:-2], b.shape[: b.ndim - bcore])
    a, b = _batch_to(a, batch, 2), _batch_to(b, batch, bcore)
    lu, _, perm = lax.linalg.lu(a)
    if vector:
        return _lu_solve(lu, perm, b[..., None])[..., 0]
    return _lu_solve(lu, perm, b)


def solve(a, b):
    """Solve the linear system ``a x = b``, like ``jax.numpy.linalg.solve`` (LU with partial
    pivoting; batch axes broadcast).

    Arguments:
      a: square matrices ``[..., n, n]``.
      b: ``[n]`` (one vector) or ``[..., n, k]``.
    Returns:
      ``x``, of the broadcast shape and the promoted inexact dtype.
    Example:
      >>> a = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
      >>> functx.numpy.linalg.solve(a, np.array([4.0, 7.0], np.float32))
      Array([1., 2.], dtype=float32)
    """
    a, b = _inexact("solve", a, b)
    if a.ndim < 2:
        raise ValueError(f"left hand array must be at least two dimensional; got a.shape={a.shape}")
    if b.ndim > 1 and a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1] != b.shape[-2]:
        raise ValueError(
            f"Invalid shapes for solve: {a.shape}, {b.shape}. Prior to JAX v0.5.0, this would "
            "have been treated as a batched 1-dimensional solve. To recover this behavior, use "
            "solve(a, b[..., None]).squeeze(-1)."
        )
    vector = b.ndim == 1
    if a.shape[-1] != a.shape[-2] or b.shape[0 if vector else -2] != a.shape[-1]:
        raise ValueError(
            "The arguments to solve must have shapes a=[..., m, m] and b=[..., m, k] or "
            f"b=[..., m]; got a={a.shape} and b={b.shape}"
        )
    return _solve_square(a, b, vector)


def inv(a):
    """The inverse of square matrices, like ``jax.numpy.linalg.inv`` (an LU solve against the
    identity).

    Arguments:
      a: ``[..., n, n]``.
    Returns:
      The inverses, of ``a``'s shape and inexact dtype.
    Example:
      >>> functx.numpy.linalg.inv(np.array([[2.0, 0.0], [0.0, 4.0]], np.float32))
      Array([[0.5 , 0.  ],
             [0.  , 0.25]], dtype=float32)
    """
    (a,) = _inexact("inv", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to inv must have shape [..., n, n], got {a.shape}.")
    eye = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return _solve_square(a, eye, False)


class SlogdetResult(NamedTuple):
    """``slogdet``'s result: ``sign`` and ``logabsdet`` (JAX's ``SlogdetResult``)."""

    sign: object
    logabsdet: object


def _slogdet_lu(a):
    lu, piv, _ = lax.linalg.lu(a)
    diag = jnp.diagonal(lu, axis1=-2, axis2=-1)
    zero = jnp.any(jnp.equal(diag, 0), axis=-1)
    parity = jnp.count_nonzero(
        jnp.not_equal(piv, jnp.arange(a.shape[-1], dtype=piv.dtype)), axis=-1
    )
    if a.dtype.kind == "c":
        sign = jnp.prod(diag / jnp.abs(diag).astype(a.dtype), axis=-1)
    else:
        sign = jnp.ones((), a.dtype)
        parity = parity + jnp.count_nonzero(diag < 0, axis=-1)
    flip = jnp.asarray(1, a.dtype) - jnp.asarray(2, a.dtype) * (parity % 2).astype(a.dtype)
    sign = jnp.where(zero, jnp.zeros((), a.dtype), sign * flip)
    real = jnp.abs(diag).dtype
    logdet = jnp.where(zero, jnp.asarray(-jnp.inf, real), jnp.sum(jnp.log(jnp.abs(diag)), axis=-1))
    return sign, logdet


@custom_jvp
def _slogdet(a):
    return _slogdet_lu(a)


@_slogdet.defjvp
def _slogdet_jvp(primals, tangents):
    (x,), (g,) = primals, tangents
    sign, ans = _slogdet(x)
    ans_dot = jnp.trace(_solve_square(x, g, False), axis1=-1, axis2=-2)
    if x.dtype.kind == "c":
        sign_dot = (ans_dot - lax.real(ans_dot).astype(ans_dot.dtype)) * sign
        ans_dot = lax.real(ans_dot)
    else:
        sign_dot = jnp.zeros_like(sign)
    return (sign, ans), (sign_dot, ans_dot)


def slogdet(a, *, method=None):
    """Sign and natural log of the absolute value of the determinant, like
    ``jax.numpy.linalg.slogdet`` (from an LU decomposition; JAX's derivative rule
    ``d logabsdet = trace(a^-1 da)``).

    Arguments:
      a: ``[..., n, n]``.
      method: None or ``'lu'`` (``'qr'`` is not supported: ``NotImplementedError``).
    Returns:
      ``SlogdetResult(sign, logabsdet)``, each of shape ``a.shape[:-2]``; a singular matrix
      gives sign 0 and logabsdet ``-inf``.
    Example:
      >>> functx.numpy.linalg.slogdet(np.array([[2.0, 0.0], [0.0, -3.0]], np.float32))
      SlogdetResult(sign=Array(-1., dtype=float32), logabsdet=Array(1.7917595, dtype=float32))
    """
    (a,) = _inexact("slogdet", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"Argument to slogdet() must have shape [..., n, n], got {a.shape}")
    if method == "qr":
        raise NotImplementedError("slogdet method='qr' is not implemented in functx")
    if method not in (None, "lu"):
        raise ValueError(
            f"Unknown slogdet method '{method}'. Supported methods are 'lu' (`None`), and 'qr'."
        )
    return SlogdetResult(*_slogdet(a))


def _det_2x2(a):
    return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _det_3x3(a):
    return (
        a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2]
        + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
        + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1]
        - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
        - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1]
        - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2]
    )


@custom_jvp
def _det(a):
    sign, logdet = _slogdet(a)
    return sign * jnp.exp(logdet).astype(sign.dtype)


@_det.defjvp
def _det_jvp(primals, tangents):
    (x,), (g,) = primals, tangents
    y = _det(x)
    return y, y * jnp.trace(_solve_square(x, g, False), axis1=-1, axis2=-2)


def det(a):
    """The determinant of square matrices, like ``jax.numpy.linalg.det`` (explicit formulas
    for 2x2 and 3x3, LU otherwise).

    Arguments:
      a: ``[..., n, n]``.
    Returns:
      The determinants, shape ``a.shape[:-2]``.
    Example:
      >>> functx.numpy.linalg.det(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
      Array(-2., dtype=float32)
    """
    (a,) = _inexact("det", a)
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2] == 2:
        return _det_2x2(a)
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2] == 3:
        return _det_3x3(a)
    if a.ndim >= 2 and a.shape[-1] == a.shape[-2]:
        return _det(a)
    raise ValueError(f"Argument to _det() must have shape [..., n, n], got {a.shape}")


matmul = jnp.matmul
tensordot = jnp.tensordot
vecdot = jnp.vecdot
outer = jnp.outer
matrix_transpose = jnp.matrix_transpose


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "SlogdetResult",
    "cholesky",
    "det",
    "inv",
    "slogdet",
    "solve",
    "norm",
    "vector_norm",
    "matrix_norm",
    "matmul",
    "tensordot",
    "vecdot",
    "outer",
    "matrix_transpose",
]
