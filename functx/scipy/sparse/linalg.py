"""``functx.scipy.sparse.linalg``: JAX's Krylov solvers ``cg``, ``bicgstab`` and ``gmres``.

The operator ``A`` (and the preconditioner ``M``) is a square matrix, an object with ``@``, or a
function ``x -> A x`` on pytrees shaped like ``b``. Each solver runs as ``lax.while_loop``s (so it
jits and vmaps: under ``vmap`` a batch runs until its slowest member converges, the converged
members held fixed) inside ``lax.custom_linear_solve``: derivatives come from a second solve of
the same kind at the solution (implicit differentiation, as in JAX), never from the iterations.
The stopping rules and the iterations are JAX's (SciPy's "non-legacy" tolerance
``norm(r) <= max(tol * norm(b), atol)``), so the iterates agree with JAX's to rounding.
"""

from __future__ import annotations

import functools
import operator

import numpy as np

from functx import lax, numpy as jnp
from functx.errors import FunctxTypeError, FunctxValueError, missing_name_hook as _missing_name_hook
from functx.scipy.linalg import solve as _solve, solve_triangular as _solve_triangular
from functx.source_info import where as _loc
from functx.tree_util import tree_leaves, tree_map, tree_structure

_dot = functools.partial(jnp.dot, precision=lax.Precision.HIGHEST)
_vdot = functools.partial(jnp.vdot, precision=lax.Precision.HIGHEST)


# --- pytree vector algebra ------------------------------------------------------------------
def _sum(values):
    return functools.reduce(operator.add, values)


def _inner(x, y):
    """``<x, y>`` (``x`` conjugated), summed over the leaves."""
    return _sum([_vdot(a, b) for a, b in zip(tree_leaves(x), tree_leaves(y))])


def _inner_real(x, y):
    """The real part of ``<x, y>``, as a real number (the cross terms of complex leaves are
    left out: the solvers use it for ``z^H M z`` with a Hermitian ``M``)."""

    def one(a, b):
        out = _vdot(jnp.real(a), jnp.real(b))
        if jnp.iscomplexobj(a) or jnp.iscomplexobj(b):
            out = out + _vdot(jnp.imag(a), jnp.imag(b))
        return out

    return _sum([one(a, b) for a, b in zip(tree_leaves(x), tree_leaves(y))])


def _norm(x):
    return jnp.sqrt(_inner_real(x, x))


def _axpy(alpha, x, y):
    """``alpha * x + y`` leaf by leaf."""
    return tree_map(lambda a, b: alpha * a + b, x, y)


def _sub(x, y):
    return tree_map(operator.sub, x, y)


def _dtype(tree):
    return jnp.result_type(*tree_leaves(tree))


def _normalize(x, thresh=None):
    """``(x / norm(x), norm(x))``, or ``(0, 0)`` when the norm is at most ``thresh`` (by default
    the dtype's epsilon)."""
    norm = _norm(x)
    if thresh is None:
        thresh = jnp.finfo(norm.dtype).eps
    keep = norm > jnp.real(jnp.asarray(thresh, _dtype(x)))
    scale = norm.astype(_dtype(x))
    unit = tree_map(lambda a: jnp.where(keep, a / scale, jnp.zeros_like(a)), x)
    return unit, jnp.where(keep, norm, jnp.zeros_like(norm))


def _identity(x):
    return x


# --- the arguments ----------------------------------------------------------------------------
def _operator(f):
    """``A`` or ``M`` as a function: a callable as it is, a square matrix (or an object with
    ``@`` and a square ``shape``) as its product with a vector."""
    if callable(f):
        return f
    if isinstance(f, np.ndarray) or hasattr(f, "__matmul__"):
        shape = tuple(getattr(f, "shape", ()))
        if hasattr(f, "shape") and (len(shape) != 2 or shape[0] != shape[1]):
            raise FunctxValueError(
                f"linear operator must be a square matrix, but has shape: {shape}{_loc()}"
            )
        if isinstance(f, np.ndarray) or hasattr(f, "aval"):
            return functools.partial(_dot, f)
        return functools.partial(operator.matmul, f)
    raise FunctxTypeError(f"linear operator must be either a function or ndarray: {f}{_loc()}")


def _setup(A, b, x0, M, maxiter, check_shapes):
    """The common arguments made ready: ``(A, b, x0, M, maxiter, size)``."""
    b = tree_map(jnp.asarray, b)
    x0 = tree_map(jnp.zeros_like, b) if x0 is None else tree_map(jnp.asarray, x0)
    size = sum(int(np.size(leaf)) for leaf in tree_leaves(b))
    if maxiter is None:
        maxiter = 10 * size  # SciPy's default
    A = _operator(A)
    M = _identity if M is None else _operator(M)
    if tree_structure(x0) != tree_structure(b):
        raise FunctxValueError(
            "x0 and b must have matching tree structure: "
            f"{tree_structure(x0)} vs {tree_structure(b)}{_loc()}"
        )
    if check_shapes:
        xs = [np.shape(leaf) for leaf in tree_leaves(x0)]
        bs = [np.shape(leaf) for leaf in tree_leaves(b)]
        if xs != bs:
            raise FunctxValueError(
                f"arrays in x0 and b must have matching shapes: {xs} vs {bs}{_loc()}"
            )
    return A, b, x0, M, maxiter, size


def _threshold(b, tol, atol):
    """The squared stopping bound ``max(tol**2 * |b|**2, atol**2)``."""
    return jnp.maximum(jnp.square(tol) * _inner_real(b, b), jnp.square(atol))


# --- conjugate gradients ----------------------------------------------------------------------
def _cg_iterations(A, b, *, x0, tol, atol, maxiter, M):
    bound = _threshold(b, tol, atol)
    r = _sub(b, A(x0))
    z = M(r)
    dtype = _dtype(z)

    def cond(state):
        _, r, gamma, _, k = state
        rr = jnp.real(gamma) if M is _identity else _inner_real(r, r)
        return (rr > bound) & (k < maxiter)

    def step(state):
        x, r, gamma, p, k = state
        ap = A(p)
        alpha = gamma / _inner_real(p, ap).astype(dtype)
        x = _axpy(alpha, p, x)
        r = _axpy(-alpha, ap, r)
        z = M(r)
        gamma_next = _inner_real(r, z).astype(dtype)
        p = _axpy(gamma_next / gamma, p, z)
        return x, r, gamma_next, p, k + 1

    gamma = _inner_real(r, z).astype(dtype)
    return lax.while_loop(cond, step, (x0, r, gamma, z, 0))[0]


# --- BiCGSTAB -------------------------------------------------------------------------------
def _bicgstab_iterations(A, b, *, x0, tol, atol, maxiter, M):
    bound = _threshold(b, tol, atol)
    r = _sub(b, A(x0))
    one = jnp.asarray(1, _dtype(b))

    def cond(state):
        r, k = state[1], state[-1]
        return (_inner_real(r, r) > bound) & (k < maxiter) & (k >= 0)  # k < 0: a breakdown

    def step(state):
        x, r, rhat, alpha, omega, rho, p, q, k = state
        rho_next = _inner(rhat, r)
        beta = rho_next / rho * alpha / omega
        p = tree_map(lambda r_, p_, q_: r_ + beta * (p_ - omega * q_), r, p, q)
        phat = M(p)
        q = A(phat)
        alpha = rho_next / _inner(rhat, q)
        s = _axpy(-alpha, q, r)
        done = _inner_real(s, s) < bound  # converged half way: no stabilising step
        shat = M(s)
        t = A(shat)
        omega = _inner(t, s) / _inner(t, t)
        half = _axpy(alpha, phat, x)
        x = tree_map(lambda h, sh: jnp.where(done, h, h + omega * sh), half, shat)
        r = tree_map(lambda s_, t_: jnp.where(done, s_, s_ - omega * t_), s, t)
        k = jnp.where((omega == 0) | (alpha == 0), -11, k + 1)
        k = jnp.where(rho_next == 0, -10, k)
        return x, r, rhat, alpha, omega, rho_next, p, q, k

    state = (x0, r, r, one, one, one, r, r, 0)
    return lax.while_loop(cond, step, state)[0]


def _krylov(method, A, b, x0, tol, atol, maxiter, M, symmetric_if_real):
    A, b, x0, M, maxiter, _ = _setup(A, b, x0, M, maxiter, check_shapes=True)
    solve = functools.partial(method, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
    # a real positive definite operator is symmetric: the transposed solve is the solve itself
    symmetric = symmetric_if_real and not any(jnp.iscomplexobj(v) for v in tree_leaves(b))
    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
    return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve ``A x = b`` by (preconditioned) conjugate gradients, for a Hermitian positive
    definite ``A`` (JAX's ``jax.scipy.sparse.linalg.cg``).

    Arguments:
      A: a square matrix, an object with ``@``, or a function ``x -> A x`` returning a pytree
        shaped like ``b``.
      b: the right-hand side: an array or a pytree of arrays (any shapes).
      x0: the starting guess, shaped like ``b`` (zeros when None).
      tol: the relative tolerance: stop when ``norm(b - A x) <= max(tol * norm(b), atol)``.
      atol: the absolute tolerance.
      maxiter: the most iterations (``10 * b.size`` when None).
      M: a preconditioner approximating ``A``'s inverse (matrix or function, like ``A``).

    Returns:
      ``(x, info)``: the solution, shaped like ``b``, and ``None`` (JAX reports no convergence
      information). Derivatives in ``b`` and in what ``A`` holds come from another ``cg`` solve
      at the solution; they are right where both solves converge.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.sparse.linalg import cg
      >>> a = jnp.array([[4.0, 1.0], [1.0, 3.0]])
      >>> x, info = cg(a, jnp.array([1.0, 2.0]))
      >>> print(jnp.round(x, 4), info)
      [0.0909 0.6364] None
    """
    return _krylov(_cg_iterations, A, b, x0, tol, atol, maxiter, M, symmetric_if_real=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):
    """Solve ``A x = b`` by the stabilised bi-conjugate gradient method, for a general
    (nonsymmetric) ``A`` (JAX's ``jax.scipy.sparse.linalg.bicgstab``).

    Arguments:
      A: a square matrix, an object with ``@``, or a function ``x -> A x`` returning a pytree
        shaped like ``b``.
      b: the right-hand side: an array or a pytree of arrays (any shapes).
      x0: the starting guess, shaped like ``b`` (zeros when None).
      tol: the relative tolerance: stop when ``norm(b - A x) <= max(tol * norm(b), atol)``.
      atol: the absolute tolerance.
      maxiter: the most iterations (``10 * b.size`` when None); a breakdown (``rho``, ``alpha``
        or ``omega`` zero) also stops the iteration.
      M: a preconditioner approximating ``A``'s inverse (matrix or function, like ``A``).

    Returns:
      ``(x, info)``: the solution, shaped like ``b``, and ``None``. Derivatives come from a
      ``bicgstab`` solve of the transposed system at the solution.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.sparse.linalg import bicgstab
      >>> a = jnp.array([[3.0, 1.0], [-1.0, 2.0]])
      >>> x, info = bicgstab(a, jnp.array([1.0, 2.0]))
      >>> print(jnp.round(x, 4))
      [0. 1.]
    """
    return _krylov(_bicgstab_iterations, A, b, x0, tol, atol, maxiter, M, symmetric_if_real=False)


# --- GMRES ------------------------------------------------------------------------------------
def _column(V, k):
    return tree_map(lambda v: v[..., k], V)


def _arnoldi_step(k, A, M, V, H):
    """Extend the Krylov basis ``V`` (columns ``0..k`` orthonormal) by ``M A V[:, k]``,
    orthogonalised by one pass of classical Gram-Schmidt; its overlaps (and its norm at
    ``k + 1``) become row ``k`` of ``H``. A new vector of norm at most ``eps`` times its norm
    before orthogonalisation is an invariant subspace: it is set to zero (``breakdown``)."""
    w = M(A(_column(V, k)))
    _, w_norm = _normalize(w)
    h = _sum([jnp.einsum("...n,...->n", jnp.conj(v), y) for v, y in zip(*map(tree_leaves, (V, w)))])
    w = tree_map(lambda v, y: y - _dot(v, h), V, w)
    eps = jnp.finfo(_dtype(V)).eps
    unit, w_norm = _normalize(w, thresh=eps * w_norm)
    V = tree_map(lambda v, u: v.at[..., k + 1].set(u), V, unit)
    H = H.at[k, :].set(h.at[k + 1].set(w_norm.astype(h.dtype)))
    return V, H, w_norm == 0


def _rotate(v, i, cs, sn):
    """The Givens rotation ``(cs, sn)`` applied to entries ``i`` and ``i + 1`` of ``v``."""
    a, b = v[i], v[i + 1]
    return v.at[i].set(jnp.conj(cs) * a - jnp.conj(sn) * b).at[i + 1].set(sn * a + cs * b)


def _givens(a, b):
    """The rotation ``(cs, sn)`` that zeroes ``b`` against ``a``."""
    small_a = jnp.abs(a) < jnp.abs(b)
    t = -jnp.where(small_a, a, b) / jnp.where(small_a, b, a)
    r = lax.rsqrt(1 + jnp.abs(t) ** 2).astype(t.dtype)
    zero_b = jnp.abs(b) == 0
    cs = jnp.where(zero_b, 1, jnp.where(small_a, r * t, r))
    sn = jnp.where(zero_b, 0, jnp.where(small_a, r, r * t))
    return cs.astype(t.dtype), sn.astype(t.dtype)


def _basis(unit_residual, restart):
    """The Krylov basis: the unit residual in column 0 of ``restart + 1``."""
    pad = lambda x: jnp.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),))  # noqa: E731
    return tree_map(pad, unit_residual)


def _finish_cycle(A, M, b, x0, V, y):
    x = tree_map(lambda x_, v: x_ + _dot(v[..., :-1], y), x0, V)
    unit, norm = _normalize(M(_sub(b, A(x))))
    return x, unit, norm


def _gmres_incremental(A, M, b, x0, unit_residual, residual_norm, ptol, restart):
    """One GMRES cycle that keeps the QR factors of the Hessenberg matrix up to date by Givens
    rotations: the least-squares residual is known at every step, and the cycle stops once it
    is at most ``ptol``."""
    dtype = _dtype(b)
    V = _basis(unit_residual, restart)
    R = jnp.eye(restart, restart + 1, dtype=dtype)  # unused rows stay the identity's
    rotations = jnp.zeros((restart, 2), dtype)
    beta = jnp.zeros(restart + 1, dtype).at[0].set(residual_norm.astype(dtype))

    def cond(state):
        k, err = state[0], state[1]
        return (k < restart) & (err > ptol)

    def step(state):
        k, _, V, R, beta, rotations = state
        V, H, _ = _arnoldi_step(k, A, M, V, R)
        row = lax.fori_loop(0, k, lambda i, r: _rotate(r, i, *rotations[i]), H[k, :])
        cs, sn = _givens(row[k], row[k + 1])
        rotations = rotations.at[k].set(jnp.stack([cs, sn]))
        R = R.at[k, :].set(_rotate(row, k, cs, sn))
        beta = _rotate(beta, k, cs, sn)
        return k + 1, jnp.abs(beta[k + 1]), V, R, beta, rotations

    state = (0, residual_norm, V, R, beta, rotations)
    _, _, V, R, beta, _ = lax.while_loop(cond, step, state)
    y = _solve_triangular(R[:, :-1].T, beta[:-1])
    return _finish_cycle(A, M, b, x0, V, y)


def _gmres_batched(A, M, b, x0, unit_residual, residual_norm, ptol, restart):
    """One GMRES cycle that builds the whole Krylov basis (stopping early only at a breakdown)
    and then solves the small least-squares problem by its normal equations."""
    del ptol
    dtype = _dtype(b)
    V = _basis(unit_residual, restart)
    H = jnp.eye(restart, restart + 1, dtype=dtype)

    def cond(state):
        return (state[3] < restart) & jnp.logical_not(state[2])

    def step(state):
        V, H, _, k = state
        V, H, breakdown = _arnoldi_step(k, A, M, V, H)
        return V, H, breakdown, k + 1

    V, H, _, _ = lax.while_loop(cond, step, (V, H, jnp.asarray(False), 0))
    rhs = jnp.zeros(restart + 1, dtype).at[0].set(residual_norm.astype(dtype))
    ht = jnp.conj(H)  # H.T's conjugate transpose
    y = _solve(_dot(ht, H.T), _dot(ht, rhs), assume_a="pos")
    return _finish_cycle(A, M, b, x0, V, y)


_GMRES_CYCLES = {"incremental": _gmres_incremental, "batched": _gmres_batched}


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,
          solve_method="batched"):  # fmt: skip
    """Solve ``A x = b`` by the restarted generalised minimal residual method, for a general
    ``A`` (JAX's ``jax.scipy.sparse.linalg.gmres``).

    Arguments:
      A: a square matrix, an object with ``@``, or a function ``x -> A x`` returning a pytree
        shaped like ``b``.
      b: the right-hand side: an array or a pytree of arrays (any shapes).
      x0: the starting guess, with ``b``'s tree structure (zeros when None).
      tol: the relative tolerance: stop when the (preconditioned) residual's norm is at most
        ``max(tol * norm(b), atol)``.
      atol: the absolute tolerance.
      restart: the dimension of the Krylov space built in each cycle (at most ``b``'s size).
      maxiter: the most cycles (``10 * b.size`` when None).
      M: a preconditioner approximating ``A``'s inverse (matrix or function, like ``A``).
      solve_method: ``'batched'`` (build the whole space, then solve its least-squares problem)
        or ``'incremental'`` (Givens rotations at each step, stopping inside a cycle once the
        tolerance is met).

    Returns:
      ``(x, info)``: the solution, shaped like ``b``, and an int32 scalar: ``-1`` where ``x``
      holds a NaN, ``0`` otherwise (as in JAX). Derivatives come from a ``gmres`` solve of the
      transposed system at the solution.

    Example:
      >>> import functx.numpy as jnp
      >>> from functx.scipy.sparse.linalg import gmres
      >>> a = jnp.array([[3.0, 1.0], [-1.0, 2.0]])
      >>> x, info = gmres(a, jnp.array([1.0, 2.0]), solve_method="incremental")
      >>> print(jnp.round(x, 4), info)
      [0. 1.] 0
    """
    cycle = _GMRES_CYCLES.get(solve_method) if isinstance(solve_method, str) else None
    if cycle is None:
        raise FunctxValueError(
            f"invalid solve_method {solve_method}, must be either 'incremental' or 'batched'"
            f"{_loc()}"
        )
    A, b, x0, M, maxiter, size = _setup(A, b, x0, M, maxiter, check_shapes=False)
    restart = min(restart, size)
    b_norm = _norm(b)
    atol = jnp.maximum(tol * b_norm, atol)
    ptol = _norm(M(b)) * jnp.minimum(1.0, atol / b_norm)  # the tolerance inside a cycle

    def solve(A, b):
        unit, norm = _normalize(M(_sub(b, A(x0))))

        def cond(state):
            return (state[1] < maxiter) & (state[3] > atol)

        def step(state):
            x, k, unit, norm = state
            x, unit, norm = cycle(A, M, b, x, unit, norm, ptol, restart)
            return x, k + 1, unit, norm

        return lax.while_loop(cond, step, (x0, 0, unit, norm))[0]

    x = lax.custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
    info = jnp.where(jnp.isnan(_norm(x)), -1, 0)
    return x, info


__getattr__ = _missing_name_hook(__name__)

__all__ = ["bicgstab", "cg", "gmres"]
