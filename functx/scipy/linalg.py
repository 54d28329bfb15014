"""``functx.scipy.linalg``: JAX's ``jax.scipy.linalg`` names on ``functx.lax.linalg``'s primitives.

As in JAX, ``overwrite_*``, ``check_finite`` and ``debug`` are accepted and ignored; a matrix
that is not positive definite gives NaNs instead of an error.
"""

from __future__ import annotations

import math
import operator
import warnings

import numpy as np

from functx import dtypes, lax
from functx.control.linalg import lu_solve as _lu_solve
from functx.errors import (
    FunctxArgumentError,
    FunctxTypeError,
    FunctxValueError,
    missing_name_hook as _missing_name_hook,
)
from functx.numpy import _core as jnp, linalg as _jla
from functx.numpy.linalg import _inexact, _mH
from functx.source_info import where
from functx.transforms.jvp import jvp as _jvp


def _bcast_batch(a, b, a_core, b_core):
    """``a`` and ``b`` with their batch axes (all but the last ``a_core``/``b_core``)
    broadcast to one shape."""
    ba, bb = a.shape[: a.ndim - a_core], b.shape[: b.ndim - b_core]
    batch = jnp.broadcast_shapes(ba, bb)
    if ba != batch:
        a = jnp.broadcast_to(a, batch + a.shape[a.ndim - a_core :])
    if bb != batch:
        b = jnp.broadcast_to(b, batch + b.shape[b.ndim - b_core :])
    return a, b


def _vector_rhs(name, a, b):
    """Whether ``b`` is a (batch of) vector(s): JAX's signature choice, with its FutureWarning
    for a batch of 1D right-hand sides."""
    if b.ndim == 1:
        return True
    if a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1]:
        warnings.warn(
            f"jax.scipy.linalg.{name}: batched 1D solves with b.ndim > 1 are deprecated, and in "
            "the future will be treated as a batched 2D solve. Use "
            f"{name}(..., b[..., None]).squeeze(-1) to avoid this warning.",
            FutureWarning,
            stacklevel=3,
        )
        return True
    return False


def _trisolve(a, b, vector, **params):
    if vector:
        a, b = _bcast_batch(a, b, 2, 1)
        return lax.linalg.triangular_solve(a, b[..., None], left_side=True, **params)[..., 0]
    a, b = _bcast_batch(a, b, 2, 2)
    return lax.linalg.triangular_solve(a, b, left_side=True, **params)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factor of Hermitian positive-definite matrices, like
    ``jax.scipy.linalg.cholesky`` (the upper factor by default; only one triangle is read).

    Arguments:
      a: an array ``[..., n, n]``.
      lower: return the lower factor ``L`` (``a = L L^H``) instead of the upper ``U``
        (``a = U^H U``); the same triangle of ``a`` is read.
      overwrite_a, check_finite: accepted and ignored (as in JAX).
    Returns:
      The factor, of ``a``'s shape and inexact dtype.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.cholesky(np.array([[4.0, 2.0], [2.0, 5.0]], np.float32))
      Array([[2., 1.],
             [0., 2.]], dtype=float32)
    """
    del overwrite_a, check_finite
    (a,) = _inexact("cholesky", a)
    L = lax.linalg.cholesky(a if lower else _mH(a), symmetrize_input=False)
    return L if lower else _mH(L)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """The Cholesky factorization for ``cho_solve``, like ``jax.scipy.linalg.cho_factor``.

    Arguments:
      a: an array ``[..., n, n]``.
      lower: compute the lower factor (else the upper one).
      overwrite_a, check_finite: accepted and ignored (as in JAX).
    Returns:
      The pair ``(c, lower)``: the factor (its other triangle zero) and the flag.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> c, low = functx.scipy.linalg.cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]], np.float32))
      >>> c, low
      (Array([[2., 1.],
             [0., 2.]], dtype=float32), False)
    """
    del overwrite_a, check_finite
    return (cholesky(a, lower=lower), lower)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` from ``a``'s Cholesky factorization, like ``jax.scipy.linalg.cho_solve``.

    Arguments:
      c_and_lower: the pair ``(c, lower)`` from ``cho_factor``.
      b: the right-hand side, ``[..., n]`` or ``[..., n, k]``.
      overwrite_b, check_finite: accepted and ignored (as in JAX).
    Returns:
      ``x``, of ``b``'s shape.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> cf = functx.scipy.linalg.cho_factor(np.array([[4.0, 2.0], [2.0, 5.0]], np.float32))
      >>> functx.scipy.linalg.cho_solve(cf, np.array([6.0, 7.0], np.float32))
      Array([1., 1.], dtype=float32)
    """
    del overwrite_b, check_finite
    c, lower = c_and_lower
    c, b = _inexact("cho_solve", c, b)
    vector = _vector_rhs("cho_solve", c, b)
    b = _trisolve(c, b, vector, lower=lower, transpose_a=not lower, conjugate_a=not lower)
    return _trisolve(c, b, vector, lower=lower, transpose_a=lower, conjugate_a=lower)


_TRANS = {0: (False, False), "N": (False, False), 1: (True, False), "T": (True, False)}
_TRANS.update({2: (True, True), "C": (True, True)})


def solve_triangular(
    a,
    b,
    trans=0,
    lower=False,
    unit_diagonal=False,
    overwrite_b=False,
    debug=None,
    check_finite=True,
):
    """Solve ``op(a) x = b`` for triangular ``a``, like ``jax.scipy.linalg.solve_triangular``.

    Arguments:
      a: triangular matrices ``[..., n, n]`` (only the triangle ``lower`` names is read).
      b: the right-hand side, ``[..., n]`` or ``[..., n, k]``.
      trans: ``op``: 0 or 'N' (``a``), 1 or 'T' (``a^T``), 2 or 'C' (``a^H``).
      lower: whether ``a`` is lower triangular.
      unit_diagonal: assume ones on the diagonal (not read).
      overwrite_b, debug, check_finite: accepted and ignored (as in JAX).
    Returns:
      ``x``, of ``b``'s shape and the promoted inexact dtype.
    Example:
      >>> import functx
      >>> import numpy as np
      >>> a = np.array([[2.0, 0.0], [1.0, 4.0]], np.float32)
      >>> functx.scipy.linalg.solve_triangular(a, np.array([2.0, 9.0], np.float32), lower=True)
      Array([1., 2.], dtype=float32)
    """
    del overwrite_b, debug, check_finite
    if trans not in _TRANS:
        raise FunctxValueError(
            f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}{where()}"
        )
    transpose_a, conjugate_a = _TRANS[trans]
    a, b = _inexact("solve_triangular", a, b)
    vector = _vector_rhs("solve_triangular", a, b)
    return _trisolve(
        a,
        b,
        vector,
        lower=lower,
        transpose_a=transpose_a,
        conjugate_a=conjugate_a,
        unit_diagonal=unit_diagonal,
    )


def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
    """LU decomposition with partial pivoting, ``a = p l u``, like ``jax.scipy.linalg.lu``.

    Arguments:
      a: a matrix ``[m, n]`` (or a batch of them).
      permute_l: return ``(p l, u)`` instead of ``(p, l, u)``.
      overwrite_a, check_finite: accepted and ignored (as in JAX).
    Returns:
      ``(p, l, u)``: the permutation matrix ``[m, m]`` (of ``a``'s real dtype), the unit lower
      triangular ``l`` ``[m, k]`` and the upper triangular ``u`` ``[k, n]``, ``k = min(m, n)``;
      or ``(p l, u)``.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> p, l, u = functx.scipy.linalg.lu(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
      >>> p
      Array([[0., 1.],
             [1., 0.]], dtype=float32)
    """
    del overwrite_a, check_finite
    (a,) = _inexact("lu", a)
    lu_, _, perm = lax.linalg.lu(a)
    m, n = a.shape[-2:]
    k = min(m, n)
    rows = jnp.arange(m, dtype=perm.dtype)
    p = jnp.equal(perm[..., None, :], rows[:, None]).astype(a.dtype)
    p = lax.real(p) if a.dtype.kind == "c" else p  # (JAX's: a real matrix)
    l_ = jnp.tril(lu_, -1)[..., :, :k] + jnp.eye(m, k, dtype=a.dtype)
    u = jnp.triu(lu_)[..., :k, :]
    if permute_l:
        return jnp.matmul(p, l_, precision=lax.Precision.HIGHEST), u
    return p, l_, u


def lu_factor(a, overwrite_a=False, check_finite=True):
    """The packed LU factorization for ``lu_solve``, like ``jax.scipy.linalg.lu_factor``.

    Arguments:
      a: matrices ``[..., m, n]``.
      overwrite_a, check_finite: accepted and ignored (as in JAX).
    Returns:
      ``(lu, piv)``: ``L`` (unit diagonal not stored) and ``U`` packed, and the int32 row swaps.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> lu, piv = functx.scipy.linalg.lu_factor(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
      >>> piv
      Array([1, 1], dtype=int32)
    """
    del overwrite_a, check_finite
    (a,) = _inexact("lu_factor", a)
    lu_, piv, _ = lax.linalg.lu(a)
    return lu_, piv


def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    """Solve ``a x = b`` from ``lu_factor(a)``, like ``jax.scipy.linalg.lu_solve``.

    Arguments:
      lu_and_piv: ``(lu, piv)`` from ``lu_factor``.
      b: ``[..., n]`` or ``[..., n, k]``.
      trans: 0 (``a x = b``), 1 (``a^T x = b``) or 2 (``a^H x = b``).
      overwrite_b, check_finite: accepted and ignored (as in JAX).
    Returns:
      ``x``, of ``b``'s shape.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> f = functx.scipy.linalg.lu_factor(np.array([[2.0, 1.0], [1.0, 3.0]], np.float32))
      >>> functx.scipy.linalg.lu_solve(f, np.array([4.0, 7.0], np.float32))
      Array([1., 2.], dtype=float32)
    """
    del overwrite_b, check_finite
    lu_, piv = lu_and_piv
    lu_, b = _inexact("lu_solve", lu_, b)
    perm = lax.linalg.lu_pivots_to_permutation(piv, lu_.shape[-2])
    vector = _vector_rhs("lu_solve", lu_, b)
    bcore = 1 if vector else 2
    batch = jnp.broadcast_shapes(lu_.shape[:-2], perm.shape[:-1], b.shape[: b.ndim - bcore])
    lu_ = jnp.broadcast_to(lu_, batch + lu_.shape[-2:])
    perm = jnp.broadcast_to(perm, batch + perm.shape[-1:])
    b = jnp.broadcast_to(b, batch + b.shape[b.ndim - bcore :])
    if vector:
        return _lu_solve(lu_, perm, b[..., None], trans)[..., 0]
    return _lu_solve(lu_, perm, b, trans)


def solve(
    a,
    b,
    lower=False,
    overwrite_a=False,
    overwrite_b=False,
    debug=False,
    check_finite=True,
    assume_a="gen",
):
    """Solve ``a x = b``, like ``jax.scipy.linalg.solve``: LU for ``assume_a`` 'gen', 'sym'
    and 'her', Cholesky (of the ``lower`` triangle) for 'pos'.

    Arguments:
      a: square matrices ``[..., n, n]``.
      b: ``[..., n]`` or ``[..., n, k]``.
      lower: for 'pos', which triangle of ``a`` to read.
      overwrite_a, overwrite_b, debug, check_finite: accepted and ignored (as in JAX).
      assume_a: 'gen', 'sym', 'her' or 'pos'.
    Returns:
      ``x``.
    Example:
      >>> import functx
      >>> import numpy as np
      >>> a = np.array([[4.0, 2.0], [2.0, 5.0]], np.float32)
      >>> functx.scipy.linalg.solve(a, np.array([6.0, 7.0], np.float32), assume_a="pos")
      Array([1., 1.], dtype=float32)
    """
    del overwrite_a, overwrite_b, debug, check_finite
    valid = ["gen", "sym", "her", "pos"]
    if assume_a not in valid:
        raise FunctxValueError(f"solve: assume_a must be one of {valid}, got {assume_a!r}{where()}")
    if assume_a != "pos":
        return _jla.solve(a, b)
    a, b = _inexact("solve", a, b)
    if not (
        a.ndim >= 2
        and b.ndim in (a.ndim, a.ndim - 1)
        and a.shape[-1] == a.shape[-2] == b.shape[a.ndim - 2]
    ):
        raise FunctxValueError(
            f"solve: a must have shape [..., m, m] and b [..., m, k] or [..., m], got "
            f"a={a.shape} and b={b.shape}{where()}"
        )
    c = cholesky(a, lower=lower)
    vector = a.ndim == b.ndim + 1
    b = _trisolve(c, b, vector, lower=lower, transpose_a=not lower, conjugate_a=not lower)
    return _trisolve(c, b, vector, lower=lower, transpose_a=lower, conjugate_a=lower)


def inv(a, overwrite_a=False, check_finite=True):
    """The inverse of square matrices, like ``jax.scipy.linalg.inv``.

    Arguments:
      a: ``[..., n, n]``.
      overwrite_a, check_finite: accepted and ignored (as in JAX).
    Returns:
      The inverses.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.inv(np.array([[2.0, 0.0], [0.0, 4.0]], np.float32))
      Array([[0.5 , 0.  ],
             [0.  , 0.25]], dtype=float32)
    """
    del overwrite_a, check_finite
    return _jla.inv(a)


def det(a, overwrite_a=False, check_finite=True):
    """The determinant of square matrices, like ``jax.scipy.linalg.det``.

    Arguments:
      a: ``[..., n, n]``.
      overwrite_a, check_finite: accepted and ignored (as in JAX).
    Returns:
      The determinants, shape ``a.shape[:-2]``.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.det(np.array([[1.0, 2.0], [3.0, 4.0]], np.float32))
      Array(-2., dtype=float32)
    """
    del overwrite_a, check_finite
    return _jla.det(a)


def eigh(
    a,
    b=None,
    lower=True,
    eigvals_only=False,
    overwrite_a=False,
    overwrite_b=False,
    turbo=True,
    eigvals=None,
    type=1,  # noqa: A002
    check_finite=True,
):
    """Eigenvalues and eigenvectors of Hermitian matrices, like ``jax.scipy.linalg.eigh``
    (only ``b=None``, ``type=1``, ``eigvals=None``, as in JAX).

    Arguments:
      a: ``[..., n, n]`` (symmetrized first).
      b, eigvals, type: only their defaults (NotImplementedError otherwise, as in JAX).
      lower: the triangle LAPACK reads.
      eigvals_only: return only the eigenvalues.
      overwrite_a, overwrite_b, turbo, check_finite: accepted and ignored (as in JAX).
    Returns:
      ``(w, v)``: real ascending eigenvalues and the eigenvectors as columns; or ``w``.
    Example:
      >>> import functx
      >>> import numpy as np
      >>> a = np.array([[2.0, 1.0], [1.0, 2.0]], np.float32)
      >>> functx.scipy.linalg.eigh(a, eigvals_only=True)
      Array([1., 3.], dtype=float32)
    """
    del overwrite_a, overwrite_b, turbo, check_finite
    if b is not None:
        raise NotImplementedError("Only the b=None case of eigh is implemented")
    if type != 1:
        raise NotImplementedError("Only the type=1 case of eigh is implemented.")
    if eigvals is not None:
        raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
    (a,) = _inexact("eigh", a)
    v, w = lax.linalg.eigh(a, lower=lower)
    return w if eigvals_only else (w, v)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
    """QR decomposition, like ``jax.scipy.linalg.qr``.

    Arguments:
      a: ``[..., m, n]``.
      mode: 'full' (``q`` ``[..., m, m]``), 'economic' (``q`` ``[..., m, min(m, n)]``) or 'r'
        (only ``r``, in a 1-tuple).
      pivoting: column pivoting (not supported by functx: NotImplementedError).
      overwrite_a, lwork, check_finite: accepted and ignored (as in JAX).
    Returns:
      ``(q, r)``, or ``(r,)`` for mode 'r'.

    Differences from JAX: ``pivoting=True`` raises NotImplementedError.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> q, r = functx.scipy.linalg.qr(np.array([[3.0, 1.0], [4.0, 2.0]], np.float32))
      >>> r
      Array([[-5.        , -2.2       ],
             [ 0.        ,  0.39999998]], dtype=float32)
    """
    del overwrite_a, lwork, check_finite
    if mode in ("full", "r"):
        full = True
    elif mode == "economic":
        full = False
    else:
        raise FunctxValueError(f"qr: unknown mode {mode!r}{where()}")
    (a,) = _inexact("qr", a)
    q, r = lax.linalg.qr(a, pivoting=pivoting, full_matrices=full)
    return (r,) if mode == "r" else (q, r)


def svd(
    a,
    full_matrices=True,
    compute_uv=True,
    overwrite_a=False,
    check_finite=True,
    lapack_driver="gesdd",
):
    """Singular value decomposition, like ``jax.scipy.linalg.svd``.

    Arguments:
      a: ``[..., m, n]``.
      full_matrices: square ``u`` and ``vh`` (True) or their first ``min(m, n)`` columns/rows.
      compute_uv: return ``(u, s, vh)`` (True) or only ``s``.
      overwrite_a, check_finite, lapack_driver: accepted and ignored (as in JAX).
    Returns:
      ``(u, s, vh)`` or ``s``.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.svd(np.array([[3.0, 0.0], [0.0, -4.0]], np.float32), compute_uv=False)
      Array([4., 3.], dtype=float32)
    """
    del overwrite_a, check_finite, lapack_driver
    (a,) = _inexact("svd", a)
    return lax.linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def block_diag(*arrs):
    """A block-diagonal matrix of the given arrays, like ``jax.scipy.linalg.block_diag``.

    Arguments:
      *arrs: arrays of at most 2 dimensions (scalars and vectors are one-row blocks).
    Returns:
      The block-diagonal matrix, of the promoted dtype.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.block_diag(np.ones((1, 2), np.float32), np.float32(3))
      Array([[1., 1., 0.],
             [0., 0., 3.]], dtype=float32)
    """
    if len(arrs) == 0:
        arrs = (jnp.zeros((1, 0)),)
    arrs = [jnp.asarray(a) if not jnp._is_array(a) else a for a in arrs]
    arrs = jnp._promote_only(*arrs)
    bad = [i for i, a in enumerate(arrs) if a.ndim > 2]
    if bad:
        raise FunctxValueError(
            f"block_diag: argument {bad[0]} has {arrs[bad[0]].ndim} dimensions, at most 2 are "
            f"allowed{where()}"
        )
    arrs = [jnp.reshape(a, (1,) * (2 - a.ndim) + a.shape) for a in arrs]
    acc = arrs[0]
    for a in arrs[1:]:
        _, c = a.shape
        a = jnp.pad(a, ((0, 0), (acc.shape[-1], 0)))
        acc = jnp.pad(acc, ((0, 0), (0, c)))
        acc = jnp.concatenate([acc, a], axis=0)
    return acc


def _pade_coefficients(m):
    """The [m/m] Pade approximant of exp: ``c_k = (2m-k)! m! / ((2m)! k! (m-k)!)``."""
    f = math.factorial
    return [f(2 * m - k) * f(m) / (f(2 * m) * f(k) * f(m - k)) for k in range(m + 1)]


# Higham (2005), "The scaling and squaring method for the matrix exponential revisited": the
# largest 1-norms for which the Pade approximants of degree m are accurate (double precision,
# and single precision for the low degrees), and the norm above which A is scaled
_THETA64 = ((3, 1.495585217958292e-2), (5, 2.539398330063230e-1), (7, 9.504178996162932e-1))
_THETA64 += ((9, 2.097847961257068e0), (13, 5.371920351148152e0))
_THETA32 = ((3, 4.258730016922831e-1), (5, 1.880152677804762e0), (7, 3.925724783138660e0))


def _pade_uv(a, m, powers):
    """``U`` (odd terms) and ``V`` (even terms) of the degree-``m`` Pade numerator."""
    c = _pade_coefficients(m)
    eye = jnp.broadcast_to(jnp.eye(a.shape[-1], dtype=a.dtype), a.shape)
    even = c[0] * eye
    odd = c[1] * eye
    for k in range(2, m + 1, 2):
        even = even + c[k] * powers[k]
        if k + 1 <= m:
            odd = odd + c[k + 1] * powers[k]
    return jnp.matmul(a, odd, precision=lax.Precision.HIGHEST), even


def expm(A, *, upper_triangular=False, max_squarings=16):  # noqa: N803
    """The matrix exponential by scaling and squaring with Pade approximants (Higham 2005), like
    ``jax.scipy.linalg.expm``.

    Arguments:
      A: square matrices ``[..., n, n]``.
      upper_triangular: whether ``A`` is upper triangular (a triangular solve is used).
      max_squarings: the most squarings; a matrix needing more gives NaNs (as in JAX).
    Returns:
      ``exp(A)``, of ``A``'s shape and inexact dtype.
    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.expm(np.zeros((2, 2), np.float32))
      Array([[1., 0.],
             [0., 1.]], dtype=float32)
    """
    (A,) = _inexact("expm", A)
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        raise FunctxValueError(
            f"expm: A must be a square matrix or a stack of them, got {A.shape}{where()}"
        )
    wide = A.dtype in (jnp.float64, jnp.complex128)
    thetas = _THETA64 if wide else _THETA32
    norm1 = jnp.max(jnp.sum(jnp.abs(A), axis=-2), axis=-1)
    maxnorm = thetas[-1][1]
    s = jnp.maximum(0, jnp.floor(jnp.log2(norm1 / maxnorm)))
    a = A / jnp.expand_dims(2**s, (-1, -2)).astype(A.dtype)
    top = thetas[-1][0]
    hp = lax.Precision.HIGHEST
    powers = {2: jnp.matmul(a, a, precision=hp)}
    for k in range(4, top + 1, 2):
        powers[k] = jnp.matmul(powers[k - 2], powers[2], precision=hp)
    u, v = _pade_uv(a, top, powers)
    for m, theta in reversed(thetas[:-1]):  # the lowest degree whose bound holds
        um, vm = _pade_uv(a, m, powers)
        use = jnp.expand_dims(norm1 <= theta, (-1, -2))
        u, v = jnp.where(use, um, u), jnp.where(use, vm, v)
    p, q = u + v, v - u
    r = solve_triangular(q, p) if upper_triangular else _jla.solve(q, p)
    for i in range(max_squarings):
        r = jnp.where(jnp.expand_dims(i < s, (-1, -2)), jnp.matmul(r, r, precision=hp), r)
    bad = jnp.expand_dims(s > max_squarings, (-1, -2))
    return jnp.where(bad, jnp.full_like(r, jnp.nan), r)


def expm_frechet(A, E, *, method=None, compute_expm=True):  # noqa: N803
    """The Frechet derivative of the matrix exponential at ``A`` in the direction ``E`` (JAX's
    ``jax.scipy.linalg.expm_frechet``): the jvp of ``expm``.

    Arguments:
      A: square matrices ``[..., n, n]``.
      E: the direction, of ``A``'s shape.
      method: accepted for SciPy's signature; unused.
      compute_expm: whether to return ``expm(A)`` too.

    Returns:
      ``(expm(A), L(A, E))``, or ``L(A, E)`` alone without ``compute_expm``.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> a = np.zeros((2, 2), np.float32)
      >>> functx.scipy.linalg.expm_frechet(a, np.eye(2, dtype=np.float32), compute_expm=False)
      Array([[1., 0.],
             [0., 1.]], dtype=float32)
    """
    del method
    A, E = jnp.asarray(A), jnp.asarray(E)  # noqa: N806
    if A.ndim < 2 or A.shape[-2] != A.shape[-1]:
        raise FunctxValueError(
            f"expm_frechet: A must be a square matrix or a stack of them, got {A.shape}{where()}"
        )
    if E.ndim < 2 or E.shape[-2] != E.shape[-1]:
        raise FunctxValueError(
            f"expm_frechet: E must be a square matrix or a stack of them, got {E.shape}{where()}"
        )
    if A.shape != E.shape:
        raise FunctxValueError(
            f"expm_frechet: A and E must have one shape, got {A.shape} and {E.shape}{where()}"
        )
    out, tan = _jvp(lambda a: expm(a), (A,), (E,))
    return (out, tan) if compute_expm else tan


def schur(a, output="real"):
    """Schur decomposition ``a = Z T Z^H`` (JAX's ``jax.scipy.linalg.schur``; LAPACK's gees on
    the host).

    Arguments:
      a: square matrices ``[..., n, n]``.
      output: ``'real'`` (the real Schur form of real input) or ``'complex'`` (an upper
        triangular ``T``).

    Returns:
      ``(T, Z)``.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> t, z = functx.scipy.linalg.schur(np.array([[1.0, 2.0], [0.0, 3.0]], np.float32))
      >>> t
      Array([[1., 2.],
             [0., 3.]], dtype=float32)
    """
    (a,) = _inexact("schur", a)
    if output == "complex":
        a = a.astype(_complex_of(a.dtype))
    return lax.linalg.schur(a)


def _is_complex(x):
    return np.dtype(x.dtype).kind == "c"


def _complex_of(dt):
    return jnp.promote_types(dt, jnp.complex64)


def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
    """Hessenberg form ``a = Q H Q^H`` (JAX's ``jax.scipy.linalg.hessenberg``; LAPACK's gehrd on
    the host).

    Arguments:
      a: square matrices ``[..., n, n]``.
      calc_q: whether to return ``Q`` too.
      overwrite_a, check_finite: accepted for SciPy's signature; unused.

    Returns:
      ``H`` (zero below the first subdiagonal), or ``(H, Q)`` with ``calc_q``.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> h, q = functx.scipy.linalg.hessenberg(np.eye(3, dtype=np.float32), calc_q=True)
      >>> print(np.abs(q))
      [[1. 0. 0.]
       [0. 1. 0.]
       [0. 0. 1.]]
    """
    del overwrite_a, check_finite
    (a,) = _inexact("hessenberg", a)
    n = a.shape[-1]
    if n == 0:
        return (jnp.zeros_like(a), jnp.zeros_like(a)) if calc_q else jnp.zeros_like(a)
    a_out, taus = lax.linalg.hessenberg(a)
    h = jnp.triu(a_out, -1)
    if not calc_q:
        return h
    q = lax.linalg.householder_product(a_out[..., 1:, :-1], taus)
    pads = [(0, 0)] * (a.ndim - 2) + [(1, 0), (1, 0)]
    e00 = jnp.pad(jnp.ones((1, 1), a.dtype), [(0, n - 1), (0, n - 1)])
    return h, jnp.pad(q, pads) + e00


def toeplitz(c, r=None):
    """The Toeplitz matrix with first column ``c`` and first row ``r`` (JAX's
    ``jax.scipy.linalg.toeplitz``), batched over the leading axes of ``c`` and ``r``.

    Arguments:
      c: the first column ``[..., m]`` (a scalar is one element).
      r: the first row ``[..., n]``; its first element is ignored. Default: ``conj(c)`` (a
        Hermitian matrix).

    Returns:
      ``[..., m, n]``, of the promoted dtype.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.toeplitz(np.array([1, 2, 3]), np.array([1, 5]))
      Array([[1, 5],
             [2, 1],
             [3, 2]], dtype=int32)
    """
    c = jnp.atleast_1d(jnp.asarray(c))
    r = (lax.conj(c) if _is_complex(c) else c) if r is None else r
    r = jnp.atleast_1d(jnp.asarray(r))
    c, r = _bcast_batch(*jnp._promote_only(c, r), 1, 1)
    m, n = c.shape[-1], r.shape[-1]
    elems = jnp.concatenate([jnp.flip(c, -1), r[..., 1:]], axis=-1)
    return _gather_matrix(elems, (m - 1) - np.arange(m)[:, None] + np.arange(n)[None, :])


def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
    """Polar decomposition ``a = u p`` (``side='right'``) or ``p u`` (JAX's
    ``jax.scipy.linalg.polar``), through the SVD: ``u = U V^H``, ``p = V S V^H`` (or
    ``U S U^H``).

    Arguments:
      a: matrices ``[..., m, n]``.
      side: ``'right'`` or ``'left'``.
      method: ``'qdwh'`` (JAX's default; functx computes the same factors by the SVD, with JAX's
        shape restrictions) or ``'svd'``.
      eps, max_iterations: QDWH's tolerances, accepted for JAX's signature; unused.

    Returns:
      ``(u, p)``: ``u`` with orthonormal columns (rows when ``n > m``), ``p`` Hermitian positive
      semidefinite.

    Differences from JAX: both methods compute by the SVD (QDWH's shape rules kept); values agree to
    rounding.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> u, p = functx.scipy.linalg.polar(np.array([[2.0, 0.0], [0.0, -3.0]], np.float32))
      >>> p
      Array([[2., 0.],
             [0., 3.]], dtype=float32)
    """
    del eps, max_iterations
    (a,) = _inexact("polar", a)
    if side not in ("right", "left"):
        raise FunctxValueError(f"polar: side must be 'right' or 'left', got {side!r}{where()}")
    if method not in ("qdwh", "svd"):
        raise FunctxValueError(f"polar: method must be 'qdwh' or 'svd', got {method!r}{where()}")
    m, n = a.shape[-2:]
    if method == "qdwh" and not ((m >= n and side == "right") or (m < n and side == "left")):
        raise NotImplementedError(
            "method='qdwh' only supports mxn matrices where m < n where side='right' and m >= n "
            f"side='left', got {a.shape} with side={side!r}"
        )
    u, s, vh = lax.linalg.svd(a, full_matrices=False)
    s = s.astype(u.dtype)
    hp = lax.Precision.HIGHEST
    unitary = jnp.matmul(u, vh, precision=hp)
    if side == "right":
        posdef = jnp.matmul(_mH(vh) * s[..., None, :], vh, precision=hp)
    else:
        posdef = jnp.matmul(u * s[..., None, :], _mH(u), precision=hp)
    return unitary, posdef


def sqrtm(A, blocksize=1):  # noqa: N803
    """The principal matrix square root (JAX's ``jax.scipy.linalg.sqrtm``): the complex Schur
    form ``A = Z T Z^H``, the square root ``U`` of the triangular ``T`` column by column
    (Bjorck and Hammarling 1983: each column is a triangular solve), and ``Z U Z^H``.

    Arguments:
      A: square matrices ``[..., n, n]``.
      blocksize: 1 (the blocked variant is not implemented, as in JAX).

    Returns:
      The complex square root, of ``A``'s complex dtype.

    Differences from JAX: solves for the triangular root one column at a time (JAX loops over
    elements); values agree to rounding.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.sqrtm(np.array([[4.0, 0.0], [0.0, 9.0]], np.float32))
      Array([[2.+0.j, 0.+0.j],
             [0.+0.j, 3.+0.j]], dtype=complex64)
    """
    if blocksize > 1:
        raise NotImplementedError("Blocked version is not implemented yet.")
    T, Z = schur(A, output="complex")  # noqa: N806
    n = T.shape[-1]
    d = jnp.sqrt(jnp.diagonal(T, axis1=-2, axis2=-1))
    cols = [d[..., :1, None]]
    U = d[..., :1, None]  # noqa: N806 (the leading j x j block of the root)
    for j in range(1, n):
        # (U_j + d_j I) x = T[:j, j]: the column above the diagonal
        dj = d[..., j, None, None]
        lhs = U + dj * jnp.eye(j, dtype=T.dtype)
        x = lax.linalg.triangular_solve(lhs, T[..., :j, j, None], left_side=True, lower=False)
        x = jnp.where(T[..., :j, j, None] == 0, jnp.zeros_like(x), x)
        col = jnp.concatenate([x, dj], axis=-2)
        cols = [jnp.pad(c, [(0, 0)] * (c.ndim - 2) + [(0, 1), (0, 0)]) for c in cols] + [col]
        U = jnp.concatenate(cols, axis=-1)  # noqa: N806
    hp = lax.Precision.HIGHEST
    return jnp.matmul(jnp.matmul(Z, U, precision=hp), _mH(Z), precision=hp)


def rsf2csf(T, Z, check_finite=True):  # noqa: N803
    """The complex Schur form from the real one (JAX's ``jax.scipy.linalg.rsf2csf``): each 2x2
    block of ``T`` on the diagonal is triangularized by a Givens rotation, applied to ``Z`` too.

    Arguments:
      T: the real Schur form ``[..., n, n]`` (``schur(a)[0]``).
      Z: its Schur vectors ``[..., n, n]``.
      check_finite: accepted for SciPy's signature; unused.

    Returns:
      ``(T, Z)`` in complex Schur form (``T`` upper triangular), of the complex dtype.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> t = np.array([[1.0, 2.0], [-2.0, 1.0]], np.float32)
      >>> tc, zc = functx.scipy.linalg.rsf2csf(t, np.eye(2, dtype=np.float32))
      >>> print(np.round(np.diag(np.asarray(tc)), 4))
      [1.+2.j 1.-2.j]
    """
    del check_finite
    T, Z = _inexact("rsf2csf", T, Z)  # noqa: N806
    cdt = _complex_of(T.dtype)
    T, Z = T.astype(cdt), Z.astype(cdt)  # noqa: N806
    n = T.shape[-1]
    if T.shape[-2:] != (n, n) or Z.shape != T.shape:
        raise FunctxValueError(
            f"rsf2csf: T and Z must be square, of one shape, got {T.shape} and {Z.shape}{where()}"
        )
    eps = float(np.finfo(cdt).eps)
    bc = lambda x: x[(..., None, None)]  # noqa: E731
    for m in range(n - 1, 0, -1):
        sub = T[..., m, m - 1]
        act = jnp.abs(sub) > eps * (jnp.abs(T[..., m - 1, m - 1]) + jnp.abs(T[..., m, m]))
        mu = _jla.eigvals(T[..., m - 1 : m + 1, m - 1 : m + 1]) - T[..., m, m, None]
        r = jnp.sqrt(jnp.abs(mu[..., 0]) ** 2 + jnp.abs(sub) ** 2).astype(cdt)
        r = jnp.where(act, r, jnp.ones_like(r))
        c, s_ = mu[..., 0] / r, sub / r
        g = jnp.stack(
            [jnp.stack([lax.conj(c), s_], -1), jnp.stack([-s_, c], -1)], -2
        )  # [..., 2, 2]
        hp = lax.Precision.HIGHEST
        rows = jnp.matmul(g, T[..., m - 1 : m + 1, m - 1 :], precision=hp)
        t_new = jnp.concatenate([T[..., m - 1 : m + 1, : m - 1], rows], axis=-1)
        t_new = jnp.concatenate([T[..., : m - 1, :], t_new, T[..., m + 1 :, :]], axis=-2)
        colsT = jnp.matmul(t_new[..., : m + 1, m - 1 : m + 1], _mH(g), precision=hp)  # noqa: N806
        colsT = jnp.concatenate([colsT, t_new[..., m + 1 :, m - 1 : m + 1]], axis=-2)  # noqa: N806
        t_new = jnp.concatenate([t_new[..., : m - 1], colsT, t_new[..., m + 1 :]], axis=-1)
        colsZ = jnp.matmul(Z[..., m - 1 : m + 1], _mH(g), precision=hp)  # noqa: N806
        z_new = jnp.concatenate([Z[..., : m - 1], colsZ, Z[..., m + 1 :]], axis=-1)
        T = jnp.where(bc(act), t_new, T)  # noqa: N806
        Z = jnp.where(bc(act), z_new, Z)  # noqa: N806
        mask = np.zeros((n, n), bool)
        mask[m, m - 1] = True
        T = jnp.where(mask, jnp.zeros_like(T), T)  # noqa: N806
    return T, Z


def funm(A, func, disp=True):  # noqa: N803
    """A matrix function ``f(A)`` by the Schur-Parlett method (JAX's ``jax.scipy.linalg.funm``):
    the complex Schur form ``A = Z T Z^H``, ``f`` on ``T``'s diagonal, Parlett's recurrence
    (Golub and Van Loan, algorithm 11.1.1) for the rest of ``f(T)``, and ``Z f(T) Z^H``.

    Arguments:
      A: a square matrix ``[n, n]``.
      func: an elementwise function (of the eigenvalues).
      disp: if False, also return JAX's estimate of the relative error.

    Returns:
      ``f(A)`` (complex), or ``(f(A), err)``.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> f = functx.scipy.linalg.funm(np.diag(np.float32([1.0, 4.0])), functx.numpy.sqrt)
      >>> print(np.round(np.asarray(f), 4))
      [[1.+0.j 0.+0.j]
       [0.+0.j 2.+0.j]]
    """
    A = jnp.asarray(A)  # noqa: N806
    if A.ndim != 2 or A.shape[0] != A.shape[1]:
        raise FunctxValueError(f"funm: A must be a square matrix, got shape {A.shape}{where()}")
    T, Z = rsf2csf(*schur(A))  # noqa: N806
    n = T.shape[0]
    fd = jnp.asarray(func(jnp.diagonal(T))).astype(T.dtype)
    F = jnp.diag(fd)  # noqa: N806
    minden = jnp.abs(T[0, 0])
    for p in range(1, n):
        for i in range(n - p):
            j = i + p
            s_ = T[i, j] * (F[j, j] - F[i, i])
            if j - i > 1:
                s_ = s_ + jnp.sum(
                    T[i, i + 1 : j] * F[i + 1 : j, j] - F[i, i + 1 : j] * T[i + 1 : j, j]
                )
            den = T[j, j] - T[i, i]
            s_ = jnp.where(den != 0, s_ / jnp.where(den != 0, den, jnp.ones_like(den)), s_)
            F = F.at[i, j].set(s_)  # noqa: N806
            minden = jnp.minimum(minden, jnp.abs(den))
    hp = lax.Precision.HIGHEST
    F = jnp.matmul(jnp.matmul(Z, F, precision=hp), _mH(Z), precision=hp)  # noqa: N806
    if disp:
        return F
    tol = float(np.finfo(_real_of(F.dtype)).eps)
    minden = jnp.where(minden == 0.0, tol, minden)
    bound = (tol / minden) * _jla.norm(jnp.triu(T, 1), 1)
    err = jnp.where(jnp.any(jnp.isinf(F)), np.inf, jnp.minimum(1, jnp.maximum(tol, bound)))
    return F, err


def _real_of(dt):
    return np.float32 if np.dtype(dt) == np.complex64 else np.float64


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None):
    """Eigenvalues (and eigenvectors) of a real symmetric (or Hermitian) tridiagonal matrix (JAX's
    ``jax.scipy.linalg.eigh_tridiagonal``), through ``eigh`` of the assembled matrix (JAX runs a
    bisection; the values agree to rounding, eigenvector signs may differ).

    Arguments:
      d: the diagonal ``[n]``.
      e: the off-diagonal ``[n - 1]``, of ``d``'s dtype.
      eigvals_only: return only the eigenvalues.
      select: ``'a'`` (all) or ``'i'`` (the indices ``select_range``, inclusive); ``'v'`` is not
        implemented (as in JAX).
      select_range: ``(lo, hi)`` for ``select='i'``.
      tol: accepted for JAX's signature; unused.

    Returns:
      The ascending real eigenvalues, or ``(eigenvalues, eigenvectors)`` (columns).

    Differences from JAX: ``eigh`` of the assembled matrix (JAX bisects): the same eigenvalues to
    rounding, eigenvector signs may differ.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> d = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
      >>> e = np.ones(3, np.float32)
      >>> w = functx.scipy.linalg.eigh_tridiagonal(d, e, eigvals_only=True)
      >>> print(np.round(np.asarray(w), 4))
      [0.2547 1.8227 3.1773 4.7453]
    """
    del tol
    d, e = jnp.asarray(d), jnp.asarray(e)
    if d.dtype != e.dtype:
        raise FunctxTypeError(
            f"eigh_tridiagonal: d and e must have one dtype, got {d.dtype} and {e.dtype}{where()}"
        )
    if d.dtype not in (jnp.float32, jnp.float64, jnp.complex64, jnp.complex128):
        raise FunctxTypeError(
            f"eigh_tridiagonal: d and e must be float32, float64, complex64 or complex128, got "
            f"{d.dtype}{where()}"
        )
    if select == "v":
        raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
    if select not in ("a", "i"):
        raise FunctxValueError(
            f"eigh_tridiagonal: select must be 'a', 'i' or 'v', got {select!r}{where()}"
        )
    a = jnp.diag(d) + jnp.diag(e, 1) + jnp.diag(lax.conj(e) if _is_complex(e) else e, -1)
    w, v = _jla.eigh(a, UPLO="L", symmetrize_input=False)
    if select == "i":
        lo, hi = select_range
        w, v = w[lo : hi + 1], v[:, lo : hi + 1]
    return w if eigvals_only else (w, v)


def _sylvester_schur(A, B, C):  # noqa: N803
    """Bartels and Stewart (1972) on complex Schur forms ``A = U R U^H``, ``B = V S V^H``:
    ``R Y + Y S = U^H C V`` is solved column by column (``S`` upper triangular: column ``j`` is
    the triangular system ``(R + S_jj I) y_j = f_j - sum_{k<j} S_kj y_k``), ``X = U Y V^H``."""
    R, U = schur(A, output="complex")  # noqa: N806
    S, V = schur(B, output="complex")  # noqa: N806
    hp = lax.Precision.HIGHEST
    F = jnp.matmul(jnp.matmul(_mH(U), C.astype(R.dtype), precision=hp), V, precision=hp)  # noqa: N806
    eye = jnp.eye(R.shape[-1], dtype=R.dtype)

    def column(j, Y):  # noqa: N803 (the columns from j on are still zero)
        s_j = lax.dynamic_slice_in_dim(S, j, 1, axis=-1)
        s_jj = lax.dynamic_slice_in_dim(s_j, j, 1, axis=-2)
        rhs = lax.dynamic_slice_in_dim(F, j, 1, axis=-1) - jnp.matmul(Y, s_j, precision=hp)
        y = lax.linalg.triangular_solve(R + s_jj * eye, rhs, left_side=True, lower=False)
        return lax.dynamic_update_slice_in_dim(Y, y, j, axis=-1)

    Y = lax.fori_loop(0, S.shape[-1], column, jnp.zeros_like(F))  # noqa: N806
    X = jnp.matmul(jnp.matmul(U, Y, precision=hp), _mH(V), precision=hp)  # noqa: N806
    return X, jnp.diagonal(R, axis1=-2, axis2=-1), jnp.diagonal(S, axis1=-2, axis2=-1)


def _sylvester_eigen(A, B, C):  # noqa: N803
    """By eigendecompositions ``A = P diag(l) P^-1``, ``B = Q diag(m) Q^-1``:
    ``X = P ((P^-1 C Q) / (l_i + m_j)) Q^-1``."""
    lam, P = _jla.eig(A)  # noqa: N806
    mu, Q = _jla.eig(B)  # noqa: N806
    hp = lax.Precision.HIGHEST
    F = _jla.solve(P, jnp.matmul(C.astype(P.dtype), Q, precision=hp))  # noqa: N806
    Y = F / (lam[..., :, None] + mu[..., None, :])  # noqa: N806
    return jnp.matmul(jnp.matmul(P, Y, precision=hp), _jla.inv(Q), precision=hp), lam, mu


_SYLVESTER = {"schur": _sylvester_schur, "eigen": _sylvester_eigen}


def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):  # noqa: N803
    """Solve the Sylvester equation ``A X + X B = C`` (JAX's
    ``jax.scipy.linalg.solve_sylvester``).

    Arguments:
      A: square matrices ``[..., m, m]``.
      B: square matrices ``[..., n, n]``.
      C: the right-hand sides ``[..., m, n]``; the batch axes of the three broadcast.
      method: 'schur' (Bartels-Stewart on the complex Schur forms: robust, also for defective
        matrices) or 'eigen' (through eigendecompositions: cheaper, needs diagonalizable ``A``
        and ``B``).
      tol: where some eigenvalue of ``A`` plus one of ``B`` is smaller than this in magnitude
        (the equation is singular or nearly so), the solution is all NaN, as in JAX.

    Returns:
      ``X`` ``[..., m, n]``, of the promoted inexact dtype (real unless an input is complex).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> a = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
      >>> b = np.array([[5.0, 6.0], [7.0, 8.0]], np.float32)
      >>> c = np.array([[6.0, 8.0], [10.0, 12.0]], np.float32)
      >>> x = functx.scipy.linalg.solve_sylvester(a, b, c)
      >>> print(np.round(np.asarray(x), 4) + 0.0)
      [[1. 0.]
       [0. 1.]]
    """
    A, B, C = _inexact("solve_sylvester", A, B, C)  # noqa: N806
    m, n = C.shape[-2:] if C.ndim >= 2 else (None, None)
    if m is None or A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
        raise FunctxValueError(
            f"solve_sylvester: incompatible shapes for the Sylvester equation: A {A.shape}, "
            f"B {B.shape}, C {C.shape} (expected [..., m, m], [..., n, n], [..., m, n]){where()}"
        )
    if method not in _SYLVESTER:
        raise FunctxValueError(
            f'Unrecognized method {method}. The two valid methods are either "schur" or '
            f'"eigen".{where()}'
        )
    batch = jnp.broadcast_shapes(A.shape[:-2], B.shape[:-2], C.shape[:-2])
    A, B, C = (jnp.broadcast_to(x, batch + x.shape[-2:]) for x in (A, B, C))  # noqa: N806
    if m == 0 or n == 0:
        return C
    X, lam, mu = _SYLVESTER[method](A, B, C)  # noqa: N806
    if not _is_complex(C):
        X = lax.real(X)  # noqa: N806
    near = jnp.abs(lam[..., :, None] + mu[..., None, :]) < tol
    return jnp.where(jnp.any(near, axis=(-2, -1))[..., None, None], jnp.nan, X)


def qr_multiply(
    a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False, overwrite_c=False
):
    """``a``'s economic QR factorization ``a = Q R`` and ``Q`` multiplied with ``c`` (JAX's
    ``jax.scipy.linalg.qr_multiply``).

    Arguments:
      a: matrices ``[..., M, N]``; ``K = min(M, N)``.
      c: for mode 'right', ``[..., P, M]`` (a vector ``[M]`` is one row); for 'left',
        ``[..., K, P]`` (a vector ``[K]`` is one column). Batch axes broadcast with ``a``'s.
      mode: 'right' (``c Q``) or 'left' (``Q c``).
      pivoting: column pivoting (not supported by functx: NotImplementedError).
      conjugate: use the complex conjugate of ``Q``.
      overwrite_a, overwrite_c: accepted and ignored (as in JAX).

    Returns:
      ``(c Q, R)`` (``[..., P, K]``) or ``(Q c, R)`` (``[..., M, P]``), ``R`` ``[..., K, N]``; a
      vector ``c`` gives the product raveled to one axis, as in JAX.

    Differences from JAX: ``pivoting=True`` raises NotImplementedError (as functx's ``qr``).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> a = np.array([[3.0, 1.0], [4.0, 2.0]], np.float32)
      >>> cq, r = functx.scipy.linalg.qr_multiply(a, np.array([3.0, 4.0], np.float32))
      >>> print(np.round(np.asarray(cq), 4))
      [-5.  0.]
    """
    del overwrite_a, overwrite_c
    if mode not in ("right", "left"):
        raise FunctxValueError(f"mode must be 'right' or 'left', got {mode!r}{where()}")
    a, c = _inexact("qr_multiply", a, c)
    q, r = qr(a, mode="economic", pivoting=pivoting)
    if conjugate and _is_complex(q):
        q = lax.conj(q)
    (m, n), vector = a.shape[-2:], c.ndim == 1
    left = mode == "left"
    if vector:
        c = c[:, None] if left else c[None, :]
    have, want = (c.shape[-2], min(m, n)) if left else (c.shape[-1], m)
    if have != want:
        what = ("Q @ c", "columns", "rows") if left else ("c @ Q", "rows", "columns")
        raise FunctxValueError(
            f"qr_multiply: shapes not compatible for {what[0]}: a has shape {a.shape}, so Q has "
            f"{want} {what[1]}, but c has {have} {what[2]}{where()}"
        )
    hp = lax.Precision.HIGHEST
    out = jnp.matmul(q, c, precision=hp) if left else jnp.matmul(c, q, precision=hp)
    r = jnp.broadcast_to(r, out.shape[:-2] + r.shape[-2:])
    return (out.reshape(-1) if vector else out), r


# --- special matrices ----------------------------------------------------------------------------
# Those of vectors gather from the vector (a zero and a one appended where the pattern needs them)
# through a static index table; those of a size alone are NumPy constants, exact and rounded once.


def _gather_matrix(v, idx):
    """The matrices ``out[..., i, j] = v[..., idx[i, j]]`` for a static integer table ``idx``."""
    batch = v.shape[:-1]
    if idx.size == 0:
        return jnp.zeros((*batch, *idx.shape), v.dtype)
    return jnp.take(v, idx.reshape(-1), axis=-1).reshape((*batch, *idx.shape))


def _append(v, *values):
    """``v`` with the constants ``values`` appended along its last axis."""
    tail = jnp.broadcast_to(jnp.asarray(np.array(values), v.dtype), (*v.shape[:-1], len(values)))
    return jnp.concatenate([v, tail], axis=-1)


def _vector(name, a, position=0, inexact=False):
    """``a`` as an array of at least one axis (JAX's ``check_arraylike``; a scalar is one
    element), of an inexact dtype if asked."""
    a = jnp.atleast_1d(jnp._arraylike(a, name, position))
    return a.astype(dtypes.to_inexact(a.dtype)) if inexact else a


def _size(name, n):
    """The static size ``n`` as an int (an integral float is accepted, as JAX's jitted functions
    with a static ``n`` accept it)."""
    if isinstance(n, (float, np.floating)) and float(n).is_integer():
        return int(n)
    try:
        return operator.index(n)
    except TypeError:
        raise FunctxTypeError(
            f"{name}: n must be a static integer (a Python int; under jit, a static argument), "
            f"got {type(n).__name__} {n!r}{where()}"
        ) from None


def _leading_coefficient_ratio(name, a):
    """``-a[..., 1:] / a[..., :1]`` for polynomial coefficients ``a`` (at least 2 of them)."""
    if a.shape[-1] < 2:
        raise FunctxValueError(
            f"{name}: the length of a along the last axis must be at least 2, got shape "
            f"{a.shape}{where()}"
        )
    return -a[..., 1:] / a[..., :1]


def circulant(c):
    """The circulant matrix of first column ``c``, ``out[i, j] = c[(i - j) mod N]`` (JAX's
    ``jax.scipy.linalg.circulant``), batched over the leading axes of ``c``.

    Arguments:
      c: the first column ``[..., N]`` (a scalar is one element).

    Returns:
      ``[..., N, N]``, of ``c``'s dtype.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.circulant(np.array([1, 2, 3]))
      Array([[1, 3, 2],
             [2, 1, 3],
             [3, 2, 1]], dtype=int32)
    """
    c = _vector("circulant", c)
    i = np.arange(c.shape[-1])
    return _gather_matrix(c, (i[:, None] - i[None, :]) % max(1, c.shape[-1]))


def companion(a):
    """The companion matrix of the polynomial ``a[0] x^(N-1) + ... + a[N-1]`` (JAX's
    ``jax.scipy.linalg.companion``): first row ``-a[1:] / a[0]``, ones on the first subdiagonal.

    Arguments:
      a: the coefficients ``[..., N]``, highest degree first, ``N >= 2``. A zero ``a[0]`` is not
        checked (infinities or NaNs, as in JAX).

    Returns:
      ``[..., N - 1, N - 1]``, of ``a``'s inexact dtype (integers become floats).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.companion(np.array([1.0, -10.0, 31.0, -30.0], np.float32))
      Array([[ 10., -31.,  30.],
             [  1.,   0.,   0.],
             [  0.,   1.,   0.]], dtype=float32)
    """
    a = _vector("companion", a, inexact=True)
    n = a.shape[-1] - 1
    v = _append(_leading_coefficient_ratio("companion", a), 0, 1)  # (zero at n, one at n + 1)
    idx = np.full((n, n), n)
    idx[0] = np.arange(n)
    idx[np.arange(1, n), np.arange(n - 1)] = n + 1
    return _gather_matrix(v, idx)


_CONVOLUTION_ROWS = {  # mode: (rows, first row of the full matrix) for len(a) = m and n columns
    "full": lambda m, n: (m + n - 1, 0),
    "same": lambda m, n: (max(m, n), (min(m, n) - 1) // 2),
    "valid": lambda m, n: (max(m, n) - min(m, n) + 1, min(m, n) - 1),
}


def convolution_matrix(a, n, mode="full"):
    """The matrix ``A`` with ``A @ v == numpy.convolve(a, v, mode)`` for vectors ``v`` of ``n``
    points (JAX's ``jax.scipy.linalg.convolution_matrix``), batched over ``a``'s leading axes.

    Arguments:
      a: the kernel ``[..., m]``, ``m >= 1``.
      n: the number of columns (static, positive).
      mode: 'full' (``m + n - 1`` rows), 'same' (``max(m, n)``) or 'valid'
        (``max(m, n) - min(m, n) + 1``).

    Returns:
      ``[..., rows, n]``, of ``a``'s dtype.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.convolution_matrix(np.array([1, 2]), 3)
      Array([[1, 0, 0],
             [2, 1, 0],
             [0, 2, 1],
             [0, 0, 2]], dtype=int32)
    """
    a = jnp._arraylike(a, "convolution_matrix")
    if a.ndim == 0:
        raise FunctxValueError(
            f"convolution_matrix: a must be at least 1-dimensional, got a scalar{where()}"
        )
    n = _size("convolution_matrix", n)
    if n < 1:
        raise FunctxValueError(
            f"convolution_matrix: n must be a positive integer, got {n}{where()}"
        )
    if mode not in _CONVOLUTION_ROWS:
        raise FunctxValueError(
            f"convolution_matrix: mode must be one of 'full', 'valid', 'same', got "
            f"{mode!r}{where()}"
        )
    m = a.shape[-1]
    if m < 1:
        raise FunctxValueError(
            f"convolution_matrix: a must have at least 1 element along its last axis, got shape "
            f"{a.shape}{where()}"
        )
    rows, first = _CONVOLUTION_ROWS[mode](m, n)
    k = first + np.arange(rows)[:, None] - np.arange(n)[None, :]
    return _gather_matrix(_append(a, 0), np.where((k >= 0) & (k < m), k, m))


def fiedler(a):
    """The symmetric Fiedler matrix ``out[i, j] = |a[i] - a[j]|`` (JAX's
    ``jax.scipy.linalg.fiedler``), batched over ``a``'s leading axes.

    Arguments:
      a: ``[..., N]`` (a scalar is one element).

    Returns:
      ``[..., N, N]``, of the dtype of ``abs(a - a)`` (real for complex ``a``).

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.fiedler(np.array([1, 4, 12]))
      Array([[ 0,  3, 11],
             [ 3,  0,  8],
             [11,  8,  0]], dtype=int32)
    """
    a = _vector("fiedler", a)
    return jnp.abs(a[..., :, None] - a[..., None, :])


def fiedler_companion(a):
    """The Fiedler companion matrix of the polynomial with coefficients ``a`` (JAX's
    ``jax.scipy.linalg.fiedler_companion``): pentadiagonal, with the polynomial's roots as its
    eigenvalues (Fiedler 2003).

    Arguments:
      a: the coefficients ``[..., N]``, highest degree first, ``N >= 1`` (``N == 1`` gives
        ``0 x 0`` matrices). A zero ``a[0]`` is not checked, as in JAX.

    Returns:
      ``[..., N - 1, N - 1]``, of ``a``'s inexact dtype.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.fiedler_companion(np.array([1.0, -6.0, 11.0, -6.0], np.float32))
      Array([[  6., -11.,   1.],
             [  1.,   0.,   0.],
             [  0.,   6.,   0.]], dtype=float32)
    """
    a = _vector("fiedler_companion", a, inexact=True)
    if a.shape[-1] == 0:
        raise FunctxValueError(
            f"fiedler_companion: the last axis of a must have nonzero length, got shape "
            f"{a.shape}{where()}"
        )
    n = a.shape[-1] - 1
    if n == 0:
        return jnp.zeros((*a.shape[:-1], 0, 0), a.dtype)
    # -a[k] / a[0] at k - 1; a zero at n, a one at n + 1
    v = _append(_leading_coefficient_ratio("fiedler_companion", a), 0, 1)
    idx = np.full((n, n), n)
    idx[0, 0] = 0
    if n > 1:
        idx[1, 0] = n + 1
    for t in range(0, n - 1, 2):  # the odd columns t + 1 and the band around them
        idx[t, t + 1] = t + 1
        if t + 2 < n:
            idx[t + 2, t + 1], idx[t, t + 2] = t + 2, n + 1
        if t + 3 < n:
            idx[t + 3, t + 1] = n + 1
    return _gather_matrix(v, idx)


def hankel(c, r=None):
    """The Hankel matrix with first column ``c`` and last row ``r``, ``out[i, j] = v[i + j]`` for
    ``v = concatenate([c, r[1:]])`` (JAX's ``jax.scipy.linalg.hankel``), batched over the
    leading axes of ``c`` and ``r`` (broadcast together).

    Arguments:
      c: the first column ``[..., N]``.
      r: the last row ``[..., M]``; its first element is ignored. Default: zeros like ``c``.

    Returns:
      ``[..., N, M]``, of the promoted dtype.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> functx.scipy.linalg.hankel(np.array([1, 2, 3]), np.array([9, 4, 5, 6]))
      Array([[1, 2, 3, 4],
             [2, 3, 4, 5],
             [3, 4, 5, 6]], dtype=int32)
    """
    c = jnp._arraylike(c, "hankel")
    r = jnp.zeros_like(c) if r is None else jnp._arraylike(r, "hankel", 1)
    for name, x in (("c", c), ("r", r)):
        if x.ndim == 0:
            raise FunctxValueError(
                f"hankel: {name} must be at least 1-dimensional, got a scalar{where()}"
            )
    c, r = _bcast_batch(*jnp._promote_only(c, r), 1, 1)
    m, n = c.shape[-1], r.shape[-1]
    return _gather_matrix(
        jnp.concatenate([c, r[..., 1:]], axis=-1), np.add.outer(np.arange(m), np.arange(n))
    )


def leslie(f, s):
    """The Leslie matrix of fecundities ``f`` and survival rates ``s`` (JAX's
    ``jax.scipy.linalg.leslie``): ``f`` in the first row, ``s`` on the first subdiagonal.

    Arguments:
      f: ``[..., N]``, ``N >= 2``.
      s: ``[..., N - 1]``; the batch axes of ``f`` and ``s`` broadcast.

    Returns:
      ``[..., N, N]``, of the promoted dtype.

    Example:
      >>> import numpy as np
      >>> import functx
      >>> f, s = np.array([0.5, 2.0, 1.0], np.float32), np.array([0.25, 0.75], np.float32)
      >>> functx.scipy.linalg.leslie(f, s)
      Array([[0.5 , 2.  , 1.  ],
             [0.25, 0.  , 0.  ],
             [0.  , 0.75, 0.  ]], dtype=float32)
    """
    f, s = _vector("leslie", f), _vector("leslie", s, 1)
    n = f.shape[-1]
    if n < 2:
        raise FunctxValueError(
            f"leslie: the length of f along the last axis must be at least 2, got shape "
            f"{f.shape}{where()}"
        )
    if s.shape[-1] != n - 1:
        raise FunctxValueError(
            f"leslie: s must have one element fewer than f along the last axis, got f of shape "
            f"{f.shape} and s of shape {s.shape}{where()}"
        )
    f, s = _bcast_batch(*jnp._promote_only(f, s), 1, 1)
    idx = np.full((n, n), 2 * n - 1)  # f at 0..n-1, s at n..2n-2, a zero at 2n-1
    idx[0] = np.arange(n)
    idx[np.arange(1, n), np.arange(n - 1)] = n + np.arange(n - 1)
    return _gather_matrix(_append(jnp.concatenate([f, s], axis=-1), 0), idx)


def _exact(n, entry, dtype):
    """The ``n x n`` array of the exact integers ``entry(i, j)``, each rounded once to ``dtype``
    (infinite beyond float64's range)."""

    def rounded(i, j):
        v = entry(i, j)
        try:
            return float(v)
        except OverflowError:
            return math.copysign(math.inf, v)

    n = max(n, 0)
    table = np.array([[rounded(i, j) for j in range(n)] for i in range(n)], np.float64)
    with np.errstate(over="ignore"):
        return jnp.asarray(table.reshape(n, n).astype(dtype))


def dft(n, scale=None, *, dtype=None):
    """The ``n x n`` discrete Fourier transform matrix ``W[j, k] = exp(-2 pi i j k / n)`` (JAX's
    ``jax.scipy.linalg.dft``): ``W @ x == numpy.fft.fft(x)``.

    Arguments:
      n: the size (static).
      scale: None (unscaled), 'sqrtn' (``1/sqrt(n)``: unitary) or 'n' (``1/n``).
      dtype: a complex dtype (default: complex64, complex128 under x64).

    Returns:
      ``[n, n]`` (empty for ``n <= 0``).

    Differences from JAX: the phases are reduced modulo ``n`` before rounding, so large ``n``
    gives values accurate to the last bit where JAX's lose a few.

    Example:
      >>> import functx
      >>> import numpy as np
      >>> w = functx.scipy.linalg.dft(4)
      >>> x = np.arange(4.0, dtype=np.float32)
      >>> print(np.round(np.asarray(w @ x), 4) + 0.0)
      [ 6.+0.j -2.+2.j -2.+0.j -2.-2.j]
    """
    n = _size("dft", n)
    if scale not in (None, "sqrtn", "n"):
        raise FunctxValueError(f"dft: scale must be None, 'sqrtn' or 'n', got {scale!r}{where()}")
    dt = dtypes.default_complex() if dtype is None else dtypes.check_user_dtype(dtype, "dft")
    if np.dtype(dt).kind != "c":
        raise FunctxValueError(
            f"dft: dtype must be a complex floating-point type, got {dt}{where()}"
        )
    k = np.arange(max(n, 0))
    w = np.exp(-2j * np.pi * (np.outer(k, k) % max(n, 1)) / max(n, 1))
    w = w / {None: 1, "sqrtn": math.sqrt(max(n, 1)), "n": max(n, 1)}[scale]
    return jnp.asarray(w.astype(dt))


def hadamard(n, dtype=int):
    """The ``n x n`` Hadamard matrix of Sylvester's construction, ``H_2m = [[H_m, H_m], [H_m,
    -H_m]]`` (JAX's ``jax.scipy.linalg.hadamard``).

    Arguments:
      n: the size (static): a positive power of 2.
      dtype: the dtype (default: int, int32 unless x64 is on; None: the default float).

    Returns:
      ``[n, n]`` of entries 1 and -1.

    Example:
      >>> import functx
      >>> functx.scipy.linalg.hadamard(2)
      Array([[ 1,  1],
             [ 1, -1]], dtype=int32)
    """
    n = _size("hadamard", n)
    if n < 1 or n & (n - 1):
        raise FunctxValueError(f"hadamard: n must be a positive power of 2, got {n}{where()}")
    dt = dtypes.default_float() if dtype is None else dtypes.check_user_dtype(dtype, "hadamard")
    if np.dtype(dt) == np.bool_:
        raise FunctxTypeError(f"hadamard: dtype bool cannot hold -1{where()}")
    h = np.ones((1, 1), np.int64)
    while h.shape[0] < n:
        h = np.block([[h, h], [h, -h]])
    return jnp.asarray(h.astype(dt))


def helmert(n, full=False):
    """The Helmert matrix (JAX's ``jax.scipy.linalg.helmert``): row ``k - 1`` (``k = 1 .. n-1``)
    is ``(1, ..., 1, -k, 0, ..., 0) / sqrt(k (k + 1))`` with ``k`` ones; ``full`` puts the row
    ``1/sqrt(n)`` first. Its rows are orthonormal.

    Arguments:
      n: the number of columns (static, positive).
      full: return ``[n, n]`` (with the constant row) instead of ``[n - 1, n]``.

    Returns:
      The matrix, of the default float dtype.

    Example:
      >>> import functx
      >>> functx.scipy.linalg.helmert(3, full=True).round(4)
      Array([[ 0.5774,  0.5774,  0.5774],
             [ 0.7071, -0.7071,  0.    ],
             [ 0.4082,  0.4082, -0.8165]], dtype=float32)
    """
    n = _size("helmert", n)
    if n < 1:
        raise FunctxValueError(f"helmert: n must be a positive integer, got {n}{where()}")
    k = np.arange(1, n)[:, None]
    j = np.arange(n)[None, :]
    h = np.where(j < k, 1.0, np.where(j == k, -k, 0.0)) / np.sqrt(k * (k + 1))
    if full:
        h = np.concatenate([np.full((1, n), 1 / math.sqrt(n)), h])
    return jnp.asarray(h.reshape(-1, n).astype(dtypes.default_float()))


def hilbert(n):
    """The ``n x n`` Hilbert matrix ``H[i, j] = 1 / (i + j + 1)`` (JAX's
    ``jax.scipy.linalg.hilbert``).

    Arguments:
      n: the size (static, ``>= 0``).

    Returns:
      ``[n, n]``, of the default float dtype.

    Example:
      >>> import functx
      >>> functx.scipy.linalg.hilbert(2)
      Array([[1.        , 0.5       ],
             [0.5       , 0.33333334]], dtype=float32)
    """
    n = _size("hilbert", n)
    if n < 0:
        raise FunctxArgumentError(f"hilbert: n must be non-negative, got {n}{where()}")
    i = np.arange(n)
    return jnp.asarray((1.0 / (i[:, None] + i[None, :] + 1)).astype(dtypes.default_float()))


def invhilbert(n):
    """The inverse of the ``n x n`` Hilbert matrix (JAX's ``jax.scipy.linalg.invhilbert``), from
    its closed form in binomial coefficients, computed exactly and rounded once.

    Arguments:
      n: the size (static; ``n <= 0`` gives an empty matrix).

    Returns:
      ``[n, n]``, of the default float dtype (entries beyond its range are infinite).

    Differences from JAX: exact integers rounded once (JAX evaluates the binomials in floating
    point: its entries differ in the last bits).

    Example:
      >>> import functx
      >>> functx.scipy.linalg.invhilbert(3)
      Array([[   9.,  -36.,   30.],
             [ -36.,  192., -180.],
             [  30., -180.,  180.]], dtype=float32)
    """
    n = _size("invhilbert", n)

    def entry(i, j):
        b = math.comb(n + i, n - j - 1) * math.comb(n + j, n - i - 1) * math.comb(i + j, i) ** 2
        return (-1) ** (i + j) * (i + j + 1) * b

    return _exact(n, entry, dtypes.default_float())


_PASCAL_KINDS = ("symmetric", "lower", "upper")


def _pascal_kind(name, kind):
    kind = "symmetric" if kind is None else kind
    if kind not in _PASCAL_KINDS:
        raise FunctxValueError(
            f"{name}: kind must be one of {list(_PASCAL_KINDS)}, got {kind!r}{where()}"
        )
    return kind


_PASCAL = {
    "lower": lambda i, j: math.comb(i, j),
    "upper": lambda i, j: math.comb(j, i),
    "symmetric": lambda i, j: math.comb(i + j, i),
}


def pascal(n, kind=None):
    """The ``n x n`` Pascal matrix (JAX's ``jax.scipy.linalg.pascal``): binomial coefficients
    ``C(i, j)`` ('lower'), ``C(j, i)`` ('upper') or ``C(i + j, i)`` ('symmetric', the default).

    Arguments:
      n: the size (static).
      kind: 'symmetric' (None), 'lower' or 'upper'.

    Returns:
      ``[n, n]`` float32 (in both x64 modes, as in JAX).

    Differences from JAX: the binomials are exact, rounded once (JAX's are computed through
    ``gammaln`` and come out near, not at, the integers).

    Example:
      >>> import functx
      >>> functx.scipy.linalg.pascal(3, kind="lower")
      Array([[1., 0., 0.],
             [1., 1., 0.],
             [1., 2., 1.]], dtype=float32)
    """
    n = _size("pascal", n)
    return _exact(n, _PASCAL[_pascal_kind("pascal", kind)], np.float32)


_INVPASCAL = {
    "lower": lambda i, j: (-1) ** (i + j) * math.comb(i, j),
    "upper": lambda i, j: (-1) ** (i + j) * math.comb(j, i),
}


def invpascal(n, kind=None):
    """The inverse of the ``n x n`` Pascal matrix (JAX's ``jax.scipy.linalg.invpascal``):
    ``(-1)^(i+j) C(i, j)`` ('lower'), its transpose ('upper'), or for 'symmetric' the product of
    the upper and lower ones, computed exactly and rounded once.

    Arguments:
      n: the size (static).
      kind: 'symmetric' (None), 'lower' or 'upper'.

    Returns:
      ``[n, n]``, of the default float dtype.

    Differences from JAX: exact integers rounded once (JAX's are computed through ``gammaln``).

    Example:
      >>> import functx
      >>> functx.scipy.linalg.invpascal(3)
      Array([[ 3., -3.,  1.],
             [-3.,  5., -2.],
             [ 1., -2.,  1.]], dtype=float32)
    """
    n = _size("invpascal", n)
    kind = _pascal_kind("invpascal", kind)
    if kind == "symmetric":

        def entry(i, j):  # (the upper inverse times the lower one)
            return (-1) ** (i + j) * sum(math.comb(k, i) * math.comb(k, j) for k in range(n))

        return _exact(n, entry, dtypes.default_float())
    return _exact(n, _INVPASCAL[kind], dtypes.default_float())


# A JAX name functx lacks: an AttributeError that says so (functx.errors.missing_name).
__getattr__ = _missing_name_hook(__name__)

__all__ = [
    "block_diag",
    "cho_factor",
    "cho_solve",
    "cholesky",
    "circulant",
    "companion",
    "convolution_matrix",
    "det",
    "dft",
    "eigh",
    "eigh_tridiagonal",
    "expm",
    "expm_frechet",
    "fiedler",
    "fiedler_companion",
    "funm",
    "hadamard",
    "hankel",
    "helmert",
    "hessenberg",
    "hilbert",
    "inv",
    "invhilbert",
    "invpascal",
    "leslie",
    "lu",
    "lu_factor",
    "lu_solve",
    "pascal",
    "polar",
    "qr",
    "qr_multiply",
    "rsf2csf",
    "schur",
    "solve",
    "solve_sylvester",
    "solve_triangular",
    "sqrtm",
    "svd",
    "toeplitz",
]
