"""``lax.linalg``'s LAPACK reductions (``hessenberg``, ``tridiagonal``, ``schur``,
``householder_product``) and ``tridiagonal_solve`` against JAX (both call the same LAPACK
routines: values agree to rounding), dtypes in both x64 modes, ``tridiagonal_solve``'s gradient
(check_grads in float64, jvp/grad against JAX), vmap against a loop, JAX's errors, and the public
surface of ``functx.lax.linalg`` (JAX's names only). jit (C++ and Triton) is
tests/lowering/test_backend_suite.py's case ``linalg_reductions``."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from x64util import x64_off

import functx
from functx.test_util import check_grads

FL, JL = functx.lax.linalg, jax.lax.linalg
RNG = np.random.default_rng(0)
A = RNG.standard_normal((2, 4, 4))
AC = A + 1j * RNG.standard_normal((2, 4, 4))
DL, D, DU = RNG.standard_normal((3, 2, 5))
D = D + 4.0
B = RNG.standard_normal((2, 5, 3))

REDUCTIONS = {
    "hessenberg": lambda L, x: L.hessenberg(x),
    "tridiagonal": lambda L, x: L.tridiagonal(x),
    "tridiagonal_upper": lambda L, x: L.tridiagonal(x, lower=False),
    "schur": lambda L, x: L.schur(x),
    "schur_no_vectors": lambda L, x: L.schur(x, compute_schur_vectors=False),
    "householder_product": lambda L, x: L.householder_product(x, x[..., 0, :3] * 0.1),
    "tridiagonal_solve": lambda L, x: L.tridiagonal_solve(
        x[..., 0, :], x[..., 1, :] + 4.0, x[..., 2, :], x[..., 1:]
    ),
}


def _same(got, want, tol):
    got, want = jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert np.asarray(g).dtype == w.dtype, (np.asarray(g).dtype, w.dtype)
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


def _all(L, x):
    return {name: f(L, x) for name, f in REDUCTIONS.items()}


def test_values_and_dtypes_vs_jax():
    # JAX's side as one jitted program per dtype: its eager dispatch compiles every call
    _same(_all(FL, A), jax.jit(lambda x: _all(JL, x))(A), 1e-12)
    with x64_off():
        x = AC.astype(np.complex64)
        _same(_all(FL, x), jax.jit(lambda x: _all(JL, x))(x), 1e-5)


def test_cholesky_update_and_symmetric_product_vs_jax():
    c = A[0] @ A[0].T + 4 * np.eye(4)
    r = np.linalg.cholesky(c).T
    w = A[1, 0]
    np.testing.assert_allclose(FL.cholesky_update(r, w), JL.cholesky_update(r, w), atol=1e-12)
    for kw in (dict(alpha=2.0, beta=0.5), dict(alpha=1.5, symmetrize_output=True)):
        got = FL.symmetric_product(A[..., :2], A, **kw)
        np.testing.assert_allclose(got, JL.symmetric_product(A[..., :2], A, **kw), atol=1e-12)
    for L in (FL, JL):
        with pytest.raises(TypeError, match="Accepted dtypes at position 0"):
            L.symmetric_product(AC, AC)


def test_ormqr_vs_jax():
    a, taus = A, A[:, 0, :3] * 0.3
    c, cr = B[:, :4, :2], np.swapaxes(B[:, :4, :2], -1, -2)
    for left, cc in ((True, c), (False, cr)):
        for tr in (False, True):
            got = FL.ormqr(a, taus, cc, left=left, transpose=tr)
            want = JL.ormqr(a, taus, cc, left=left, transpose=tr)
            np.testing.assert_allclose(got, want, atol=1e-12)
    for L in (FL, JL):
        with pytest.raises(ValueError, match="same number of rows"):
            L.ormqr(a, taus, cr)


def test_tridiagonal_solve_gradients():
    args = (DL, D, DU, B)
    check_grads(FL.tridiagonal_solve, args, order=2, modes=["fwd", "rev"])
    loss = lambda L: lambda *v: (L.tridiagonal_solve(*v) ** 2).sum()  # noqa: E731
    got = functx.grad(loss(FL), argnums=(0, 1, 2, 3))(*args)
    want = jax.jit(jax.grad(loss(JL), argnums=(0, 1, 2, 3)))(*args)
    _same(got, want, 1e-10)


def test_vmap_matches_loop():
    f = FL.tridiagonal_solve
    want = np.stack([np.asarray(f(DL[i], D[i], DU[i], B[i])) for i in range(2)])
    np.testing.assert_allclose(functx.vmap(f)(DL, D, DU, B), want, 1e-12)
    want = np.stack([np.asarray(f(DL[0], D[0], DU[0], B[i])) for i in range(2)])
    got = functx.vmap(f, (None, None, None, 0))(DL[0], D[0], DU[0], B)
    np.testing.assert_allclose(got, want, 1e-12)
    h = functx.vmap(FL.hessenberg, in_axes=2, out_axes=0)(np.moveaxis(A, 0, 2))
    _same(h, FL.hessenberg(A), 1e-12)


def test_errors_like_jax():
    for L in (FL, JL):
        with pytest.raises(ValueError, match="Hessenberg reduction must have shape"):
            L.hessenberg(np.ones((2, 3)))
        with pytest.raises(ValueError, match="input to tridiagonal must be a square"):
            L.tridiagonal(np.ones((2, 3)))
        with pytest.raises(ValueError, match="input to schur must be a square"):
            L.schur(np.ones((2, 3)))
        with pytest.raises(NotImplementedError, match="sort feature"):
            jax.jit(lambda x, L=L: L.schur(x, sort_eig_vals=True))(np.eye(2))
        with pytest.raises(ValueError, match="at least as many rows as columns"):
            L.householder_product(np.ones((2, 3)), np.ones(2))
        with pytest.raises(ValueError, match="must not have more rows"):
            L.householder_product(np.ones((3, 2)), np.ones(3))
        with pytest.raises(TypeError, match="all diagonal arguments have the same shape"):
            L.tridiagonal_solve(np.ones(3), np.ones(3), np.ones(2), np.ones((3, 1)))
        with pytest.raises(TypeError, match="leading ndim-1 dimensions of b"):
            L.tridiagonal_solve(np.ones(3), np.ones(3), np.ones(3), np.ones((2, 1)))
        with pytest.raises(TypeError):
            L.hessenberg(np.ones((2, 2), np.int32))


def test_public_surface_is_jax_names_only():
    names = {n for n in dir(FL) if not n.startswith("_")}
    assert names == set(FL.__all__)
    assert names <= {n for n in dir(JL) if not n.startswith("_")}
    for n in ("np", "ops", "P", "lowerings", "symmetrize", "tril"):
        assert not hasattr(FL, n)
    with pytest.raises(AttributeError, match="not implemented"):
        _ = FL.ormqr_p
    assert [e.value for e in FL.SvdAlgorithm] == [e.value for e in JL.SvdAlgorithm]
    assert [e.value for e in FL.EigImplementation] == [e.value for e in JL.EigImplementation]
    assert [e.value for e in FL.EighImplementation] == [e.value for e in JL.EighImplementation]
