"""``functx.numpy.linalg``: decompositions and solves (on ``functx.lax.linalg``'s primitives),
norms, and the matrix products re-exported from functx.numpy.

Differences from ``jax.numpy.linalg`` (deliberate):

* ``svd(hermitian=True)`` and ``pinv(hermitian=True)`` compute the general SVD (the same
  singular values; JAX goes through ``eigh``); ``qr(mode='raw')`` is not supported.
* ``det``'s derivative is ``det(a) trace(a^-1 da)`` (JAX's uses a cofactor solve that stays
  finite at singular matrices).
* The 2-norm is ``sqrt(sum(x * x))`` with a derivative of 0 (JAX's is NaN) where the norm is 0; the
  values are the same.
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

from functx import lax
from functx.control.custom_derivatives import custom_jvp
from functx.control.linalg import lu_solve as _lu_solve
from functx.errors import FunctxTypeError, FunctxValueError, missing_name_hook as _missing_name_hook
from functx.numpy import _core as jnp, _more, _validate as _v
from functx.source_info import where


def _sqrt_sumsq(x, axis, keepdims):
    # sqrt(sum(x^2)), with a gradient of 0 (not NaN) where the sum is 0.
    if x.dtype.kind == "c":  # |x|^2 = re^2 + im^2
        x = lax.real(jnp.multiply(x, lax.conj(x)))
        s = jnp.sum(x, axis=axis, keepdims=keepdims)
    else:
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
        ``1``, ``-1``, ``inf``, ``-inf``, ``2``, ``-2`` and ``'nuc'`` (by the SVD).
      axis: ``None`` (all axes), an int (vector norm) or a pair (matrix norm).
      keepdims: keep the reduced axes with size 1.
    Returns:
      The norm, an array of the promoted float dtype.
    Example:
      >>> import functx
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
            y = jnp.moveaxis(x, (row, col), (-2, -1))
            sv = svd(y, compute_uv=False)
            if ord == 2:
                out = jnp.max(sv, axis=-1)
            elif ord == -2:
                out = jnp.min(sv, axis=-1)
            else:
                out = jnp.sum(sv, axis=-1)
            if keepdims:
                out = jnp.expand_dims(out, tuple(sorted((row, col))))
            return out
        raise FunctxTypeError(f"norm: invalid order {ord!r} for a matrix norm{where()}")
    raise FunctxTypeError(
        f"norm: improper number of axes {axis}: pass one axis for a vector "
        f"norm or two for a matrix norm{where()}"
    )


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):  # noqa: A002
    """The vector norm over ``axis`` (``jax.numpy.linalg.vector_norm``). As in JAX, ``ord`` 1 and
    ``inf`` keep an integer dtype.

    Arguments:
      x: an array.
      axis: None (all axes flattened), an int, or a tuple of axes (flattened together).
      keepdims: keep the reduced axes with size 1.
      ord: the order: 2 (default), 1, ``inf``, ``-inf``, 0 (the count of nonzeros) or any other
        number ``p`` (``sum(|x|^p)^(1/p)``).
    Returns:
      An array without the reduced axes (real for complex ``x``).
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([[3.0, -4.0], [1.0, 0.0]])
      >>> jnp.linalg.vector_norm(x), jnp.linalg.vector_norm(x, axis=1, ord=1)
      (Array(5.0990195, dtype=float32), Array([7., 1.], dtype=float32))
    """
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
    """The norm of the matrices over the last two axes (``jax.numpy.linalg.matrix_norm``):
    ``norm(x, ord, axis=(-2, -1))``.

    Arguments:
      x: an array of rank >= 2.
      keepdims: keep the two reduced axes with size 1.
      ord: "fro" (default), "nuc", 1, -1, 2, -2, ``inf`` or ``-inf``.
    Returns:
      An array of the batch shape (real for complex ``x``).
    Example:
      >>> import functx.numpy as jnp
      >>> x = jnp.array([[3.0, 0.0], [0.0, -4.0]])
      >>> jnp.linalg.matrix_norm(x), jnp.linalg.matrix_norm(x, ord=1)
      (Array(5., dtype=float32), Array(4., dtype=float32))
    """
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
      >>> import functx
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

    Differences from JAX: differentiates through the LU factors (JAX uses ``custom_linear_solve``):
    the same values.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> a = np.array([[2.0, 1.0], [1.0, 3.0]], np.float32)
      >>> functx.numpy.linalg.solve(a, np.array([4.0, 7.0], np.float32))
      Array([1., 2.], dtype=float32)
    """
    a, b = _inexact("solve", a, b)
    if a.ndim < 2:
        raise FunctxValueError(
            f"solve: a must be a matrix or a stack of them, got shape {a.shape}{where()}"
        )
    if b.ndim > 1 and a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1] != b.shape[-2]:
        raise FunctxValueError(
            f"solve: b of shape {b.shape} is not [..., m, k] for a of shape {a.shape}; since "
            "JAX 0.5 a b of rank a.ndim - 1 is not a stack of vectors: for that, use "
            f"solve(a, b[..., None])[..., 0]{where()}"
        )
    vector = b.ndim == 1
    if a.shape[-1] != a.shape[-2] or b.shape[0 if vector else -2] != a.shape[-1]:
        raise FunctxValueError(
            f"solve: a must have shape [..., m, m] and b [..., m, k] or [..., m], got "
            f"a={a.shape} and b={b.shape}{where()}"
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
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.inv(np.array([[2.0, 0.0], [0.0, 4.0]], np.float32))
      Array([[0.5 , 0.  ],
             [0.  , 0.25]], dtype=float32)
    """
    (a,) = _inexact("inv", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise FunctxValueError(
            f"inv: the argument must have shape [..., n, n], got {a.shape}{where()}"
        )
    eye = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    return _solve_square(a, eye, False)


class SlogdetResult(NamedTuple):
    """``slogdet``'s result: ``sign`` and ``logabsdet`` (JAX's ``SlogdetResult``), a NamedTuple.

    Example:
      >>> import functx.numpy as jnp
      >>> r = jnp.linalg.slogdet(jnp.array([[2.0, 0.0], [0.0, -3.0]]))
      >>> r.sign, r.logabsdet
      (Array(-1., dtype=float32), Array(1.7917595, dtype=float32))
    """

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
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.slogdet(np.array([[2.0, 0.0], [0.0, -3.0]], np.float32))
      SlogdetResult(sign=Array(-1., dtype=float32), logabsdet=Array(1.7917595, dtype=float32))
    """
    (a,) = _inexact("slogdet", a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise FunctxValueError(
            f"slogdet: the argument must have shape [..., n, n], got {a.shape}{where()}"
        )
    if method == "qr":
        raise NotImplementedError("slogdet method='qr' is not implemented in functx")
    if method not in (None, "lu"):
        raise FunctxValueError(
            f"slogdet: method must be None or 'lu' ('qr' is not implemented), got {method!r}"
            f"{where()}"
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

    Differences from JAX: the derivative is ``det(a) trace(inv(a) da)``, not JAX's cofactor rule, so
    it is not finite at singular matrices.

    Example:
      >>> import numpy as np
      >>> import functx
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
    raise FunctxValueError(f"det: the argument must have shape [..., n, n], got {a.shape}{where()}")


class EighResult(NamedTuple):
    """``eigh``'s result: ``eigenvalues`` (ascending) and ``eigenvectors`` (JAX's
    ``EighResult``), a NamedTuple.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.linalg.eigh(jnp.array([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
      Array([1., 2.], dtype=float32)
    """

    eigenvalues: object
    eigenvectors: object


class QRResult(NamedTuple):
    """``qr``'s result: ``Q`` and ``R`` (JAX's ``QRResult``), a NamedTuple.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.linalg.qr(jnp.array([[3.0, 0.0], [4.0, 5.0]])).R.shape
      (2, 2)
    """

    Q: object
    R: object


class SVDResult(NamedTuple):
    """``svd``'s result: ``U``, ``S`` (descending) and ``Vh`` (JAX's ``SVDResult``), a
    NamedTuple.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.linalg.svd(jnp.array([[0.0, 2.0], [1.0, 0.0]])).S
      Array([2., 1.], dtype=float32)
    """

    U: object
    S: object
    Vh: object


def _uplo(UPLO):
    if UPLO is None or UPLO == "L":
        return True
    if UPLO == "U":
        return False
    raise FunctxValueError(f"eigh: UPLO must be None, 'L' or 'U', got {UPLO!r}{where()}")


def eigh(a, UPLO=None, symmetrize_input=True):  # noqa: N803
    """Eigenvalues and eigenvectors of Hermitian matrices, like ``jax.numpy.linalg.eigh``.

    Arguments:
      a: ``[..., n, n]``.
      UPLO: None or 'L' (the lower triangle) or 'U' (read when not symmetrizing).
      symmetrize_input: decompose ``(a + a^H) / 2``.
    Returns:
      ``EighResult(eigenvalues, eigenvectors)``: real ascending eigenvalues ``[..., n]`` and the
      eigenvectors as columns ``[..., n, n]``.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.eigh(np.array([[2.0, 0.0], [0.0, 1.0]], np.float32)).eigenvalues
      Array([1., 2.], dtype=float32)
    """
    (a,) = _inexact("eigh", a)
    v, w = lax.linalg.eigh(a, lower=_uplo(UPLO), symmetrize_input=symmetrize_input)
    return EighResult(w, v)


def eigvalsh(a, UPLO="L", *, symmetrize_input=True):  # noqa: N803
    """Eigenvalues of Hermitian matrices, like ``jax.numpy.linalg.eigvalsh``.

    Arguments:
      a: ``[..., n, n]``.
      UPLO: 'L' or 'U' (the triangle read when not symmetrizing).
      symmetrize_input: decompose ``(a + a^H) / 2``.
    Returns:
      The real eigenvalues, ascending, ``[..., n]``.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.eigvalsh(np.array([[2.0, 1.0], [1.0, 2.0]], np.float32))
      Array([1., 3.], dtype=float32)
    """
    return eigh(a, UPLO, symmetrize_input).eigenvalues


def qr(a, mode="reduced"):
    """QR decomposition, like ``jax.numpy.linalg.qr``.

    Arguments:
      a: ``[..., m, n]``.
      mode: 'reduced' (``Q`` ``[..., m, k]``, ``k = min(m, n)``), 'complete' (``Q``
        ``[..., m, m]``) or 'r' (only ``R``); 'raw' is not supported (NotImplementedError).
    Returns:
      ``QRResult(Q, R)``, or ``R`` for mode 'r'.

    Differences from JAX: ``mode="raw"`` and the derivative of a non-square matrix with
    ``mode="complete"`` raise NotImplementedError.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.qr(np.array([[3.0, 1.0], [4.0, 2.0]], np.float32), mode="r")
      Array([[-5.        , -2.2       ],
             [ 0.        ,  0.39999998]], dtype=float32)
    """
    (a,) = _inexact("qr", a)
    if mode == "raw":
        raise NotImplementedError("functx: qr(mode='raw') (geqrf's Householder form)")
    if mode in ("reduced", "r", "full"):
        full = False
    elif mode == "complete":
        full = True
    else:
        raise FunctxValueError(f"qr: unknown mode {mode!r}{where()}")
    q, r = lax.linalg.qr(a, full_matrices=full)
    return r if mode == "r" else QRResult(q, r)


def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
    """Singular value decomposition, like ``jax.numpy.linalg.svd``.

    Arguments:
      a: ``[..., m, n]``.
      full_matrices: square ``U`` and ``Vh`` (True) or their first ``min(m, n)`` columns/rows.
      compute_uv: return ``SVDResult(U, S, Vh)`` (True) or only ``S``.
      hermitian: accepted; functx computes the general SVD (same singular values; JAX uses
        ``eigh``, whose vectors may differ in sign).
      subset_by_index: ``(lo, hi)``: only singular values ``lo..hi-1``.
    Returns:
      ``SVDResult(U, S, Vh)`` or ``S`` (real, descending).

    Differences from JAX: ``hermitian=True`` computes the general SVD (same singular values, vectors
    may differ in sign); the derivative with ``full_matrices=True`` of a non-square matrix raises
    NotImplementedError.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.svd(np.array([[3.0, 0.0], [0.0, -4.0]], np.float32)).S
      Array([4., 3.], dtype=float32)
    """
    del hermitian
    (a,) = _inexact("svd", a)
    out = lax.linalg.svd(
        a, full_matrices=full_matrices, compute_uv=compute_uv, subset_by_index=subset_by_index
    )
    return SVDResult(*out) if compute_uv else out


def svdvals(x, /):
    """Singular values, like ``jax.numpy.linalg.svdvals``.

    Arguments:
      x: ``[..., m, n]``.
    Returns:
      The singular values ``[..., min(m, n)]``, descending.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.svdvals(np.array([[3.0, 0.0], [0.0, -4.0]], np.float32))
      Array([4., 3.], dtype=float32)
    """
    return svd(x, compute_uv=False)


def matrix_rank(M, rtol=None, *, tol=None):  # noqa: N803
    """The rank of matrices by their singular values, like ``jax.numpy.linalg.matrix_rank``.

    Arguments:
      M: ``[..., m, n]`` (or fewer axes: 0 or 1 by whether any element is nonzero).
      rtol: singular values at most ``rtol * max(s)`` count as zero (default
        ``max(m, n) * eps``).
      tol: JAX's older name for ``rtol``.
    Returns:
      integer ranks ``[...]`` (the default integer dtype).
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.matrix_rank(np.array([[1.0, 2.0], [2.0, 4.0]], np.float32))
      Array(1, dtype=int32)
    """
    if tol is not None:
        if rtol is not None:
            raise FunctxValueError(f"matrix_rank: give tol or rtol, not both{where()}")
        rtol = tol
    (M,) = _inexact("matrix_rank", M)
    if M.ndim < 2:
        return jnp.any(jnp.not_equal(M, 0)).astype(jnp.sum(jnp.ones((), bool)).dtype)
    S = svd(M, full_matrices=False, compute_uv=False)
    if rtol is None:
        rtol = jnp.max(S, axis=-1) * max(M.shape[-2:]) * jnp.finfo(S.dtype).eps
    rtol = jnp.asarray(rtol)
    rtol = jnp.expand_dims(rtol, rtol.ndim)
    return jnp.sum(S > rtol, axis=-1)


@custom_jvp
def _pinv_core(a, rtol):
    m, n = a.shape[-2:]
    u, s, vh = svd(lax.conj(a) if a.dtype.kind == "c" else a, full_matrices=False)
    cutoff = jnp.expand_dims(rtol, rtol.ndim) * s[..., 0:1]
    s = jnp.where(s > cutoff, s, jnp.inf).astype(u.dtype)
    del m, n
    return jnp.matmul(_mT(vh), _mT(u) / s[..., :, None], precision=lax.Precision.HIGHEST)


@_pinv_core.defjvp
def _pinv_jvp(primals, tangents):
    # Golub and Pereyra (1973), JAX's rule
    (a, rtol), (a_dot, _) = primals, tangents
    p = _pinv_core(a, rtol)
    m, n = a.shape[-2:]
    if m >= n:
        s = (p @ _mH(p)) @ _mH(a_dot)
        t = (_mH(a_dot) @ _mH(p)) @ p
        p_dot = -(p @ a_dot) @ p + s - (s @ a) @ p + t - (p @ a) @ t
    else:
        s = p @ (_mH(p) @ _mH(a_dot))
        t = _mH(a_dot) @ (_mH(p) @ p)
        p_dot = -p @ (a_dot @ p) + s - s @ (a @ p) + t - p @ (a @ t)
    return p, p_dot


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
    """The Moore-Penrose pseudo-inverse, like ``jax.numpy.linalg.pinv`` (by the SVD; JAX's
    derivative rule).

    Arguments:
      a: ``[..., m, n]``.
      rtol: singular values at most ``rtol * max(s)`` are treated as zero (default
        ``10 * max(m, n) * eps``).
      hermitian: accepted (the general SVD is used).
      rcond: JAX's older name for ``rtol``.
    Returns:
      ``[..., n, m]``.

    Differences from JAX: ``hermitian=True`` computes the general SVD (same values to rounding).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.pinv(np.array([[2.0, 0.0], [0.0, 4.0]], np.float32))
      Array([[0.5 , 0.  ],
             [0.  , 0.25]], dtype=float32)
    """
    del hermitian
    if rcond is not None:
        if rtol is not None:
            raise FunctxValueError(f"pinv: give rtol or rcond, not both{where()}")
        rtol = rcond
    (a,) = _inexact("pinv", a)
    m, n = a.shape[-2:]
    if m == 0 or n == 0:
        return jnp.zeros(a.shape[:-2] + (n, m), a.dtype)
    real = jnp.finfo(a.dtype).dtype
    if rtol is None:
        rtol = 10.0 * max(m, n) * jnp.finfo(a.dtype).eps
    rtol = jnp.asarray(rtol, real)
    return _pinv_core(a, rtol)


def matrix_power(a, n):
    """``a`` to the integer power ``n`` by repeated squaring, like
    ``jax.numpy.linalg.matrix_power`` (a negative ``n`` inverts first).

    Arguments:
      a: ``[..., m, m]``.
      n: a Python int.
    Returns:
      ``a^n``, of ``a``'s shape and dtype.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.matrix_power(np.array([[1, 1], [0, 1]], np.int32), 3)
      Array([[1, 3],
             [0, 1]], dtype=int32)
    """
    a = jnp.asarray(a) if not jnp._is_array(a) else a
    if a.ndim < 2:
        raise FunctxTypeError(
            f"matrix_power: needs a matrix or a stack of them, got shape {a.shape}{where()}"
        )
    if a.shape[-2] != a.shape[-1]:
        raise FunctxTypeError(
            f"matrix_power: the matrices must be square, got shape {a.shape}{where()}"
        )
    try:
        n = operator.index(n)
    except TypeError as err:
        raise FunctxTypeError(
            f"matrix_power: the exponent must be an integer, got {n!r}{where()}"
        ) from err
    if n == 0:
        return jnp.broadcast_to(jnp.eye(a.shape[-2], dtype=a.dtype), a.shape)
    if n < 0:
        a = inv(a)
        n = -n
    if n == 1:
        return a
    z = result = None
    while n > 0:
        z = a if z is None else jnp.matmul(z, z)
        n, bit = divmod(n, 2)
        if bit:
            result = z if result is None else jnp.matmul(result, z)
    return result


def lstsq(a, b, rcond=None, *, numpy_resid=False):
    """The least-squares solution of ``a x = b`` by the SVD, like ``jax.numpy.linalg.lstsq``.

    Arguments:
      a: ``[m, n]``.
      b: ``[m]`` or ``[m, k]``.
      rcond: singular values below ``rcond * max(s)`` count as zero (default
        ``max(m, n) * eps``).
      numpy_resid: NumPy's empty residuals when the rank is below ``n`` or ``m <= n``.
    Returns:
      ``(x, resid, rank, s)``: the solution, the squared residual norms, the integer rank of
      ``a`` and its singular values.
    Example:
      >>> import functx
      >>> import numpy as np
      >>> a = np.array([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]], np.float32)
      >>> functx.numpy.linalg.lstsq(a, np.array([1.0, 4.0, 1.0], np.float32))[0]
      Array([1., 2.], dtype=float32)
    """
    a, b = _inexact("lstsq", a, b)
    if a.shape[0] != b.shape[0]:
        raise FunctxValueError(
            f"lstsq: a and b need the same number of rows, got {a.shape} and {b.shape}{where()}"
        )
    vec = b.ndim == 1
    if vec:
        b = b[:, None]
    if a.ndim != 2:
        raise FunctxTypeError(f"lstsq: a must be a matrix, got shape {a.shape}{where()}")
    if b.ndim != 2:
        raise FunctxTypeError(
            f"lstsq: b must be a vector or a matrix, got shape {b.shape}{where()}"
        )
    m, n = a.shape
    if a.size == 0:
        s = jnp.zeros((0,), a.dtype)
        rank = jnp.sum(jnp.zeros((0,), bool))
        x = jnp.zeros((n, *b.shape[1:]), a.dtype)
    else:
        eps = float(jnp.finfo(a.dtype).eps)
        rcond = eps * max(n, m) if rcond is None else jnp.where(rcond < 0, eps, rcond)
        u, s, vt = svd(a, full_matrices=False)
        mask = (s > 0) & (s >= jnp.asarray(rcond, s.dtype) * s[0])
        rank = mask.sum()
        safe = jnp.where(mask, s, 1).astype(a.dtype)
        s_inv = jnp.where(mask, 1 / safe, 0)[:, None]
        hp = lax.Precision.HIGHEST
        uTb = jnp.matmul(_mH(u), b, precision=hp)
        x = jnp.matmul(_mH(vt), s_inv * uTb, precision=hp)
    if numpy_resid and (int(rank) < n or m <= n):
        resid = jnp.zeros((0,), jnp.finfo(a.dtype).dtype)
    else:
        r = b - jnp.matmul(a, x, precision=lax.Precision.HIGHEST)
        resid = jnp.sum(jnp.abs(r) ** 2, axis=0)
    if vec:
        x = x.ravel()
    return x, resid, rank, s


def cond(x, p=None):
    """The condition number of matrices, like ``jax.numpy.linalg.cond``.

    Arguments:
      x: ``[..., m, n]`` (square unless ``p`` is None, 2 or -2).
      p: the norm: None or 2 (the ratio of extreme singular values), -2, or any matrix ``ord``
        of ``norm`` (then ``norm(x, p) * norm(inv(x), p)``).
    Returns:
      The condition numbers ``[...]``; ``inf`` for a singular matrix without NaNs.
    Example:
      >>> functx.numpy.linalg.cond(np.array([[2.0, 0.0], [0.0, 0.5]], np.float32))
      Array(4., dtype=float32)
    """
    x = jnp.asarray(x) if not jnp._is_array(x) else x
    if x.ndim < 2:
        raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got x.shape={x.shape}")
    if x.shape[-1] == 0 or x.shape[-2] == 0:
        raise ValueError(f"jnp.linalg.cond: input array must not be empty; got x.shape={x.shape}")
    if p is None or p == 2:
        s = svdvals(x)
        return s[..., 0] / s[..., -1]
    if p == -2:
        s = svdvals(x)
        r = s[..., -1] / s[..., 0]
    else:
        if x.shape[-2] != x.shape[-1]:
            raise ValueError(
                f"jnp.linalg.cond: for p={p}, array must be square; got x.shape={x.shape}"
            )
        r = norm(x, ord=p, axis=(-2, -1)) * norm(inv(x), ord=p, axis=(-2, -1))
    nan_in = jnp.any(jnp.isnan(x), axis=(-2, -1))
    return jnp.where(jnp.isnan(r) & ~nan_in, jnp.inf, r)


def tensorinv(a, ind=2):
    """The inverse of a tensor as a linear map of its first ``ind`` axes, like
    ``jax.numpy.linalg.tensorinv``.

    Arguments:
      a: an array whose first ``ind`` axes hold as many elements as the others.
      ind: the number of leading (input) axes.
    Returns:
      The inverse, of shape ``a.shape[ind:] + a.shape[:ind]``.
    Example:
      >>> functx.numpy.linalg.tensorinv(np.eye(4, dtype=np.float32).reshape(4, 2, 2), ind=1).shape
      (2, 2, 4)
    """
    a = jnp.asarray(a) if not jnp._is_array(a) else a
    ind = operator.index(ind)
    if ind <= 0:
        raise ValueError(f"ind must be a positive integer; got ind={ind}")
    head, tail = a.shape[:ind], a.shape[ind:]
    rows, cols = math.prod(head), math.prod(tail)
    if rows != cols:
        raise ValueError(
            "tensorinv is only possible when the product of the first `ind` dimensions equals "
            f"that of the remaining dimensions. got a.shape={a.shape} with ind={ind}."
        )
    return jnp.reshape(inv(jnp.reshape(a, (rows, cols))), (*tail, *head))


def tensorsolve(a, b, axes=None):
    """Solve the tensor equation ``tensordot(a, x, x.ndim) = b`` for ``x``, like
    ``jax.numpy.linalg.tensorsolve``.

    Arguments:
      a: coefficients, shape ``b.shape + x.shape`` (after moving ``axes`` to the end).
      b: the right-hand side.
      axes: axes of ``a`` to move to the end first.
    Returns:
      ``x``.
    Example:
      >>> a = np.eye(4, dtype=np.float32).reshape(4, 2, 2)
      >>> functx.numpy.linalg.tensorsolve(a, np.arange(4, dtype=np.float32)).shape
      (2, 2)
    """
    a, b = _inexact("tensorsolve", a, b)
    if axes is not None:
        a = jnp.moveaxis(a, axes, len(axes) * (a.ndim - 1,))
    out = a.shape[b.ndim :]
    if a.shape[: b.ndim] != b.shape:
        raise ValueError(
            "After moving axes to end, leading shape of a must match shape of b. got "
            f"a.shape={a.shape}, b.shape={b.shape}"
        )
    if b.size != math.prod(out):
        raise ValueError(
            "Input arrays must have prod(a.shape[:b.ndim]) == prod(a.shape[b.ndim:]); got "
            f"a.shape={a.shape}, b.ndim={b.ndim}."
        )
    x = solve(jnp.reshape(a, (b.size, math.prod(out))), jnp.ravel(b))
    return jnp.reshape(x, out)


def cross(x1, x2, /, *, axis=-1):
    """The cross product of 3-vectors along ``axis`` (JAX's ``jnp.linalg.cross``, the Array API
    form of ``jnp.cross``: both operands hold 3-vectors, and the other axes broadcast).

    Arguments:
      x1, x2: arrays whose ``axis`` has size 3.
      axis: the axis of the vectors (default: the last).
    Returns:
      The cross products, of the operands' promoted dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.linalg.cross(jnp.array([1.0, 0.0, 0.0]), jnp.array([0.0, 1.0, 0.0]))
      Array([0., 0., 1.], dtype=float32)
    """
    a, b = jnp.asarray(x1), jnp.asarray(x2)
    na, nb = a.shape[axis] if a.ndim else 0, b.shape[axis] if b.ndim else 0
    if na != 3 or nb != 3:
        raise FunctxValueError(
            "Both input arrays must be (arrays of) 3-dimensional vectors, but they have "
            f"x1.shape[axis]={na} and x2.shape[axis]={nb}{where()}"
        )
    return _more.cross(a, b, axis=axis)


def diagonal(x, /, *, offset=0):
    """The diagonals of the matrices in the last two axes (JAX's ``jnp.linalg.diagonal``, the
    Array API form of ``jnp.diagonal``).

    Arguments:
      x: an array of rank 2 or more.
      offset: which diagonal (positive: above the main one).
    Returns:
      An array of shape ``x.shape[:-2] + (k,)``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.linalg.diagonal(jnp.arange(9).reshape(3, 3), offset=1)
      Array([1, 5], dtype=int32)
    """
    return jnp.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
    """The sums of the diagonals of the matrices in the last two axes (JAX's
    ``jnp.linalg.trace``, the Array API form of ``jnp.trace``).

    Arguments:
      x: an array of rank 2 or more.
      offset: which diagonal (positive: above the main one).
      dtype: the dtype of the sums (default: ``jnp.trace``'s).
    Returns:
      An array of shape ``x.shape[:-2]``.
    Example:
      >>> import functx.numpy as jnp
      >>> jnp.linalg.trace(jnp.ones((2, 3, 3)))
      Array([3., 3.], dtype=float32)
    """
    return jnp.trace(x, offset=offset, axis1=-2, axis2=-1, dtype=dtype)


def multi_dot(arrays, *, precision=None):
    """The product of a chain of matrices, like ``jax.numpy.linalg.multi_dot`` (multiplied
    in the order that costs the fewest multiplications; the ends may be vectors).

    Arguments:
      arrays: two or more arrays: the first and last 1D or 2D, the others 2D.
      precision: passed to each matmul.
    Returns:
      The product.
    Example:
      >>> a = np.ones((2, 3), np.float32)
      >>> functx.numpy.linalg.multi_dot([a, a.T, np.ones(2, np.float32)])
      Array([6., 6.], dtype=float32)
    """
    arrs = [jnp.asarray(a) if not jnp._is_array(a) else a for a in arrays]
    if len(arrs) < 2:
        raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
    if not (
        arrs[0].ndim in (1, 2) and arrs[-1].ndim in (1, 2) and all(a.ndim == 2 for a in arrs[1:-1])
    ):
        raise ValueError(
            "multi_dot: input arrays must have one or two dimensions; got "
            f"{[a.shape for a in arrs]}"
        )
    first_vec, last_vec = arrs[0].ndim == 1, arrs[-1].ndim == 1
    mats = [arrs[0][None, :] if first_vec else arrs[0], *arrs[1:-1]]
    mats.append(arrs[-1][:, None] if last_vec else arrs[-1])
    dims = [mats[0].shape[0]] + [m.shape[1] for m in mats]
    n = len(mats)
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):  # the classic matrix-chain dynamic program
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i, j):
        if i == j:
            return mats[i]
        k = split[i][j]
        return jnp.matmul(product(i, k), product(k + 1, j), precision=precision)

    out = product(0, n - 1)
    if first_vec:
        out = out[0]
    if last_vec:
        out = out[..., 0]
    return out


matmul = jnp.matmul
tensordot = jnp.tensordot
vecdot = jnp.vecdot
outer = jnp.outer
matrix_transpose = jnp.matrix_transpose


class EigResult(NamedTuple):
    """``eig``'s result: ``eigenvalues`` and ``eigenvectors`` (JAX's ``EigResult``), a
    NamedTuple.

    Example:
      >>> import functx.numpy as jnp
      >>> jnp.linalg.eig(jnp.array([[2.0, 0.0], [0.0, 1.0]])).eigenvalues
      Array([2.+0.j, 1.+0.j], dtype=complex64)
    """

    eigenvalues: object
    eigenvectors: object


def eig(a):
    """Eigenvalues and right eigenvectors of general square matrices, like
    ``jax.numpy.linalg.eig`` (LAPACK's geev on the host; JAX runs it on the CPU only, and
    functx's Triton backend raises ``UnsupportedError``).

    Arguments:
      a: ``[..., n, n]``; integers are promoted to the default float.

    Returns:
      ``EigResult(eigenvalues, eigenvectors)``: complex eigenvalues ``[..., n]`` in LAPACK's order
      and the eigenvectors as columns ``[..., n, n]`` (unit 2-norm, largest component real).

    Differences from JAX: under ``jit`` on the Triton backend it raises UnsupportedError (JAX runs
    it on the CPU).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> w, v = functx.numpy.linalg.eig(np.array([[0.0, 1.0], [-1.0, 0.0]], np.float32))
      >>> w
      Array([0.+1.j, 0.-1.j], dtype=complex64)
    """
    (a,) = _inexact("eig", a)
    w, v = lax.linalg.eig(a, compute_left_eigenvectors=False)
    return EigResult(w, v)


def eigvals(a):
    """Eigenvalues of general square matrices, like ``jax.numpy.linalg.eigvals``.

    Arguments:
      a: ``[..., n, n]``; integers are promoted to the default float.

    Returns:
      The complex eigenvalues ``[..., n]``, in LAPACK's order.

    Differences from JAX: under ``jit`` on the Triton backend it raises UnsupportedError (JAX runs
    it on the CPU).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.numpy.linalg.eigvals(np.array([[1.0, 2.0], [0.0, 3.0]], np.float32))
      Array([1.+0.j, 3.+0.j], dtype=complex64)
    """
    (a,) = _inexact("eigvals", a)
    (w,) = lax.linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)
    return w


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "cross",
    "diagonal",
    "trace",
    "EighResult",
    "QRResult",
    "SVDResult",
    "SlogdetResult",
    "EigResult",
    "eig",
    "eigvals",
    "eigh",
    "eigvalsh",
    "lstsq",
    "matrix_power",
    "matrix_rank",
    "pinv",
    "qr",
    "svd",
    "svdvals",
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
