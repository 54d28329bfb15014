"""``lax.linalg.qdwh``: the polar decomposition ``x = u h`` by QR-based dynamically weighted
Halley iterations (Nakatsukasa, Bai and Gygi, SIAM J. Matrix Anal. Appl. 31(5), 2010), with
JAX's signature, iteration schedule and results.

A composite of ``qr``, ``cholesky``, ``triangular_solve``, matrix products and loops, so ``jit``,
``vmap`` and ``jvp`` come from those primitives' rules (no rule of its own; as in JAX, reverse
mode stops at the ``while_loop``). The schedule: ``x`` is scaled by ``1/sqrt(|x|_1 |x|_inf)`` so
that its singular values lie in ``(0, 1]``; the weights ``(a, b, c)`` of each step follow from a
lower bound ``l`` on the smallest singular value, which starts at ``eps`` and is updated in
Python (static: the number of weighted steps depends only on the dtype). Steps with ``c > 100``
(the first, ill-conditioned ones) use the QR form ``[sqrt(c) u; I] = Q R``; the later ones the
cheaper Cholesky form of ``I + c u^H u``; once ``l`` is 1, plain Halley steps (``a, b, c = 3, 1,
3``) run in a ``while_loop`` until two iterates are within ``cbrt(5 eps)`` in the Frobenius norm
or ``max_iterations`` steps were taken. A Newton-Schulz step ends it, and ``h = (u^H x)``
symmetrized.
"""

from __future__ import annotations

import operator

import numpy as np

from functx import dtypes, ops
from functx.control.linalg import cholesky, qr, triangular_solve
from functx.control.while_loop import fori_loop, while_loop
from functx.tracing import get_aval

# weighted steps with c above this use the QR form, the others the Cholesky form (as JAX)
_CHOLESKY_CUTOFF = 100


def _mh(x):
    return ops.conj(ops.transpose(x, (1, 0))) if _complex(x) else ops.transpose(x, (1, 0))


def _conj(x):
    return ops.conj(x) if _complex(x) else x


def _complex(x):
    return np.dtype(get_aval(x).dtype) in dtypes.COMPLEX


def _mm(a, b):
    # (full float32 products, as JAX runs qdwh under default_matmul_precision('float32'): no
    # TF32 on a GPU)
    return ops.dot_general(a, b, (((1,), (0,)), ((), ())), precision=ops.Precision.HIGHEST)


def _eye(n, dt):
    return np.eye(n, dtype=dt)


def _mask(x, dims, other=None):
    """``x`` where every index is below ``dims`` (None: any), else ``other`` (default 0)."""
    shape = get_aval(x).shape
    keep = None
    for axis, d in enumerate(dims):
        if d is None:
            continue
        if isinstance(d, int) and d >= shape[axis]:
            continue
        below = ops.lt(ops.broadcasted_iota(np.int32, shape, axis), _i32(d))
        keep = below if keep is None else ops.bitwise_and(keep, below)
    if keep is None:
        return x
    if other is None:
        other = ops.full(shape, 0, get_aval(x).dtype)
    return ops.select(keep, x, other)


def _scalar(v, x):
    """A coefficient ``v`` (a Python float or a traced scalar) in ``x``'s dtype."""
    if isinstance(v, (int, float)):
        return np.asarray(v, get_aval(x).dtype)
    return ops.convert_element_type(v, get_aval(x).dtype)


def _i32(d):
    """A size or offset (a Python int or a traced integer) as an int32 scalar."""
    if isinstance(d, int):
        return np.asarray(d, np.int32)
    return ops.convert_element_type(d, np.int32)


def _qr_step(u, m, n, params):
    """One weighted step in the QR form: ``[sqrt(c) u; I] = [Q1; Q2] R``, then
    ``e u + (a - e) / sqrt(c) Q1 Q2^H``."""
    a_minus_e_by_sqrt_c, sqrt_c, e = params
    big_m, big_n = get_aval(u).shape
    dt = get_aval(u).dtype
    top = ops.mul(_scalar(sqrt_c, u), u)
    if isinstance(m, int) and m == big_m:
        y = ops.concatenate([top, _eye(big_n, dt)], 0)
    else:
        y = ops.pad(top, np.zeros((), dt)[()], [(0, big_n, 0), (0, 0, 0)])
        y = ops.dynamic_update_slice(y, _eye(big_n, dt), (_i32(m), 0))
    q, _ = qr(y, full_matrices=False)
    q1 = _mask(ops.slice(q, (0, 0), (big_m, big_n)), (m, n))
    if isinstance(m, int):
        q2 = ops.slice(q, (m, 0), (m + big_n, big_n))
    else:
        q2 = ops.dynamic_slice(q, (_i32(m), 0), (big_n, big_n))
    q2 = _mh(_mask(q2, (n, n)))
    return ops.add(ops.mul(_scalar(e, u), u), ops.mul(_scalar(a_minus_e_by_sqrt_c, u), _mm(q1, q2)))


def _cholesky_step(u, m, n, params):
    """One weighted step in the Cholesky form: ``I + c u^H u = L L^H``, then
    ``e u + (a - e) u (L L^H)^-1``, by two triangular solves."""
    a_minus_e, c, e = params
    big_n = get_aval(u).shape[1]
    dt = get_aval(u).dtype
    eye = _eye(big_n, dt)
    g = ops.add(ops.mul(_scalar(c, u), _mm(_mh(u), u)), eye)
    g = _mask(g, (n, n), eye)  # (the padding's corner: the identity, positive definite)
    low = cholesky(g, symmetrize_input=False)
    z = _conj(
        triangular_solve(
            low, ops.transpose(u, (1, 0)), left_side=True, lower=True, conjugate_a=True
        )
    )
    z = triangular_solve(low, z, left_side=True, lower=True, transpose_a=True, conjugate_a=True)
    return ops.add(ops.mul(_scalar(e, u), u), ops.mul(_scalar(a_minus_e, u), _mh(z)))


def _frobenius(x):
    a = ops.abs(x)
    return ops.sqrt(ops.reduce_sum(ops.mul(a, a), (0, 1)))


def _weights(eps, max_iterations):
    """The static schedule: the QR-form and Cholesky-form weights, each step's ``(a, b, c)``
    from the bound ``l`` on the smallest singular value, until ``l`` is 1 to within
    ``5 eps``."""
    qr_w, chol_w = [], []
    tol_l = 10.0 * eps / 2.0
    low = eps
    k = 0
    while low + tol_l < 1 and k < max_iterations:
        k += 1
        l2 = low * low
        d = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
        s = (1.0 + d) ** (1 / 2)
        a = s + (2 - d + 2 * (2 - l2) / (l2 * s)) ** (1 / 2)
        b = (a - 1) ** 2 / 4
        c = a + b - 1
        low = low * (a + b * l2) / (1 + c * l2)
        e = b / c
        if c > _CHOLESKY_CUTOFF:
            qr_w.append(((a - e) / c ** (1 / 2), c ** (1 / 2), e))
        else:
            chol_w.append((a - e, c, e))
    return qr_w, chol_w, tol_l


def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
    """The polar decomposition ``x = u h`` by QR-based dynamically weighted Halley iterations,
    like ``jax.lax.linalg.qdwh``: ``u`` has orthonormal columns and ``h`` is Hermitian positive
    semi-definite.

    Arguments:
      x: a full-rank matrix ``(M, N)`` with ``M >= N``, float or complex; it may be a smaller
        ``(m, n)`` matrix padded to that shape (``dynamic_shape``).
      is_hermitian: accepted for JAX's signature (unused there too); must be a concrete bool.
      max_iterations: at most this many steps (default 10); a concrete int.
      eps: the tolerance's base: iteration stops once two iterates differ by less than
        ``cbrt(5 eps)`` (Frobenius norm); default the dtype's machine epsilon.
      dynamic_shape: ``(m, n)``, the true shape of a padded ``x`` (ints, or traced integers);
        the rest of ``x`` is ignored and comes back zero.

    Returns:
      ``(u, h, num_iters, is_converged)``: the polar factors (``u`` of ``x``'s shape, ``h`` of
      ``(N, N)``), the number of steps taken (an integer scalar) and whether the iterates
      converged within ``max_iterations`` steps (a bool scalar).

    Example:
      >>> import numpy as np
      >>> import functx as fx
      >>> x = np.array([[3.0, 1.0], [1.0, 2.0], [0.0, 1.0]], np.float32)
      >>> u, h, k, ok = fx.lax.linalg.qdwh(x)
      >>> bool(ok), u.shape, h.shape
      (True, (3, 2), (2, 2))
      >>> bool(np.allclose(u @ h, x, atol=1e-5))
      True
    """
    is_hermitian = _concrete(bool, is_hermitian, "is_hermitian")
    max_iterations = (
        10 if max_iterations is None else _concrete(int, max_iterations, "max_iterations")
    )
    x = x if hasattr(x, "shape") and hasattr(x, "dtype") else np.asarray(x)
    shape = get_aval(x).shape
    if len(shape) != 2:
        raise ValueError(f"qdwh: x must be a matrix (M, N), got an array of shape {tuple(shape)}")
    big_m, big_n = shape
    if big_m < big_n:
        raise ValueError("The input matrix of shape M x N must have M >= N.")
    if dynamic_shape is not None:
        m, n = dynamic_shape
        x = _mask(x, (m, n))
    else:
        m, n = big_m, big_n
    return _qdwh(x, m, n, max_iterations, eps)


def _concrete(kind, v, name):
    try:
        return kind(operator.index(v)) if kind is int else kind(v)
    except Exception:
        raise TypeError(
            f"The `{name}` argument must be statically specified to use `qdwh` within JAX "
            f"transformations."
        ) from None


def _qdwh(x, m, n, max_iterations, eps):
    dt = get_aval(x).dtype
    real_dt = np.finfo(dt).dtype
    if eps is None:
        eps = float(np.finfo(dt).eps)
    a = ops.abs(x)
    one_norm = ops.reduce_max(ops.reduce_sum(a, (0,)), (0,))
    inf_norm = ops.reduce_max(ops.reduce_sum(a, (1,)), (0,))
    scale = ops.mul(ops.rsqrt(one_norm), ops.rsqrt(inf_norm))
    scale = ops.select(ops.eq(one_norm, ops.full((), 0, real_dt)), ops.full((), 1, real_dt), scale)
    u = ops.mul(x, ops.convert_element_type(scale, dt))

    qr_w, chol_w, tol_l = _weights(eps, max_iterations)
    # the convergence tolerance: cbrt in the default float type (JAX's jnp.cbrt of a Python
    # float), compared in the norm's dtype
    tol = np.asarray(np.cbrt(np.asarray(tol_l, dtypes.default_float())), real_dt)

    def weighted(u, weights, step, test):
        table = np.asarray(weights, np.float64).astype(dt)

        def body(i, state):
            v, flag = state
            p = ops.dynamic_index_in_dim(table, i, 0, keepdims=False)
            w = tuple(ops.reshape(ops.slice(p, (j,), (j + 1,)), ()) for j in range(3))
            nv = step(v, m, n, w)
            if test:
                flag = ops.gt(_frobenius(ops.sub(nv, v)), tol)
            return nv, flag

        return fori_loop(0, len(weights), body, (u, np.asarray(True)))

    not_converged = np.asarray(True)
    if qr_w:
        u, _ = weighted(u, qr_w, _qr_step, False)
    if chol_w:
        u, not_converged = weighted(u, chol_w, _cholesky_step, True)

    halley = (3.0 - 1.0 / 3.0, 3.0, 1.0 / 3.0)  # (a - e, c, e) for a, b, c = 3, 1, 3

    def cond_fun(state):
        k, _, flag = state
        return ops.bitwise_and(flag, ops.lt(k, np.asarray(max_iterations, get_aval(k).dtype)))

    def body_fun(state):
        k, v, _ = state
        nv = _cholesky_step(v, m, n, halley)
        return (
            ops.add(k, np.asarray(1, get_aval(k).dtype)),
            nv,
            ops.gt(_frobenius(ops.sub(nv, v)), tol),
        )

    k0 = np.asarray(len(qr_w) + len(chol_w), dtypes.default_int())
    num_iters, u, not_converged = while_loop(cond_fun, body_fun, (k0, u, not_converged))

    # a Newton-Schulz step, then h = u^H x made Hermitian
    u = ops.sub(ops.mul(_scalar(1.5, u), u), ops.mul(_scalar(0.5, u), _mm(u, _mm(_mh(u), u))))
    h = _mm(_mh(u), x)
    h = ops.div(ops.add(h, _mh(h)), _scalar(2, h))
    return u, h, num_iters, ops.bitwise_not(not_converged)
