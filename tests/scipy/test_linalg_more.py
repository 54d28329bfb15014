"""``functx.scipy.linalg``'s expm_frechet, schur, hessenberg, toeplitz, polar, sqrtm, rsf2csf, funm
and eigh_tridiagonal: shapes and dtypes against JAX in both x64 modes (``jax.eval_shape``: compiling
JAX's programs here would cost ~20 s), values against SciPy (whose LAPACK JAX calls too; JAX's
values agree to rounding), batching, expm's and expm_frechet's derivatives (check_grads in
float64), jit (C++) against eager, and JAX's errors."""

from __future__ import annotations

import jax
import jax.scipy.linalg as jsl
import numpy as np
import pytest
import scipy.linalg as ssl
from x64util import x64_off

import functx
import functx.scipy.linalg as fsl
from functx.test_util import check_grads

RNG = np.random.default_rng(0)
A = RNG.standard_normal((4, 4))
E = RNG.standard_normal((4, 4))
AB = RNG.standard_normal((2, 3, 3))
D, OFF = RNG.standard_normal(4), RNG.standard_normal(3)


def _poly(x):
    return x * x + 1.0


def _results(L, a, e, ab, d, off):
    t, z = L.schur(a)
    return {
        "frechet": L.expm_frechet(a, e),
        "schur": (t, z),
        "schur_c": L.schur(a, output="complex"),
        "hessenberg": L.hessenberg(a, calc_q=True),
        "hessenberg_b": L.hessenberg(ab),
        "toeplitz": L.toeplitz(a[0], a[1, :3]),
        "toeplitz_h": L.toeplitz(a[0] + 1j * a[1]),
        "toeplitz_b": L.toeplitz(ab[:, 0]),
        "polar": L.polar(a),
        "polar_left": L.polar(a[:3], side="left", method="svd"),
        "sqrtm": L.sqrtm(a @ a.T),
        "sqrtm_general": L.sqrtm(a + 2 * np.eye(4, dtype=a.dtype)),  # (no eigenvalue <= 0)
        "rsf2csf": L.rsf2csf(t, z),
        "funm": L.funm(a, _poly),
        "eigh_tridiagonal": L.eigh_tridiagonal(d, off, eigvals_only=True),
        "eigh_tridiagonal_i": L.eigh_tridiagonal(
            d, off, eigvals_only=True, select="i", select_range=(1, 2)
        ),
    }


def _scipy(a, e, ab, d, off):
    t, z = ssl.schur(a)
    h, q = ssl.hessenberg(a, calc_q=True)
    return {
        "frechet": ssl.expm_frechet(a, e),
        "schur": (t, z),
        "schur_c": ssl.schur(a, output="complex"),
        "hessenberg": (h, q),
        "hessenberg_b": np.stack([ssl.hessenberg(b) for b in ab]),
        "toeplitz": ssl.toeplitz(a[0], a[1, :3]),
        "toeplitz_h": ssl.toeplitz(a[0] + 1j * a[1]),
        "toeplitz_b": np.stack([ssl.toeplitz(c) for c in ab[:, 0]]),
        "polar": ssl.polar(a),
        "polar_left": ssl.polar(a[:3], side="left"),
        "sqrtm": ssl.sqrtm((a @ a.T).astype(complex)),
        "sqrtm_general": ssl.sqrtm((a + 2 * np.eye(4)).astype(complex)),
        "rsf2csf": ssl.rsf2csf(t, z),
        "funm": ssl.funm(a, _poly),
        "eigh_tridiagonal": ssl.eigh_tridiagonal(d, off, eigvals_only=True),
        "eigh_tridiagonal_i": ssl.eigh_tridiagonal(
            d, off, eigvals_only=True, select="i", select_range=(1, 2)
        ),
    }


def _compare(args, tol):
    got = _results(fsl, *args)
    shapes = jax.eval_shape(lambda *xs: _results(jsl, *xs), *args)
    want = _scipy(*args)  # (float32 input: the float32 LAPACK routines, as functx and JAX)
    for k in shapes:
        gs, ss = jax.tree_util.tree_leaves(got[k]), jax.tree_util.tree_leaves(shapes[k])
        ws = jax.tree_util.tree_leaves(want[k])
        assert len(gs) == len(ss) == len(ws), k
        for g, sh, w in zip(gs, ss, ws):
            g = np.asarray(g)
            assert (g.shape, g.dtype) == (sh.shape, sh.dtype), (k, g.shape, g.dtype, sh)
            np.testing.assert_allclose(g, w, rtol=tol, atol=tol, err_msg=k)


def test_values_and_dtypes_x64():
    _compare((A, E, AB, D, OFF), 1e-9)


def test_values_and_dtypes_default_mode():
    with x64_off():
        _compare(tuple(x.astype(np.float32) for x in (A, E, AB, D, OFF)), 3e-4)


def test_eigenvectors_and_reconstructions():
    w, v = fsl.eigh_tridiagonal(D, OFF)
    t = np.diag(D) + np.diag(OFF, 1) + np.diag(OFF, -1)
    np.testing.assert_allclose(t @ np.asarray(v), np.asarray(v) * np.asarray(w), atol=1e-12)
    r = fsl.sqrtm(A)
    np.testing.assert_allclose(np.asarray(r @ r), A, atol=1e-10)
    for b in AB:
        h, q = fsl.hessenberg(b, calc_q=True)
        np.testing.assert_allclose(np.asarray(q @ h @ q.T), b, atol=1e-12)


def test_expm_and_frechet_derivatives():
    # expm's gradient through its Pade/squaring composite (JAX differentiates the same way)
    check_grads(fsl.expm, (A[:2, :2],), order=1, modes=["fwd", "rev"])
    check_grads(lambda a: fsl.expm_frechet(a, E[:2, :2], compute_expm=False), (A[:2, :2],), 1)


def test_funm_error_estimate():
    f, err = fsl.funm(A, _poly, disp=False)
    np.testing.assert_allclose(np.asarray(f), A @ A + np.eye(4), atol=1e-10)
    assert 0 < float(err) < 1e-10


def test_jit_matches_eager():
    f = lambda a: (fsl.sqrtm(a), fsl.polar(a)[1])  # noqa: E731
    a = A[:2, :2] + 2 * np.eye(2)
    for g, w in zip(functx.jit(f)(a), f(a)):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-12, atol=1e-12)


def test_errors_like_jax():
    # (what is not implemented; bad arguments: test_bad_arguments_raise_functx_errors_...)
    for L in (fsl, jsl):
        with pytest.raises(NotImplementedError, match="only supports mxn matrices"):
            L.polar(A[:3].T, side="left")
        with pytest.raises(NotImplementedError, match="Blocked version"):
            L.sqrtm(A, blocksize=2)
        with pytest.raises(NotImplementedError, match="select='v'"):
            L.eigh_tridiagonal(D, OFF, select="v", select_range=(0.0, 1.0))


_SQ = np.eye(3, dtype=np.float32)
_BAD_SCIPY_LINALG_CALLS = [
    lambda sl: sl.solve_triangular(_SQ, _SQ, trans=3),
    lambda sl: sl.solve(_SQ, _SQ, assume_a="spd"),
    lambda sl: sl.solve(_SQ, _SQ[:2], assume_a="pos"),
    lambda sl: sl.qr(_SQ, mode="thin"),
    lambda sl: sl.block_diag(_SQ[None], _SQ),
    lambda sl: sl.expm(_SQ[:2]),
    lambda sl: sl.expm_frechet(_SQ[:2], _SQ[:2]),
    lambda sl: sl.expm_frechet(_SQ, _SQ[:2]),
    lambda sl: sl.expm_frechet(_SQ, np.eye(2, dtype=np.float32)),
    lambda sl: sl.polar(_SQ, side="top"),
    lambda sl: sl.polar(_SQ, method="newton"),
    lambda sl: sl.rsf2csf(_SQ, _SQ[:2]),
    lambda sl: sl.funm(_SQ[:2], lambda x: x),
    lambda sl: sl.eigh_tridiagonal(_SQ[0], _SQ[0, :2].astype(np.float64)),
    lambda sl: sl.eigh_tridiagonal(np.ones(3, np.int32), np.ones(2, np.int32)),
    lambda sl: sl.eigh_tridiagonal(_SQ[0], _SQ[0, :2], select="x"),
]


@pytest.mark.parametrize("i", range(len(_BAD_SCIPY_LINALG_CALLS)))
def test_bad_arguments_raise_functx_errors_of_jax_classes(i):
    """Each bad call raises JAX's builtin class as a FunctxError naming the function and the
    caller's line (plain ValueError/TypeError with JAX's wording before)."""
    with pytest.raises((TypeError, ValueError)) as theirs:
        _BAD_SCIPY_LINALG_CALLS[i](jsl)
    with pytest.raises(functx.FunctxError) as ours:
        _BAD_SCIPY_LINALG_CALLS[i](fsl)
    assert isinstance(ours.value, type(theirs.value)), (ours.value, theirs.value)
    assert "test_linalg_more.py" in str(ours.value), ours.value
