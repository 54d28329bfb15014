"""``functx.experimental.sparse.linalg``: JAX's sparse solvers (``jax.experimental.sparse.linalg``)
as composites of functx's dense linear algebra, so ``jit``, ``grad`` and ``vmap`` compose with
them.

- ``spsolve`` solves the CSR system densely (the matrix is scattered into an ``n x n`` array and
  LU-solved): the same solution as JAX's QR-based sparse solver for a nonsingular system, at
  ``O(n^2)`` memory and ``O(n^3)`` time; ``tol`` and ``reorder`` are checked as JAX checks them
  and otherwise unused (they steer cuSOLVER's pivoting and fill-in, which a dense solve has no
  use for). A singular system gives non-finite values, as a dense solve does.
- ``lobpcg_standard`` runs JAX's LOBPCG iteration (an orthonormal ``[X, P, R]`` block kept by
  SVQB, a Rayleigh-Ritz step per iteration, JAX's convergence test) in a ``while_loop``.
"""

from __future__ import annotations

import numpy as np

from functx import lax, numpy as jnp
from functx.errors import FunctxValueError
from functx.experimental.sparse.bcoo import _scatter_sum
from functx.experimental.sparse.bcsr import _coo_indices
from functx.source_info import where

# -- spsolve -------------------------------------------------------------------------------------


def spsolve(data, indices, indptr, b, tol=1e-6, reorder=1):
    """The solution ``x`` of ``A x = b`` for a square sparse matrix ``A`` given by its CSR
    buffers (``jax.experimental.sparse.linalg.spsolve``).

    Differences from JAX: functx solves the system densely (``A`` scattered into an
    ``n x n`` array, then ``jnp.linalg.solve``); ``tol`` and ``reorder`` are validated but not
    used. ``vmap`` works (JAX's solver has no batching rule).

    Arguments:
      data: the stored values of ``A``, 1-D, of ``b``'s dtype.
      indices: the column of each stored value (integers, as long as ``data``).
      indptr: the row pointers (integers, of length ``b.size + 1``).
      b: the right-hand side, 1-D.
      tol: JAX's singularity tolerance (a float; unused here).
      reorder: JAX's fill-in reordering, 0 to 3 (unused here).
    Returns:
      an Array of ``b``'s shape and dtype.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse import CSR, linalg
      >>> A = CSR.fromdense(jnp.array([[2.0, 0.0], [1.0, 4.0]]))
      >>> linalg.spsolve(A.data, A.indices, A.indptr, jnp.array([2.0, 9.0]))
      Array([1., 2.], dtype=float32)
    """
    data, indices, indptr, b = (jnp.asarray(x) for x in (data, indices, indptr, b))
    if data.dtype != b.dtype:
        raise FunctxValueError(f"data types do not match: {data.dtype=} {b.dtype=}" + where())
    if not (np.issubdtype(indices.dtype, np.integer) and np.issubdtype(indptr.dtype, np.integer)):
        raise FunctxValueError(
            f"index arrays must be integer typed; got {indices.dtype=} {indptr.dtype=}" + where()
        )
    if not data.ndim == indices.ndim == indptr.ndim == b.ndim == 1:
        raise FunctxValueError(
            "Arrays must be one-dimensional. "
            f"Got {data.shape=} {indices.shape=} {indptr.shape=} {b.shape=}" + where()
        )
    if indptr.size != b.size + 1 or data.shape != indices.shape:
        raise FunctxValueError(
            f"Invalid CSR buffer sizes: {data.shape=} {indices.shape=} {indptr.shape=}" + where()
        )
    if reorder not in (0, 1, 2, 3):
        raise FunctxValueError(f"{reorder=} not valid, must be one of [0, 1, 2, 3]" + where())
    float(tol)  # a number, as JAX requires (a TypeError otherwise)
    n = b.size
    coo = _coo_indices(indices, indptr)
    A = _scatter_sum(data, [coo[:, 0], coo[:, 1]], (n, n))
    return jnp.linalg.solve(A, b)


# -- lobpcg_standard ---------------------------------------------------------------------------


def _dot(a, b):
    return lax.dot(a, b, precision=lax.Precision.HIGHEST)


def _col_norms(x):
    return jnp.linalg.norm(x, ord=2, axis=0, keepdims=True)


def _eigh_descending(a):
    w, v = jnp.linalg.eigh(a)
    return w[::-1], v[:, ::-1]


def _svqb(x):
    """An orthonormal basis of the span of ``x``'s columns (SVQB: eigendecompose the small Gram
    matrix and scale), with the columns of numerically dependent directions set to zero."""
    norms = _col_norms(x)
    x = x / jnp.where(norms == 0, 1.0, norms)
    gram = _dot(x.T, x)
    w, v = _eigh_descending(gram)
    floor = jnp.finfo(x.dtype).eps * w[0]  # below it, a direction counts as degenerate
    scale = jnp.where(floor > 0, jnp.maximum(w, floor), 1.0) ** -0.5
    out = _dot(x, v * scale[None, :])
    keep = ((w > floor) & (jnp.diagonal(gram) > 0))[None, :]
    out = out * keep.astype(out.dtype)
    norms = _col_norms(out)
    keep = keep & (norms > 0)
    return out / jnp.where(keep, norms, 1.0)


def _orthonormalize(x):
    return _svqb(_svqb(x))  # a second pass repairs what rounding left of the first


def _project_out(basis, u):
    """The part of ``u`` orthogonal to the orthonormal (zero columns allowed) ``basis``,
    orthonormalized; a column that does not survive the last subtraction almost whole is
    zeroed, so that ``[basis, u]`` stays orthonormal up to zero columns."""
    for _ in range(2):
        u = _orthonormalize(u - _dot(basis, _dot(basis.T, u)))
    for _ in range(2):
        u = u - _dot(basis, _dot(basis.T, u))
    return u * (_col_norms(u) >= 0.99).astype(u.dtype)


def _extend_basis(x, m):
    """``m`` orthonormal columns orthogonal to the orthonormal ``x`` (n, k): columns of a block
    Householder reflector that maps ``x`` onto the first ``k`` unit vectors (deterministic,
    unlike a random start projected out)."""
    n, k = x.shape
    top, rest = x[:k], x[k:]
    u, s, vt = jnp.linalg.svd(top)
    y = jnp.concatenate([top + _dot(u, vt), rest], axis=0)
    w = _dot(y, vt.T * ((2 * (1 + s)) ** -0.5)[None, :])
    unit = jnp.concatenate([jnp.eye(m, dtype=x.dtype), jnp.zeros((n - k - m, m), x.dtype)], 0)
    reflected = -2 * _dot(w, _dot(w[k:].T, unit))
    return reflected.at[k:].add(unit)


def _check_inputs(op, X):
    n, k = X.shape
    if k == 0:
        raise FunctxValueError(f"must have search dim > 0, got {k}" + where())
    if k * 5 >= n:
        raise FunctxValueError(f"expected search dim * 5 < matrix dim (got {k * 5}, {n})" + where())
    probe = op(jnp.zeros((n, 1), X.dtype))
    if probe.dtype != X.dtype:
        raise FunctxValueError(
            f"A, X must have same dtypes (were {probe.dtype}, {X.dtype})" + where()
        )
    if probe.shape != (n, 1):
        raise FunctxValueError(f"A must be ({n}, {n}) matrix A, got output {probe.shape}" + where())


def lobpcg_standard(A, X, m=100, tol=None):
    """The ``k`` largest eigenvalues and their eigenvectors of a symmetric (Hermitian) matrix by
    LOBPCG, the locally optimal block preconditioned conjugate gradient method
    (``jax.experimental.sparse.linalg.lobpcg_standard``), with JAX's iteration: the block
    ``[X, P, R]`` (eigenvector estimates, search directions, residuals) kept orthonormal, one
    Rayleigh-Ritz solve per step, no preconditioner and no locking.

    Differences from JAX: ``A`` may also be a functx sparse array (JAX takes a dense array or a
    function), and the iteration runs where it is called (JAX compiles it once per shape): put
    it under ``functx.jit`` to compile it.

    Arguments:
      A: an ``(n, n)`` symmetric matrix (dense, or a functx sparse array), or a function that
        applies it to an ``(n, j)`` array.
      X: an ``(n, k)`` array of starting directions, linearly independent, with
        ``0 < 5 * k < n``.
      m: the largest number of iterations.
      tol: an eigenpair ``(lam, v)`` has converged when ``|A v - lam v|`` is below
        ``tol * 10 * n * (lam + |A v|)``; the loop stops when all ``k`` have. Default: the
        machine epsilon of ``X``'s dtype.
    Returns:
      ``(theta, U, i)``: the ``k`` eigenvalues in descending order, the ``(n, k)`` eigenvectors,
      and the number of iterations run.
    Example:
      >>> import functx.numpy as jnp
      >>> from functx.experimental.sparse.linalg import lobpcg_standard
      >>> A = jnp.diag(jnp.arange(1.0, 13.0))
      >>> X = jnp.stack([jnp.ones(12), jnp.arange(12.0)], axis=1)
      >>> theta, U, i = lobpcg_standard(A, X)
      >>> theta.round(3).tolist(), U.shape
      ([12.0, 11.0], (12, 2))
    """
    if callable(A):
        op = A
    else:
        matrix = A if hasattr(A, "todense") else jnp.asarray(A)
        op = lambda v: _dot(matrix, v) if not hasattr(matrix, "todense") else matrix @ v  # noqa: E731
    X = jnp.asarray(X)
    n, k = X.shape
    _check_inputs(op, X)
    tol = float(jnp.finfo(X.dtype).eps) if tol is None else tol

    X = _orthonormalize(X)
    P = _extend_basis(X, k)
    AX = op(X)
    theta = jnp.sum(X * AX, axis=0, keepdims=True)

    def keep_going(state):
        i, _, _, _, converged, _ = state
        return (i < m) & (converged < k)

    def step(state):
        i, X, P, R, _, _ = state
        R = _project_out(jnp.concatenate([X, P], axis=1), R)
        XPR = jnp.concatenate([X, P, R], axis=1)
        theta, Q = _eigh_descending(_dot(XPR.T, op(XPR)))  # Rayleigh-Ritz in span(XPR)
        top = Q[:, :k] / _col_norms(Q[:, :k])
        X = _dot(XPR, top)
        X = X / _col_norms(X)
        # new directions: the rest of the Ritz block, made orthogonal to the kept vectors in
        # the coordinates of XPR (orthonormal there, so in R^n too)
        q, _ = jnp.linalg.qr(Q[:k, k:].T)
        P = _dot(XPR, _dot(Q[:, k:], q))
        norms = _col_norms(P)
        P = P / jnp.where(norms == 0, 1.0, norms)
        AX = op(X)
        R = AX - theta[None, :k] * X
        bound = tol * 10 * n * (jnp.linalg.norm(AX, ord=2, axis=0) + theta[:k])
        converged = jnp.sum(jnp.linalg.norm(R, ord=2, axis=0) < bound)
        return i + 1, X, P, R, converged, theta[None, :k]

    state = (0, X, P, AX - theta * X, 0, theta)
    i, X, _, _, _, theta = lax.while_loop(keep_going, step, state)
    return theta[0], X, i


__all__ = ["lobpcg_standard", "spsolve"]
