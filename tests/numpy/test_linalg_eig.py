"""``lax.linalg.eig``, ``jnp.linalg.eig`` and ``eigvals`` against JAX (both run LAPACK's geev):
values and dtypes in both x64 modes, eigenvectors by their defining equations, JAX's jvp rules
(check_grads in float64, eigenvectors with ``enable_eigvec_derivs``), vmap against a loop and
JAX's errors. jit (the C++ library step against eager and JAX; the Triton backend's
UnsupportedError) is tests/lowering/test_backend_suite.py's case ``linalg_eig``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from x64util import x64_off

import functx
import functx.numpy as fnp
from functx.test_util import check_grads

RNG = np.random.default_rng(0)


def _mat(shape, dt):
    a = RNG.standard_normal(shape)
    if np.dtype(dt).kind == "c":
        a = a + 1j * RNG.standard_normal(shape)
    return a.astype(dt)


def _sorted(w):
    w = np.asarray(w)
    return (
        np.sort_complex(np.round(w, 4) + 0.0) if w.ndim == 1 else np.stack([_sorted(x) for x in w])
    )


def _check_eig(a, w, vl, vr, tol):
    a, w, vl, vr = (np.asarray(x) for x in (a, w, vl, vr))
    scale = max(1.0, np.abs(a).max())
    # A vr = vr diag(w), vl^H A = diag(w) vl^H, unit 2-norm columns
    np.testing.assert_allclose(a @ vr, vr * w[..., None, :], atol=tol * scale)
    np.testing.assert_allclose(
        np.conj(np.swapaxes(vl, -1, -2)) @ a,
        w[..., :, None] * np.conj(np.swapaxes(vl, -1, -2)),
        atol=tol * scale,
    )
    np.testing.assert_allclose(np.linalg.norm(vr, axis=-2), 1.0, atol=tol)


@settings(max_examples=3, deadline=None)
@given(
    batch=st.sampled_from([(), (2,), (1, 2)]),
    n=st.integers(1, 4),
    dt=st.sampled_from([np.float32, np.float64, np.complex64, np.complex128]),
)
def test_values_and_dtypes_vs_jax(batch, n, dt):
    a = _mat((*batch, n, n), dt)
    w, vl, vr = functx.lax.linalg.eig(a)
    jw = jax.lax.linalg.eig(a)[0]
    assert w.dtype == jw.dtype and vl.dtype == jw.dtype and vr.shape == (*batch, n, n)
    np.testing.assert_allclose(_sorted(w), _sorted(jw), atol=1e-3)
    tol = 1e-4 if np.dtype(dt) in (np.float32, np.complex64) else 1e-10
    _check_eig(a, w, vl, vr, tol)


def test_jnp_eig_eigvals_default_mode():
    a = _mat((3, 3), np.float64)
    with x64_off():
        res = fnp.linalg.eig(a)
        want = jnp.linalg.eig(a)
        assert type(res).__name__ == "EigResult" and res._fields == ("eigenvalues", "eigenvectors")
        assert res.eigenvalues.dtype == want.eigenvalues.dtype == np.complex64
        np.testing.assert_allclose(_sorted(res[0]), _sorted(want[0]), atol=1e-4)
        ev = fnp.linalg.eigvals(np.array([[1, 2], [3, 4]]))
        jev = jnp.linalg.eigvals(np.array([[1, 2], [3, 4]]))
        assert ev.dtype == jev.dtype
        np.testing.assert_allclose(_sorted(ev), _sorted(jev), atol=1e-4)
    ev = fnp.linalg.eigvals(np.array([[1, 2], [3, 4]]))
    assert ev.dtype == jnp.linalg.eigvals(np.array([[1, 2], [3, 4]])).dtype == np.complex128


def _derivs(ns, jvp, grad, a, da):
    """jvp and grad of the eigenvalues, and the jvp of every output with eigenvector derivatives
    on (JAX's side runs as one jitted program: its eager dispatch of eig's rule is slow)."""
    f = lambda x: ns.linalg.eigvals(x)  # noqa: E731
    fe = lambda x: ns.lax_linalg.eig(x, enable_eigvec_derivs=True)  # noqa: E731
    loss = lambda x: ns.sum(ns.abs(f(x)) ** 2)  # noqa: E731
    return jvp(f, (a,), (da,))[1], grad(loss)(a), jvp(fe, (a,), (da,))[1]


def test_gradients_vs_jax_and_check_grads():
    from types import SimpleNamespace as NS

    a = _mat((3, 3), np.float64)
    da = _mat((3, 3), np.float64)
    fx = NS(linalg=fnp.linalg, lax_linalg=functx.lax.linalg, sum=fnp.sum, abs=fnp.abs)
    jx = NS(linalg=jnp.linalg, lax_linalg=jax.lax.linalg, sum=jnp.sum, abs=jnp.abs)
    got = _derivs(fx, functx.jvp, functx.grad, a, da)
    want = jax.jit(lambda a, da: _derivs(jx, jax.jvp, jax.grad, a, da))(a, da)
    # (same LAPACK, so the same eigenvalue order and eigenvector phases as JAX)
    for g, w in zip(functx.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-8, atol=1e-9)
    f = lambda x: fnp.linalg.eigvals(x)  # noqa: E731
    check_grads(lambda x: fnp.real(f(x)) + fnp.imag(f(x)), (a,), order=1, modes=["fwd", "rev"])
    fe = lambda x: functx.lax.linalg.eig(x, enable_eigvec_derivs=True)  # noqa: E731
    check_grads(lambda x: fe(x)[2], (a + 1j * da,), order=1, modes=["fwd"])
    with pytest.raises(NotImplementedError, match="enable_eigvec_derivs"):
        functx.jvp(lambda x: fnp.linalg.eig(x)[1], (a,), (da,))


def test_vmap_matches_loop():
    a = _mat((3, 2, 2), np.float64)
    f = lambda x: functx.lax.linalg.eig(x, compute_left_eigenvectors=False)  # noqa: E731
    got = functx.vmap(f)(a)
    for i in range(3):
        for g, w in zip(got, f(a[i])):
            np.testing.assert_allclose(g[i], w, 1e-12)
    got = functx.vmap(f, in_axes=2)(np.moveaxis(a, 0, 2))
    np.testing.assert_allclose(got[0], f(a)[0], 1e-12)


def test_errors_like_jax():
    for lib in (functx, jax):
        with pytest.raises(ValueError, match="must be a square matrix"):
            lib.lax.linalg.eig(np.ones((2, 3)))
        with pytest.raises(TypeError):
            lib.lax.linalg.eig(np.ones(3))
        with pytest.raises(TypeError):
            lib.lax.linalg.eig(np.ones((2, 2), np.int32))
    nan = fnp.linalg.eigvals(np.full((2, 2), np.nan))
    assert nan.shape == (2,)
