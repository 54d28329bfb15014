"""``functx.experimental.sparse.linalg`` against ``jax.experimental.sparse.linalg``, NumPy and
SciPy: ``spsolve``'s solution (float64 against NumPy, float32 against JAX), its gradients in
``data`` and ``b`` against finite differences, ``jit`` and ``vmap``, JAX's errors;
``lobpcg_standard``'s eigenvalues against NumPy's ``eigvalsh``, SciPy's ``lobpcg`` and JAX's,
its eigenvectors' residuals, the matrix, sparse and callable forms of ``A``, JAX's errors."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse.linalg
from errutil import raises_as_jax
from jax.experimental import sparse as jsp
from x64util import x64_off

import functx
from functx.experimental import sparse as fsp
from functx.experimental.sparse import linalg
from functx.test_util import check_grads

RNG = np.random.default_rng(2)


def _system(n, dtype=np.float64):
    """A sparse, well-conditioned ``n x n`` matrix (as CSR buffers and dense) and a vector."""
    a = RNG.normal(size=(n, n)) * (RNG.random((n, n)) < 0.3) + 4 * np.eye(n)
    a = a.astype(dtype)
    m = fsp.CSR.fromdense(a)
    bufs = tuple(np.asarray(x) for x in (m.data, m.indices, m.indptr))
    return a, bufs, RNG.normal(size=n).astype(dtype)


@pytest.mark.parametrize("n", [1, 5, 12])
def test_spsolve_against_numpy(n):
    a, bufs, b = _system(n)
    x = linalg.spsolve(*bufs, b)
    assert x.dtype == np.float64 and x.shape == (n,)
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-12, atol=1e-12)
    # entries past indptr[-1] (padding) are ignored
    m = fsp.CSR.fromdense(a, nse=len(bufs[0]) + 3)
    np.testing.assert_allclose(linalg.spsolve(m.data, m.indices, m.indptr, b), x, rtol=1e-12)


def test_spsolve_against_jax():
    with x64_off():
        a, bufs, b = _system(6, np.float32)
        got = linalg.spsolve(*bufs, b, tol=1e-5, reorder=0)
        want = jsp.linalg.spsolve(*bufs, b, tol=1e-5, reorder=0)
        assert (got.shape, got.dtype) == (want.shape, want.dtype)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_spsolve_grads_jit_vmap():
    a, (data, indices, indptr), b = _system(5)
    check_grads(
        lambda d, b: linalg.spsolve(d, indices, indptr, b), (data, b), order=1, modes=("fwd", "rev")
    )
    np.testing.assert_allclose(
        functx.jit(linalg.spsolve)(data, indices, indptr, b), np.linalg.solve(a, b), rtol=1e-12
    )
    bs = RNG.normal(size=(3, 5))
    got = functx.vmap(lambda b: linalg.spsolve(data, indices, indptr, b))(bs)
    np.testing.assert_allclose(got, np.linalg.solve(a, bs.T).T, rtol=1e-12)


def test_spsolve_errors_as_jax():
    _, (data, indices, indptr), b = _system(4)
    bad = [
        (data.astype(np.float32), indices, indptr, b, {}),  # dtypes differ
        (data, indices.astype(np.float64), indptr, b, {}),  # float indices
        (data, indices, indptr, b[:, None], {}),  # 2-D b
        (data, indices, indptr[:-1], b, {}),  # indptr length
        (data[:-1], indices, indptr, b, {}),  # data length
        (data, indices, indptr, b, {"reorder": 4}),
    ]
    for *args, kw in bad:
        raises_as_jax(lambda m: m.linalg.spsolve(*args, **kw), jsp, fsp, ValueError)


def _symmetric(n, top):
    """A symmetric matrix with a spectral gap after its ``top`` largest eigenvalues."""
    q, _ = np.linalg.qr(RNG.normal(size=(n, n)))
    w = np.concatenate([10.0 + np.arange(top)[::-1], RNG.uniform(-2, 2, n - top)])
    return (q * w) @ q.T


@pytest.mark.parametrize("n,k", [(11, 2), (30, 3)])
def test_lobpcg_against_numpy_and_scipy(n, k):
    a, x0 = _symmetric(n, k), RNG.normal(size=(n, k))
    theta, u, i = linalg.lobpcg_standard(a, x0, m=60)
    assert theta.shape == (k,) and u.shape == (n, k) and int(i) <= 60
    want = np.linalg.eigvalsh(a)[::-1][:k]
    np.testing.assert_allclose(theta, want, rtol=1e-10)
    scipy_w = scipy.sparse.linalg.lobpcg(a, x0, largest=True, maxiter=60, tol=1e-10)[0]
    np.testing.assert_allclose(theta, np.sort(scipy_w)[::-1], rtol=1e-8)
    u = np.asarray(u)
    np.testing.assert_allclose(a @ u, u * np.asarray(theta), atol=1e-7)
    np.testing.assert_allclose(u.T @ u, np.eye(k), atol=1e-10)
    # the same iteration for a sparse A and for a function applying it
    for op in (fsp.BCOO.fromdense(a), lambda v: functx.numpy.asarray(a) @ v):
        t2, _, i2 = linalg.lobpcg_standard(op, x0, m=60)
        np.testing.assert_allclose(t2, theta, rtol=1e-12)
        assert int(i2) == int(i)


def test_lobpcg_against_jax():
    with x64_off():
        a, x0 = _symmetric(12, 2).astype(np.float32), RNG.normal(size=(12, 2)).astype(np.float32)
        got = linalg.lobpcg_standard(a, x0, m=40)
        want = jsp.linalg.lobpcg_standard(a, x0, m=40)
        assert got[0].dtype == want[0].dtype == np.float32
        np.testing.assert_allclose(got[0], want[0], rtol=1e-5)
        # the same iteration: the same count, give or take float32 rounding near convergence
        assert abs(int(got[2]) - int(want[2])) <= 2
        np.testing.assert_allclose(np.abs(got[1]), np.abs(want[1]), atol=1e-3)


def test_lobpcg_stops_at_m_and_jit():
    a, x0 = _symmetric(11, 2), RNG.normal(size=(11, 2))
    theta, _, i = linalg.lobpcg_standard(a, x0, m=2)
    assert int(i) == 2
    got = functx.jit(lambda a, x: linalg.lobpcg_standard(a, x, m=2))(a, x0)
    np.testing.assert_allclose(got[0], theta, rtol=1e-12)


def test_lobpcg_errors_as_jax():
    a = np.eye(10)
    for x in (np.ones((10, 0)), np.ones((10, 2))):  # k == 0; 5 * k >= n
        raises_as_jax(lambda m: m.linalg.lobpcg_standard(a, x), jsp, fsp, ValueError)
    x = np.ones((11, 2))
    raises_as_jax(
        lambda m: m.linalg.lobpcg_standard(lambda v: v.astype(np.float32), x), jsp, fsp, ValueError
    )
    raises_as_jax(lambda m: m.linalg.lobpcg_standard(lambda v: v[:5], x), jsp, fsp, ValueError)
